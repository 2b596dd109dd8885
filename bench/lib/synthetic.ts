// --synthetic [HOSTS]: plan time for a large fleet without SSH.
//
// A 50-resource playbook per host: the site playbook's resources (27 on the bed with storage) plus
// generic ones up to 50: files, directories and lines stacked in one file. It is converged for real on one bed host and
// the probe output of a converged run is recorded there (per exec, per play). Then HOSTS hosts
// are read from a generated YAML inventory, prepared, and executed through a fake connection
// that answers every exec with the recorded output (markers rewritten), with the CLI's reporters
// (progress lines and the journal, plus NDJSON for the --json variant; output to nowhere) and the
// recap. Each replay runs in a fresh Node process (bench/synthetic-replay.ts), cold like the CLI:
// nothing the bench process ran before (the recording run included) has warmed V8 up for it.
// Measured: CPU and wall of each phase in that process.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { prebuiltIsCurrent, prebuiltPlaybookImporter } from '../../bin/prebuilt.mjs';
import { summarize, type Summary } from './stats.ts';
import type { Testbed } from './bed.ts';
import { sitePlaybook, RACKSMITH_VARS, storageDisks, type Workload } from './workload.ts';
import type { Connection, ExecResult } from '../../src/connection/types.ts';
import type { Host } from '../../src/inventory/model.ts';
import type { ConnectOptions } from '../../src/connection/connect.ts';
import type { Playbook } from '../../src/contract/playbook.ts';
import type { Resource } from '../../src/contract/resource.ts';

const RESOURCES_PER_HOST = 50;

const repoRoot = resolve(import.meta.dirname, '../..');
let useDist: boolean | undefined;
/**
 * One of racksmith's modules (`src/x.ts`) as the CLI runs it: the prebuilt dist/ JavaScript when
 * it was built from these sources (what `npm ci` installs; precompiled schemas), else the source.
 */
async function racksmith<M>(rel: string): Promise<M> {
  useDist ??= prebuiltIsCurrent(repoRoot);
  const file = useDist ? join(repoRoot, 'dist', rel.replace(/\.ts$/, '.js')) : join(repoRoot, rel);
  return (await import(pathToFileURL(file).href)) as M;
}

/** The site playbook, loaded as the CLI loads it. */
async function siteBook(): Promise<Playbook> {
  const { loadPlaybook } = await racksmith<typeof import('../../src/cli.ts')>('src/cli.ts');
  useDist ??= prebuiltIsCurrent(repoRoot);
  return useDist
    ? loadPlaybook(sitePlaybook, prebuiltPlaybookImporter(repoRoot) as (f: string) => Promise<{ default?: unknown }>)
    : loadPlaybook(sitePlaybook);
}

/** The site playbook plus generic resources up to `total` per host (a directory, files, directories, lines stacked in one file). */
async function benchPlaybook(siteCount: number, total: number): Promise<{ pb: Playbook; extra: number }> {
  const { playbook } = await racksmith<typeof import('../../src/contract/playbook.ts')>('src/contract/playbook.ts');
  const { file } = await racksmith<typeof import('../../src/resources/core/file.ts')>('src/resources/core/file.ts');
  const { directory } = await racksmith<typeof import('../../src/resources/core/directory.ts')>('src/resources/core/directory.ts');
  const { line } = await racksmith<typeof import('../../src/resources/core/text-edit.ts')>('src/resources/core/text-edit.ts');
  const site = await siteBook();
  const n = Math.max(1, total - siteCount);
  const nFiles = Math.round((n - 1) * 0.4);
  const nLines = Math.round((n - 1) * 0.35);
  const nDirs = n - 1 - nFiles - nLines;
  const extras = (): Resource[] => {
    const out: Resource[] = [];
    const dir = directory({ path: '/etc/racksmith-bench', mode: '0755' });
    out.push(dir);
    for (let i = 1; i <= nFiles; i++) {
      out.push(
        file({
          path: `/etc/racksmith-bench/file-${String(i).padStart(2, '0')}.conf`,
          content: `# racksmith benchmark file ${i}\n${'key_' + i} = ${'x'.repeat(120)}\nenabled = true\n`,
          mode: '0644',
          after: [dir.id],
        }),
      );
    }
    for (let i = 1; i <= nDirs; i++) out.push(directory({ path: `/var/lib/racksmith-bench/d${i}`, mode: '0750' }));
    for (let i = 1; i <= nLines; i++)
      out.push(
        line({
          path: '/etc/racksmith-bench/lines.conf',
          line: `option_${i} = ${i * 7}`,
          regexp: `^option_${i} =`,
          create: true,
          after: [dir.id],
        }),
      );
    return out;
  };
  return {
    extra: n,
    pb: playbook({ name: 'synthetic', plays: [...site.plays, { name: 'bench extras', hosts: 'all', resources: () => extras() }] }),
  };
}

