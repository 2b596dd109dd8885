// npm run bench:behaviour -- --hosts N [--forks F] [--checks LIST] [--keep] [--out FILE]
//
// Issue #39's "Behaviour at 1,000 hosts", checked with the real CLI on a bench bed of N hosts
// (bench/lib/bed.ts; RS_BENCH_BED picks the lane): a saved plan of every host applies, a run's
// journal holds every host, Ctrl-C ends a run within 5 s with every host reported, --serial 10%
// and --max-fail-percent behave as docs/cli.md says (as the 3-host e2e tests check), and the
// controller's peak RSS. One PASS/FAIL line per check with its figures, and a JSON result.
// See bench/README.md, "Behaviour at fleet size".
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { prebuiltIsCurrent } from '../bin/prebuilt.mjs';
import { mapLimit } from '../src/engine/map-limit.ts';
import { BED_ENV, downBed, ensureBed, lockBed, populateJailExport, repoRoot, type Testbed } from './lib/bed.ts';
import {
  batchProblems,
  failBudgetCase,
  fmtSizes,
  hostOutcomes,
  observedBatches,
  percentBatches,
  type JournalEvent,
} from './lib/behaviour.ts';
import { runCli, type CliRun } from './lib/cli-run.ts';
import { sitePlaybook, sitePlays, writeWorkload, type Workload } from './lib/workload.ts';

const CHECKS = ['plan', 'journal', 'interrupt', 'serial', 'max-fail', 'rss'] as const;
type Check = (typeof CHECKS)[number];

const USAGE = `usage: npm run bench:behaviour -- [--hosts N] [options]
  --hosts N        bench bed hosts (default 20, at most 1,012; RS_BENCH_BED=lane1..lane9 picks a lane)
  --forks F        racksmith's --forks (default 100; a --serial batch larger than F runs with its size)
  --checks LIST    ${CHECKS.join(',')} (default all; the hosts are converged first in any case)
  --interrupt-at K Ctrl-C once the journal shows K hosts started (default: half the hosts)
  --no-storage     leave the storage play out (one unused disk per host), as npm run bench -- --no-storage
  --keep           leave the bench bed up (the next run with the same --hosts reuses it)
  --out FILE       JSON result (default bench/results/behaviour.json)`;

/** Ctrl-C must end a run within this (issue #39). */
const INTERRUPT_TARGET_S = 5;
/** Controller peak RSS at 1,000 hosts (issue #39). */
const RSS_TARGET_MB = 1024;
const SERIAL_PERCENT = 10;
/** --max-fail-percent of the budget run: 1 failure short of it in batch 1, the one past it in batch 3. */
const MAX_FAIL_PERCENT = 5;
const HALT_BATCH = 3;

