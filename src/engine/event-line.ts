import type { RunEvent } from './events.ts';

// The CLI hands every event to the --json stream and to the journal, one after the other: the
// line is built once and reused for the same event object (events are not changed once emitted).
let last: { e: RunEvent; line: string } | undefined;
// toISOString costs about a microsecond; hundreds of events share each millisecond.
let isoMs = -1;
let iso = '';

/** An event as one NDJSON line (with its newline), timestamped. Secrets serialise masked. */
export function eventLine(e: RunEvent): string {
  if (last?.e !== e) {
    const now = Date.now();
    if (now !== isoMs) {
      isoMs = now;
      iso = new Date(now).toISOString();
    }
    // Same line as JSON.stringify({ ts, ...e }) without copying the event first.
    last = { e, line: `{"ts":"${iso}",${JSON.stringify(e).slice(1)}\n` };
  }
  return last.line;
}
