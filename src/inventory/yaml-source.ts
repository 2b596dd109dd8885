import type { Document, Node, Pair, ScalarTag, YAMLMap } from 'yaml';
import { yamlLib } from '../util/yaml-lib.ts';
import { InputError, type SourcePos } from '../util/errors.ts';
import { INPUT_LIMITS, readInputText } from '../util/input-file.ts';
import { Secret } from '../util/secret.ts';
import { printable } from '../util/printable.ts';
import { locate, parsePlainYaml, type Located } from './plain-yaml.ts';
import { JsonSyntaxError, looksLikeJson, MAX_DEPTH, parseJson } from './json-text.ts';
import { YAML11_PATTERNS, pyBool, pyFloat, pyInt, pyTimestamp, resolvePlain11, Yaml11Error } from './yaml11.ts';
import { isVaultText, SealedVaultValue, VaultError, vaultTextOf, type VaultKeyring } from './vault.ts';

/** Alias expansions allowed per document: stops "billion laughs" bombs. */
const MAX_ALIAS_COUNT = 200;

/**
 * A string tagged `!unsafe` (or JSON's `{"__ansible_unsafe": ...}`): Ansible never templates it.
 * racksmith templates nothing; the mark only exempts the value from the refusal of `{{ }}`. The
 * loader unwraps it into a plain string (see load.ts).
 */
export class Unsafe {
  constructor(readonly value: string) {}
}

export interface ParseOptions {
  /** `library` skips the fast readers (tests compare them). */
  reader?: 'auto' | 'library';
  /** Passwords for `!vault` values and vault-encrypted files; undefined: none given. */
  vault?: VaultKeyring;
}

/** A parsed YAML (or JSON) file that can still say where each value was written. */
export class YamlSource {
  private constructor(
    readonly file: string,
    readonly value: unknown,
    /** The offset of the node at a path (see pos), in the library's document or the fast readers'. */
    private readonly offsetOf: (path: ReadonlyArray<string | number>, key: boolean) => number,
    private readonly linePos: (offset: number) => { line: number; col: number },
    /** The keys of the mapping at a path in document order (JS objects put integer-like keys first). */
    private readonly keyOrder: (path: ReadonlyArray<string | number>) => string[] | undefined,
    /** The text may hold a `{{ }}`, `{% %}` or `{# #}` (the loader looks for templates only then). */
    readonly mayTemplate: boolean,
    /** The text may hold a `!unsafe` (or JSON `__ansible_unsafe`) mark. */
    readonly mayUnsafe: boolean,
    /** The file was vault-encrypted as a whole: its strings are secrets. */
    readonly encrypted: boolean,
    /** What the mapping key at a path is when YAML did not make it a string (see keyKind). */
    private readonly keyKindOf: (path: ReadonlyArray<string | number>) => KeyKind | undefined = () => undefined,
  ) {}

  /** Read an inventory or vars file (a regular file, size-bounded; decrypted when vault-encrypted). */
  static read(file: string, what = 'inventory', o: ParseOptions = {}): YamlSource {
    const { text, encrypted } = readSourceText(file, what, o.vault);
    return YamlSource.parse(file, text, o, encrypted);
  }

