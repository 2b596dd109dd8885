import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { InputError } from '../util/errors.ts';
import type { RunEvent } from './events.ts';

/** Where runs are journaled unless --journal says otherwise. */
export function defaultJournalPath(now = new Date()): string {
  const base = process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  return join(base, 'racksmith', 'journal', `${now.toISOString().replace(/[:.]/g, '-')}-${process.pid}.ndjson`);
}

/**
 * The run journal: every event appended as one JSON line as it happens, so it survives a
 * crash or Ctrl-C up to the last event. Secrets serialise masked.
 */
export function journalSink(file: string): (e: RunEvent) => void {
  mkdirSync(dirname(file), { recursive: true });
  return (e) => appendFileSync(file, JSON.stringify({ ts: new Date().toISOString(), ...e }) + '\n');
}

/**
 * Hosts to run again from a journal: failed, unreachable or not finished. A journal cut short
 * (crash, kill) counts every host that has no clean recap.
 */
export function hostsToResume(file: string): string[] {
  if (!existsSync(file)) throw new InputError(`journal not found: ${file}`);
  const events: Array<Record<string, any>> = [];
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
