import { printable } from '../util/printable.ts';
import type { Recap } from '../engine/events.ts';

/** The end-of-run table: one row per host, like ansible-playbook's PLAY RECAP. */
export function recapTable(recap: Recap): string {
  const head = ['HOST', 'OK', 'CHANGED', 'FAILED', 'SKIPPED', 'UNREACHABLE', 'EXECS'];
  const rows = recap.hosts.map((h) =>
    [printable(h.host), h.ok, h.changed, h.failed, h.skipped, h.unreachable ? 'yes' : 'no', h.execs].map(String),
  );
  const widths = head.map((_, i) => Math.max(head[i].length, ...rows.map((r) => r[i].length)));
  const fmt = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  const verdict =
    recap.exitCode === 0
      ? recap.check
        ? 'nothing to change'
        : 'converged'
      : recap.exitCode === 2
        ? 'changes pending (check mode)'
        : 'FAILED';
  return [`RECAP (${(recap.elapsedMs / 1000).toFixed(2)}s, ${verdict})`, fmt(head), ...rows.map(fmt)].join('\n');
}