  static parse(file: string, text: string, o: ParseOptions = {}, encrypted = false): YamlSource {
    if (text.length > INPUT_LIMITS.vars) throw new InputError(`text is ${text.length} bytes; the limit is ${INPUT_LIMITS.vars}`, { file });
    const mayTemplate = /\{[{%#]/.test(text);
    const flags = { mayTemplate, mayUnsafe: /!unsafe|__ansible_unsafe/.test(text), encrypted };
    // Ansible's loader tries JSON first (json.loads), then YAML: `{"a": 1e3}` is a float there.
    if (looksLikeJson(text)) {
      let json;
      try {
        json = parseJson(text);
      } catch (e) {
        if (e instanceof JsonSyntaxError) throw new InputError(`JSON: ${e.message}`, { file, ...lineCounterOf(text)(e.offset) });
        throw e;
      }
      if (json) return YamlSource.located(file, text, json.value, json.root, flags).withMarkersResolved(text, o);
    }
    // Plain block YAML (nearly every inventory) is read ~6x faster without the library's
    // document model; anything else (tags, anchors, escapes...), and every error, is the library's.
    const plain = o.reader === 'library' ? undefined : parsePlainYaml(text);
    if (plain) return YamlSource.located(file, text, plain.value, plain.root, flags).withSecretsUnwrapped(text);
    return YamlSource.library(file, text, o, flags);
  }

  private static located(file: string, text: string, value: unknown, root: Located, f: Flags): YamlSource {
    return new YamlSource(
      file,
      value,
      (path, key) => locate(root, path, key),
      lineCounterOf(text),
      (path) => locatedAt(root, path)?.keys && [...locatedAt(root, path)!.keys!.keys()],
      f.mayTemplate,
      f.mayUnsafe,
      f.encrypted,
    );
  }

  private static library(file: string, text: string, o: ParseOptions, f: Flags): YamlSource {
    // Deep flow nesting costs the library (and what walks its result) far more than its size:
    // refused before it is parsed.
    const deepAt = flowTooDeep(text);
    if (deepAt !== undefined)
      throw new InputError(`YAML: nested more than ${MAX_DEPTH} levels deep`, { file, ...lineCounterOf(text)(deepAt) });
    const { LineCounter, parseDocument } = yamlLib();
    let lines = new LineCounter();
    const options = {
      version: '1.1' as const,
      schema: 'core',
      customTags: ansibleTags(o.vault),
      merge: true,
      resolveKnownTags: false,
      lineCounter: lines,
      prettyErrors: false,
      uniqueKeys: false,
    };
    // The yaml library checks unique keys with a scan of the map per key (quadratic in a
    // 1,000-host `hosts:`); they are checked here in one pass, and only a document that may have
    // an error is parsed again with the library's check, for the same first error as always.
    let doc = parseDocument(text, options);
    const dupAt = duplicateKeyAt(doc);
    if (doc.errors.length || dupAt !== undefined) {
      lines = new LineCounter();
      doc = parseDocument(text, { ...options, lineCounter: lines, uniqueKeys: true });
    }
    // An unknown tag is only a warning to the library: here it is an error (`!Secret`,
    // `!!python/object`, `!exec` must not pass as plain data).
    const first = [...doc.errors, ...doc.warnings.filter((w) => w.code === 'TAG_RESOLVE_FAILED')].sort((a, b) => a.pos[0] - b.pos[0])[0];
    if (first) {
      // Never the text around the error: the line may hold a secret.
      // (the library's words name its own API: said here as the file's mistake)
      const said =
        first.code === 'MULTIPLE_DOCS'
          ? 'a second document starts here (---): the file must be one YAML document, as Ansible reads it'
          : first.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
      // (the library places a repeated key after an empty value at that value: the key itself is found here)
      const at = first.code === 'DUPLICATE_KEY' && dupAt !== undefined ? dupAt : first.pos[0];
      throw new InputError(`YAML: ${printable(said)}`, { file, ...lines.linePos(at) });
    }
    const deep = tooDeep(doc);
    if (deep !== undefined) throw new InputError(`YAML: nested more than ${MAX_DEPTH} levels deep`, { file, ...lines.linePos(deep) });
    const mergeAgain = text.includes('<<') ? secondMergeKeyAt(doc) : undefined;
    if (mergeAgain !== undefined)
      throw new InputError(
        "YAML: a second '<<' merge key in this mapping (Ansible applies both, the later one winning where they share a key; racksmith refuses a repeated key): merge once, with a list, `<<: [*later, *earlier]` (the first one listed wins)",
        { file, ...lines.linePos(mergeAgain) },
      );
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (e) {
      if (e instanceof RangeError) throw new InputError('YAML: nested too deeply', { file, line: 1, col: 1 });
      throw new InputError(`YAML: ${printable((e as Error).message)}`, { file, line: 1, col: 1 });
    }
    if (isCyclic(value))
      throw new InputError('YAML: an alias refers to the mapping that contains it (recursive structure)', { file, line: 1, col: 1 });
    const located = new DocumentOffsets(doc);
    return new YamlSource(
      file,
      value,
      (path, key) => located.offset(path, key),
      (offset) => lines.linePos(offset),
      (path) => located.keys(path),
      f.mayTemplate,
      f.mayUnsafe,
      f.encrypted,
      (path) => located.keyKind(path),
    ).withSecretsUnwrapped(text);
  }

  /**
   * JSON's markers, as Ansible's JSON decoder reads them: `{"__ansible_vault": "$ANSIBLE_VAULT..."}`
   * is a vaulted value (what ansible-inventory --list prints for one), `{"__ansible_unsafe": s}` a
   * string never templated. Then the `{secret: ...}` wrapper.
   */
  private withMarkersResolved(text: string, o: ParseOptions): YamlSource {
    if (text.includes('"__ansible_')) {
      const walk = (v: unknown, path: Array<string | number>): unknown => {
        if (v === null || typeof v !== 'object') return v;
        const obj = v as Record<string, unknown>;
        const keys = Object.keys(obj);
        if (!Array.isArray(v) && keys.length === 1 && typeof obj[keys[0]] === 'string') {
          if (keys[0] === '__ansible_vault') return decryptValue(obj.__ansible_vault as string, o.vault, this.pos(path));
          if (keys[0] === '__ansible_unsafe') return new Unsafe(obj.__ansible_unsafe as string);
        }
        for (const k of keys) obj[k] = walk(obj[k], [...path, Array.isArray(v) ? Number(k) : k]);
        return v;
      };
      walk(this.value, []);
    }
    return this.withSecretsUnwrapped(text);
  }

  /**
   * The other way to mark a secret, for files that cannot carry a YAML tag (JSON vars files, -e
   * JSON, INI): a mapping whose only key is `secret`, holding a string (`{"secret": "s3cr3t"}`),
   * is that string as a Secret, wherever it stands.
   */
  private withSecretsUnwrapped(text: string): YamlSource {
    if (!text.includes('secret')) return this; // nothing to look for (nearly every inventory)
    const value = unwrapSecrets(this.value, [], (path) => this.pos(path));
    return value === this.value
      ? this
      : new YamlSource(
          this.file,
          value,
          this.offsetOf,
          this.linePos,
          this.keyOrder,
          this.mayTemplate,
          this.mayUnsafe,
          this.encrypted,
          this.keyKindOf,
        );
  }

  /**
   * Position of the value at `path`, or of its key when `key` is set (errors about a key name
   * should point at the key). Falls back to the nearest existing ancestor.
   */
  pos(path: ReadonlyArray<string | number>, key = false): SourcePos {
    const lp = this.linePos(this.offsetOf(path, key));
    return { file: this.file, line: lp.line, col: lp.col };
  }

  /**
   * What the key at `path` is when YAML 1.1 makes it no string (`yes:`, `123:`, `2001-01-01:`),
   * a type Ansible's loader keeps; undefined for a string key. (JS objects have string keys only:
   * `yes:` reads as the key 'true'.)
   */
  keyKind(path: ReadonlyArray<string | number>): KeyKind | undefined {
    return this.keyKindOf(path);
  }

  /** The keys of the mapping `obj` found at `path`, in the order the file wrote them. */
  keys(path: ReadonlyArray<string | number>, obj: Record<string, unknown>): string[] {
    const keys = Object.keys(obj);
    // Only integer-like keys are moved by JavaScript (and a mapping with merge keys is the library's order).
    if (!keys.some((k) => INTEGER_KEY.test(k))) return keys;
    const order = this.keyOrder(path);
    return order && order.length === keys.length && order.every((k) => Object.hasOwn(obj, k)) ? order : keys;
  }
}

const INTEGER_KEY = /^(?:0|[1-9][0-9]*)$/;

/** A mapping key YAML typed: what it is ('a boolean', 'a number', 'null', 'a date') and as written. */
export interface KeyKind {
  kind: string;
  written: string;
}

interface Flags {
  mayTemplate: boolean;
  mayUnsafe: boolean;
  encrypted: boolean;
}

/** In place, the `{secret: ...}` wrappers of a parsed value replaced by Secrets. */
export function unwrapSecrets(v: unknown, path: Array<string | number>, pos: (path: Array<string | number>) => SourcePos): unknown {
  if (v === null || typeof v !== 'object' || v instanceof Secret || v instanceof Unsafe) return v;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  if (!Array.isArray(v) && keys.length === 1 && keys[0] === 'secret') {
    if (typeof o.secret === 'string') return new Secret(o.secret, pos([...path, 'secret']));
    if (o.secret instanceof Secret) return o.secret;
    // YAML has already made `secret: 0123` the number 83: what the user wrote is lost
    throw new InputError(
      `a secret must be a string (quote it): got ${o.secret === null ? 'null' : typeof o.secret}`,
      pos([...path, 'secret']),
    );
  }
  for (const k of keys) o[k] = unwrapSecrets(o[k], [...path, Array.isArray(v) ? Number(k) : k], pos);
  return v;
}

/** An input file's text, decrypted when the whole file is vault-encrypted. */
export function readSourceText(file: string, what: string, vault: VaultKeyring | undefined): { text: string; encrypted: boolean } {
  let text: string;
  try {
    text = readInputText(file, what, INPUT_LIMITS.vars);
  } catch (e) {
    // file: first, as every inventory message starts
    if (e instanceof InputError && !e.pos) throw new InputError(e.detail.replace(`${what} ${file}`, what), { file });
    throw e;
  }
  if (!isVaultText(text)) return { text, encrypted: false };
  if (!vault)
    throw new InputError(
      `${what} is vault-encrypted but no vault password was given (--vault-password-file, --vault-id or --ask-vault-pass)`,
      { file, line: 1, col: 1 },
    );
  try {
    return { text: vault.decrypt(text), encrypted: true };
  } catch (e) {
    if (e instanceof VaultError) throw new InputError(`vault-encrypted ${what}: ${e.message}`, { file, line: 1, col: 1 });
    throw e;
  }
}

/** A vaulted value: its plaintext as a Secret (the ciphertext kept for --list). */
export function decryptValue(vaulttext: string, vault: VaultKeyring | undefined, pos: SourcePos): Secret {
  if (!vault) {
    const sealed = new SealedVaultValue(vaulttext);
    sealed.locate(pos);
    return sealed;
  }
  const s = new Secret(decryptOrThrow(vaulttext, vault, (m) => new InputError(m, pos)));
  vaultTextOf.set(s, vaulttext);
  return s;
}

function decryptOrThrow(vaulttext: string, vault: VaultKeyring | undefined, err: (m: string) => Error): string {
  if (!vault) throw err('a vaulted value, but no vault password was given (--vault-password-file, --vault-id or --ask-vault-pass)');
  try {
    return vault.decrypt(vaulttext);
  } catch (e) {
    if (e instanceof VaultError) throw err(`vaulted value: ${e.message}`);
    throw e;
  }
}

/**
 * The tags of Ansible's loader for the yaml library: PyYAML's implicit types (yaml11.ts) and
 * their explicit `!!` forms, `!vault`, `!unsafe`, plus racksmith's `!secret`. Every other tag
 * (`!!python/...`, `!!binary`, `!!set`, `!Secret`, `!exec`...) is unresolved: an error.
 */
function ansibleTags(vault: VaultKeyring | undefined) {
  const implicit = (tag: string, test: RegExp, resolve: (s: string) => unknown): ScalarTag => ({
    tag: `tag:yaml.org,2002:${tag}`,
    default: true,
    test,
    identify: () => false,
    resolve: guarded(resolve),
  });
  const explicit = (tag: string, resolve: (s: string) => unknown): ScalarTag => ({
    tag,
    identify: () => false,
    resolve: guarded(resolve),
  });
  const checked = (test: RegExp, what: string, f: (s: string) => unknown) => (s: string) => {
    if (!test.test(s)) throw new Yaml11Error(`'${s}' is not ${what}`);
    return f(s);
  };
  const { BOOL, FLOAT, INT, NULL, TIMESTAMP } = YAML11_PATTERNS;
  const tags: Array<ScalarTag | string> = [
    'merge',
    implicit('null', NULL, () => null),
    implicit('bool', BOOL, pyBool),
    implicit('float', FLOAT, pyFloat),
    implicit('int', INT, pyInt),
    implicit('timestamp', TIMESTAMP, pyTimestamp),
    // `=` and `<<` as values: PyYAML has no constructor for them (resolvePlain11 throws)
    implicit('value', /^(?:=|<<)$/, resolvePlain11),
    explicit('tag:yaml.org,2002:null', () => null),
    explicit('tag:yaml.org,2002:bool', (s) => {
      if (!BOOL.test(s)) throw new Yaml11Error(`'${s}' is not a boolean`);
      return pyBool(s);
    }),
    explicit('tag:yaml.org,2002:int', checked(/^[-+]?(?:0b[0-1_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?::[0-5]?[0-9])*)$/, 'an integer', pyInt)),
    explicit(
      'tag:yaml.org,2002:float',
      checked(/^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9_]+(?:[eE][-+]?[0-9]+)?|\.inf|\.nan)$/i, 'a number', pyFloat),
    ),
    explicit('tag:yaml.org,2002:timestamp', checked(TIMESTAMP, 'a timestamp', pyTimestamp)),
    explicit('!secret', (s) => new Secret(s)),
    explicit('!unsafe', (s) => new Unsafe(s)),
  ];
  for (const tag of ['!vault', '!vault-encrypted'])
    tags.push({
      tag,
      identify: () => false,
      resolve: (s: string, onError: (m: string) => void) => {
        if (!vault) return new SealedVaultValue(s);
        try {
          const secret = new Secret(decryptOrThrow(s, vault, (m) => new VaultError(m)));
          vaultTextOf.set(secret, s);
          return secret;
        } catch (e) {
          if (!(e instanceof VaultError)) throw e;
          onError(e.message);
          return s;
        }
      },
    });
  return (schemaTags: unknown[]) =>
    [
      // map, seq and str of the core schema; every scalar type is Ansible's
      ...schemaTags.filter((t) =>
        ['tag:yaml.org,2002:map', 'tag:yaml.org,2002:seq', 'tag:yaml.org,2002:str'].includes((t as ScalarTag).tag),
      ),
      ...tags,
    ] as ScalarTag[];
}

function guarded(f: (s: string) => unknown) {
  return (s: string, onError: (m: string) => void) => {
    try {
      return f(s);
    } catch (e) {
      if (!(e instanceof Yaml11Error)) throw e;
      onError(e.message);
      return s;
    }
  };
}

/** The node at `path` of the fast readers' position tree. */
function locatedAt(root: Located, path: ReadonlyArray<string | number>): Located | undefined {
  let node: Located | undefined = root;
  for (const seg of path) {
    if (!node) return undefined;
    node = node.keys ? node.keys.get(String(seg))?.value : node.items?.[Number(seg)];
  }
  return node;
}

/** Line and column (both from 1) of an offset, as the library's LineCounter gives them. */
export function lineCounterOf(text: string): (offset: number) => { line: number; col: number } {
  let starts: number[] | undefined;
  return (offset) => {
    if (!starts) {
      starts = [0];
      for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
    }
    // the first line start at or after the offset (LineCounter.linePos)
    let low = 0;
    let high = starts.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (starts[mid] < offset) low = mid + 1;
      else high = mid;
    }
    if (starts[low] === offset) return { line: low + 1, col: 1 };
    if (low === 0) return { line: 0, col: offset };
    return { line: low, col: offset - starts[low - 1] + 1 };
  };
}

