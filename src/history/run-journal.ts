import { existsSync } from 'node:fs';
import type { ReportItem, RunDrainEvent } from '../report/model.ts';
import { INPUT_LIMITS, readInputText } from '../util/input-file.ts';
import type { HostCounts, RunRecord } from './record.ts';

interface JournalResource {
  type: 'resource';
  host: string;
  play: string;
  id: string;
  kind: string;
  status: ReportItem['status'];
  changes: Array<{ summary: string; diff?: string }>;
  pending?: string;
  error?: string;
}

type JournalRecap = { type: 'host_recap'; host: string } & HostCounts;

/** What a run's journal shows: the resources worth reading, per host its counts and whether its recap was written, and its drains. */
export interface RunJournal {
  items: ReportItem[];
  /** --drain's drain and resume events, in order (without their time stamps). */
  drains: RunDrainEvent[];
  hosts: Map<string, { counts: HostCounts; finished: boolean }>;
}

/**
 * A run's journal read once: changed (or would change) and failed resources as recorded (already
 * masked), and per host its counts. A journal given again with --journal holds several runs, one
 * after the other: `start` (the run record's) picks this run's part, from the last run_start at or
 * before it to the next run_start.
 */
export function readRunJournal(file: string, start?: string): RunJournal {
  let items: ReportItem[] = [];
  let drains: RunDrainEvent[] = [];
  let hosts: RunJournal['hosts'] = new Map();
  const of = (host: string) => {
    let h = hosts.get(host);
    if (!h) hosts.set(host, (h = { counts: { ok: 0, changed: 0, failed: 0, skipped: 0, unreachable: false }, finished: false }));
    return h;
  };
  for (const line of readInputText(file, 'journal', INPUT_LIMITS.journal).split('\n')) {
    if (start !== undefined && line.includes('"type":"run_start"')) {
      // (eventLine writes ts first: ISO times in UTC compare as text)
      const ts = /^\{"ts":"([^"]*)"/.exec(line)?.[1] ?? '';
      if (ts > start) break; // a later run's part
      items = [];
      drains = [];
      hosts = new Map();
      continue;
    }
    // resource, host recap, drain and resume lines only; a line cut short by a crash is skipped
    const drain = line.includes('"type":"drain"') || line.includes('"type":"resume"');
    if (!drain && !line.includes('"type":"resource"') && !line.includes('"type":"host_recap"')) continue;
    let e: JournalResource | JournalRecap | (RunDrainEvent & { ts?: string });
    try {
      e = JSON.parse(line) as JournalResource | JournalRecap | RunDrainEvent;
    } catch {
      continue;
    }
    if (e.type === 'drain' || e.type === 'resume') {
      const { ts: _ts, ...event } = e;
      drains.push(event);
      continue;
    }
    if (e.type === 'host_recap') {
      const { ok, changed, pending, failed, skipped, unreachable, error } = e;
      const counts = {
        ok,
        changed,
        ...(pending ? { pending } : {}),
        failed,
        skipped,
        unreachable,
        ...(error !== undefined ? { error } : {}),
      };
      Object.assign(of(e.host), { counts, finished: true });
      continue;
    }
    if (e.type !== 'resource') continue;
    const h = of(e.host);
    // (a host's recap, once written, has its counts: the resource lines only stand in before it)
    if (!h.finished) countResource(h.counts, e);
    if (e.status !== 'changed' && e.status !== 'failed') continue;
    const pending = e.pending !== undefined;
    const note = e.error ?? e.pending;
    items.push({
      host: e.host,
      play: e.play,
      id: e.id,
      kind: e.kind,
      status: pending ? 'pending' : e.status,
      summaries: e.changes.map((c) => c.summary),
      diffs: e.changes.map((c) => c.diff).filter((d): d is string => !!d),
      ...(note !== undefined ? { note } : {}),
    });
  }
  return { items, drains, hosts };
}

function countResource(c: HostCounts, e: JournalResource): void {
  if (e.status === 'changed' && e.pending !== undefined) c.pending = (c.pending ?? 0) + 1;
  else if (e.status === 'ok' || e.status === 'changed' || e.status === 'failed' || e.status === 'skipped') c[e.status]++;
}

/**
 * A run with no end (killed, still running) as far as its journal shows: its record has only the
 * zero counts it started with, which read as "all ok". Per host the journal's counts, and the
 * hosts whose recap the journal has. A run that ended, or whose journal is gone: as recorded.
 */
export function withJournalCounts(r: RunRecord, journal?: RunJournal): { record: RunRecord; finished: Set<string> } {
  const all = new Set(Object.keys(r.hosts));
  if (r.end !== undefined) return { record: r, finished: all };
  const j = journal ?? (existsSync(r.journal) ? readRunJournal(r.journal, r.start) : undefined);
  if (!j) return { record: r, finished: new Set() };
  const hosts = { ...r.hosts };
  for (const [name, h] of j.hosts) hosts[name] = { ...h.counts, groups: r.hosts[name]?.groups ?? [] };
  return { record: { ...r, hosts }, finished: new Set([...j.hosts].filter(([, h]) => h.finished).map(([n]) => n)) };
}
