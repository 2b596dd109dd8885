import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../util/errors.ts';
import { INPUT_LIMITS, readInputText } from '../util/input-file.ts';
import { printable } from '../util/printable.ts';
import { scrub } from '../util/secret.ts';
import { stateDir } from '../util/state-dir.ts';
import { writeFileAtomic } from '../util/atomic-write.ts';
import type { RunProcess } from './run-process.ts';

/** A host's counts in a run (its recap). */
export interface HostCounts {
  ok: number;
  changed: number;
  pending?: number;
  failed: number;
  skipped: number;
  unreachable: boolean;
  error?: string;
  /** The host's inventory groups (but `all`). */
  groups?: string[];
}

/** A playbook a run loaded, and the git revision of its work tree when it is in one. */
export interface PlaybookSource {
  path: string;
  git?: { revision: string; dirty: boolean };
}

/**
 * One run in the history (`provision runs`): written when the run starts (no `end`: still
 * running, or it never finished) and again when it ends. Secrets never appear: argv holds `-e`
 * secrets as their masks, and the whole record goes through scrub.
 */
export interface RunRecord {
  id: string;
  start: string;
  end?: string;
  user: string;
  controller: string;
  /** The controller's process that ran it (when /proc said): whether a run with no end still runs (drain-owner.ts). */
  process?: RunProcess;
  argv: string[];
  cwd: string;
  playbooks: PlaybookSource[];
  inventoryFingerprint: string;
  labels: Record<string, string>;
  check: boolean;
  journal: string;
  /** The run's exit code, once it ended. */
  exitCode?: number;
  /** Per host, once it ended: the hosts the run reached, with their counts. */
  hosts: Record<string, HostCounts>;
}

const ID = /^\d{8}T\d{6}Z-[0-9a-f]{6}$/;

/** `20261204T233012Z-3fa9c1`: sorts by start time, unique among runs started in the same second. */
export function newRunId(now = new Date()): string {
  return `${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`;
}

export const isRunId = (s: string): boolean => ID.test(s);

export function runsDir(): string {
  return join(stateDir(), 'runs');
}

const recordFile = (id: string) => join(runsDir(), `${id}.json`);

export function writeRecord(r: RunRecord): void {
  mkdirSync(runsDir(), { recursive: true, mode: 0o700 });
  writeFileAtomic(recordFile(r.id), scrub(JSON.stringify(r, null, 1)) + '\n', 0o600, 'run record');
}

/** One run's record; an id with no record is bad input (exit 3), naming where it was looked for. */
export function readRecord(id: string): RunRecord {
  if (!isRunId(id))
    throw new InputError(`'${printable(id)}' is not a run id (ids look like 20261204T233012Z-3fa9c1: provision runs lists them)`);
  let text: string;
  try {
    text = readInputText(recordFile(id), 'run record', INPUT_LIMITS.plan);
  } catch {
    throw new InputError(`no run ${id} in ${runsDir()} (provision runs lists them; it may have been pruned)`);
  }
  try {
    return JSON.parse(text) as RunRecord;
  } catch (e) {
    throw new InputError(`run record ${recordFile(id)} is not JSON: ${(e as Error).message}`);
  }
}

/** The ids of the recorded runs, newest first (by the start second in the id: no record read). */
export function recordIds(): string[] {
  let names: string[];
  try {
    names = readdirSync(runsDir());
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith('.json') && isRunId(n.slice(0, -5)))
    .map((n) => n.slice(0, -5))
    .sort()
    .reverse();
}

/** When a run started, to the second, from its id. */
export function startOfId(id: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z/.exec(id)!;
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
}

/** Every run's record, newest first; a record that cannot be read is skipped and named in `broken`. */
export function readRecords(): { records: RunRecord[]; broken: string[] } {
  let names: string[];
  try {
    names = readdirSync(runsDir());
  } catch {
    return { records: [], broken: [] };
  }
  const records: RunRecord[] = [];
  const broken: string[] = [];
  for (const name of names) {
    const id = name.replace(/\.json$/, '');
    if (!name.endsWith('.json') || !isRunId(id)) continue;
    try {
      records.push(readRecord(id));
    } catch {
      broken.push(name);
    }
  }
  // by start time to the millisecond (ids only to the second), then by id
  const key = (r: RunRecord) => `${r.start}\0${r.id}`;
  records.sort((a, b) => (key(a) < key(b) ? 1 : key(a) > key(b) ? -1 : 0));
  return { records, broken };
}

/** Remove a run's record, and its journal when it is in the default journal directory (one given with --journal is the operator's). */
export function removeRun(r: RunRecord): void {
  rmSync(recordFile(r.id), { force: true });
  if (r.journal.startsWith(join(stateDir(), 'journal') + '/')) rmSync(r.journal, { force: true });
}
