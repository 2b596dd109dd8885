import type { RunEvent } from '../engine/events.ts';

/** `--json`: one event per line on stdout (NDJSON). Secrets serialise as their masked form. */
export function jsonSink(out: NodeJS.WritableStream = process.stdout): (e: RunEvent) => void {
  return (e) => {
    out.write(JSON.stringify({ ts: new Date().toISOString(), ...e }) + '\n');
  };
}