/** Node offsets in a document the library parsed. */
class DocumentOffsets {
  constructor(private readonly doc: Document.Parsed) {}

  private node(path: ReadonlyArray<string | number>, key: boolean): { best: Node | null; node: unknown; complete: boolean } {
    const { isMap, isSeq, isAlias } = yamlLib();
    let node: unknown = this.doc.contents;
    let best: Node | null = (this.doc.contents as Node | null) ?? null;
    let i = 0;
    for (; i < path.length; i++) {
      if (isAlias(node)) node = node.resolve(this.doc);
      const seg = path[i];
      const last = i === path.length - 1;
      if (isMap(node)) {
        const pair = this.pairs(node).get(String(seg));
        if (!pair) break;
        if (last && key && pair.key) {
          best = pair.key as Node;
          return { best, node: pair.key, complete: true };
        }
        node = pair.value;
        best = (pair.value as Node | null) ?? (pair.key as Node);
      } else if (isSeq(node)) {
        node = node.items[Number(seg)];
        if (!node) break;
        best = node as Node;
      } else break;
    }
    return { best, node, complete: i === path.length };
  }

  offset(path: ReadonlyArray<string | number>, key: boolean): number {
    return this.node(path, key).best?.range?.[0] ?? 0;
  }

  keyKind(path: ReadonlyArray<string | number>): KeyKind | undefined {
    const { isScalar } = yamlLib();
    const { node, complete } = this.node(path, true);
    if (!complete || !isScalar(node)) return undefined;
    const v = node.value;
    const written = node.source ?? String(v);
    if (v === null) return { kind: 'null', written };
    if (typeof v === 'boolean') return { kind: 'a boolean', written };
    if (typeof v === 'number' || typeof v === 'bigint') return { kind: 'a number', written };
    // a timestamp reads as its ISO text here; PyYAML makes it a date
    if (node.type === 'PLAIN' && node.tag !== 'tag:yaml.org,2002:str' && YAML11_PATTERNS.TIMESTAMP.test(written))
      return { kind: 'a date', written };
    return undefined;
  }

