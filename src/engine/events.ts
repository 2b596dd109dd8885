import type { Change } from '../resources/types.ts';

export type ResourceStatus = 'ok' | 'changed' | 'failed' | 'skipped';

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
  changed: number;
  failed: number;
  skipped: number;
  unreachable: boolean;
  /** Remote execs (round trips) made on this host's connection. */
  execs: number;
  error?: string;
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
  | { type: 'host_start'; host: string; play: string }
  | ({ type: 'resource' } & ResourceResult)
  | ({ type: 'host_recap' } & HostRecap)
  | ({ type: 'recap' } & Recap);

export type EventSink = (e: RunEvent) => void;
