import { printable } from '../util/printable.ts';
import type { HostRecap, Recap } from '../engine/events.ts';

/** A host that did not end well: a failed resource, unreachable, or not run (its error). */
export const notOk = (h: HostRecap): boolean => h.failed > 0 || h.unreachable || h.error !== undefined;

/**
 * The end-of-run table, like ansible-playbook's PLAY RECAP: a totals row, then a row per host
 * that is not ok (`full`: a row per host). In check mode a PENDING column counts the changes that
 * wait on another change (not counted as CHANGED: the apply may find nothing left to do there),
 * and the verdict says both totals. The totals' UNREACHABLE is a count of hosts.
 */
export function recapTable(recap: Recap, full = false): string {
  const withPending = recap.check;
  const head = ['HOST', 'OK', 'CHANGED', ...(withPending ? ['PENDING'] : []), 'FAILED', 'SKIPPED', 'UNREACHABLE', 'EXECS'];
  const row = (h: HostRecap, name: string, unreachable: string) =>
    [name, h.ok, h.changed, ...(withPending ? [h.pending ?? 0] : []), h.failed, h.skipped, unreachable, h.execs].map(String);
  const listed = full ? recap.hosts : recap.hosts.filter(notOk);
  const rows = [
    row(
      totals(recap.hosts),
      `total (${recap.hosts.length} ${recap.hosts.length === 1 ? 'host' : 'hosts'})`,
      String(recap.hosts.filter((h) => h.unreachable).length),
    ),
    ...listed.map((h) => row(h, printable(h.host), h.unreachable ? 'yes' : 'no')),
  ];
  const widths = head.map((_, i) => Math.max(head[i].length, ...rows.map((r) => r[i].length)));
  const fmt = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  const rest = recap.hosts.length - listed.length;
  const note =
    rest > 0 ? [`(${rest} ${rest === 1 ? 'host' : 'hosts'} without a problem, not listed: a row per host with -v or --recap full)`] : [];
  return [`RECAP (${(recap.elapsedMs / 1000).toFixed(2)}s, ${verdict(recap)})`, fmt(head), ...rows.map(fmt), ...note].join('\n');
}

function totals(hosts: readonly HostRecap[]): HostRecap {
  const t: HostRecap = { host: '', ok: 0, changed: 0, pending: 0, failed: 0, skipped: 0, unreachable: false, execs: 0 };
  for (const h of hosts) {
    t.ok += h.ok;
    t.changed += h.changed;
    t.pending! += h.pending ?? 0;
    t.failed += h.failed;
    t.skipped += h.skipped;
    t.execs += h.execs;
  }
  return t;
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
