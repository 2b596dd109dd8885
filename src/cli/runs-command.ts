import { parseArgs } from 'node:util';
import { readRecord, readRecords, removeRun, runsDir, type RunRecord } from '../history/record.ts';
import { drainsLeft, keptLedgers, ledgerDir, nodeText, removeLedger, type RunLedger } from '../history/drain-ledger.ts';
import { parseAge, parseLabels, parseSince, runFailed, runsToPrune, selectRuns, spareDrainers } from '../history/select.ts';
import { runner } from '../history/provenance.ts';
import { stillRunning } from '../history/run-process.ts';
import { withJournalCounts } from '../history/run-journal.ts';
import { runReport } from '../history/show.ts';
import { writeReport } from '../report/write.ts';
import { InputError } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import { EXIT } from './exit.ts';
import { pickOptions } from './options.ts';
import type { CliStreams } from './streams.ts';
import { USAGE } from './usage.ts';

/** The options of `provision runs` (list, show, prune): output and labels from the run's table, the rest its own. */
const RUNS_OPTIONS = {
  ...pickOptions('json', 'label', 'help'),
  host: { type: 'string' },
  since: { type: 'string' },
  failed: { type: 'boolean' },
  html: { type: 'string' },
  keep: { type: 'string' },
  'older-than': { type: 'string' },
} as const;

type RunsValues = ReturnType<typeof parseRunsArgs>['values'];

function parseRunsArgs(args: string[]) {
  try {
    return parseArgs({ args, options: RUNS_OPTIONS, allowPositionals: true });
  } catch (e) {
    throw new InputError(`runs: ${(e as Error).message}\n\n${USAGE}`);
  }
}

/** Options that do not belong to the subcommand are refused, never ignored. */
function only(values: RunsValues, what: string, allowed: string[]): void {
  const extra = Object.keys(values).filter((k) => !allowed.includes(k));
  if (extra.length) throw new InputError(`${what} takes no ${extra.map((k) => `--${k}`).join(', ')}`);
}

/**
 * `provision runs [--json] [--host H] [--label K=V] [--since D] [--failed]`, `runs show ID [--json]
 * [--html OUT]`, `runs prune (--keep N | --older-than D)`: the run history in the state directory.
 */
export function runsCommand(args: string[], out: CliStreams): number {
  const { values, positionals } = parseRunsArgs(args);
  if (values.help) {
    out.stdout.write(USAGE + '\n');
    return EXIT.OK;
  }
  const [sub, ...rest] = positionals;
  if (sub === 'show') {
    only(values, 'runs show', ['json', 'html']);
    if (rest.length !== 1) throw new InputError('runs show takes one run id (provision runs lists them)');
    writeReport(runReport(readRecord(rest[0])), { json: !!values.json, html: values.html }, out);
    return EXIT.OK;
  }
  if (sub === 'prune') {
    only(values, 'runs prune', ['keep', 'older-than', 'json']);
    if (rest.length) throw new InputError('runs prune takes no arguments');
    return prune(values, out);
  }
  if (sub !== undefined) throw new InputError(`runs: unknown subcommand '${printable(sub)}' (show ID, prune, or none to list)`);
  only(values, 'runs', ['json', 'host', 'label', 'since', 'failed']);
  return list(values, out);
}

function list(values: RunsValues, out: CliStreams): number {
  // (the ledgers alone, not every journal: a run whose ledger still names nodes may have left them
  // out; read before the records: a run writes its record before its ledger names a node, so a run
  // started meanwhile is never taken for one without a record)
  const left = keptLedgers((m) => out.stderr.write(`warning: ${m}\n`));
  const { records, broken } = readRecords();
  for (const b of broken) out.stderr.write(`warning: ${printable(`${runsDir()}/${b}`)} cannot be read: left out\n`);
  const filter = {
    host: values.host,
    labels: parseLabels(values.label ?? []),
    since: values.since === undefined ? undefined : parseSince(values.since),
    failed: !!values.failed,
  };
  // a run with no end counts what its journal shows (its record holds only the zeros it started with)
  const runs = selectRuns(records, filter).map((r) => withJournalCounts(r).record);
  if (values.json) {
    for (const r of runs) {
      const l = left.get(r.id);
      out.stdout.write(
        JSON.stringify(l ? { ...r, drainsLeft: l.nodes, ...(l.unreadable ? { drainsLeftUnreadable: l.unreadable } : {}) } : r) + '\n',
      );
    }
  } else {
    for (const r of runs) out.stdout.write(runLine(r, left.get(r.id)) + '\n');
  }
  const unfiltered = !(filter.host || filter.labels.length || filter.since || filter.failed);
  const recorded = new Set(records.map((r) => r.id));
  const unreadable = new Set(broken.map((name) => name.replace(/\.json$/, '')));
  listUnrecorded(left, recorded, unreadable, unfiltered, values, out);
  // a filter that selects nothing is said (on stderr: stdout stays empty for scripts)
  if (!runs.length)
    out.stderr.write(records.length ? `no run of the ${records.length} in ${runsDir()} matches\n` : `no runs recorded in ${runsDir()}\n`);
  return EXIT.OK;
}

/**
 * Drain ledgers that still name nodes but whose run has no record that can be read (removed by
 * hand, cut short, or never written: that run may still be going): never silent. Said on stderr
 * whatever the filter, and listed after the runs, newest first, when there is none (a filter
 * cannot tell whether such a run matches).
 */
