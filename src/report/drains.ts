import { drainHowText, TAKEN_OVER } from '../contract/drain.ts';
import { drainLines } from '../output/drain-lines.ts';
import { hostList } from '../output/host-ranges.ts';
import { printable } from '../util/printable.ts';
import type { Report, RunDrainEvent, RunDrains, TakenOverBy } from './model.ts';

// A plan's Drains section: the lines the check run printed (drain-lines.ts), so a reviewer reads
// what the operator read, and the hosts with a provider but no disruptive change, folded. A run's:
// the lines its recap printed, then the nodes it left out of scheduling.

type Drains = NonNullable<Report['drains']>;

/** The section's heading, in the text and on the page. */
export const drainsHeading = (d: Drains): string =>
  `Drains (--drain, timeout ${d.timeoutSec}s; the apply drains these, the check run drained nothing):`;

/** The Drains section for a terminal: one line per host to be drained (or may be, already out, blocked), then the others. */
export function drainsText(d: Drains): string[] {
  const listed = d.hosts.filter((h) => h.outcome !== 'none');
  const lines = drainLines(
    listed.map((h) => ({
      type: 'drain' as const,
      host: h.host,
      via: h.via,
      controller: h.controller,
      ...(h.node !== undefined ? { node: h.node } : {}),
      outcome: h.outcome === 'already' || h.outcome === 'blocked' ? h.outcome : ('would' as const),
      ...(h.detail !== undefined ? { detail: h.detail } : {}),
    })),
  );
  const none = d.hosts.filter((h) => h.outcome === 'none').map((h) => h.host);
  if (none.length) lines.push(`  not drained, no disruptive change: ${printable(hostList(none))}`);
  return [drainsHeading(d), ...lines];
}

/** A run's Drains heading, in the text and on the page. */
export const RUN_DRAINS_HEADING = 'Drains (--drain, in the order they happened):';

/** What a run's drain or resume event was, for the page (a drain taken over from a dead run apart from one this run made). */
export function drainKind(e: RunDrainEvent): string {
  if (e.type === 'resume') return e.ok ? 'resumed' : e.someoneElses ? 'someone-elses' : 'not-resumed';
  return e.outcome === 'drained' && e.detail?.startsWith(TAKEN_OVER) ? 'taken-over' : e.outcome;
}

/** What a node taken over by a later run is to this run, in the text and on the page. */
export const takenOverText = (t: TakenOverBy): string =>
  t.found
    ? `found not out by run ${t.by} at ${t.at} (in scheduling, or out under someone else's drain: never taken out by this run, or put back by hand since): not this run's to put back`
    : `taken over by run ${t.by} at ${t.at}: no longer this run's to put back (provision runs show ${t.by} says whether that run did)`;

/** A run's Drains section for a terminal: the lines its recap printed, then the nodes still out, then those taken over since. */
export function runDrainsText(d: RunDrains): string[] {
  return [
    RUN_DRAINS_HEADING,
    ...drainLines(d.events),
    ...d.stillOut.map((s) => `  STILL OUT OF SCHEDULING: ${printable(s.host)} (${drainHowText(s)}): ${printable(s.why)}`),
    ...d.takenOver.map((t) => `  ${printable(t.host)} (${drainHowText(t)}): ${printable(takenOverText(t))}`),
  ];
}
