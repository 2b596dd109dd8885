import type { BoundedText } from './output-bound.ts';

/** What one host made of the command. */
export interface ExecHostResult {
  host: string;
  /** ok: exit 0; failed: another exit status, or the command did not run (sudo refused); unreachable: not reached, or lost. */
  status: 'ok' | 'failed' | 'unreachable';
  /** The command's exit status; null when it has none (not reached, killed, connection lost). */
  exitCode: number | null;
  stdout: BoundedText;
  stderr: BoundedText;
  /** Why there is no exit status, or why the command did not run. */
  error?: string;
}

/** Hosts whose results are the same in everything but the host: printed once, with their names. */
export interface ExecGroup {
  hosts: string[];
  result: ExecHostResult;
}

/**
 * Results folded as `dshbak -c` does: hosts whose stdout, stderr, exit status (and error) are
 * identical form one group. Groups come in the order of their first host; the biggest group is
 * not moved first, so the order is the hosts' order, the same from run to run.
 */
export function groupResults(results: readonly ExecHostResult[]): ExecGroup[] {
  const groups = new Map<string, ExecGroup>();
  for (const r of results) {
    const key = JSON.stringify([r.status, r.exitCode, r.error ?? null, r.stdout.text, r.stdout.cut, r.stderr.text, r.stderr.cut]);
    const g = groups.get(key);
    if (g) g.hosts.push(r.host);
    else groups.set(key, { hosts: [r.host], result: r });
  }
  return [...groups.values()];
}
