import { closeSync, existsSync, fchmodSync, fstatSync, mkdirSync, openSync, statSync, writeSync } from 'node:fs';
import { fileStartsWith, INPUT_LIMITS, readInputText } from '../util/input-file.ts';
import { dirname, join } from 'node:path';
import { InputError } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import { scrub } from '../util/secret.ts';
import { stateDir } from '../util/state-dir.ts';
import { eventLine, isLoggedEdge, type LoggedEvent } from './event-line.ts';

/** Where runs are journaled unless --journal says otherwise. */
export function defaultJournalPath(now = new Date()): string {
  return join(stateDir(), 'journal', `${now.toISOString().replace(/[:.]/g, '-')}-${process.pid}.ndjson`);
}

export interface JournalSink {
  (e: LoggedEvent): void;
  /** Write what is buffered now (Ctrl-C, tests). */
  flush(): void;
  /** Flush and close the file (a later event opens it again). */
  close(): void;
  /** The write error that ended the journal (disk full, I/O error): later events are dropped. */
  readonly failure: Error | undefined;
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
 * Open (create, mode 0600) the journal file for appending. Anything that stops it is bad input,
 * found before any host is contacted: a directory, a FIFO or socket (opening one would wait for a
 * reader), a place that cannot be created or written.
 */
function openJournal(file: string): number {
  const refuse = (why: string) =>
    new InputError(`cannot write the journal ${printable(file)}: ${why} (give another place with --journal FILE)`);
  let st;
  try {
    st = statSync(file, { throwIfNoEntry: false });
  } catch (e) {
    throw refuse(errnoText(e));
  }
  if (st?.isDirectory()) throw refuse('it is a directory');
  if (st && (st.isFIFO() || st.isSocket())) throw refuse('it is a FIFO or socket, not a file');
  // a journal is appended to: a file that is not one (an inventory given by mistake) is left alone
  if (st?.isFile() && st.size > 0 && !startsAsJournal(file))
    throw refuse("it is not a journal (its first line is not a run's start): racksmith appends only to its own journals");
  try {
    makeParents(dirname(file));
    return openPrivate(file);
  } catch (e) {
    throw refuse(errnoText(e));
  }
}

/** Whether the file starts as a journal does: its first event, `run_start`, as eventLine writes it. */
const startsAsJournal = (file: string) => fileStartsWith(file, /^\{"ts":"[^"\n]*","type":"run_start"/);

/**
 * The missing directories above the journal, made one level at a time: Node's recursive mkdir
 * loops for ever where a level cannot be made but does not say so plainly (under /proc).
 */
function makeParents(dir: string): void {
  const missing: string[] = [];
  for (let d = dir; !existsSync(d) && dirname(d) !== d; d = dirname(d)) missing.push(d);
  for (const d of missing.reverse()) mkdirSync(d, 0o700);
}

/** `ENOSPC: no space left on device`: the code and what it means, without the syscall noise. */
export function errnoText(e: unknown): string {
  const message = (e as Error | undefined)?.message ?? String(e);
  return printable(message.replace(/,\s*\w+(\s+'[^']*')?$/, ''));
}

/**
 * The run journal: every event as one JSON line (secrets masked). The file is opened at once
 * (failing: InputError, before any host) and stays open; events are buffered: resource events
 * (the bulk: hosts x resources) are written at most JOURNAL_FLUSH_MS late; a host or play
 * starting and a host's recap when the current turn of the event loop ends, with whatever else
 * came in that turn (a fleet's hosts start and finish in bursts: one write each, not one per
 * host); the run's first and last events (run_start, recap) at once. A crash loses at most the
 * last JOURNAL_FLUSH_MS of events of hosts still running, which --resume runs again anyway (they
 * have no recap yet). A write that fails (disk full) ends the journal: `onFailure` is told once
 * and the run goes on without it, never stopped by its journal.
 */
export function journalSink(file: string, onFailure?: (err: Error) => void): JournalSink {
  let fd: number | undefined = openJournal(file);
  let failure: Error | undefined;
  let buf = '';
  let timer: NodeJS.Timeout | undefined;
  let turnEnd: NodeJS.Immediate | undefined;
  const write = (text: string) => {
    fd ??= openPrivate(file);
    // The string as is (encoded by the write itself, no Buffer copy in between: the journal of a
    // large fleet is megabytes); a short write's remainder goes through a Buffer.
    const written = writeSync(fd, text);
    if (written < Buffer.byteLength(text)) {
      const rest = Buffer.from(text).subarray(written);
      for (let off = 0; off < rest.length;) off += writeSync(fd, rest, off);
    }
  };
  const flush = () => {
    if (timer) clearTimeout(timer);
    if (turnEnd) clearImmediate(turnEnd);
    timer = undefined;
    turnEnd = undefined;
    if (!buf) return;
    const text = scrub(buf);
    buf = '';
    if (failure) return;
    try {
      write(text);
    } catch (e) {
      failure = new Error(errnoText(e));
      onFailure?.(failure);
    }
  };
  const close = () => {
    flush();
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // a close that reports a late write error: the failure (if any) was seen at the write
      }
    }
    fd = undefined;
    live.delete(sink);
  };
  const sink = Object.assign(
    (e: LoggedEvent) => {
      if (failure) return;
      buf += eventLine(e);
      live.add(sink);
      if (isLoggedEdge(e) || buf.length >= JOURNAL_FLUSH_BYTES) flush();
      else if (e.type !== 'resource') turnEnd ??= setImmediate(flush);
      else timer ??= setTimeout(flush, JOURNAL_FLUSH_MS).unref();
    },
    { flush, close },
  ) as JournalSink;
  Object.defineProperty(sink, 'failure', { get: () => failure });
  live.add(sink);
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
  // a regular file within the limit: a FIFO or /dev/zero named by --resume is bad input, never a hang
  const lines = readInputText(file, 'journal', INPUT_LIMITS.journal).split('\n');
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
