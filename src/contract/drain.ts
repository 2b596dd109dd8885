/**
 * A drain provider moves the work off a node before a disruptive change (Change.disruptive) and
 * lets it back after: Kubernetes (cordon + evictions) or Slurm (state=drain, wait for the jobs).
 * The engine knows only this interface (engine/drain-session.ts); providers live in src/drain/.
 * Their commands run on a controller host (the first control-plane host, the Slurm controller)
 * through `exec`, one script per call, every value quoted (shell/quote.ts).
 */

import { printable } from '../util/printable.ts';

/** Runs a POSIX sh script on the provider's controller host. */
export type DrainExec = (script: string) => Promise<{ code: number | null; stdout: string; stderr: string }>;

/** What a drain came to. */
export type DrainOutcome =
  /** This run took the node out: it must put it back (resume). */
  | { kind: 'drained'; detail?: string }
  /** Someone else (an operator, not a racksmith run) had already taken the node out (why, as its scheduler says): it stays so. */
  | { kind: 'already'; detail: string }
  /**
   * The node could not be emptied (timeout, an eviction refused, a command failed), or it is out
   * under another racksmith run's drain (blockedDetail): nothing disruptive may run. `drained`:
   * this run did take it out, so it is put back all the same.
   */
  | { kind: 'failed'; detail: string; drained: boolean };

/**
 * Whose a racksmith mark on a node is (a node already out of scheduling, its reason a racksmith
 * run's: drainMark): `takeOver` when that run provably no longer runs (a crashed or killed run
 * of this controller, history/drain-owner.ts), so this run keeps the node out and puts it back;
 * else the node is another run's, which will put it back itself: this run's drain of it is
 * blocked (drainAction). `why` is said in the drain's detail either way.
 */
export interface DrainOwner {
  takeOver: boolean;
  why: string;
}

/** How the detail of a drain taken over from a dead run begins (DrainOwner.why): `runs show` tells such a drain apart by it. */
export const TAKEN_OVER = 'taken over from run ';

/**
 * What a drain does with a node as it finds it: `drain` it (in scheduling); `take-over` (out under
 * this run's own mark, or a dead run's that DrainOwner says this run takes over); `already`, left
 * as it is (out by someone who is no racksmith run: an operator's drain stays until a human ends
 * it, and the change is applied under it); `blocked` (out under another racksmith run's mark that
 * this run does not take over: that run puts the node back when its own work ends, maybe in the
 * middle of this host's change, so the drain fails and nothing disruptive runs).
 * `owner`: undefined when the node's mark is not racksmith's.
 */
export type DrainAction = 'drain' | 'take-over' | 'already' | 'blocked';
export function drainAction(out: boolean, owner: DrainOwner | undefined): DrainAction {
  if (!out) return 'drain';
  if (!owner) return 'already';
  return owner.takeOver ? 'take-over' : 'blocked';
}

/**
 * A blocked drain's detail (drainAction): the node's state, whose drain it is (DrainOwner.why),
 * and what to do, with the scheduler's own command to put the node back (`byHand`).
 */
export const blockedDetail = (state: string, why: string, byHand: string): string =>
  `${state}: ${why}; no disruptive change is applied under another racksmith run's drain, which that run ends (puts the node back) ` +
  `when its own work ends, maybe in the middle of this host's changes: run again once that run has ended; if it never will ` +
  `(another controller's run that died, a pruned run), put the node back by hand (${byHand}) and run again`;

/** The reason racksmith records on a node it takes out: run id and controller, for a later run (and the operator) to find the run. */
export const drainMark = (runId: string, controller?: string): string =>
  controller ? `racksmith ${runId} on ${controller}` : `racksmith ${runId}`;

/**
 * The run ids a mark can carry: a run of the history (history/record.ts) or, from a run without
 * one (an older racksmith, a program calling the engine), `host:pid:time` (engine/apply-lock.ts
 * newRunId). Only these: an operator's reason that happens to begin with the word (`racksmith
 * upgrade`) is the operator's drain, not a run's to be blocked by.
 */
const MARK_RUN_ID = /^(?:\d{8}T\d{6}Z-[0-9a-f]{6}|[A-Za-z0-9._-]+:\d+:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)$/;

/** A racksmith mark's run id and controller (undefined: not a racksmith mark). */
export function parseDrainMark(reason: string): { run: string; controller?: string } | undefined {
  const m = /^racksmith (\S+)(?: on (\S+))?$/.exec(reason.trim());
  return m && MARK_RUN_ID.test(m[1]) ? { run: m[1], ...(m[2] ? { controller: m[2] } : {}) } : undefined;
}

/** A node of a scheduler: its provider (`slurm`, `kubernetes`), the controller it is run through, its name there. */
export interface DrainNode {
  via: string;
  controller: string;
  node: string;
}

/** A node as its drain claim names it: with its cluster's identity when its scheduler says it (DrainProvider.clusterOf). */
export interface ClaimedNode extends DrainNode {
  cluster?: string;
}

/**
 * Drain claims (history/drain-claim.ts): two runs of one controller must not drain one node at
 * once (the scheduler cannot compare-and-set its mark: the second's would replace the first's,
 * and whichever ends first would put the node back in the middle of the other's changes), nor
 * both take over a dead run's drain. So each run claims the node before its drain asks the
 * scheduler anything; a run that finds another's claim waits until that run lets go.
 */
