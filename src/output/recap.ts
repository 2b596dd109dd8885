import { printable } from '../util/printable.ts';
import type { Recap } from '../engine/events.ts';

/**
 * The end-of-run table: one row per host, like ansible-playbook's PLAY RECAP. In check mode a
 * PENDING column counts the changes that wait on another change (not counted as CHANGED: the
 * apply may find nothing left to do there), and the verdict says both totals.
 */
export function recapTable(recap: Recap): string {
  const withPending = recap.check;
  const head = ['HOST', 'OK', 'CHANGED', ...(withPending ? ['PENDING'] : []), 'FAILED', 'SKIPPED', 'UNREACHABLE', 'EXECS'];
  const rows = recap.hosts.map((h) =>
    [
      printable(h.host),
      h.ok,
      h.changed,
      ...(withPending ? [h.pending ?? 0] : []),
      h.failed,
      h.skipped,
      h.unreachable ? 'yes' : 'no',
      h.execs,
    ].map(String),
  );
  const widths = head.map((_, i) => Math.max(head[i].length, ...rows.map((r) => r[i].length)));
  const fmt = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [`RECAP (${(recap.elapsedMs / 1000).toFixed(2)}s, ${verdict(recap)})`, fmt(head), ...rows.map(fmt)].join('\n');
}

/** The run's outcome in a few words; in check mode with its changes counted: "3 to change, 4 pending". */
export function verdict(recap: Recap): string {
  const toChange = recap.hosts.reduce((n, h) => n + h.changed, 0);
  const pending = recap.hosts.reduce((n, h) => n + (h.pending ?? 0), 0);
  const counts = `${toChange} to change${pending ? `, ${pending} pending on those` : ''}`;
  if (recap.exitCode === 0) return recap.check ? 'nothing to change' : 'converged';
  if (recap.exitCode === 2) return `check mode: ${counts}`;
  return recap.check && toChange + pending > 0 ? `FAILED; check mode: ${counts}` : 'FAILED';
}
