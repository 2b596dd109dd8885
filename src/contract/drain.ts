/**
 * A drain provider moves the work off a node before a disruptive change (Change.disruptive) and
 * lets it back after: Kubernetes (cordon + evictions) or Slurm (state=drain, wait for the jobs).
 * The engine knows only this interface (engine/drain-session.ts); providers live in src/drain/.
 * Their commands run on a controller host (the first control-plane host, the Slurm controller)
 * through `exec`, one script per call, every value quoted (shell/quote.ts).
 */

/** Runs a POSIX sh script on the provider's controller host. */
export type DrainExec = (script: string) => Promise<{ code: number | null; stdout: string; stderr: string }>;

/** What a drain came to. */
export type DrainOutcome =
  /** This run took the node out: it must put it back (resume). */
  | { kind: 'drained'; detail?: string }
  /** Someone else had already taken the node out (why, as its scheduler says): it stays so. */
  | { kind: 'already'; detail: string }
  /**
   * The node could not be emptied (timeout, an eviction refused, a command failed): nothing
   * disruptive may run. `drained`: this run did take it out, so it is put back all the same.
   */
  | { kind: 'failed'; detail: string; drained: boolean };

export interface DrainOptions {
  /** Why, as recorded on the node (Slurm's reason): "racksmith <run id>". */
  reason: string;
  /** How long the node's work may take to leave, in seconds. */
  timeoutSec: number;
  /** Ctrl-C: stop waiting (the outcome is failed, drained as it stands). */
  signal?: AbortSignal;
  /**
   * Called as soon as this run has taken the node out of scheduling (cordon, state=drain), before
   * the wait for its work: from then on the node is put back however drain() ends, Ctrl-C included
   * (which stops the provider's commands in flight, so drain() may never return a result).
   */
  takenOut?: () => void;
}

export interface DrainProvider {
  /** `kubernetes`, `slurm`: what --drain and racksmith_drain name. */
  readonly name: string;
  /** Take `node` out of scheduling and wait until its work is gone, within the timeout. */
  drain(exec: DrainExec, node: string, o: DrainOptions): Promise<DrainOutcome>;
  /** Put a node this run drained back into scheduling; why it failed, if it did. */
  resume(exec: DrainExec, node: string): Promise<string | undefined>;
  /**
   * Check mode, read only: whether someone else already keeps new work off the node, and why as
   * its scheduler says (what drain() would report as `already`); undefined when it is in scheduling.
   */
  outOfScheduling?(exec: DrainExec, node: string): Promise<string | undefined>;
}

/** How often a provider asks whether the node's work is gone (the wait is that condition, bounded by the timeout). */
export const DRAIN_POLL_MS = 500;

/**
 * Poll `done` every DRAIN_POLL_MS until it answers true, the timeout passes or the signal fires:
 * undefined when done, else why not. `done` throws to fail at once (a command that failed).
 */
export async function pollUntil(
  done: () => Promise<boolean | string>,
  timeoutSec: number,
  signal: AbortSignal | undefined,
  what: string,
): Promise<string | undefined> {
  const end = Date.now() + timeoutSec * 1000;
  for (;;) {
    const r = await done();
    if (r === true) return undefined;
    const still = typeof r === 'string' ? `: ${r}` : '';
    if (signal?.aborted) return `interrupted while waiting for ${what}${still}`;
    if (Date.now() >= end) return `timed out after ${timeoutSec}s waiting for ${what}${still}`;
    await new Promise((res) => setTimeout(res, Math.min(DRAIN_POLL_MS, Math.max(0, end - Date.now()))));
  }
}