export interface DrainClaims {
  /** Claim the node for this run: undefined when it is this run's now, else why not. */
  claim(n: ClaimedNode): ClaimAnswer;
  /** Check mode, read only: what a claim would answer now (undefined: got). */
  peek(n: ClaimedNode): ClaimAnswer;
  /** Whether this run holds the claim of any node now. */
  holdsAny(): boolean;
  /** Let go of this run's claim on the node, if it has one (the node resumed). */
  release(n: ClaimedNode): void;
  /** Let go of every claim of this run: its end, once recorded (a node whose resume failed stays claimed until then). */
  releaseAll(): void;
}

/**
 * A claim not got: `held` by another live run of this controller, which lets go when it is done
 * with the node (`older`: that run started before this one); or it `cannot` be got until someone
 * acts (a claim file that cannot be read, the state directory not writable).
 */
export type ClaimAnswer = undefined | { held: string; older: boolean } | { cannot: string };

/**
 * Which nodes this run may have out of scheduling, kept where its run history is
 * (history/drain-ledger.ts): a run that died with nodes out keeps its record, so that a later
 * run can still prove it dead and take them over.
 */
export interface DrainLedger {
  /** Just before this run's drain of the node starts. */
  taking(n: DrainNode): void;
  /** The node is not out by this run (someone else's, nothing taken out) or back in scheduling. */
  back(n: DrainNode): void;
  /** This run took the node over from run `from` (its mark's run id): it is that run's no longer. */
  takenOver(from: string, n: DrainNode): void;
  /**
   * This run's drain found the node in scheduling, or out under someone else's drain: no other
   * run has it out, so a dead run's ledger that still names it (killed before its drain took the
   * node out; or the node put back by hand since) is told so.
   */
  foundNotOut(n: DrainNode): void;
}

export interface DrainOptions {
  /** Why, as recorded on the node (Slurm's reason): this run's mark, "racksmith <run id> on <controller>" (drainMark). */
  reason: string;
  /**
   * Whose a racksmith mark found on a node already out is; undefined for a reason that is not
   * one. Unset: every mark but this run's own is left as someone else's (`already`).
   */
  ownerOf?: (reason: string) => DrainOwner | undefined;
  /** How long the node's work may take to leave, in seconds. */
  timeoutSec: number;
  /**
   * Stop waiting (the outcome is failed, drained as it stands): Ctrl-C, or the host given up
   * (--host-timeout); its reason, a string, says which (stopReason).
   */
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
  /**
   * Put a node this run drained back into scheduling, only while it is out under one of `marks`
   * (this run's; and that of a dead run it took the node over from): undefined when it is back (or
   * was already), why it failed if it did, or `someoneElses` when the node is out under another
   * mark since (an operator drained it, with a reason of their own, while this run held it): left
   * out, not put back.
   */
  resume(exec: DrainExec, node: string, marks: readonly string[]): Promise<ResumeOutcome>;
  /**
   * Check mode, read only: whether someone else already keeps new work off the node, and why as
   * its scheduler says (what drain() would report as `already`); undefined when it is in scheduling;
   * `takeOver` when it is out by a racksmith run that ownerOf says the apply takes over; `blocked`
   * (blockedDetail) when it is out by one the apply does not take over (its drain would fail).
   */
  outOfScheduling?(exec: DrainExec, node: string, ownerOf?: DrainOptions['ownerOf']): Promise<OutOfScheduling>;
  /**
   * The identity of the cluster the controller runs, as its scheduler says it (Slurm's ClusterName,
   * the kube-system namespace's UID); throws when it cannot be read. Drain claims are keyed by it:
   * two spellings of one controller meet at one claim, two clusters' nodes of one name do not.
   * Unset: claims by scheduler and node name.
   */
  clusterOf?(exec: DrainExec): Promise<string>;
}

/**
 * What a resume came to (DrainProvider.resume): undefined, put back; a string, not put back (why);
 * `someoneElses`, out under someone else's drain now, left so; `back`, in scheduling again with
 * something the operator should know (put back by hand while the run held it).
 */
export type ResumeOutcome = undefined | string | { someoneElses: string } | { back: string };

/** A resume left to someone else: the node's state and reason as its scheduler says them now. */
export const someoneElsesDetail = (state: string): string =>
  `${state}: out of scheduling under someone else's drain since this run took it out; left so, not put back`;

/** A check run's answer of outOfScheduling (DrainProvider). */
export type OutOfScheduling = string | { takeOver: string } | { blocked: string } | undefined;

/** Why a drain was stopped, for its outcome: the signal's reason when it gives one (the host timed out), else Ctrl-C's. */
export const stopReason = (signal: AbortSignal | undefined): string => (typeof signal?.reason === 'string' ? signal.reason : 'interrupted');

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
    if (signal?.aborted) return `${stopReason(signal)} while waiting for ${what}${still}`;
    if (Date.now() >= end) return `timed out after ${timeoutSec}s waiting for ${what}${still}`;
    await new Promise((res) => setTimeout(res, Math.min(DRAIN_POLL_MS, Math.max(0, end - Date.now()))));
  }
}

/** How a host is drained, as every view says it: `slurm via ctl1`, with `, node worker-3` when its node is not named as the host. */
export const drainHowText = (d: { via: string; controller: string; node?: string }): string =>
  `${printable(d.via)} via ${printable(d.controller)}${d.node !== undefined ? `, node ${printable(d.node)}` : ''}`;
