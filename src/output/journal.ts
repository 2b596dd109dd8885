import { closeSync, existsSync, fchmodSync, fstatSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InputError } from '../util/errors.ts';
import { scrub } from '../util/secret.ts';
import { stateDir } from '../util/state-dir.ts';
import { eventLine } from './event-line.ts';
import { isRunEdge, type RunEvent } from '../engine/events.ts';

/** Where runs are journaled unless --journal says otherwise. */
export function defaultJournalPath(now = new Date()): string {
  return join(stateDir(), 'journal', `${now.toISOString().replace(/[:.]/g, '-')}-${process.pid}.ndjson`);
}

export interface JournalSink {
  (e: RunEvent): void;
  /** Write what is buffered now (Ctrl-C, tests). */
  flush(): void;
  /** Flush and close the file (a later event opens it again). */
  close(): void;
}

/** Buffered resource events are written at most this late ... */
export const JOURNAL_FLUSH_MS = 200;
/** ... or once this much is buffered. */
export const JOURNAL_FLUSH_BYTES = 64 * 1024;

// Journals with an open file, flushed when the process exits (also on process.exit(), e.g. a
// second Ctrl-C, and after an uncaught exception).
const live = new Set<JournalSink>();
let exitHooked = false;

/**
 * The run journal: every event as one JSON line (secrets masked). The file stays open and events
 * are buffered: resource events (the bulk: hosts x resources) are written at most
 * JOURNAL_FLUSH_MS late; a host or play starting and a host's recap when the current turn of the
 * event loop ends, with whatever else came in that turn (a fleet's hosts start and finish in
 * bursts: one write each, not one per host); the run's first and last events (run_start, recap)
 * at once. A crash loses at most the last JOURNAL_FLUSH_MS of events of hosts still running,
 * which --resume runs again anyway (they have no recap yet).
 */
export function journalSink(file: string): JournalSink {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  let fd: number | undefined;
  let buf = '';
  let timer: NodeJS.Timeout | undefined;
  let turnEnd: NodeJS.Immediate | undefined;
  const flush = () => {
    if (timer) clearTimeout(timer);
    if (turnEnd) clearImmediate(turnEnd);
    timer = undefined;
    turnEnd = undefined;
    if (!buf) return;
    const text = scrub(buf);
    buf = '';
    fd ??= openPrivate(file);
    // The string as is (encoded by the write itself, no Buffer copy in between: the journal of a
    // large fleet is megabytes); a short write's remainder goes through a Buffer.
    const written = writeSync(fd, text);
    if (written < Buffer.byteLength(text)) {
      const rest = Buffer.from(text).subarray(written);
      for (let off = 0; off < rest.length;) off += writeSync(fd, rest, off);
    }
  };
  const close = () => {
    flush();
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
    live.delete(sink);
  };
  const sink: JournalSink = Object.assign(
    (e: RunEvent) => {
      buf += eventLine(e);
      live.add(sink);
      if (isRunEdge(e) || buf.length >= JOURNAL_FLUSH_BYTES) flush();
      else if (e.type !== 'resource') turnEnd ??= setImmediate(flush);
      else timer ??= setTimeout(flush, JOURNAL_FLUSH_MS).unref();
    },
    { flush, close },
  );
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const j of live) j.close();
    });
  }
  return sink;
}

/** Open for appending, mode 0600 (a journal holds hosts' changes): an existing file of ours is made 0600 too. */
function openPrivate(file: string): number {
  const fd = openSync(file, 'a', 0o600);
  const st = fstatSync(fd);
  if (st.isFile() && (st.mode & 0o077) !== 0 && st.uid === process.getuid?.()) fchmodSync(fd, 0o600);
  return fd;
}

/**
 * Hosts to run again from a journal: failed, unreachable or not finished. A journal cut short
 * (crash, kill) counts every host that has no clean recap.
 */
export function hostsToResume(file: string): string[] {
  if (!existsSync(file)) throw new InputError(`journal not found: ${file}`);
  const events: Array<Record<string, unknown>> = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  const last = lines.findLastIndex((l) => l.trim() !== '');
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    try {
      events.push(JSON.parse(line));
    } catch {
      // the last line may be cut short by a crash; anything else is a broken journal
      if (i !== last) throw new InputError('journal line is not JSON', { file, line: i + 1, col: 1 });
    }
  });
  const start = events.find((e) => e.type === 'run_start');
  if (!start) throw new InputError('not a racksmith journal (no run_start event)', { file });
  const clean = new Set(
    events.filter((e) => e.type === 'host_recap' && e.failed === 0 && !e.unreachable && e.error === undefined).map((e) => e.host as string),
  );
  return (start.hosts as string[]).filter((h) => !clean.has(h));
}