const log = (s: string) => process.stderr.write(`[behaviour ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

interface CheckResult {
  check: Check;
  pass: boolean;
  summary: string;
  figures: Record<string, unknown>;
}

interface RunRecord {
  label: string;
  args: string[];
  code: number;
  wall: number;
  peakRssMb: number;
}

/** The runs of one invocation: each run's journal under the work dir, its figures recorded. */
class Runner {
  readonly runs: RunRecord[] = [];
  private n = 0;
  constructor(
    private readonly w: Workload,
    private readonly forks: number,
  ) {}

  async run(label: string, extra: string[], o: { interruptAt?: number; playbook?: boolean; forks?: number } = {}): Promise<CliRun> {
    const args = [
      ...(o.playbook === false ? [] : [sitePlaybook, '-i', this.w.racksmithInventory]),
      ...extra,
      '-f',
      String(o.forks ?? this.forks),
    ];
    const journal = join(this.w.dir, 'journals', `${String(++this.n).padStart(2, '0')}-${label}.ndjson`);
    log(`${label}: provision ${args.map((a) => a.replace(this.w.dir + '/', '')).join(' ')}`);
    const r = await runCli(args, {
      journal,
      env: { ...process.env, XDG_STATE_HOME: join(this.w.dir, 'state') },
      interruptWhen: o.interruptAt === undefined ? undefined : (_e, started) => started >= o.interruptAt!,
    });
    this.runs.push({ label, args, code: r.code, wall: r.wall, peakRssMb: r.peakRssMb });
    log(`${label}: exit ${r.code} in ${r.wall.toFixed(1)} s, peak RSS ${r.peakRssMb.toFixed(0)} MiB`);
    return r;
  }
}

const recapsOf = (events: JournalEvent[]) => events.filter((e) => e.type === 'host_recap');
const changedOf = (events: JournalEvent[]) => recapsOf(events).reduce((a, e) => a + (e.changed ?? 0), 0);
const stderrTail = (r: CliRun) => r.stderr.trim().split('\n').slice(-3).join(' | ');

/** The journal of a run holds every host: run_start, a host_recap each and the recap name all N. */
function journalHoldsEvery(events: JournalEvent[], hosts: readonly string[]): { ok: boolean; figures: Record<string, number> } {
  const runStart = events.find((e) => e.type === 'run_start');
  const recap = events.find((e) => e.type === 'recap');
  const recapHosts = new Set(recapsOf(events).map((e) => e.host));
  const inRecap = Array.isArray(recap?.hosts) ? (recap.hosts as Array<{ host: string }>).map((h) => h.host) : [];
  const figures = {
    runStartHosts: Array.isArray(runStart?.hosts) ? runStart.hosts.length : 0,
    hostRecaps: recapHosts.size,
    recapHosts: new Set(inRecap).size,
  };
  const ok = hosts.every((h) => recapHosts.has(h)) && hosts.every((h) => inRecap.includes(h)) && figures.runStartHosts === hosts.length;
  return { ok, figures };
}

/**
 * Files of the network tuning play the plan check removes on every converged host: work for a
 * plan within one play. (A plan of site.ts's first run is refused at any size: the jail play's
 * facts, planned before the storage play wrote /etc/fstab, no longer match at apply.)
 */
const PLAN_WORK = ['/etc/security/limits.d/90-racksmith.conf', '/etc/modules-load.d/racksmith.conf'];

/** Every host (converged) given work, a saved plan of all of them, its apply, a re-run with nothing to do. */
async function checkPlan(tb: Testbed, w: Workload, runner: Runner): Promise<{ result: CheckResult; converged?: CliRun }> {
  const n = w.hosts.length;
  const t = performance.now();
  await mapLimit(w.hosts, 20, async (h) => {
    const r = await tb.hostExec(h, `rm -f ${PLAN_WORK.join(' ')}`);
    if (r.code !== 0) throw new Error(`plan: could not remove the network play's files on ${h}: ${r.stderr}`);
  });
  log(`plan: ${PLAN_WORK.join(' and ')} removed on ${n} hosts in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const plan = join(w.dir, 'fleet.plan');
  const check = await runner.run('plan-check', ['--check', '--plan-out', plan]);
  let planned: Record<string, Record<string, Record<string, { changes: unknown[] }>>> = {};
  try {
    planned = JSON.parse(readFileSync(plan, 'utf8')).hosts ?? {};
  } catch {
    /* no plan: said below */
  }
  const withChanges = Object.values(planned).filter((plays) =>
    Object.values(plays).some((rs) => Object.values(rs).some((r) => r.changes?.length)),
  ).length;
  const apply = await runner.run('plan-apply', ['apply', plan], { playbook: false });
  const applied = recapsOf(apply.events);
  const appliedOk = applied.filter((e) => !e.failed && !e.unreachable && !e.error && (e.changed ?? 0) > 0).length;
  const again = await runner.run('converged', []);
  const figures = {
    planCheckExit: check.code,
    planCheckSeconds: check.wall,
    planHosts: Object.keys(planned).length,
    planHostsWithChanges: withChanges,
    planBytes: (() => {
      try {
        return readFileSync(plan).length;
      } catch {
        return 0;
      }
    })(),
    applyExit: apply.code,
    applySeconds: apply.wall,
    hostsAppliedWithChanges: appliedOk,
    changedResources: changedOf(apply.events),
    rerunExit: again.code,
    rerunSeconds: again.wall,
    rerunChanged: changedOf(again.events),
  };
  const pass =
    check.code === 2 &&
    figures.planHosts === n &&
    withChanges === n &&
    figures.changedResources === n * PLAN_WORK.length &&
    apply.code === 0 &&
    appliedOk === n &&
    again.code === 0 &&
    figures.rerunChanged === 0;
  const summary =
    `plan of ${figures.planHosts}/${n} hosts (${withChanges} with changes, ${(figures.planBytes / 2 ** 20).toFixed(1)} MiB; --check exit ${check.code} in ${check.wall.toFixed(1)} s), ` +
    `apply exit ${apply.code} in ${apply.wall.toFixed(1)} s: ${appliedOk}/${n} hosts changed, ${figures.changedResources} resources; ` +
    `re-run exit ${again.code} in ${again.wall.toFixed(1)} s, ${figures.rerunChanged} changed` +
    (pass ? '' : ` (${stderrTail(apply.code ? apply : check)})`);
  return {
    result: { check: 'plan', pass, summary, figures },
    converged: again.code === 0 && figures.rerunChanged === 0 ? again : undefined,
  };
}

/** Runs until a run changes nothing (a first run on a fresh bed; one converged run on a converged one). */
async function converge(runner: Runner): Promise<CliRun> {
  let r = await runner.run('converged', []);
  for (let k = 0; k < 3 && !(r.code === 0 && changedOf(r.events) === 0); k++) r = await runner.run('converged', []);
  return r;
}

function checkJournal(converged: CliRun, hosts: readonly string[]): CheckResult {
  const { ok, figures } = journalHoldsEvery(converged.events, hosts);
  const changed = changedOf(converged.events);
  const pass = ok && converged.code === 0 && changed === 0;
  return {
    check: 'journal',
    pass,
    summary: `converged run (exit ${converged.code}, ${changed} changed, ${converged.wall.toFixed(1)} s): run_start ${figures.runStartHosts}, host_recap ${figures.hostRecaps}, recap ${figures.recapHosts} of ${hosts.length} hosts`,
    figures: { ...figures, exit: converged.code, seconds: converged.wall, changed },
  };
}

async function checkInterrupt(runner: Runner, hosts: readonly string[], interruptAt: number): Promise<CheckResult> {
  const r = await runner.run('interrupt', [], { interruptAt });
  const o = hostOutcomes(r.events, hosts);
  const { ok: journalOk } = journalHoldsEvery(r.events, hosts);
  const toExit = r.interrupt?.toExit ?? NaN;
  const figures = {
    interruptedAfterHosts: r.interrupt?.afterHosts,
    signalToExitSeconds: toExit,
    exit: r.code,
    done: o.done.length,
    interrupted: o.interrupted.length,
    notRunFrom: o.notRunFrom.length,
    notRun: o.notRun.length,
    other: o.other,
    missing: o.missing,
    lastEvent: r.events.at(-1)?.type,
  };
  const pass =
    r.interrupt !== undefined &&
    toExit <= INTERRUPT_TARGET_S &&
    r.code === 1 &&
    journalOk &&
    o.missing.length === 0 &&
    o.other.length === 0 &&
    figures.lastEvent === 'recap';
  const summary = r.interrupt
    ? `SIGINT after ${r.interrupt.afterHosts} of ${hosts.length} hosts started: exit ${r.code} ${toExit.toFixed(2)} s later (target <= ${INTERRUPT_TARGET_S} s); ` +
      `journal names ${hosts.length - o.missing.length}/${hosts.length} hosts: ${o.done.length} done, ${o.interrupted.length} interrupted, ${o.notRunFrom.length} not run from a later play on, ${o.notRun.length} not run` +
      (o.other.length ? `, ${o.other.length} otherwise (${o.other.slice(0, 3).join(' ')})` : '') +
      (figures.lastEvent === 'recap' ? '' : `; the journal ends with ${figures.lastEvent ?? 'nothing'}, not the recap`)
    : `the run ended (exit ${r.code}) before ${interruptAt} hosts had started: nothing interrupted`;
  return { check: 'interrupt', pass, summary, figures };
}

async function checkSerial(runner: Runner, hosts: readonly string[], forks: number): Promise<CheckResult> {
  const sizes = percentBatches(hosts.length, SERIAL_PERCENT);
  // every batch's hosts at once (forks >= its size): its hosts start together, so the journal shows where one batch ends
  const r = await runner.run('serial', ['--serial', `${SERIAL_PERCENT}%`], { forks: Math.max(forks, sizes[0]) });
  const plays = observedBatches(r.events).filter((p) => p.hosts.length > 0);
  const shown = plays.filter((p) => p.visible);
  // a play whose hosts write no event besides their start (no resource of theirs) shows no batch: only its order is checked
  const problems = plays.flatMap((p) => batchProblems(p, percentBatches(p.hosts.length, SERIAL_PERCENT)));
  const pass = r.code === 0 && shown.length > 0 && problems.length === 0;
  const unseen = plays.filter((p) => !p.visible).map((p) => p.play);
  return {
    check: 'serial',
    pass,
    summary:
      `--serial ${SERIAL_PERCENT}% (forks ${Math.max(forks, sizes[0])}): exit ${r.code} in ${r.wall.toFixed(1)} s; ${shown.length} plays in batches ${fmtSizes(sizes)} as expected` +
      (problems.length ? ` — NOT: ${problems.slice(0, 3).join('; ')}` : ', in order, each finished before the next started') +
      (unseen.length ? ` (${unseen.length} plays without resources on these hosts show no batches: ${unseen.join(', ')})` : ''),
    figures: {
      exit: r.code,
      seconds: r.wall,
      expected: sizes,
      plays: plays.map((p) => ({ play: p.play, hosts: p.hosts.length, visible: p.visible, observed: p.observed })),
      problems,
    },
  };
}

async function checkMaxFail(tb: Testbed, runner: Runner, hosts: readonly string[], forks: number, plays: string[]): Promise<CheckResult> {
  const sizes = percentBatches(hosts.length, SERIAL_PERCENT);
  const c = failBudgetCase(hosts, sizes, MAX_FAIL_PERCENT, HALT_BATCH, plays[0] ?? '?');
  if (!c || plays.length < 2)
    return {
      check: 'max-fail',
      pass: false,
      summary: `not checked: the ${fmtSizes(sizes)} batches of ${hosts.length} hosts cannot show it (a batch after batch ${HALT_BATCH} and ${MAX_FAIL_PERCENT}% of the hosts within batch 1)`,
      figures: {},
    };
  // the failures: hosts whose sshd is stopped (unreachable counts as failed, docs/cli.md)
  for (const h of c.failing) await tb.stopSshd(h);
  let r: CliRun;
  try {
    r = await runner.run('max-fail', ['--serial', `${SERIAL_PERCENT}%`, '--max-fail-percent', String(MAX_FAIL_PERCENT)], {
      forks: Math.max(forks, sizes[0]),
    });
  } finally {
    for (const h of c.failing) await tb.startSshd(h);
  }
  const problems: string[] = [];
  const started = r.events.filter((e) => e.type === 'host_start').map((e) => e.host);
  const playStarts = r.events.filter((e) => e.type === 'play_start').map((e) => e.play);
  if (r.code !== 1) problems.push(`exit ${r.code}, expected 1`);
  if (playStarts.join('|') !== plays[0]) problems.push(`plays started: ${playStarts.join(', ')}; expected only '${plays[0]}'`);
  if (started.join(' ') !== c.started.join(' '))
    problems.push(`${started.length} hosts started, expected the ${c.started.length} of batches 1-${c.haltBatch}`);
  const recaps = new Map(recapsOf(r.events).map((e) => [e.host, e]));
  const failing = new Set(c.failing);
  const startedSet = new Set(c.started);
  const wrong: string[] = [];
  for (const h of hosts) {
    const e = recaps.get(h);
    const want = failing.has(h)
      ? undefined
      : startedSet.has(h)
        ? `not run from play '${plays[1]}' on: ${c.reason}`
        : `not run: ${c.reason}`;
    if (!e) wrong.push(`${h}: no host_recap`);
    else if (failing.has(h) ? !e.unreachable : e.error !== want) wrong.push(`${h}: ${e.error ?? 'no error'}`);
  }
  if (wrong.length) problems.push(`${wrong.length} hosts reported otherwise than documented (${wrong.slice(0, 2).join('; ')})`);
  return {
    check: 'max-fail',
    pass: problems.length === 0,
    summary:
      `--serial ${SERIAL_PERCENT}% --max-fail-percent ${MAX_FAIL_PERCENT}, ${c.failing.length} hosts down (${c.failing.length - 1} in batch 1, 1 in batch ${c.haltBatch}): ` +
      `exit ${r.code} in ${r.wall.toFixed(1)} s, ${started.length} hosts started, ${hosts.length - c.started.length} not run with "${c.reason}"` +
      (problems.length ? ` — NOT: ${problems.join('; ')}` : ', no later play'),
    figures: {
      exit: r.code,
      seconds: r.wall,
      failing: c.failing,
      expectedStarted: c.started.length,
      started: started.length,
      reason: c.reason,
      problems,
    },
  };
}

function checkRss(runs: RunRecord[], n: number): CheckResult {
  const measured = runs.filter((r) => Number.isFinite(r.peakRssMb));
  const peak = Math.max(0, ...measured.map((r) => r.peakRssMb));
  const worst = measured.find((r) => r.peakRssMb === peak);
  return {
    check: 'rss',
    pass: measured.length > 0 && peak < RSS_TARGET_MB,
    summary: `controller peak RSS ${peak.toFixed(0)} MiB (${worst?.label ?? '-'}; ${(peak / n).toFixed(2)} MiB per host; target < ${RSS_TARGET_MB} MiB at 1,000 hosts); per run: ${measured.map((r) => `${r.label} ${r.peakRssMb.toFixed(0)}`).join(', ')}`,
    figures: { peakMb: peak, run: worst?.label, perRun: Object.fromEntries(measured.map((r) => [r.label, r.peakRssMb])) },
  };
}

function gitHead(): string {
  try {
    return execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

interface Options {
  hosts: number;
  forks: number;
  checks: Set<Check>;
  interruptAt: number;
  keep: boolean;
  /** The storage play runs (2 disks per host); --no-storage leaves it out. */
  storage: boolean;
  out: string;
}

function options(argv: string[]): Options | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      hosts: { type: 'string', short: 'n' },
      forks: { type: 'string' },
      checks: { type: 'string' },
      'interrupt-at': { type: 'string' },
      keep: { type: 'boolean' },
      'no-storage': { type: 'boolean' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return undefined;
  const int = (v: string | undefined, def: number, what: string, max: number) => {
    const x = v === undefined ? def : Number(v);
    if (!Number.isInteger(x) || x < 1 || x > max) throw new Error(`${what} must be a whole number from 1 to ${max}`);
    return x;
  };
  const hosts = int(values.hosts, 20, '--hosts', 1012);
  const checks = new Set((values.checks ?? CHECKS.join(',')).split(',').map((s) => s.trim()) as Check[]);
  for (const c of checks) if (!CHECKS.includes(c)) throw new Error(`--checks: unknown check ${c} (${CHECKS.join(', ')})`);
  return {
    hosts,
    forks: int(values.forks, 100, '--forks', 10_000),
    checks,
    interruptAt: int(values['interrupt-at'], Math.ceil(hosts / 2), '--interrupt-at', hosts),
    keep: values.keep ?? false,
    storage: !values['no-storage'],
    out: resolve(values.out ?? join(repoRoot, 'bench/results/behaviour.json')),
  };
}

async function main(argv: string[]): Promise<number> {
  const o = options(argv);
  if (!o) {
    console.log(USAGE);
    return 0;
  }
  if (process.getuid?.() !== 0) throw new Error('the behaviour checks need root (they build their own test bed)');
  const unlock = await lockBed();
  const loadAtStart = loadavg();
  const t0 = Date.now();
  if (!prebuiltIsCurrent(repoRoot)) {
    log('dist/ is not built from these sources: npm run build');
    execFileSync(process.execPath, [join(repoRoot, 'scripts/build.mjs')], { cwd: repoRoot, stdio: 'inherit' });
  }
  const site = await sitePlays();
  const storage = site.storage && o.storage;
  const tb = await ensureBed(o.hosts, storage ? 2 : 1, log);
  const workDir = mkdtempSync(join(tmpdir(), 'racksmith-behaviour-'));
  let keepWork = false;
  try {
    await populateJailExport(tb);
    const w = writeWorkload(tb, workDir, o.forks, storage);
    const runner = new Runner(w, o.forks);
    log(`${o.hosts} hosts, forks ${o.forks}, checks ${[...o.checks].join(', ')}; work dir ${workDir} (bed ${BED_ENV.bed})`);
    const results: CheckResult[] = [];
    const report = (c: CheckResult) => {
      results.push(c);
      process.stdout.write(`${c.pass ? 'PASS' : 'FAIL'} ${c.check}: ${c.summary}\n`);
    };
    let converged = await converge(runner);
    if (o.checks.has('plan')) {
      const p = await checkPlan(tb, w, runner);
      report(p.result);
      converged = p.converged ?? converged;
    }
    const plays = converged.events.filter((e) => e.type === 'play_start').map((e) => e.play!);
    if (o.checks.has('journal')) report(checkJournal(converged, w.hosts));
    if (o.checks.has('interrupt')) report(await checkInterrupt(runner, w.hosts, o.interruptAt));
    if (o.checks.has('serial')) report(await checkSerial(runner, w.hosts, o.forks));
    if (o.checks.has('max-fail')) report(await checkMaxFail(tb, runner, w.hosts, o.forks, plays));
    if (o.checks.has('rss')) report(checkRss(runner.runs, o.hosts));
    const result = {
      version: 1,
      date: new Date().toISOString(),
      git: gitHead(),
      machine: { cores: cpus().length, loadAtStart, loadAtEnd: loadavg() },
      config: { hosts: o.hosts, forks: o.forks, interruptAt: o.interruptAt, bed: BED_ENV.bed, storage, plays },
      checks: results,
      runs: runner.runs,
      totalSeconds: (Date.now() - t0) / 1000,
    };
    mkdirSync(dirname(o.out), { recursive: true });
    writeFileSync(o.out, JSON.stringify(result, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n');
    const failed = results.filter((c) => !c.pass).length;
    keepWork = failed > 0;
    if (keepWork) log(`a check failed: the runs' journals stay in ${join(workDir, 'journals')}`);
    log(
      `${results.length - failed} of ${results.length} checks passed; load ${loadAtStart[0].toFixed(1)} -> ${loadavg()[0].toFixed(1)}; results: ${o.out} (${result.totalSeconds.toFixed(0)} s)`,
    );
    return failed ? 1 : 0;
  } finally {
    if (!keepWork) rmSync(workDir, { recursive: true, force: true });
    if (!o.keep) {
      log('tearing the bench bed down (--keep leaves it up)');
      await downBed(tb);
    }
    unlock();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`bench:behaviour: ${(e as Error).message}\n`);
    process.exit(2);
  },
);
