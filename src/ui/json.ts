import type { RunEvent } from '../engine/events.ts';
import { eventLine } from '../engine/event-line.ts';

/** `--json`: one event per line on stdout (NDJSON). Secrets serialise as their masked form. */
export function jsonSink(out: NodeJS.WritableStream = process.stdout): (e: RunEvent) => void {
  return (e) => {
    out.write(eventLine(e));
  };
}
