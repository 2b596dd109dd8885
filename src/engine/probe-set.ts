import { buildScript, splitOutput, type Section, type SectionOutput } from './script.ts';
import type { BatchPart, ProbeBatch, ProbeOutput, ProbeText } from '../contract/probe.ts';

/**
 * Where a part's answer is: a plain section, or a batch's slot. One object shape for both (batch
 * undefined for a plain section): the code that reads refs stays monomorphic for V8 whichever
 * kinds of part a play's resources bring.
 */
interface Ref {
  section: number;
  batch: ProbeBatch<unknown> | undefined;
  slot: number;
}

/**
 * The probes of many resources as script sections: a part that several resources share word for
 * word (the mount table, a disk's probe) runs once, and each batch runs once with every argument
 * asked of it. `output` gives each probe's answer back as if it had run alone.
 */
export class ProbeSet {
  private readonly refs: Ref[][];
  private readonly batches = new Map<ProbeBatch<unknown>, { section: number; args: string[]; slots: Map<string, number> }>();
  /**
   * The answers given last, per section's batch slot and per multi-part probe: an answer equal to
   * the last one is given as that very string, and a probe whose parts all are as that very
   * output; a batch answered word for word as last time is not split again. Converged hosts
   * mostly answer alike, and the engine compares each answer with the last one parsed: by
   * identity, that costs nothing, and no joined output is built for it.
   */
  private readonly lastBatch = new Map<number, { stdout: string | undefined; answers: unknown[] }>();
  private readonly lastPlain = new Map<number, string>();
  private readonly lastAnswers = new Map<number, ProbeAnswers>();
  /**
   * The batch answers of the exec output read last, per section: a host's probes are read one
   * after the other from its output (a set is shared by the hosts of a play's build), so each
   * batch is split once per output.
   */
  private splitOf: { outs: readonly SectionOutput[]; answers: Map<number, unknown[]> } | undefined;

  constructor(sections: Section[], probes: readonly ProbeText[]) {
    const seen = new Map<string, number>();
    const defined = new Set<string>();
    this.refs = probes.map((p) => {
      const refs: Ref[] = [];
      for (const part of typeof p === 'string' ? [p] : p) {
        if (typeof part !== 'string' && 'define' in part) {
          // no output of its own: nothing of the probe's answer comes from it
          if (!defined.has(part.define)) sections.push({ kind: 'define', body: part.define });
          defined.add(part.define);
        } else refs.push(this.ref(sections, seen, part));
      }
      return refs;
    });
    for (const [batch, b] of this.batches) sections[b.section] = { kind: 'probe', body: batch.script(b.args), shared: batch.shared };
  }

  /** A part's place in the script: its own section (shared when word for word), or a batch's slot. */
  private ref(sections: Section[], seen: Map<string, number>, part: string | BatchPart<unknown>): Ref {
    if (typeof part !== 'string') {
      let b = this.batches.get(part.batch);
      if (!b) {
        b = { section: sections.push({ kind: 'probe', body: '' }) - 1, args: [], slots: new Map() };
        this.batches.set(part.batch, b);
      }
      let slot = b.slots.get(part.arg);
      if (slot === undefined) {
        slot = b.args.push(part.arg) - 1;
        b.slots.set(part.arg, slot);
      }
      return { section: b.section, batch: part.batch, slot };
    }
    let i = seen.get(part);
    if (i === undefined) {
      i = sections.push({ kind: 'probe', body: part }) - 1;
      seen.set(part, i);
    }
    return { section: i, batch: undefined, slot: -1 };
  }