  keys(path: ReadonlyArray<string | number>): string[] | undefined {
    const { isMap, isScalar, isAlias } = yamlLib();
    const found = this.node(path, false);
    const node = isAlias(found.node) ? found.node.resolve(this.doc) : found.node;
    const complete = found.complete;
    if (!complete || !isMap(node)) return undefined;
    const out: string[] = [];
    for (const p of node.items) {
      if (!isScalar(p.key)) return undefined;
      if (p.key.value === '<<' || typeof p.key.value === 'symbol') return undefined; // merged: the library's order
      out.push(String(p.key.value));
    }
    return out;
  }

  // The loader asks for the position of every host and variable: a key index per map, built
  // once, instead of a scan of (say) 1,000 hosts per question.
  private readonly index = new WeakMap<YAMLMap, Map<string, Pair>>();
  /** A map's pairs by key text (the first pair when two keys print the same, as a scan finds it). */
  private pairs(map: YAMLMap): Map<string, Pair> {
    let byKey = this.index.get(map);
    if (!byKey) {
      const { isPair, isScalar } = yamlLib();
      byKey = new Map();
      for (const p of map.items) {
        if (!isPair(p) || !isScalar(p.key)) continue;
        const k = String(p.key.value);
        if (!byKey.has(k)) byKey.set(k, p as Pair);
      }
      this.index.set(map, byKey);
    }
    return byKey;
  }
}

