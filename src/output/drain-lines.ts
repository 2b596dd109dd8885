import type { RunEvent } from '../engine/events.ts';
import { drainHowText } from '../contract/drain.ts';
import { printable, printableLines } from '../util/printable.ts';

type DrainEvent = Extract<RunEvent, { type: 'drain' | 'resume' }>;

/** The recap's Drains section: what --drain did (or would do) per host, in the order it happened. */
export function drainLines(events: readonly DrainEvent[]): string[] {
  return events.map((e) => {
    const via = drainHowText(e);
    const detail = e.detail ? `: ${printableLines(e.detail)}` : '';
    if (e.type === 'resume')
      return `  ${printable(e.host)}: ${e.ok ? 'resumed' : e.someoneElses ? "left out, someone else's drain now" : 'NOT RESUMED'} (${via})${detail}`;
    const what = {
      drained: 'drained',
      already: 'already out of scheduling, left as it is',
      failed: 'DRAIN FAILED, nothing disruptive applied',
      would: 'would be drained (it has disruptive changes)',
      blocked: "BLOCKED by another racksmith run's drain, its drain would fail and nothing disruptive be applied",
    }[e.outcome];
    return `  ${printable(e.host)}: ${what} (${via})${detail}`;
  });
}
