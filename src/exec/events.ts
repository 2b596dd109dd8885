import type { ExecHostResult } from './result.ts';

/**
 * `provision exec`'s events, in --json and the journal: a run's shape (run_start, one event per
 * host, recap), marked `kind: 'exec'` where a run's events and these could be taken one for the other.
 */
export type ExecEvent =
  | { type: 'run_start'; kind: 'exec'; command: string[]; pattern: string; hosts: string[]; check: false; playbooks: [] }
  | ({ type: 'exec' } & ExecEventResult)
  | {
      type: 'recap';
      kind: 'exec';
      exitCode: number;
      check: false;
      elapsedMs: number;
      hosts: Array<{ host: string; status: ExecHostResult['status']; exitCode: number | null }>;
    };

/** A host's result as its event carries it: each stream's text and how many bytes were cut after it. */
export type ExecEventResult = {
  host: string;
  status: ExecHostResult['status'];
  exitCode: number | null;
  stdout: string;
  stderr: string;
  stdoutCut?: number;
  stderrCut?: number;
  error?: string;
};

export function execEvent(r: ExecHostResult): ExecEvent {
  return {
    type: 'exec',
    host: r.host,
    status: r.status,
    exitCode: r.exitCode,
    stdout: r.stdout.text,
    stderr: r.stderr.text,
    ...(r.stdout.cut ? { stdoutCut: r.stdout.cut } : {}),
    ...(r.stderr.cut ? { stderrCut: r.stderr.cut } : {}),
    ...(r.error !== undefined ? { error: r.error } : {}),
  };
}