/** A recorded converged run: the stdout of each exec, in order, and the marker it used. */
interface Recording {
  outputs: Array<{ marker: string; stdout: string; stderr: string }>;
}

// Inline probe parts are delimited by a mark random per process (src/engine/probe-set.ts): a
// recording saved by another process carries its own, rewritten to this process's.
const INLINE_MARK = /@@RS-INLINE-[0-9a-f]+@@/g;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/**
 * The recorded output as host number `i` of a converged fleet would answer: what differs between
 * such hosts is made to differ, so that nothing the engine reuses across hosts (a parse of the
 * same answer) looks better here than on a real fleet. Each host has its own filesystem UUIDs
 * (in the disks' probes and in fstab's content) and mount IDs in the mount table.
 */
export function hostVariant(stdout: string, i: number): string {
  const uuid = (u: string) => u.slice(0, -4) + (i & 0xffff).toString(16).padStart(4, '0');
  let out = stdout
    .replace(UUID, uuid)
    .replace(
      /^(\d+) (\d+) (?=\d+:\d+ )/gm,
      (_, id: string, parent: string) => `${Number(id) + 10_000 * i} ${Number(parent) + 10_000 * i} `,
    );
  // small files' contents travel as one od hex dump (src/resources/core/file-common.ts)
  const c = out.indexOf('\n@content\n');
  const h = out.indexOf('\n@sha\n', c);
  if (c >= 0 && h > c) {
    const blob = Buffer.from(
      Buffer.from(out.slice(c + 10, h).replace(/\s+/g, ''), 'hex')
        .toString('latin1')
        .replace(UUID, uuid),
      'latin1',
    );
    out = out.slice(0, c + 10) + odHex(blob) + out.slice(h);
  }
  return out;
}

/** `bytes` as `od -A n -v -t x1` prints them: 16 a line, each as a space and two hex digits. */
function odHex(bytes: Buffer): string {
  let text = '';
  for (let at = 0; at < bytes.length; at += 16)
    text += `${[...bytes.subarray(at, at + 16)].map((b) => ` ${b.toString(16).padStart(2, '0')}`).join('')}\n`;
  return text;
}

/** Replays each host's answers (made before the timed run), with the marker of each exec's script. */
class FakeConnection implements Connection {
  execCount = 0;
  constructor(
    readonly host: string,
    private readonly answers: Array<{ pieces: string[]; stderr: string[] }>,
  ) {}
  async exec(script: string): Promise<ExecResult> {
    const r = this.answers[this.execCount++];
    if (!r) throw new Error(`synthetic: ${this.host}: exec ${this.execCount} was not recorded (not converged?)`);
    const inScript = /^rs_m='([^']+)'/.exec(script)?.[1];
    if (!inScript) throw new Error('synthetic: no marker in the script');
    // A one-byte copy: V8 may hold the script (ASCII as it is) as a two-byte string, and answers
    // joined with a slice of it would be two-byte too, twice the memory and slower to scan than
    // the one-byte string a real connection decodes from the channel.
    const marker = Buffer.from(inScript, 'latin1').toString('latin1');
    return { stdout: r.pieces.join(marker), stderr: r.stderr.join(marker), code: 0 };
  }
  async close(): Promise<void> {}
}

const nullStream = () => Object.assign(new Writable({ write: (_c, _e, cb) => cb() }), { isTTY: false }) as unknown as NodeJS.WriteStream;

export interface SyntheticResult {
  hosts: number;
  resourcesPerHost: number;
  /** With the --json stream as well as the CLI's default reporters (progress and journal). */
  json: boolean;
  /** racksmith ran from dist/ (as npm ci installs it), else from the sources through tsx. */
  fromDist: boolean;
  /** Hosts whose replayed answers are all different from each other's (see hostVariant). */
  distinctAnswers: number;
  /** CPU (user+system) and wall per phase, milliseconds. */
  phases: Record<string, { cpuMs: number; wallMs: number }>;
  totalCpuMs: number;
  totalWallMs: number;
  heapUsedMb: number;
  rssMb: number;
  recap: { ok: number; changed: number; failed: number };
}

