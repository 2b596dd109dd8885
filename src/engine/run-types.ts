import type { Connection } from '../connection/types.ts';
import type { ConnectOptions } from '../connection/connect.ts';
import type { BecomeSetting } from '../connection/become.ts';
import type { Host } from '../inventory/model.ts';
import type { Resource } from '../contract/resource.ts';
import type { NoFacts, Play } from '../contract/playbook.ts';
import type { HostFacts } from '../facts/types.ts';
import type { Recap, ResourceResult } from './events.ts';
import type { PlannedResource } from './host-types.ts';
import type { DrainPlan } from './drain-session.ts';

// What a run is given and gives back: prepare()'s selection and plays, execute()'s options and outcome.

export interface RunSelection {
  limit?: string;
  tags?: string[];
  skipTags?: string[];
  /** -b, --become-user, --become-method (hosts' variables and plays' keywords win). */
  become?: BecomeSetting;
}

/** A host's gathered facts for a `facts: true` play, or why there are none. */
export type FactsOf = (host: string) => HostFacts | NoFacts;

/** A play with each selected host's resources already built and checked. */
export interface PreparedPlay {
  play: Play;
  hosts: Array<{ host: Host; resources: Resource[] }>;
  /** The variables the play read or validated while building its hosts' resources. */
  variables?: ReadonlySet<string>;
  /** A `facts: true` play prepared without facts: its hosts' resources are built once they are gathered. */
  awaitsFacts?: boolean;
}

export interface ExecuteOptions extends ConnectOptions {
  check: boolean;
  /** --yes: apply changes that need confirmation (Change.confirm) without a reviewed plan. */
  yes?: boolean;
  forks: number;
  /** Overrides each play's own `serial` / `maxFailPercent`. */
  serial?: Array<number | string>;
  maxFailPercent?: number;
  /** Attempts for transient connection errors (refused, reset, timeout). */
  connectAttempts: number;
  /** Fingerprint every resource's facts (`factHashes`): for writing or checking a saved plan. */
  hashFacts?: boolean;
  /** Saved-plan mode: per host and play, what was reviewed for each resource. */
  planned?: Map<string, Map<string, Map<string, PlannedResource>>>;
  /** Stop starting new hosts (Ctrl-C); hosts in flight finish the exec they are in. */
  signal?: AbortSignal;
  /** Give up on a host after this long (its connection is closed; it counts as unreachable). */
  hostTimeoutMs?: number;
  /**
   * Take each host's apply lock (apply-lock.ts) in every exec that applies, waiting this long for
   * another run's. The CLI always sets it; unset, no lock (a caller of its own, or test hosts that
   * are directories of this machine).
   */
  lockTimeoutSec?: number;
  /** Who this run is in the hosts' apply locks (default: controller host, pid, start time). */
  runId?: string;
  /** --drain: which hosts are drained around their disruptive changes, by what, through which host. */
  drain?: DrainPlan;
  /** Connection factory, replaceable in tests. */
  connector?: (host: Host, o: ConnectOptions) => Promise<Connection>;
  /**
   * Hosts not to run at all (their facts could not be gathered, or moved since the plan), each
   * with its recap's error and the execs it took before the run (the gatherer's).
   */
  refused?: ReadonlyMap<string, { error: string; unreachable: boolean; execs?: number }>;
}

export interface RunOutcome extends Recap {
  results: ResourceResult[];
  /** Per host and play, sha256 of each resource's facts (for --plan-out; empty unless `hashFacts`). */
  factHashes: Map<string, Map<string, Map<string, string>>>;
}
