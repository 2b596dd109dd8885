import type { Resource } from '../contract/resource.ts';
import type { ResourceResult } from './events.ts';
import type { ApplyLockOptions } from './apply-lock.ts';
import type { FleetViews } from './fleet.ts';

export interface HostRunOptions {
  host: string;
  play: string;
  check: boolean;
  /** --yes: changes that need confirmation (Change.confirm) apply without a reviewed plan. */
  yes?: boolean;
  /** Called as soon as a resource's outcome is known. */
  onResult: (r: ResourceResult) => void;
  /**
   * Saved-plan mode: every resource's facts must still hash to the reviewed value (else the host
   * is refused with a drift report), and each resource may make exactly its reviewed changes.
   */
  planned?: Map<string, PlannedResource>;
  /** Ctrl-C: apply no further waves (the exec in flight finishes). */
  signal?: AbortSignal;
  /**
   * Why the run was stopped (--max-fail-percent exceeded, a failure in an anyErrorsFatal play),
   * once it was: like Ctrl-C, no further wave or handler starts (the exec in flight finishes).
   */
  halted?: () => string | undefined;
  /** Resources of this host's later plays, probed in this run's first exec: one round trip for every play. */
  prefetch?: ReadonlyArray<readonly Resource[]>;
  /**
   * Their answers (`prefetch` flattened, in order), read as soon as the first exec returned: what
   * waits for a later play is each resource's facts, not the exec's output (a fleet's outputs,
   * split and held across the play barrier, cost far more memory and garbage collection).
   */
  onPrefetched?: (answers: Answer[]) => void;
  /** This play's answers, prefetched by an earlier play and still current: no probe exec. */
  probed?: readonly Answer[];
  /** Fingerprint the facts (saved plans): a sha256 per resource, only worth its cost there. */
  hashFacts?: boolean;
  /**
   * Before and after every exec that applies steps on `host`, with what its steps may change
   * (undefined: anything); the caller tracks whether prefetched facts still hold.
   */
  onApply?: (host: string, touches: readonly string[] | undefined) => void;
  /** Take the host's apply lock in every exec that applies steps (apply-lock.ts). */
  lock?: ApplyLockOptions;
  /**
   * --drain: called before an exec that applies a disruptive change (Change.disruptive); why the
   * host could not be drained, if so (then nothing disruptive runs: the host's run ends failed).
   */
  beforeDisruptive?: () => Promise<string | undefined>;
  /** The play's fleet groups (fleet.ts): keyed resources diff their facts with their group's. */
  fleet?: FleetViews;
}

export interface PlannedResource {
  factHash: string;
  /** Change summaries that were reviewed (empty: the resource was converged). */
  changes: string[];
  /**
   * Reviewed as "depends on a pending change" of this resource: its own changes could only be
   * known after that one applied, so whatever they turn out to be is what was approved.
   */
  pending?: string;
}

export interface HostRunResult {
  results: ResourceResult[];
  /** sha256 of each resource's facts, for saved plans. */
  factHashes: Map<string, string>;
  /** Set when the connection broke mid-run: the host counts as unreachable. */
  lostConnection?: string;
  /** The host could be reached but not escalated (sudo refused): it failed, with this cause. */
  becomeFailed?: string;
  /** Saved-plan mode: resources whose facts moved since the plan (the host was refused). */
  drift?: Array<{ id: string; now: string[]; planned: string[] }>;
  /** Another run held the host's apply lock: whom this run waited for (it re-read the host after). */
  lockWaits?: string[];
}

/** A resource's probe output as read by its parse: its facts, or why they could not be read. */
export type Answer = unknown;