/** What the replay needs from the bed: the recording and how the playbook was sized. */
export interface SavedRecording extends Recording {
  bedHost: string;
  siteCount: number;
  resourcesPerHost: number;
  disks?: ReturnType<typeof storageDisks>;
}

/** What --synthetic reports: the median run of each variant, and every run's total CPU. */
export interface SyntheticReport extends SyntheticResult {
  /** Replays per variant (fresh processes, the two variants alternating). */
  runs: number;
  /** Total CPU (ms) of every run, and their spread. */
  cpuMs: Summary & { all: number[] };
  /** The same with --json. */
  withJson: SyntheticResult & { cpuMs: Summary & { all: number[] } };
}

export async function syntheticPlan(
  tb: Testbed,
  w: Workload,
  hosts: number,
  runs: number,
  log: (s: string) => void,
): Promise<SyntheticReport> {
  // RS_SYNTHETIC_RECORDING=FILE: reuse the recording in FILE (made by an earlier run with the same
  // variable) instead of converging and recording again; for iterating on the engine. A recording
  // is only valid while the scripts and the playbooks stay the same (a stale one shows as changed
  // or failed resources in the replay).
  const cache = process.env.RS_SYNTHETIC_RECORDING;
  let recording = join(w.dir, 'synthetic-recording.json');
  if (cache && existsSync(cache)) {
    recording = cache;
    const saved = JSON.parse(readFileSync(cache, 'utf8')) as SavedRecording;
    log(`synthetic: recording reused from ${cache} (${saved.outputs.length} execs, ${saved.resourcesPerHost} resources)`);
  } else {
    const saved = await record(tb, w, log);
    writeFileSync(recording, JSON.stringify(saved));
    if (cache) writeFileSync(cache, JSON.stringify(saved));
  }
  // Alternating, so that both variants see the machine in the same states (it is noisy).
  const plain: SyntheticResult[] = [];
  const json: SyntheticResult[] = [];
  for (let r = 0; r < runs; r++) {
    plain.push(await replayInChild(recording, w.dir, hosts, false));
    json.push(await replayInChild(recording, w.dir, hosts, true));
  }
  const medianRun = (rs: SyntheticResult[]) => {
    const all = rs.map((x) => x.totalCpuMs);
    const sorted = [...rs].sort((a, b) => a.totalCpuMs - b.totalCpuMs);
    return { ...sorted[(sorted.length - 1) >> 1], cpuMs: { ...summarize(all), all } };
  };
  const report: SyntheticReport = { ...medianRun(plain), runs, withJson: medianRun(json) };
  for (const r of [report, report.withJson]) {
    if (r.distinctAnswers !== hosts) log(`synthetic: WARNING: only ${r.distinctAnswers} of ${hosts} hosts answer differently`);
    if (r.recap.failed || r.recap.changed)
      log(
        `synthetic: WARNING: the replay did not come out converged (${r.recap.changed} changed, ${r.recap.failed} failed): the plan time is not of a converged fleet`,
      );
  }
  process.stdout.write(syntheticLines(report).join('\n'));
  return report;
}

/** One replay in a fresh Node process (bench/synthetic-replay.ts): cold, as a CLI run is. */
async function replayInChild(recording: string, dir: string, hosts: number, json: boolean): Promise<SyntheticResult> {
  const out = join(dir, `synthetic-result-${json ? 'json' : 'plain'}.json`);
  const args = [
    '--import',
    'tsx',
    join(repoRoot, 'bench', 'synthetic-replay.ts'),
    '--recording',
    recording,
    '--hosts',
    String(hosts),
    '--dir',
    dir,
    '--out',
    out,
    ...(json ? ['--json'] : []),
  ];
  const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((res, rej) => {
    const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', rej);
    child.on('close', (c) => res({ code: c, stderr: err }));
  });
  if (code !== 0) throw new Error(`synthetic replay failed (exit ${code}): ${stderr.trim().split('\n').slice(-5).join('\n')}`);
  return JSON.parse(readFileSync(out, 'utf8')) as SyntheticResult;
}

