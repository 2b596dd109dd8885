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
 * A probe part that shares one subshell with the script's other inline parts: for builtin-only
 * checks, where the subshell would cost more than the work. It must not `exit`, must set every
 * variable it reads, and may `cd` only back to `/`.
 */
export function inline(body: string): BatchPart {
  return { batch: INLINE, arg: body };
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
