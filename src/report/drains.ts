import { drainLines } from '../output/drain-lines.ts';
import { hostList } from '../output/host-ranges.ts';
import { printable } from '../util/printable.ts';
import type { Report } from './model.ts';

// A plan's Drains section: the lines the check run printed (drain-lines.ts), so a reviewer reads
// what the operator read, and the hosts with a provider but no disruptive change, folded.

type Drains = NonNullable<Report['drains']>;

/** The section's heading, in the text and on the page. */
export const drainsHeading = (d: Drains): string =>
  `Drains (--drain, timeout ${d.timeoutSec}s; the apply drains these, the check run drained nothing):`;

/** The Drains section for a terminal: one line per host to be drained (or may be, or already out), then the others. */
export function drainsText(d: Drains): string[] {
  const listed = d.hosts.filter((h) => h.outcome !== 'none');
  const lines = drainLines(
    listed.map((h) => ({
      type: 'drain' as const,
      host: h.host,
      via: h.via,
      controller: h.controller,
      ...(h.node !== undefined ? { node: h.node } : {}),
      outcome: h.outcome === 'already' ? ('already' as const) : ('would' as const),
      ...(h.detail !== undefined ? { detail: h.detail } : {}),
    })),
  );
  const none = d.hosts.filter((h) => h.outcome === 'none').map((h) => h.host);
  if (none.length) lines.push(`  not drained, no disruptive change: ${printable(hostList(none))}`);
  return [drainsHeading(d), ...lines];
}