/** The report: the median default run's phases, then one line per variant. */
function syntheticLines(r: SyntheticReport): string[] {
  const range = (c: Summary) =>
    c.n > 1 ? `, median of ${c.n} fresh processes (${(c.min / 1000).toFixed(2)}–${(c.max / 1000).toFixed(2)}s)` : '';
  const phase = (k: string, v: { cpuMs: number; wallMs: number }) =>
    `  ${k.padEnd(58)} cpu ${v.cpuMs.toFixed(0).padStart(6)} ms${Number.isFinite(v.wallMs) ? `  wall ${v.wallMs.toFixed(0).padStart(6)} ms` : ''}`;
  const j = r.withJson;
  return [
    '',
    `synthetic plan: ${r.hosts} hosts x ${r.resourcesPerHost} resources, no SSH (recorded converged probe output), a fresh process per run, racksmith ${r.fromDist ? 'from dist/ (as npm ci installs it)' : 'from src/ through tsx (dist/ is not current: npm run build)'}; the median run with the CLI's default reporters (progress, journal):`,
    ...Object.entries(r.phases).map(([k, v]) => phase(k, v)),
    `  total                                                      cpu ${r.totalCpuMs.toFixed(0).padStart(6)} ms  wall ${r.totalWallMs.toFixed(0).padStart(6)} ms; heap ${r.heapUsedMb.toFixed(0)} MiB, rss ${r.rssMb.toFixed(0)} MiB`,
    `  resources: ${r.recap.ok} ok, ${r.recap.changed} changed, ${r.recap.failed} failed (all ok expected)`,
    `  with --json as well (NDJSON of every event): execute ${j.phases[EXECUTE].cpuMs.toFixed(0)} ms, total ${j.totalCpuMs.toFixed(0)} ms`,
    `synthetic: ${r.hosts} hosts x ${r.resourcesPerHost} resources: plan ${(r.totalCpuMs / 1000).toFixed(2)}s CPU (${(r.totalWallMs / 1000).toFixed(2)}s wall)${range(r.cpuMs)}`,
    `synthetic with --json: ${j.hosts} hosts x ${j.resourcesPerHost} resources: plan ${(j.totalCpuMs / 1000).toFixed(2)}s CPU (${(j.totalWallMs / 1000).toFixed(2)}s wall)${range(j.cpuMs)}`,
    '',
  ];
}

const EXECUTE = 'execute (script build, fake exec, parse, diff, events)';

/** 1. converge one bed host with a 50-resource playbook, then record a converged run. */
async function record(tb: Testbed, w: Workload, log: (s: string) => void): Promise<SavedRecording> {
  const { loadInventory } = await racksmith<typeof import('../../src/inventory/load.ts')>('src/inventory/load.ts');
  const { prepare, execute } = await racksmith<typeof import('../../src/engine/index.ts')>('src/engine/index.ts');
  const { connect } = await racksmith<typeof import('../../src/connection/connect.ts')>('src/connection/connect.ts');
  const bedHost = w.hosts[0];
  const inv1 = loadInventory(w.racksmithInventory);
  const siteCount = prepare(inv1, [await siteBook()], { limit: bedHost }).reduce(
    (a, p) => a + p.hosts.reduce((b, h) => b + h.resources.length, 0),
    0,
  );
  const { pb, extra } = await benchPlaybook(siteCount, RESOURCES_PER_HOST);
  const run = async (connector: (h: Host, o: ConnectOptions) => Promise<Connection>) =>
    execute(
      prepare(inv1, [pb], { limit: bedHost }),
      {
        inventoryFile: w.racksmithInventory,
        acceptNewHostKeys: false,
        connectTimeoutMs: 10_000,
        check: false,
        forks: 1,
        connectAttempts: 3,
        connector,
      },
      () => {},
    );
  for (let k = 0; k < 4; k++) {
    const o = await run(connect);
    const h = o.hosts[0];
    if (h.changed === 0 && h.failed === 0 && !h.unreachable) break;
    if (k === 3)
      throw new Error(
        `synthetic: ${bedHost} does not converge with the synthetic playbook: ${o.results
          .filter((r) => r.status === 'failed')
          .map((r) => `${r.id}: ${r.error}`)
          .join('; ')}`,
      );
  }
  const rec: Recording = { outputs: [] };
  const check = await run(async (h, o) => {
    const c = await connect(h, o);
    return {
      host: c.host,
      get execCount() {
        return c.execCount;
      },
      exec: async (script: string, stdin?: string) => {
        const r = await c.exec(script, stdin);
        rec.outputs.push({ marker: /^rs_m='([^']+)'/.exec(script)![1], stdout: r.stdout, stderr: r.stderr });
        return r;
      },
      close: () => c.close(),
    };
  });
  const resourcesPerHost = check.results.length;
  log(
    `synthetic: ${bedHost} converged with ${resourcesPerHost} resources (site ${siteCount} + ${extra} generic), ${rec.outputs.length} execs recorded`,
  );
  return { ...rec, bedHost, siteCount, resourcesPerHost, disks: w.storage ? storageDisks(tb.host(bedHost)) : undefined };
}

