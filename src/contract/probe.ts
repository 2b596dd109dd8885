/**
 * The probe vocabulary of a resource: a probe is one shell snippet or a list of parts (plain,
 * batch, inline, define) that the engine lays out into one script per host (engine/probe-set.ts).
 */
import { randomBytes } from 'node:crypto';

/**
 * Probe work that many resources ask of a host, each for its own argument (a path): the engine
 * runs it once per script for all arguments (one `find` for every file instead of one per file).
 * `A` is the type of one argument's answer, as the asking resources' parse reads it.
 */
export interface ProbeBatch<A = string> {
  /** Shell answering for all of these arguments at once. */
  script(args: readonly string[]): string;
  /**
   * Each argument's answer, in `args` order. Answers are facts (read-only once made); an answer
   * equal to the last one given for the same argument may be that very object, which lets hosts
   * that answer alike share one parse.
   */
  split(stdout: string, args: readonly string[]): A[];
  /**
   * Its script keeps the inline contract (no `exit`, sets every variable it reads, `cd` only back
   * to `/`): it may share one subshell with the script's other shared sections, a fork saved per
   * section on every host (engine/script.ts).
   */
  readonly shared?: boolean;
}

/** One argument of a batch, as a part of a resource's probe. */
export interface BatchPart<A = string> {
  batch: ProbeBatch<A>;
  arg: string;
}

/**
 * Shell definitions (functions only: no output, no exit) that a probe's other parts call. The
 * script defines them once, at its top, however many probes ask for them word for word (each
 * disk's probe uses the same helpers).
 */
export interface DefinePart {
  define: string;
}

export type ProbePart = string | BatchPart<unknown> | DefinePart;

export function define(body: string): DefinePart {
  return { define: body };
}

// Starts each inline part's output; random per process, so no part can print it by chance.
const INLINE_MARK = `@@RS-INLINE-${randomBytes(6).toString('hex')}@@`;

/** Runs inline parts one after the other in one subshell (a subshell per part is a fork each). */
const INLINE: ProbeBatch = {
  shared: true,
  script: (bodies) => bodies.map((b, i) => `printf '\\n%s %d\\n' '${INLINE_MARK}' ${i}\n{\n${b}\n} </dev/null`).join('\n'),
  split(stdout, bodies) {
    // Parts print in order: each search starts where the last part's output ended.
    let from = 0;
    return bodies.map((_, i) => {
      const begin = `\n${INLINE_MARK} ${i}\n`;
      let at = stdout.indexOf(begin, from);
      if (at < 0) at = stdout.indexOf(begin);
      if (at < 0) return '';
      const start = at + begin.length;
      const end = stdout.indexOf(`\n${INLINE_MARK} `, start);
      from = end < 0 ? start : end;
      return stdout.slice(start, end < 0 ? undefined : end);
    });
  },
};

/**
 * A probe part that shares one subshell with the script's other inline parts (and its shared
 * batches): for checks where a subshell of their own would cost more than the work. It must not
 * `exit`, must set every variable it reads, and may `cd` only back to `/`.
 */
export function inline(body: string): BatchPart {
  return { batch: INLINE, arg: body };
}

/** An inline part (its argument is its shell), for wrappers that rewrite a probe's shell. */
export function isInline(part: BatchPart<unknown>): part is BatchPart {
  return part.batch === INLINE;
}

/** A resource's probe: one shell snippet, or parts whose outputs are joined in order. */
export type ProbeText = string | readonly ProbePart[];

/**
 * What a resource's `parse` gets: the answer of each part that answers (define parts do not), in
 * the probe's order. A plain or inline part answers its stdout; a batch part its batch's answer.
 */
export interface ProbeOutput {
  readonly parts: readonly unknown[];
  /** The text parts' stdout joined: for a probe of one snippet, simply its stdout. */
  readonly stdout: string;
  /** The first non-zero exit code of the probe's sections, else 0. */
  readonly code: number;
  readonly stderr: string;
}

/** A probe's output from its text (tests, a probe run on its own). */
export function textOutput(stdout: string, code = 0, stderr = ''): ProbeOutput {
  return { parts: [stdout], stdout, code, stderr };
}

/** The probe could not produce facts (missing tool, unreadable file, answers laid out otherwise). */
export class ProbeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProbeError';
  }
}

