/**
 * Slurm drains (`--drain slurm`), run on the Slurm controller host: `scontrol update
 * nodename=N state=drain reason="racksmith <run id> on <controller>"` (running jobs go on, no new
 * one starts), then wait until no job runs on N; `state=resume` after. A node already draining,
 * drained, down or failing (someone else's reason) is left as it is: its jobs are still waited
 * for, it is never resumed. A node only drained (not down or failing) with the mark of a racksmith
 * run that provably no longer runs (DrainOptions.ownerOf) is taken over: the reason becomes this
 * run's, and it is resumed after; with the mark of one this run does not take over, its drain
 * fails at once (blocked, contract/drain.ts drainAction): that run resumes the node when its own
 * work ends. A node in a reservation (reserved, maint) still takes that reservation's jobs: it is
 * drained and resumed like any other.
 */
import {
  blockedDetail,
  drainAction,
  pollUntil,
  someoneElsesDetail,
  stopReason,
  type DrainExec,
  type ResumeOutcome,
  type DrainOptions,
  type DrainOutcome,
  type DrainOwner,
  type DrainProvider,
  type OutOfScheduling,
} from '../contract/drain.ts';
import { randomBytes } from 'node:crypto';
import { shq } from '../shell/quote.ts';

/** sinfo's state of one node and its reason: `drained|maintenance`. */
export const nodeStateScript = (node: string): string => `sinfo -h -N -n ${shq(node)} -o '%T|%E'`;

/** The jobs running (or completing) on the node, one id a line. */
export const runningJobsScript = (node: string): string => `squeue -h -w ${shq(node)} -t running,completing -o %i`;

export const drainScript = (node: string, reason: string): string =>
  `scontrol update nodename=${shq(node)} state=drain reason=${shq(reason)}`;

export const resumeScript = (node: string): string => `scontrol update nodename=${shq(node)} state=resume`;

/** The controller's configuration, which names its cluster (ClusterName). */
export const clusterScript = 'scontrol show config';

/** ClusterName of `scontrol show config`; undefined when it names none. */
export function parseClusterName(stdout: string): string | undefined {
  return /^ClusterName[ \t]*=[ \t]*(\S+)[ \t]*$/m.exec(stdout)?.[1];
}

/**
 * The put-back, asked and done in one script (one channel, and no round trip for an operator's
 * drain to slip into): the node's state and reason as nodeStateScript prints them, then the resume
 * only while the node is out (drained, down, failing) under a reason that is one of `marks` (this
 * run's), and then `done`: a line of the caller's, unguessable, which no reason can print. Its
 * exit status is sinfo's when that failed, else the resume's.
 */
export const resumeUnderMarkScript = (node: string, marks: readonly string[], done: string): string =>
  [
    `s=$(${nodeStateScript(node)}) || exit`,
    `printf '%s\\n' "$s"`,
    // (a node in two partitions is listed twice: its first line, as parseNodeState reads it)
    `nl='`,
    `'`,
    `first=\${s%%"$nl"*}`,
    // (out as alreadyOut says it: a drain, down or fail word in the state, sinfo's case or not)
    `case \${first%%|*} in`,
    `  *[Dd][Rr][Aa][Ii][Nn]* | *[Dd][Oo][Ww][Nn]* | *[Ff][Aa][Ii][Ll]*) ;;`,
    `  *) exit 0 ;;`,
    `esac`,
    `case \${first#*|} in`,
    `  ${marks.map(shq).join(' | ')}) ${resumeScript(node)} && echo ${shq(done)} ;;`,
    `esac`,
  ].join('\n');

export interface SlurmNodeState {
  /**
   * sinfo's long state without its flag suffix (`*` not responding, `~` powered off, `$` in a
   * maintenance reservation, ...): idle, mixed, allocated, draining, drained, reserved, maint, ...,
   * or base and flags joined by `+` as Slurm's complete state writes them (idle+drain, mixed+maint).
   */
  state: string;
  reason: string;
}

