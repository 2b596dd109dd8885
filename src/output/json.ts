import { eventLine, isLoggedEdge, type LoggedEvent } from './event-line.ts';

/** Events buffered for --json are written at the latest once this much is buffered. */
export const JSON_FLUSH_BYTES = 64 * 1024;

/**
 * `--json`: one event per line on stdout (NDJSON). Secrets serialise as their masked form.
 * Events come in bursts (a host's resources are decided together, a fleet's hosts start and
 * finish together): they are written once per burst, at the end of the current turn of the
 * event loop, or once JSON_FLUSH_BYTES are buffered; the run's first and last events
 * (run_start, recap) at once, after what came before them.
 */
export function jsonSink(out: NodeJS.WritableStream = process.stdout): (e: LoggedEvent) => void {
  let buf = '';
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (!buf) return;
    const data = buf;
    buf = '';
    out.write(data);
  };
  return (e) => {
    buf += eventLine(e);
    if (isLoggedEdge(e) || buf.length >= JSON_FLUSH_BYTES) flush();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}