/**
 * A probe as its resource declares it: a part, or a list or a record of declarations (nested at
 * will), in the order the parts run; `undefined` is a part left out (an option not set). Records
 * name the answers (never `batch` or `define`: those make a part); a list of any length goes in a
 * record field (`disks: specs.map(diskPart)`).
 */
export type ProbeDecl = ProbePart | undefined | readonly ProbeDecl[] | { readonly [name: string]: ProbeDecl };

/**
 * What parse gets from a declaration: the same shape, each part replaced by its answer (a plain
 * part's stdout, a batch part's `A`), define parts and their record fields left out.
 */
export type Answers<D> = D extends string
  ? string
  : D extends BatchPart<infer A>
    ? A
    : D extends DefinePart | undefined
      ? undefined
      : D extends readonly unknown[]
        ? { readonly [K in keyof D]: Answers<D[K]> }
        : { readonly [K in keyof D as D[K] extends DefinePart ? never : K]: Answers<D[K]> };

/** The probe and parse of a resource, from its declared parts (spread into the resource). */
export interface Probed<F> {
  probe(): ProbeText;
  parse(out: ProbeOutput): F;
}

/**
 * A resource's `probe` and `parse` from one declaration: `probe` gives its parts, `parse` hands
 * `read` their answers typed by the declaration (`Answers<D>`), and `out` for its stdout, exit
 * code and stderr. `declare` runs once, at the first probe or parse. Answers not laid out as
 * declared (another count) are a ProbeError, never misread.
 *
 *   ...probed(() => ({ live: inline(sh), file: conf.probe() }), ({ live, file }) => ({ live, file: fileFacts(file) }))
 */
export function probed<const D extends ProbeDecl, F>(declare: () => D, read: (answers: Answers<D>, out: ProbeOutput) => F): Probed<F> {
  let layout: { parts: readonly ProbePart[]; answers: (out: ProbeOutput) => Answers<D> } | undefined;
  const laid = () => (layout ??= layOut(declare()));
  return {
    probe: () => laid().parts,
    parse: (out) => read(laid().answers(out), out),
  };
}

/** A declaration's parts in order, and the reader that puts their answers back in its shape. */
function layOut<D extends ProbeDecl>(decl: D): { parts: readonly ProbePart[]; answers: (out: ProbeOutput) => Answers<D> } {
  const parts: ProbePart[] = [];
  const reader = readerOf(decl, parts);
  const count = parts.filter(answering).length;
  return {
    parts,
    answers(out) {
      if (out.parts.length !== count) throw new ProbeError(`unexpected probe output: ${out.stdout.slice(0, 200)}`);
      // The engine gives the answer of the n-th answering part at n (engine/probe-set.ts), each
      // the answer of its own part's type: the declaration's type holds by construction.
      return reader(out.parts, { next: 0 }) as Answers<D>;
    },
  };
}

type Reader = (answers: readonly unknown[], at: { next: number }) => unknown;

/** Appends the declaration's parts to `parts`; returns what reads their answers back (built once). */
function readerOf(decl: ProbeDecl, parts: ProbePart[]): Reader {
  if (decl === undefined) return () => undefined;
  if (isPart(decl)) {
    parts.push(decl);
    return isDefine(decl) ? () => undefined : (answers, at) => answers[at.next++];
  }
  if (isList(decl)) {
    const items = decl.map((d) => readerOf(d, parts));
    return (answers, at) => items.map((read) => read(answers, at));
  }
  // A record's define fields are laid out but give no field (Answers leaves them out).
  const fields: Array<{ name: string; read: Reader }> = [];
  for (const [name, d] of Object.entries(decl)) {
    const read = readerOf(d, parts);
    if (!isDefine(d)) fields.push({ name, read });
  }
  return (answers, at) => {
    const o: Record<string, unknown> = {};
    for (const f of fields) o[f.name] = f.read(answers, at);
    return o;
  };
}

const isList = (d: ProbeDecl): d is readonly ProbeDecl[] => Array.isArray(d);
/** A part, not a record of them (a record's fields are never named batch or define). */
const isPart = (d: ProbeDecl): d is ProbePart =>
  typeof d === 'string' || (typeof d === 'object' && !isList(d) && ('batch' in d || 'define' in d));
const isDefine = (d: ProbeDecl): d is DefinePart => isPart(d) && typeof d === 'object' && 'define' in d;
const answering = (p: ProbePart): boolean => !isDefine(p);