/** Parse `sinfo -o '%T|%E'` of one node (the first line: a node in two partitions is listed twice). */
export function parseNodeState(stdout: string): SlurmNodeState | undefined {
  const line = stdout.split('\n').find((l) => l.includes('|'));
  if (!line) return undefined;
  const [state, ...rest] = line.trim().split('|');
  return { state: state.replace(/[*~#!%$@^-]+$/, ''), reason: rest.join('|') };
}

/** The states (or flags) in which Slurm starts no new job on a node: drained, or down or failing. */
const DRAIN_STATES = new Set(['drain', 'drained', 'draining']);
const DOWN_STATES = new Set(['down', 'fail', 'failing']);
/**
 * A node in a reservation (reserved; maint, or the complete state's `maintenance` flag, for one
 * with flags=maint): it still takes that reservation's jobs, so it is not out of scheduling.
 */
const RESERVED_STATES = new Map([
  ['maint', 'maint'],
  ['maintenance', 'maint'],
  ['reserved', 'reserved'],
]);

const stateWords = (s: SlurmNodeState): string[] => s.state.toLowerCase().split('+');

/**
 * Whether the scheduler already keeps new work off the node: drained, draining, down, fail,
 * failing (alone or as a flag: idle+drain). Not reserved or maint: a reservation's jobs still
 * start there, so such a node is drained like any other.
 */
export function alreadyOut(s: SlurmNodeState): boolean {
  return stateWords(s).some((w) => DRAIN_STATES.has(w) || DOWN_STATES.has(w));
}

/** Drained or draining, and neither down nor failing: what a racksmith run's drain leaves, and what a later run may take over. */
export function drainedOnly(s: SlurmNodeState): boolean {
  const words = stateWords(s);
  return words.some((w) => DRAIN_STATES.has(w)) && !words.some((w) => DOWN_STATES.has(w));
}

/** The node's reservation state (reserved, maint) when it has one, for the output. */
export function reservationState(s: SlurmNodeState): string | undefined {
  const words = stateWords(s);
  return [...RESERVED_STATES].find(([w]) => words.includes(w))?.[1];
}

/** An already-out node's state and its reason, as the output says it: `drained (maintenance by ops)`. */
const outDetail = (s: SlurmNodeState): string => `${s.state}${s.reason && s.reason !== 'none' ? ` (${s.reason})` : ''}`;

async function run(exec: DrainExec, script: string, what: string): Promise<string> {
  const r = await exec(script);
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code ?? 'signal'}): ${r.stderr.trim() || r.stdout.trim()}`);
  return r.stdout;
}

/**
 * Whose the drain of a node already out is, when its reason is a racksmith mark: this run's own
 * (an earlier play's resume that failed), a run's that ended or died (taken over: DrainOptions.ownerOf),
 * or another run's (blocked). A node down or failing is never taken over: Slurm, or someone, has a
 * reason of its own; but one down under a live run's mark is still that run's to put back (blocked).
 */
function whoseOut(s: SlurmNodeState, ownerOf: DrainOptions['ownerOf'], ownMark?: string): DrainOwner | undefined {
  // (this run's own mark on a node down since: left as it is, as before; never blocked by itself)
  if (s.reason === ownMark) return drainedOnly(s) ? { takeOver: true, why: 'still drained by this run' } : undefined;
  const owner = ownerOf?.(s.reason);
  return drainedOnly(s) || !owner?.takeOver ? owner : undefined;
}

export const slurmDrain: DrainProvider = {
  name: 'slurm',
  async drain(exec: DrainExec, node: string, o: DrainOptions): Promise<DrainOutcome> {
    let drained = false;
    /** The jobs the last answer listed: said when a stop cuts the wait short, whenever it lands. */
    let still = '';
    try {
      const before = parseNodeState(await run(exec, nodeStateScript(node), `sinfo -n ${node}`));
      if (!before) return { kind: 'failed', detail: `Slurm does not know node ${node} (sinfo lists nothing)`, drained };
      const owner = alreadyOut(before) ? whoseOut(before, o.ownerOf, o.reason) : undefined;
      const action = drainAction(alreadyOut(before), owner);
      if (action === 'blocked')
        return { kind: 'failed', detail: blockedDetail(outDetail(before), owner!.why, resumeScript(node)), drained };
      const already = action === 'already';
      if (!already) {
        await run(exec, drainScript(node, o.reason), `scontrol drain ${node}`);
        drained = true;
        o.takenOut?.();
      }
      const jobs = async (): Promise<boolean | string> => {
        const ids = (await run(exec, runningJobsScript(node), `squeue -w ${node}`)).split('\n').filter(Boolean);
        still = ids.length ? `: job${ids.length > 1 ? 's' : ''} ${ids.join(', ')} still running` : '';
        return ids.length === 0 || still.slice(2);
      };
      const why = await pollUntil(jobs, o.timeoutSec, o.signal, `the jobs on ${node}`);
      if (why !== undefined) return { kind: 'failed', detail: owner?.takeOver ? `${why} (${owner.why})` : why, drained };
      if (owner?.takeOver) return { kind: 'drained', detail: owner.why };
      if (already) return { kind: 'already', detail: outDetail(before) };
      const reserved = reservationState(before);
      return reserved ? { kind: 'drained', detail: `was ${reserved} (still open to its reservation's jobs)` } : { kind: 'drained' };
    } catch (e) {
      // (Ctrl-C, or the host given up, kills the poll in flight on the controller: its failure is the stop's)
      const detail = o.signal?.aborted ? `${stopReason(o.signal)} while waiting for the jobs on ${node}${still}` : (e as Error).message;
      return { kind: 'failed', detail, drained };
    }
  },
  async outOfScheduling(exec: DrainExec, node: string, ownerOf?: DrainOptions['ownerOf']): Promise<OutOfScheduling> {
    const s = parseNodeState(await run(exec, nodeStateScript(node), `sinfo -n ${node}`));
    if (!s) throw new Error(`Slurm does not know node ${node} (sinfo lists nothing)`);
    const owner = alreadyOut(s) ? whoseOut(s, ownerOf) : undefined;
    const action = drainAction(alreadyOut(s), owner);
    if (action === 'drain') return undefined;
    if (action === 'blocked') return { blocked: blockedDetail(outDetail(s), owner!.why, resumeScript(node)) };
    return action === 'take-over' ? { takeOver: owner!.why } : outDetail(s);
  },
  async resume(exec: DrainExec, node: string, marks: readonly string[]): Promise<ResumeOutcome> {
    // (put back only under this run's mark: an operator who drained it since with a reason of
    // their own, a fault found, keeps it out)
    const done = `racksmith: resumed ${randomBytes(8).toString('hex')}`;
    const r = await exec(resumeUnderMarkScript(node, marks, done));
    const now = parseNodeState(r.stdout);
    const why = `(exit ${r.code ?? 'signal'}): ${r.stderr.trim()}`;
    if (!now) return r.code === 0 ? `Slurm does not know node ${node} (sinfo lists nothing)` : `sinfo -n ${node} failed ${why}`;
    // (sinfo answered: a failure is the resume's)
    if (r.code !== 0) return `scontrol resume ${node} failed ${why}`;
    if (r.stdout.split('\n').includes(done) || !alreadyOut(now)) return undefined;
    return { someoneElses: someoneElsesDetail(outDetail(now)) };
  },
  async clusterOf(exec: DrainExec): Promise<string> {
    const name = parseClusterName(await run(exec, clusterScript, 'scontrol show config'));
    if (name === undefined) throw new Error('scontrol show config names no ClusterName');
    return name;
  },
};