/**
 * `fn` under V8's CPU profiler when `file` is set (RS_SYNTHETIC_CPU_PROFILE: the execute phase
 * alone, without the harness's set-up around it), written there as a .cpuprofile.
 */
async function cpuProfiled<T>(file: string | undefined, fn: () => Promise<T>): Promise<T> {
  if (!file) return fn();
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  }
}

/** 2.-3. the replay for HOSTS hosts; exported to profile it without a bed (a saved recording). */
export async function replaySynthetic(
  saved: SavedRecording,
  dir: string,
  hosts: number,
  o: { json: boolean },
  log: (s: string) => void = () => {},
): Promise<SyntheticResult> {
  const { loadInventory } = await racksmith<typeof import('../../src/inventory/load.ts')>('src/inventory/load.ts');
  const { prepare, execute } = await racksmith<typeof import('../../src/engine/index.ts')>('src/engine/index.ts');
  const { HumanReporter } = await racksmith<typeof import('../../src/output/human.ts')>('src/output/human.ts');
  const { jsonSink } = await racksmith<typeof import('../../src/output/json.ts')>('src/output/json.ts');
  const { journalSink } = await racksmith<typeof import('../../src/output/journal.ts')>('src/output/journal.ts');
  const { resourceEvent } = await racksmith<typeof import('../../src/engine/events.ts')>('src/engine/events.ts');
  const { pb } = await benchPlaybook(saved.siteCount, RESOURCES_PER_HOST);
  const { resourcesPerHost, disks } = saved;
  const rec: Recording = { outputs: saved.outputs };

  // 2. HOSTS hosts in a generated inventory, same vars as the bench inventory (and the recorded
  //    host's disks, so that the replayed disk facts match)
  const invFile = join(dir, `synthetic-${hosts}.yaml`);
  const names = Array.from({ length: hosts }, (_, i) => `node${String(i + 1).padStart(4, '0')}`);
  const members = Object.fromEntries(names.map((n) => [n, null]));
  writeFileSync(
    invFile,
    stringify(
      {
        all: {
          vars: { ansible_user: 'root', racksmith_known_hosts: '/dev/null', ...RACKSMITH_VARS },
          hosts: Object.fromEntries(
            names.map((n, i) => [
              n,
              { ansible_host: `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`, ...(disks ? { storage_disks: disks } : {}) },
            ]),
          ),
          children: { jail: { hosts: members }, ...(disks ? { storage: { hosts: members } } : {}) },
        },
      },
      { aliasDuplicateObjects: false },
    ),
  );

  // Every host's answers, made before anything is timed (the harness's work, not the engine's).
  const { standaloneProbe } = await racksmith<typeof import('../../src/engine/probe-set.ts')>('src/engine/probe-set.ts');
  const { inline } = await racksmith<typeof import('../../src/contract/probe.ts')>('src/contract/probe.ts');
  const inlineMark = standaloneProbe([inline(':')]).script.match(INLINE_MARK)![0];
  const answers = new Map(
    names.map((n, i) => [
      n,
      rec.outputs.map((o) => ({
        pieces: hostVariant(o.stdout.replace(INLINE_MARK, inlineMark), i).split(o.marker),
        stderr: o.stderr.split(o.marker),
      })),
    ]),
  );

  const distinctAnswers = new Set([...answers.values()].map((a) => a.map((x) => x.pieces.join('')).join(''))).size;
  if (distinctAnswers !== hosts) log(`synthetic: WARNING: only ${distinctAnswers} of ${hosts} hosts answer differently`);

  // Fresh journal files (a journal appends: replays sharing a directory would grow one file),
  // removed before the clock starts: freeing the last replay's megabytes is not this plan's work.
  const journalFile = join(dir, 'synthetic-journal.ndjson');
  const journalFile2 = join(dir, 'synthetic-journal-2.ndjson');
  for (const f of [journalFile, journalFile2]) rmSync(f, { force: true });

  const phases: SyntheticResult['phases'] = {};
  const lap = async <T>(name: string, fn: () => T | Promise<T>): Promise<T> => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const v = await fn();
    const c = process.cpuUsage(c0);
    phases[name] = { cpuMs: (c.user + c.system) / 1000, wallMs: performance.now() - t0 };
    return v;
  };
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const inv = await lap('load inventory', () => loadInventory(invFile));
  const prepared = await lap('prepare (build + validate resources)', () => prepare(inv, [pb], {}));
  const human = new HumanReporter({ diff: false, verbose: 0, out: nullStream() });
  const json = o.json ? jsonSink(nullStream()) : undefined;
  const journal = journalSink(journalFile);
  type RunEvent = Parameters<typeof human.onEvent>[0];
  let eventCount = 0;
  const emit = (e: RunEvent) => {
    eventCount++;
    human.onEvent(e);
    json?.(e);
    journal(e);
  };
  emit({ type: 'run_start', playbooks: ['synthetic'], hosts: names, check: false });
  const outcome = await lap(EXECUTE, () =>
    cpuProfiled(process.env.RS_SYNTHETIC_CPU_PROFILE, () =>
      execute(
        prepared,
        {
          inventoryFile: invFile,
          acceptNewHostKeys: false,
          connectTimeoutMs: 10_000,
          check: false,
          forks: 50,
          connectAttempts: 1,
          connector: async (h: Host) => new FakeConnection(h.name, answers.get(h.name)!),
        },
        emit,
      ),
    ),
  );
  await lap('report (progress finish, change groups, recap table)', () => human.finish(outcome));
  const total = process.cpuUsage(c0);
  const totalWall = performance.now() - t0;
  // What the event sinks cost inside `execute`: the run's events again (rebuilt from its results,
  // not kept during the run: holding 50,000 events would add garbage-collection work the CLI does
  // not have) through fresh sinks (timing each event inside the run would cost more than the sinks).
  {
    const events: RunEvent[] = [{ type: 'run_start', playbooks: ['synthetic'], hosts: names, check: false }];
    let at: string | undefined;
    for (const r of outcome.results) {
      if (`${r.host}\0${r.play}` !== at) events.push({ type: 'host_start', host: r.host, play: r.play });
      at = `${r.host}\0${r.play}`;
      events.push(resourceEvent(r));
    }
    for (const h of outcome.hosts) events.push({ type: 'host_recap', ...h });
    const h2 = new HumanReporter({ diff: false, verbose: 0, out: nullStream() });
    const j2 = jsonSink(nullStream());
    const jr2 = journalSink(journalFile2);
    const parts: Array<[string, (e: (typeof events)[number]) => void]> = [
      ['progress lines', h2.onEvent],
      ...(o.json ? [['NDJSON', j2] as [string, typeof j2]] : []),
      ['journal', jr2],
    ];
    for (const [name, sink] of parts) {
      const a = process.cpuUsage();
      const t = performance.now();
      for (const e of events) sink(e);
      const d = process.cpuUsage(a);
      phases[`  of which event sink: ${name} (${eventCount} events; ${events.length} replayed)`] = {
        cpuMs: (d.user + d.system) / 1000,
        wallMs: performance.now() - t,
      };
    }
  }
  const ok = outcome.results.filter((r) => r.status === 'ok').length;
  const changed = outcome.results.filter((r) => r.status === 'changed').length;
  const failed = outcome.results.filter((r) => r.status === 'failed').length;
  const mem = process.memoryUsage();
  return {
    hosts,
    resourcesPerHost,
    json: o.json,
    fromDist: useDist ?? false,
    distinctAnswers,
    phases,
    totalCpuMs: (total.user + total.system) / 1000,
    totalWallMs: totalWall,
    heapUsedMb: mem.heapUsed / 2 ** 20,
    rssMb: mem.rss / 2 ** 20,
    recap: { ok, changed, failed },
  };
}
