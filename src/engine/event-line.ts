import type { RunEvent } from './events.ts';

// The CLI hands every event to the --json stream and to the journal, one after the other: the
// line is built once and reused for the same event object (events are not changed once emitted).
let last: { e: RunEvent; line: string } | undefined;

/** An event as one NDJSON line (with its newline), timestamped. Secrets serialise masked. */
export function eventLine(e: RunEvent): string {
  if (last?.e !== e) {
    // Same line as JSON.stringify({ ts, ...e }) without copying the event first.
    last = { e, line: `{"ts":"${new Date().toISOString()}",${JSON.stringify(e).slice(1)}\n` };
  }
  return last.line;
}
