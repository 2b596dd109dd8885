import { existsSync } from 'node:fs';
import { drainMark } from '../contract/drain.ts';
import { drainHowText } from '../contract/drain.ts';
import type { HostStatus, Report, ReportItem, StillOut } from '../report/model.ts';
import type { RunRecord } from './record.ts';
import { readLedger } from './drain-ledger.ts';
import { runDrains, withLedger } from './run-drains.ts';
import { readRunJournal, withJournalCounts, type RunJournal } from './run-journal.ts';
import { runFailed } from './select.ts';

function hostStatus(h: RunRecord['hosts'][string]): HostStatus {
  if (h.unreachable) return 'unreachable';
  if (h.failed > 0 || h.error !== undefined) return 'failed';
  if (h.changed > 0) return 'changed';
  return h.pending ? 'pending' : 'ok';
}

const git = (p: RunRecord['playbooks'][number]) =>
  p.git ? `${p.path} @ ${p.git.revision.slice(0, 12)}${p.git.dirty ? ' (dirty work tree)' : ''}` : `${p.path} (not in a git work tree)`;

/** The nodes a run left out of scheduling, said at the top and bottom of every view: someone must put them back. */
function stillOutWarning(out: StillOut[], ended: boolean): string {
  const nodes = out.map((s) => `${s.host} (${drainHowText(s)}: ${s.why})`).join('; ');
  const what = `NOT PUT BACK: ${out.length} node(s) this run took out of scheduling ${ended ? 'are still' : 'may still be'} out: ${nodes}`;
  const fix =
    'put each back when it is safe (scontrol update nodename=N state=resume; kubectl uncordon N), or the next racksmith run of this controller that drains it takes it over';
  return `${what}; ${ended ? fix : `if the run is still running it puts them back at its end; if it was killed, ${fix}`}`;
}

/** A run as a report: its record's facts, and from its journal per host the resources it changed or failed, with diffs. */
export function runReport(recorded: RunRecord): Report {
  const warnings: string[] = [];
  let journal: RunJournal | undefined;
  if (existsSync(recorded.journal)) journal = readRunJournal(recorded.journal, recorded.start);
  else warnings.push(`its journal ${recorded.journal} is gone (pruned or moved): counts only, no resources, diffs or drains`);
  const items: ReportItem[] = journal?.items ?? [];
  // a run with no end: its hosts as its journal shows them (the record has only zero counts)
  const { record: r, finished } = withJournalCounts(recorded, journal);
  if (r.end === undefined)
    warnings.push(
      'this run has no end: it is still running, or it was killed before it could record one; its hosts are counted from its journal, those with no recap there are unfinished' +
        // (a drain's event is written when it ends: one under way at the kill is not in the journal)
        (r.check
          ? ''
          : `; a drain it had under way is not in its journal: any node it took out of scheduling carries its mark "${drainMark(r.id, r.controller)}" (the Slurm reason, the Kubernetes annotation racksmith.io/drained-by)`),
    );
  const ledger = readLedger(r.id, (m) => warnings.push(m));
  const drains = withLedger(journal?.drains.length ? runDrains(journal.drains, r.end !== undefined) : undefined, ledger);
  if (drains?.stillOut.length) warnings.push(stillOutWarning(drains.stillOut, r.end !== undefined));
  if (ledger?.unreadable)
    warnings.push(
      `its drain ledger ${ledger.where} holds ${ledger.unreadable} entr${ledger.unreadable === 1 ? 'y' : 'ies'} that cannot be read (not a node, or not readable): ` +
        'it may name nodes left out of scheduling, and keeps the run from pruning; remove such an entry once its node is known to be back',
    );
  const hosts = Object.entries(r.hosts).map(([name, h]) => ({
    name,
    groups: h.groups ?? [],
    status: finished.has(name) || h.failed > 0 || h.unreachable ? hostStatus(h) : ('unfinished' as const),
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
      ['outcome', r.end === undefined ? 'unfinished' : runFailed(r) ? 'failed' : 'ok'],
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
    ...(drains ? { runDrains: drains } : {}),
  };
}