/**
 * The offset of a mapping's second `<<` merge key, if one has two: a repeated key, refused as
 * every repeated key is; the yaml library (not checking merge keys for uniqueness) lets the
 * first win where both bring a key, PyYAML (Ansible) the later.
 */
function secondMergeKeyAt(doc: Document.Parsed): number | undefined {
  const { isScalar, visit } = yamlLib();
  let at: number | undefined;
  visit(doc, {
    Map(_, map) {
      let merges = 0;
      for (const p of map.items) {
        // (only a plain << is a merge key, which the library resolves to a symbol: a quoted '<<' is a key)
        const merge = isScalar(p.key) && typeof p.key.value === 'symbol';
        if (merge && ++merges === 2 && (at === undefined || (p.key as Node).range![0] < at)) at = (p.key as Node).range![0];
      }
    },
  });
  return at;
}

/** Whether some map may repeat a scalar key (the library's test: same value; NaN is rechecked there). */
/** The offset of the earliest key in the text that repeats one before it in its mapping, if one does. */
function duplicateKeyAt(doc: Document.Parsed): number | undefined {
  const { isScalar, visit } = yamlLib();
  let dup: number | undefined;
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const p of map.items) {
        if (!isScalar(p.key)) continue;
        const at = p.key.range?.[0] ?? 0;
        if (seen.has(p.key.value) && (dup === undefined || at < dup)) dup = at;
        seen.add(p.key.value);
      }
    },
  });
  return dup;
}

