import type { Change } from '../contract/resource.ts';

export type ResourceStatus = 'ok' | 'changed' | 'failed' | 'skipped';

/** A resource's outcome. A new optional field: also in withOptional below. */
export interface ResourceResult {
  host: string;
  play: string;
  id: string;
  kind: string;
  status: ResourceStatus;
  changes: Change[];
  /** Check mode: waits for a change of another resource, so its own diff is not known yet. */
  pending?: string;
  /** Unguarded command: runs every time, never "ok". */
  alwaysRuns?: boolean;
  error?: string;
}

export interface HostRecap {
  host: string;
  ok: number;
  /** Changes the apply would make now (check mode) or made. */
  changed: number;
  /**
   * Check mode: resources whose change waits on another's (their facts are known only once that
   * one applied: `pending` in their results), counted apart from `changed`. Always 0 in an apply.
   */
  pending?: number;
  failed: number;
  skipped: number;
  unreachable: boolean;
  /** Remote execs (round trips) made on this host's connection. */
  execs: number;
  error?: string;
  /** The runs whose apply lock on this host this run waited for (then it read the host again). */
  lockWaits?: string[];
}

export interface Recap {
  hosts: HostRecap[];
  exitCode: number;
  check: boolean;
  elapsedMs: number;
}

/** Everything the UI and the NDJSON stream see. */
export type RunEvent =
  | { type: 'run_start'; playbooks: string[]; hosts: string[]; check: boolean }
  | { type: 'play_start'; play: string; hosts: string[] }
  /** Something the run does differently from what the inventory asks (e.g. a connection variable racksmith does not honour). */
  | { type: 'warning'; message: string; variable?: string; at?: string; suggestion?: string }
  | { type: 'host_start'; host: string; play: string }
  | ({ type: 'resource' } & ResourceResult)
  /**
   * --drain: the host's work moved off before its first disruptive change (`drained`), found
   * already out by someone else (`already`, never resumed by this run), not emptied in time or
   * out under another racksmith run's drain (`failed`: nothing disruptive applied); in check mode
   * `would` (`may`: the resources whose disruptive changes wait on a pending change, when those
   * are all it has), or `blocked` (out under another racksmith run's drain: the apply's would fail).
   */
  | ({
      type: 'drain';
      outcome: DrainEventOutcome;
      detail?: string;
      may?: string[];
      /** A `failed` drain: whether this run had taken the node out (then it puts it back); `runs show` of a killed run reads it. */
      tookOut?: boolean;
    } & DrainHow)
  /**
   * --drain: a host this run drained is back in scheduling (`ok` false: why in `detail`; `ok`
   * true with a `detail`: what to know of it, put back by someone else while this run held it;
   * `someoneElses`: out under someone else's drain since, left so on purpose).
   */
  | ({ type: 'resume'; ok: boolean; detail?: string; someoneElses?: boolean } & DrainHow)
  | ({ type: 'host_recap' } & HostRecap)
  | ({ type: 'recap' } & Recap);

export type DrainEventOutcome = 'drained' | 'already' | 'failed' | 'would' | 'blocked';

/** A drain event's host, its provider (`via`), the host its commands run on, and its node in the scheduler when that is not the host's name. */
export interface DrainHow {
  host: string;
  via: string;
  controller: string;
  node?: string;
}

export type EventSink = (e: RunEvent) => void;

/** The run's first or last event: the sinks write them at once, with what they hold before them. */
export const isRunEdge = (e: RunEvent): boolean => e.type === 'run_start' || e.type === 'recap';

/** What a resource came to: its result without whose it is. */
export type Outcome = Omit<ResourceResult, 'host' | 'play' | 'id' | 'kind'>;

/**
 * A resource's result and its event are built as one object literal each, the outcome's optional
 * fields written after in order. Not a spread, nor fields added to a smaller literal: there is a
 * result and an event per resource on every host, and either costs more than the rest of a
 * converged resource's bookkeeping.
 */
function withOptional<T extends Outcome>(out: T, o: Outcome): T {
  if (o.pending !== undefined) out.pending = o.pending;
  if (o.alwaysRuns !== undefined) out.alwaysRuns = o.alwaysRuns;
  if (o.error !== undefined) out.error = o.error;
  return out;
}

export function resourceResult(host: string, play: string, id: string, kind: string, o: Outcome): ResourceResult {
  return withOptional<ResourceResult>({ host, play, id, kind, status: o.status, changes: o.changes }, o);
}

/** The event of a result. */
export function resourceEvent(r: ResourceResult): RunEvent {
  return withOptional(
    { type: 'resource' as const, host: r.host, play: r.play, id: r.id, kind: r.kind, status: r.status, changes: r.changes },
    r,
  );
}
