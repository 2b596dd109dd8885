import type { Connection } from '../connection/types.ts';
import { BecomeError } from '../connection/become.ts';
import type { Resource, Step } from '../contract/resource.ts';
import type { ProbeOutput } from '../contract/probe.ts';
import { ProbeSet, type ProbeAnswers } from './probe-set.ts';
import { buildScript, splitOutput, type Section, type SectionOutput } from './script.ts';
import { parseOnce, probeLayout, probeOf } from './host-caches.ts';
import { failUnfinished, ingestAnswer, Unreadable, type State } from './host-state.ts';
import type { Answer, HostRunOptions } from './host-types.ts';

// One exec on a host: a script of sections sent, its output split, its failure as a whole named.

/**
 * One exec that probes a play's resources and those of the host's later plays: their answers (in
 * order), or why the exec failed as a whole.
 */
export async function probeHost(
  conn: Connection,
  resources: readonly Resource[],
  later: ReadonlyArray<readonly Resource[]>,
): Promise<{ answers: Answer[]; later: Answer[] } | string> {
  const { set, sections, body } = probeLayout(resources, later);
  const out = await execSections(conn, sections, body);
  if (typeof out === 'string') return out;
  const answers: Answer[] = [];
  for (let i = 0; i < resources.length; i++) answers.push(readAnswer(resources[i], set.output(out, i)));
  const rest: Answer[] = [];
  let i = resources.length;
  for (const rs of later) for (const r of rs) rest.push(readAnswer(r, set.output(out, i++)));
  return { answers, later: rest };
}

/** Read a probe output into facts (parse is pure: hosts answering alike share one parse). */
export function readAnswer(r: Resource, out: ProbeAnswers): Answer {
  if (out.code === null) return new Unreadable('probe did not run to completion');
  try {
    return parseOnce(r, out as ProbeAnswers & ProbeOutput);
  } catch (e) {
    return new Unreadable(`probe: ${(e as Error).message}`);
  }
}

/** Probe the undecided resources again (after waiting for the apply lock); why the exec failed, if it did. */
export async function reprobe(
  conn: Connection,
  o: HostRunOptions,
  factHashes: Map<string, string>,
  states: State[],
): Promise<string | undefined> {
  const open = states.filter((s) => !s.result);
  const sections: Section[] = [];
  const set = new ProbeSet(
    sections,
    open.map((s) => probeOf(s.r)),
  );
  const out = await execSections(conn, sections);
  if (typeof out === 'string') return out;
  open.forEach((s, i) => ingestAnswer(o, factHashes, s, readAnswer(s.r, set.output(out, i))));
  return undefined;
}

/** A failed step's message: its name, exit code and the last lines it printed. */
export function stepError(step: Step, so: SectionOutput): string {
  const why = so.code === null ? 'did not run (connection lost or earlier failure)' : `exit ${so.code}`;
  const detail = (so.stderr || so.stdout).trim().split('\n').slice(-5).join('\n');
  return `step "${step.name}" ${why}${detail ? `: ${detail}` : ''}`;
}

/** Run sections as one script: their outputs, or why the exec failed as a whole. */
export async function execSections(conn: Connection, sections: Section[], body?: string): Promise<SectionOutput[] | string> {
  const { script, marker } = buildScript(sections, body);
  try {
    const res = await conn.exec(script);
    if (res.code !== 0 && res.code !== null) {
      // The wrapper itself did not run (no /bin/sh, a dead session): every section lacks output.
      if (!res.stdout.includes(marker)) return `remote shell failed (exit ${res.code}): ${res.stderr.trim()}`;
    }
    return splitOutput(res.stdout, marker, sections.length, res.stderr);
  } catch (e) {
    return e instanceof BecomeError ? `${BECOME_FAILED_PREFIX}${e.message}` : (e as Error).message;
  }
}

/** Begins an exec's failure that is a refused escalation, not a lost connection. */
const BECOME_FAILED_PREFIX = 'not run: ';
/** The error of each resource of a host whose escalation was refused (the host's error says why). */
export const BECOME_REFUSED = 'not run: become failed on this host';

/**
 * An exec that failed as a whole: a refused escalation (sudo's message once, as the host's error;
 * the unfinished resources only point there) or a lost connection (each of them says so).
 */
export function execFailed(o: HostRunOptions, states: State[], why: string): { becomeFailed: string } | { lostConnection: string } {
  if (why.startsWith(BECOME_FAILED_PREFIX)) {
    failUnfinished(o, states, BECOME_REFUSED);
    return { becomeFailed: why };
  }
  failUnfinished(o, states, why);
  return { lostConnection: why };
}