  /**
   * Probe `i`'s answers: each part's, the first failing exit code (null when a section did not
   * run), their stderr. An answer equal to the last one given for this probe is that same object.
   */
  output(outs: readonly SectionOutput[], i: number): ProbeAnswers {
    const refs = this.refs[i];
    const parts: unknown[] = [];
    let stderr = '';
    let didNotRun = false;
    let failed: number | undefined;
    for (const r of refs) {
      const o = outs[r.section];
      parts.push(this.partAnswer(outs, r));
      stderr += o.stderr;
      if (o.code === null) didNotRun = true;
      else if (o.code !== 0) failed ??= o.code;
    }
    const code = didNotRun ? null : (failed ?? 0);
    const last = this.lastAnswers.get(i);
    if (last && last.code === code && last.stderr === stderr && sameParts(last.parts, parts)) return last;
    const out = new ProbeAnswers(parts, stderr, code);
    this.lastAnswers.set(i, out);
    return out;
  }

  /** A part's answer: its slot of a batch, or a plain section's stdout. */
  private partAnswer(outs: readonly SectionOutput[], r: Ref): unknown {
    return r.batch !== undefined ? this.answers(outs, r.section, r.batch)[r.slot] : this.plain(outs, r.section);
  }

  /** A plain section's stdout, as the string given last when equal to it. */
  private plain(outs: readonly SectionOutput[], section: number): string {
    const stdout = outs[section].stdout;
    const last = this.lastPlain.get(section);
    if (last === stdout) return last;
    this.lastPlain.set(section, stdout);
    return stdout;
  }

  /** A batch's answers, split once per script output (see splitOf). */
  private answers(outs: readonly SectionOutput[], section: number, batch: ProbeBatch<unknown>): unknown[] {
    if (this.splitOf?.outs !== outs) this.splitOf = { outs, answers: new Map() };
    const split = this.splitOf.answers;
    let a = split.get(section);
    if (!a) {
      const o = outs[section];
      const last = this.lastBatch.get(section);
      if (o.code !== null && last?.stdout === o.stdout)
        a = last.answers; // answered word for word as last time
      else {
        const args = this.batches.get(batch)!.args;
        // (a batch that did not run answers nothing: its probes are not parsed)
        a = sameWhereEqual(o.code === null ? args.map(() => undefined) : batch.split(o.stdout, args), last?.answers);
        this.lastBatch.set(section, { stdout: o.code === null ? undefined : o.stdout, answers: a });
      }
      split.set(section, a);
    }
    return a;
  }
}

/** A batch's fresh answers, each equal (===) to the last answer in its slot given as that very one. */
function sameWhereEqual(fresh: readonly unknown[], last: readonly unknown[] | undefined): unknown[] {
  return fresh.map((x, k) => (last !== undefined && x === last[k] ? last[k] : x));
}

/** The same parts, each the very same answer (or an equal string). */
export function sameParts(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false;
  return true;
}

/**
 * A probe's answers from one exec: a ProbeOutput for the resource's parse once `code` is known not
 * to be null (null: some section of it did not run). Its text parts are joined only when read.
 */
export class ProbeAnswers implements Omit<ProbeOutput, 'code'> {
  private joined: string | undefined;
  constructor(
    readonly parts: readonly unknown[],
    readonly stderr: string,
    readonly code: number | null,
  ) {}
  get stdout(): string {
    if (this.joined === undefined) {
      let s = '';
      for (const p of this.parts) if (typeof p === 'string') s += p;
      this.joined = s;
    }
    return this.joined;
  }
}

/**
 * A probe run on its own (tests, profiling): the script, and what the resource's parse gets from
 * its stdout (`code` -1 when a section did not run).
 */
export function standaloneProbe(p: ProbeText): { script: string; output(stdout: string, stderr?: string): ProbeOutput } {
  const sections: Section[] = [];
  const set = new ProbeSet(sections, [p]);
  const { script, marker } = buildScript(sections);
  return {
    script,
    output(stdout, stderr = '') {
      const a = set.output(splitOutput(stdout, marker, sections.length, stderr), 0);
      return { parts: a.parts, stdout: a.stdout, stderr: a.stderr, code: a.code ?? -1 };
    },
  };
}