/**
 * The offset of the first `[` or `{` nested deeper than MAX_DEPTH, counted outside quoted
 * scalars and comments (a conservative count: anything it finds is certainly too deep).
 */
function flowTooDeep(text: string): number | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */ || c === 39 /* ' */) {
      const q = c;
      for (i++; i < text.length && text.charCodeAt(i) !== q; i++) if (q === 34 && text.charCodeAt(i) === 92) i++;
    } else if (c === 35 /* # */ && (i === 0 || text[i - 1] === ' ' || text[i - 1] === '\t' || text[i - 1] === '\n')) {
      while (i < text.length && text.charCodeAt(i) !== 10) i++;
    } else if (c === 91 || c === 123) {
      if (++depth > MAX_DEPTH) return i;
    } else if ((c === 93 || c === 125) && depth > 0) depth--;
  }
  return undefined;
}

/** The offset of the first node nested deeper than MAX_DEPTH (walked without recursion), if any. */
function tooDeep(doc: Document.Parsed): number | undefined {
  const { isMap, isSeq, isPair } = yamlLib();
  const stack: Array<[unknown, number]> = [[doc.contents, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (depth > MAX_DEPTH) return (node as Node).range?.[0] ?? 0;
    if (isMap(node) || isSeq(node)) {
      for (const it of node.items as unknown[]) {
        if (isPair(it)) {
          if (it.key) stack.push([it.key, depth + 1]);
          if (it.value) stack.push([it.value, depth + 1]);
        } else stack.push([it, depth + 1]);
      }
    }
  }
  return undefined;
}

/** Aliases can make a value contain itself; nothing downstream can walk that. */
function isCyclic(value: unknown, path = new Set<object>()): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (path.has(value)) return true;
  path.add(value);
  for (const v of Object.values(value)) if (isCyclic(v, path)) return true;
  path.delete(value);
  return false;
}
