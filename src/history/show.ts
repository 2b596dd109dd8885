import { existsSync } from 'node:fs';
import type { HostStatus, Report, ReportItem } from '../report/model.ts';
import { INPUT_LIMITS, readInputText } from '../util/input-file.ts';
import type { RunRecord } from './record.ts';
import { runFailed } from './select.ts';

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

/** The resources worth reading in a journal: changed (or would change), failed; as recorded (already masked). */
function journalItems(file: string): ReportItem[] {
  const items: ReportItem[] = [];
  for (const line of readInputText(file, 'journal', INPUT_LIMITS.journal).split('\n')) {
    // resource lines only; a line cut short by a crash is skipped
    if (!line.includes('"type":"resource"')) continue;
    let e: JournalResource;
    try {
      e = JSON.parse(line) as JournalResource;
    } catch {
      continue;
    }
    if (e.type !== 'resource' || (e.status !== 'changed' && e.status !== 'failed')) continue;
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
  return items;
}

function hostStatus(h: RunRecord['hosts'][string]): HostStatus {
  if (h.unreachable) return 'unreachable';
  if (h.failed > 0 || h.error !== undefined) return 'failed';
  if (h.changed > 0) return 'changed';
  return h.pending ? 'pending' : 'ok';
}

const git = (p: RunRecord['playbooks'][number]) =>
  p.git ? `${p.path} @ ${p.git.revision.slice(0, 12)}${p.git.dirty ? ' (dirty work tree)' : ''}` : `${p.path} (not in a git work tree)`;

/** A run as a report: its record's facts, and from its journal per host the resources it changed or failed, with diffs. */
export function runReport(r: RunRecord): Report {
  const warnings: string[] = [];
  let items: ReportItem[] = [];
  if (existsSync(r.journal)) items = journalItems(r.journal);
  else warnings.push(`its journal ${r.journal} is gone (pruned or moved): counts only, no resources or diffs`);
  if (r.end === undefined) warnings.push('this run has no end: it is still running, or it was killed before it could record one');
  const hosts = Object.entries(r.hosts).map(([name, h]) => ({
    name,
    groups: h.groups ?? [],
    status: hostStatus(h),
    ...(h.error !== undefined ? { error: h.error } : {}),
  }));
  const labels = Object.entries(r.labels).map(([k, v]) => `${k}=${v}`);
  return {
    kind: 'run',
    title: `Run ${r.id}${r.check ? ' (check mode)' : ''}`,
    meta: [
      ['started', r.start],
      ['ended', r.end ?? '(no end recorded)'],
      ['exit code', r.exitCode === undefined ? '(none)' : String(r.exitCode)],
      ['outcome', runFailed(r) ? 'failed' : 'ok'],
      ['user', `${r.user} on ${r.controller}`],
      ['argv', r.argv.join(' ')],
      ['cwd', r.cwd],
      ['playbooks', r.playbooks.map(git).join(', ')],
      ['inventory fingerprint', r.inventoryFingerprint],
      ...(labels.length ? [['labels', labels.join(', ')] as [string, string]] : []),
      ['journal', r.journal],
    ],
    warnings,
    hosts,
    items,
  };
}
