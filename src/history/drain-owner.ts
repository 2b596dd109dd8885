import { parseDrainMark, TAKEN_OVER, type DrainOwner } from '../contract/drain.ts';
import { runner } from './provenance.ts';
import { isRunId, readRecord, runsDir, type RunRecord } from './record.ts';
import { bootId, processStart } from './run-process.ts';

/** What this controller knows of the run a racksmith mark names. */
export interface OwnerFacts {
  /** This controller's name (as run records write it) and boot id. */
  controller: string;
  boot: string | undefined;
  /** The run's record in this controller's history, if it has one. */
  record: Pick<RunRecord, 'controller' | 'end' | 'exitCode' | 'process'> | undefined;
  /** The start of the live process with this pid (run-process.ts), if there is one. */
  startOf: (pid: number) => number | undefined;
  /** Where the history is, for the message. */
  runsDir: string;
}

/**
 * Whose the drain is that the racksmith mark of run `run` (of `markController`) left on a node: a
 * run of this controller that provably no longer runs (it ended; or its process is gone, or the
 * controller restarted since) is taken over; anything this controller cannot prove stays someone
 * else's: another controller's run (a sharded fleet: each controller's history knows its own
 * runs only), a run this history does not hold (another user's, pruned), one still running.
 */
export function whoseDrain(run: string, markController: string | undefined, f: OwnerFacts): DrainOwner {
  const other = (why: string): DrainOwner => ({ takeOver: false, why });
  if (markController !== undefined && markController !== f.controller)
    return other(
      `run ${run} is controller ${markController}'s, not this one's (${f.controller}): only its run history can tell whether it still runs`,
    );
  const r = f.record;
  if (!r)
    return other(
      `run ${run} is not in this controller's run history (${f.runsDir}): another user's or another controller's run, or pruned`,
    );
  if (r.controller !== f.controller)
    return other(`run ${run} ran on ${r.controller}, not here (${f.controller}): only there can it be told whether it still runs`);
  const taken = (why: string): DrainOwner => ({ takeOver: true, why: `${TAKEN_OVER}${run}, ${why}` });
  if (r.end !== undefined) return taken(`which ended at ${r.end} (exit ${r.exitCode ?? '?'}) without putting the node back`);
  const p = r.process;
  if (!p) return other(`run ${run} has no end, and its record does not say which process ran it: it may still be running`);
  if (f.boot !== undefined && p.boot !== f.boot) return taken('which did not finish: this controller has restarted since');
  const start = f.startOf(p.pid);
  if (start === undefined) return taken(`which did not finish: its process ${p.pid} is gone`);
  if (start !== p.start) return taken(`which did not finish: its process ${p.pid} is gone (that pid is another process's now)`);
  return other(`run ${run} is still running on this controller (pid ${p.pid})`);
}

/** ownerOf (contract/drain.ts) from this controller's run history and processes. */
export function drainOwnerFromHistory(): (reason: string) => DrainOwner | undefined {
  const { controller } = runner();
  const boot = bootId();
  return (reason) => {
    const mark = parseDrainMark(reason);
    if (!mark) return undefined;
    let record: RunRecord | undefined;
    try {
      record = isRunId(mark.run) ? readRecord(mark.run) : undefined;
    } catch {
      record = undefined; // (no record by that id, or one that cannot be read: nothing is proven)
    }
    return whoseDrain(mark.run, mark.controller, { controller, boot, record, startOf: processStart, runsDir: runsDir() });
  };
}