function listUnrecorded(
  left: Map<string, RunLedger>,
  recorded: Set<string>,
  unreadable: Set<string>,
  unfiltered: boolean,
  values: RunsValues,
  out: CliStreams,
) {
  for (const [id, l] of [...left].reverse()) {
    if (recorded.has(id)) continue;
    const broken = unreadable.has(id);
    const record = broken ? `its record in ${runsDir()} cannot be read` : `it has no record in ${runsDir()}`;
    out.stderr.write(
      printable(
        `warning: run ${id}: ${record}, but its drain ledger ${l.where} says: ${nodesOutMarker(l)}; unless that run is still going ` +
          `(it puts its nodes back itself), the next run of this controller that drains such a node takes it over; once one is back by hand, remove its entry there`,
      ) + '\n',
    );
    if (!unfiltered) continue;
    if (values.json) {
      const extra = { ...(broken ? { recordUnreadable: true } : {}), ...(l.unreadable ? { drainsLeftUnreadable: l.unreadable } : {}) };
      out.stdout.write(JSON.stringify({ id, recorded: false, ...extra, drainsLeft: l.nodes }) + '\n');
    } else out.stdout.write(printable(`${id}  (${broken ? 'record unreadable' : 'no record'})  ${nodesOutMarker(l)}`) + '\n');
  }
}

/** The list's marker of a run whose drain ledger still names nodes: it may have left them out of scheduling. */
function nodesOutMarker(l: RunLedger): string {
  const unknown = l.unreadable ? [`${l.unreadable} unreadable entr${l.unreadable === 1 ? 'y' : 'ies'} in its drain ledger`] : [];
  return `NODES OUT: ${[...l.nodes.map(nodeText), ...unknown].join(', ')}`;
}

/** One line per run: id, start, outcome, the nodes it may have left out of scheduling, hosts and their totals, who, labels, playbooks. */
function runLine(r: RunRecord, ledger?: RunLedger): string {
  const hosts = Object.values(r.hosts);
  const sum = (k: 'changed' | 'failed') => hosts.reduce((n, h) => n + h[k], 0);
  const unreachable = hosts.filter((h) => h.unreachable).length;
  const outcome = r.end === undefined ? 'unfinished' : runFailed(r) ? 'FAILED' : r.check ? 'check' : 'ok';
  const labels = Object.entries(r.labels).map(([k, v]) => `${k}=${v}`);
  const playbooks = r.playbooks.map(
    (p) => p.path.replace(`${r.cwd}/`, '') + (p.git ? `@${p.git.revision.slice(0, 8)}${p.git.dirty ? '+' : ''}` : ''),
  );
  return printable(
    [
      r.id,
      r.start.replace(/\.\d+Z$/, 'Z'),
      outcome,
      ...(ledger ? [nodesOutMarker(ledger)] : []),
      `${hosts.length} host(s): ${sum('changed')} changed, ${sum('failed')} failed, ${unreachable} unreachable`,
      `${r.user}@${r.controller}`,
      ...(labels.length ? [labels.join(',')] : []),
      playbooks.join(' '),
    ].join('  '),
  );
}

function prune(values: RunsValues, out: CliStreams): number {
  if (values.keep === undefined && values['older-than'] === undefined)
    throw new InputError('runs prune needs --keep N or --older-than D (e.g. 30d)');
  let keep: number | undefined;
  if (values.keep !== undefined) {
    if (!/^\d{1,7}$/.test(values.keep)) throw new InputError(`--keep must be a whole number, got '${printable(values.keep)}'`);
    keep = Number(values.keep);
  }
  const before = values['older-than'] === undefined ? undefined : Date.now() - parseAge('--older-than', values['older-than']);
  const ledgersKept = keptLedgers((m) => out.stderr.write(`warning: ${m}\n`));
  const { controller } = runner();
  const candidates = runsToPrune(readRecords().records, { keep, before });
  // (a run still running keeps its record: it is what says its drains are a live run's)
  const running = candidates.filter((r) => stillRunning(r, controller));
  const { gone, kept } = spareDrainers(
    candidates.filter((r) => !running.includes(r)),
    drainsLeft(ledgersKept),
  );
  for (const r of gone) {
    removeRun(r);
    removeLedger(r.id); // (its nodes all taken over since, said so there)
  }
  if (values.json) {
    for (const r of gone) out.stdout.write(JSON.stringify({ id: r.id, pruned: true }) + '\n');
    for (const k of kept) out.stdout.write(JSON.stringify({ id: k.run.id, pruned: false, drains: k.nodes }) + '\n');
    for (const r of running) out.stdout.write(JSON.stringify({ id: r.id, pruned: false, running: true }) + '\n');
  }
  out.stderr.write(`pruned ${gone.length} run(s) (records, and their journals in the default journal directory)\n`);
  for (const r of running) out.stderr.write(`kept run ${r.id}: still running (pid ${r.process?.pid}); pruned once it has ended\n`);
  for (const { run, nodes } of kept) {
    // (a ledger of the previous version is one file listing the nodes; this version's, a file per node)
    const where = ledgersKept.get(run.id)?.where ?? ledgerDir(run.id);
    const remove =
      where === ledgerDir(run.id) ? 'remove the file there that names it' : 'remove it from that file (or the file, once none is left out)';
    out.stderr.write(
      `kept run ${run.id}: it may have left ${printable(nodes.map(nodeText).join(', ') || 'nodes it cannot tell (an entry cannot be read)')} out of scheduling (its drain ledger ${where}); ` +
        `the next run of this controller that drains such a node takes it over; once one is back by hand, ${remove}\n`,
    );
  }
  return EXIT.OK;
}
