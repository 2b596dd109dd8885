import { createHmac } from 'node:crypto';
import { InputError, type SourcePos } from './errors.ts';
import { installationKey } from './state-dir.ts';

/**
 * A value the inventory marked secret (`!secret` tag, `{secret: ...}` wrapper, a vaulted value).
 * It reaches the host through `reveal()` only; everywhere else (diffs, logs, plans, JSON) it
 * prints as its mask. Every secret of the run is also known to `scrub()`, which masks its text
 * wherever it turns up in output (a diff of a file that holds it, an error message).
 */
export class Secret {
  readonly #value: string;
  readonly #mask: string;
  #origin: SourcePos | undefined;
  constructor(value: string, origin?: SourcePos, composed = false) {
    this.#value = value;
    this.#mask = remember(value, !composed);
    this.locate(origin);
  }
  reveal(): string {
    return this.#value;
  }
  get masked(): string {
    return this.#mask;
  }
  /** Where the inventory (or -e) set it: for "a secret cannot go here" errors. */
  get origin(): SourcePos | undefined {
    return this.#origin;
  }
  /** Record where it was set, unless known already (the first place that names it wins). */
  locate(pos: SourcePos | undefined): void {
    if (this.#origin || !pos) return;
    this.#origin = pos;
    // (an empty secret, or a sealed vault value, has the mask of '': it would name another's place)
    if (this.#value !== '' && !maskOrigins.has(this.#mask)) maskOrigins.set(this.#mask, pos);
  }
  toString(): string {
    return this.masked;
  }
  toJSON(): string {
    return this.masked;
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.masked;
  }
}

const MASK_HEX = 16;
/** The text of any mask (a mask in a string means a secret was built into it). */
export const MASK_PATTERN = new RegExp(`<secret hmac:([0-9a-f]{${MASK_HEX}})…>`);

/**
 * `<secret hmac:…>`: HMAC-SHA256 under the installation's key (util/state-dir.ts). The same
 * secret has the same mask on every run of this installation (so diffs and plans still say
 * "same" or "changed"), but nobody without the key can test a guess against it.
 */
export function maskSecret(value: string): string {
  return `<secret hmac:${maskHex(value)}…>`;
}

/** The hex of a mask alone (a name made from a secret, a sensitive file's hash in its diff). */
export function maskHex(value: string): string {
  return createHmac('sha256', installationKey()).update(value).digest('hex').slice(0, MASK_HEX);
}

export function isSecret(v: unknown): v is Secret {
  return v instanceof Secret;
}

// Every secret's text as it may appear in output -> its mask.
const known = new Map<string, string>();
let pattern: RegExp | undefined;
let dirty = false;

// mask -> where the first secret with it was set
const maskOrigins = new Map<string, SourcePos>();

/** Register a secret's text for `scrub` (line by line too unless `byLine` is false: a composed secret, whose plain lines are no secret). */
function remember(value: string, byLine = true): string {
  const mask = maskSecret(value);
  if (value === '' || known.get(value) === mask) return mask;
  if (!byLine) {
    known.set(value, mask);
    known.set(JSON.stringify(value).slice(1, -1), mask);
    dirty = true;
    return mask;
  }
  // A multi-line secret (a key, a certificate) shows line by line in a diff: each of its lines
  // is masked (lines of under 4 characters, `}` or `--`, are not: they would mask everything).
  const lines = value.split(/\r?\n/).filter((l) => l !== '');
  const forms = lines.length === 1 ? lines : lines.filter((l) => l.trim().length >= 4);
  // as they stand in JSON (--json, the journal, plans): escaped
  for (const f of [...forms]) forms.push(JSON.stringify(f).slice(1, -1));
  for (const f of forms) if (!known.has(f)) known.set(f, mask);
  dirty = true;
  return mask;
}

/** `text` with every known secret (raw, or as escaped in JSON) replaced by its mask. */
export function scrub(text: string): string {
  if (known.size === 0) return text;
  if (dirty || !pattern) {
    // longest first: a secret that contains another is masked whole
    const alts = [...known.keys()].sort((a, b) => b.length - a.length).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    pattern = new RegExp(alts.join('|'), 'g');
    dirty = false;
  }
  return text.replace(pattern, (m) => known.get(m) ?? m);
}

/**
 * Refuse a secret (or a string built from one: it holds the mask text) in a value that does not
 * take secrets: the host would get the mask instead of the value. Exit 3 at the secret's file:line.
 * `where` names the resource; `takesSecrets` its options that take a Secret (as a whole value).
 */
export function refuseSecrets(value: unknown, where: string, takesSecrets: readonly string[] = []): void {
  const skip = new Set(takesSecrets);
  const seen = new Set<unknown>();
  const visit = (v: unknown, path: string, depth: number): void => {
    if (depth > 64) return;
    if (v instanceof Secret) {
      throw secretHere(where + path, v.origin);
    }
    if (typeof v === 'string') {
      if (!v.includes('<secret hmac:')) return;
      const m = MASK_PATTERN.exec(v);
      if (m) throw secretHere(where + path, maskOrigins.get(m[0]));
      return;
    }
    if (v === null || typeof v !== 'object' || seen.has(v) || Buffer.isBuffer(v) || ArrayBuffer.isView(v)) return;
    seen.add(v);
    if (Array.isArray(v)) v.forEach((x, i) => visit(x, `${path}[${i}]`, depth + 1));
    else if (v instanceof Map) for (const [k, x] of v) visit(x, `${path}.${String(k)}`, depth + 1);
    else if (v instanceof Set) for (const x of v) visit(x, path, depth + 1);
    else if (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)
      for (const [k, x] of Object.entries(v))
        if (!(depth === 0 && skip.has(k) && x instanceof Secret)) visit(x, path ? `${path}.${k}` : `: ${k}`, depth + 1);
  };
  visit(value, '', 0);
}

function secretHere(where: string, origin: SourcePos | undefined): InputError {
  const msg =
    `a secret cannot be used in ${where}: it takes no secrets (the host would get the mask, not the value); ` +
    "only a file's content takes one: compose it with text as secretText`KEY=${secret}\\n` (from 'racksmith') and give that to file({ content })";
  return origin ? new InputError(msg, origin) : new InputError(`${msg} (the secret's origin is not known)`);
}

/**
 * A tagged template that makes one Secret of text and secrets: ``secretText`password = ${s}\n` ``.
 * Secrets are put in by value, anything else as `String(v)`; the result's mask covers the whole
 * text, and it goes where a secret is taken (a file's content). A string already built from a
 * secret with `${}` holds its mask, not its value: refused (exit 3 at the secret's file:line).
 */
export function secretText(strings: TemplateStringsArray, ...values: unknown[]): Secret {
  let text = strings[0];
  let origin: SourcePos | undefined;
  values.forEach((v, i) => {
    if (v instanceof Secret) {
      origin ??= v.origin;
      text += v.reveal();
    } else {
      const s = String(v);
      const m = s.includes('<secret hmac:') ? MASK_PATTERN.exec(s) : null;
      if (m) {
        const msg = `secretText: value ${i + 1} is a string built from a secret (it holds the mask, not the value); put the secret itself in the template`;
        const at = maskOrigins.get(m[0]);
        throw at ? new InputError(msg, at) : new InputError(msg);
      }
      text += s;
    }
    text += strings[i + 1];
  });
  return new Secret(text, origin, true);
}

/** Give every secret inside `value` this origin, unless it has one (the inventory's per-variable source). */
export function locateSecrets(value: unknown, pos: SourcePos | undefined, depth = 0): void {
  if (value instanceof Secret) return value.locate(pos);
  // a group's value is shared by its hosts: walked once
  if (value === null || typeof value !== 'object' || depth > 64 || !pos || walked.has(value)) return;
  walked.add(value);
  for (const v of Object.values(value)) locateSecrets(v, pos, depth + 1);
}
const walked = new WeakSet<object>();

/** `stream` with every string written through it scrubbed (the CLI's stdout and stderr). */
export function scrubbingStream<S extends NodeJS.WritableStream>(stream: S): S {
  // The stream's own write, taken once: listr2 (the terminal view) sets `write` on the stream it is
  // given and later puts back the one it read, which is this wrapper; calling `target.write` at
  // write time would then call the wrapper itself, for ever.
  const write = stream.write as (...a: unknown[]) => boolean;
  const scrubbed = (chunk: unknown, ...rest: unknown[]) => write.call(stream, typeof chunk === 'string' ? scrub(chunk) : chunk, ...rest);
  return new Proxy(stream, {
    get(target, prop) {
      if (prop === 'write') return scrubbed;
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
