// npm run bench -- --hosts N [--runs R] [--become] [--profile] [--synthetic] [--keep]
//
// racksmith against ansible-core and ansible-core with Mitogen, side by side on the same test hosts
// (the benchmark's own test bed, never the e2e one). Per run, each tool in turn (A B C A B C ...):
// reset every host, first run (fresh hosts), converged run (nothing to do), end state read back
// and compared with the first tool's, host by host; then the floor (node-ssh: connect + `true` on every host, same concurrency).
// See bench/README.md.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { prebuiltIsCurrent } from '../bin/prebuilt.mjs';
import { benchState, BED_ENV, downBed, ensureBed, lockBed, populateJailExport, repoRoot, resetHosts } from './lib/bed.ts';
import { QUIET_CORES } from './lib/measure.ts';
import { compare, snapshot, type Comparison, type HostState } from './lib/state.ts';
import { fmtRange, summarize, table, type Summary } from './lib/stats.ts';
import { runAnsible, runAnsibleRawFloor, runFloor, runRacksmith, TOOLS, type Case, type Tool, type ToolRun } from './lib/tools.ts';
import { mitogenStrategyDir, sitePlays, writeWorkload } from './lib/workload.ts';

const USAGE = `usage: npm run bench -- [--hosts N] [--runs R] [options]
  --hosts N            test hosts (default 20, at most 1,012; the bench bed, rsbb0 / 10.78.0.0/22 / .testbed-bench,
                       or RS_BENCH_BED=lane1..lane9: rsblK / 10.(100+K).0.0/22 / .testbed-bench-laneK)
  --runs R             runs per tool and case, alternating racksmith / ansible / ansible-mitogen (default 3)
  --tools LIST         racksmith,ansible,ansible-mitogen (default all three)
  --cases LIST         first-run,converged,floor (default all)
  --forks N            concurrency of both tools and of the floor (default: N hosts)
  --become             every tool logs in as the bed's ops user and escalates with sudo (NOPASSWD);
                       racksmith's converged run is also measured as root, side by side
  --profile            afterwards, where racksmith's time goes (in-process, instrumented connection)
  --synthetic          afterwards, plan time for 1,000 synthetic hosts x 50 resources, no SSH
  --synthetic-hosts H  that many synthetic hosts instead of 1,000
  --no-storage         leave the storage play out (one unused disk per host): for beds past the runner's disk
                       space (each formatted bed disk writes XFS's 64 MiB log: ~130 MB per host with storage)
  --keep               leave the bench bed up (the next run with the same --hosts reuses it)
  --out FILE           JSON results (default bench/results/latest.json)
The growth from 20 to 1,000 hosts, charted into bench/README.md: npx tsx bench/scale-chart.ts RESULTS.json...`;

interface Sample extends Omit<ToolRun, 'stdout' | 'stderr'> {
  run: number;
  case: Case;
  connectMs?: number[];
  execMs?: number[];
  idempotent?: boolean;
}

const log = (s: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${s}\n`);
const secs = (x: number) => `${x.toFixed(2)}s`;

/** Modules of a collection that ansible-doc lists (empty when the collection is not installed). */
function collectionModules(collection: string): string[] {
  try {
    return execFileSync('ansible-doc', ['-l', collection], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\n')
      .map((l) => l.split(/\s+/)[0])
      .filter(Boolean);
  } catch {
    return [];
  }
}

function version(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\n')[0]
      .trim();
  } catch {
    return 'unavailable';
  }
}

/** What racksmith was measured at: HEAD plus uncommitted changes under src/, playbooks/, bin/ (others edit them meanwhile). */
function codeVersion(): string {
  try {
    const head = execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const diff = execFileSync('git', ['-C', repoRoot, 'diff', 'HEAD', '--', 'src', 'playbooks', 'bin', 'package.json'], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    return diff ? `${head}+dirty:${createHash('sha256').update(diff).digest('hex').slice(0, 12)}` : head;
  } catch {
    return 'unknown';
  }
}

// The synthetic plan takes a second or two per replay, and this machine's CPU time per run varies
// by ±20%: at least this many replays per variant, whatever --runs says.
const SYNTHETIC_MIN_RUNS = 5;

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      hosts: { type: 'string', short: 'n' },
      runs: { type: 'string', short: 'r' },
      tools: { type: 'string' },
      cases: { type: 'string' },
      forks: { type: 'string' },
      become: { type: 'boolean' },
      profile: { type: 'boolean' },
      synthetic: { type: 'boolean' },
      'synthetic-hosts': { type: 'string' },
      keep: { type: 'boolean' },
      'no-storage': { type: 'boolean' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const int = (v: string | undefined, def: number, what: string, min = 1) => {
    const n = v === undefined ? def : Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${what} must be a whole number >= ${min}`);
    return n;
  };
  const N = int(values.hosts, 20, '--hosts');
  if (N > 1012) throw new Error('--hosts: a bench bed (a /22 network) holds at most 1,012 hosts');
  const R = int(values.runs, 3, '--runs');
  const forks = int(values.forks, N, '--forks');
  const tools = (values.tools ?? TOOLS.join(',')).split(',').map((s) => s.trim()) as Tool[];
  for (const t of tools) if (!TOOLS.includes(t)) throw new Error(`--tools: unknown tool ${t} (${TOOLS.join(', ')})`);
  if (new Set(tools).size !== tools.length) throw new Error('--tools: a tool is named twice');
  const cases = new Set((values.cases ?? 'first-run,converged,floor').split(',').map((s) => s.trim()) as Case[]);
  for (const c of cases) if (!['first-run', 'converged', 'floor'].includes(c)) throw new Error(`--cases: unknown case ${c}`);
  const syntheticHosts =
    values.synthetic || values['synthetic-hosts'] !== undefined ? int(values['synthetic-hosts'], 1000, '--synthetic-hosts') : 0;
  const out = resolve(values.out ?? join(repoRoot, 'bench/results/latest.json'));
  if (process.getuid?.() !== 0) throw new Error('the benchmark needs root (it builds its own test bed)');
  if (tools.some((t) => t !== 'racksmith')) {
    if (version('ansible-playbook', ['--version']) === 'unavailable')
      throw new Error('ansible-playbook not found (apt-get install ansible-core)');
    const posix = collectionModules('ansible.posix');
    if (!posix.includes('ansible.posix.sysctl') || !posix.includes('ansible.posix.mount')) {
      throw new Error(
        'the Ansible side uses ansible.posix.sysctl and ansible.posix.mount: install the Debian `ansible` package (it ships ansible.posix), or run with --tools racksmith',
      );
    }
  }
  const mitogenDir = tools.includes('ansible-mitogen') ? mitogenStrategyDir() : undefined;
  if (tools.includes('ansible-mitogen') && !mitogenDir)
    throw new Error('ansible-mitogen is not installed (apt-get install ansible-mitogen), or leave it out of --tools');

  const unlock = await lockBed();
  const t0 = Date.now();
  const loadAtStart = loadavg();
  // Measure the CLI as installed (npm ci builds dist/): rebuild it when the sources moved since.
  if (!prebuiltIsCurrent(repoRoot)) {
    log('dist/ is not built from these sources: npm run build');
    execFileSync(process.execPath, [join(repoRoot, 'scripts/build.mjs')], { cwd: repoRoot, stdio: 'inherit' });
  }
  const codeAtStart = codeVersion();
  // The storage play needs data disks: two per host, as in the storage e2e test (d1 rotational
  // = HDD profile, d2 non-rotational = SSD profile).
  const site = await sitePlays();
  const storage = site.storage && !values['no-storage'];
  if (site.storage && !storage) log('--no-storage: the storage play is left out (network and jail only)');
  if (site.notBenched.length)
    log(
      `plays of site.ts with no host in the bench inventory (not benchmarked, nothing on the Ansible side): ${site.notBenched.join(', ')}`,
    );
  const tb = await ensureBed(N, storage ? 2 : 1, log);
  const exportDir = await populateJailExport(tb);
  const runDir = mkdtempSync(join(tmpdir(), 'racksmith-bench-'));
  const w = writeWorkload(tb, runDir, forks, storage, mitogenDir, values.become ?? false);
  const allHosts = w.hosts;
  log(
    `${N} hosts, ${R} run(s), tools ${tools.join(' / ')}, forks ${forks}, login ${w.become ? 'ops + sudo' : 'root'}; plays: network${storage ? ', storage (2 disks per host)' : ''}, jail (export ${exportDir}); work dir ${runDir}`,
  );

  const samples: Sample[] = [];
  /** Per run, the first tool (racksmith) against each other tool. */
  const comparisons: Array<{ run: number; a: Tool; b: Tool } & Comparison> = [];
  const settles: Array<{ run: number; tool: Tool; wall: number; ok: boolean; changed: number }> = [];
  const backups: Record<string, number> = {};
  const runTool = (t: Tool) => (t === 'racksmith' ? runRacksmith(w, forks) : runAnsible(w, t));
  const record = (run: number, c: Case, r: ToolRun, extra: Partial<Sample> = {}) => {
    const { stdout: _o, stderr: _e, ...rest } = r;
    samples.push({ ...rest, run, case: c, ...extra });
    const status = r.ok ? '' : `  NOT OK (exit ${r.code}, failed ${r.failed}, unreachable ${r.unreachable})`;
    log(
      `run ${run} ${c.padEnd(9)} ${r.tool.padEnd(17)} ${secs(r.wall).padStart(8)}  cpu ${secs(r.cpu)}  rss ${r.peakRssSumMb.toFixed(0)} MiB  pss ${r.peakPssMb.toFixed(0)} MiB  changed ${r.changed}  (quiet after ${(r.quiet.ms / 1000).toFixed(1)} s${r.quiet.busyCores < QUIET_CORES ? '' : `, still ${r.quiet.busyCores.toFixed(1)} cores busy`})${status}`,
    );
    if (!r.ok && r.note) log(`  ${r.note.split('\n').join('\n  ')}`);
  };

  try {
    for (let run = 1; run <= R; run++) {
      const states = new Map<Tool, HostState[]>();
      if (cases.has('first-run') || cases.has('converged')) {
        for (const tool of tools) {
          const tr = Date.now();
          await resetHosts(tb, allHosts);
          log(`run ${run}: reset ${N} hosts for ${tool} in ${((Date.now() - tr) / 1000).toFixed(1)} s`);
          const first = await runTool(tool);
          if (cases.has('first-run')) record(run, 'first-run', first);
          // A failed first run leaves work behind: converge (untimed) before measuring "converged".
          let last = first;
          for (let k = 0; k < 3 && !(last.ok && (last === first || last.changed === 0)); k++) {
            last = await runTool(tool);
            settles.push({ run, tool, wall: last.wall, ok: last.ok, changed: last.changed });
            log(`run ${run}: ${tool} settle run ${k + 1}: ${secs(last.wall)} ok=${last.ok} changed=${last.changed}`);
          }
          if (cases.has('converged')) {
            // --become: racksmith's converged run as root too, on the same hosts, right before or
            // after its become run (alternating by run), for the cost of sudo side by side
            const rootRun = w.become && tool === 'racksmith';
            const measureRoot = async () => {
              const r = await runRacksmith(w, forks, true);
              record(run, 'converged', r, { idempotent: r.changed === 0 });
            };
            if (rootRun && run % 2 === 0) await measureRoot();
            const conv = await runTool(tool);
            record(run, 'converged', conv, { idempotent: conv.changed === 0 });
            if (conv.changed) log(`  ${tool} converged run changed ${conv.changed} resources/tasks: not idempotent on this bed`);
            if (rootRun && run % 2 === 1) await measureRoot();
          }
          const st = await snapshot(tb, allHosts);
          states.set(tool, st);
          backups[tool] = Math.max(backups[tool] ?? 0, ...st.map((s) => s.fstabBackups));
        }
        for (const other of tools.slice(1)) {
          const pair = [tools[0], other];
          const c = compare(states.get(tools[0])!, states.get(other)!);
          comparisons.push({ run, a: tools[0], b: other, ...c });
          if (c.identical) {
            log(
              `run ${run}: end state identical on all ${c.hosts} hosts (${pair.join(' vs ')})${c.orderOnly.length ? `, except the ORDER of lines in ${[...new Set(c.orderOnly.map((o) => o.section.replace(/^== /, '').split(' ')[0]))].join(', ')} on ${new Set(c.orderOnly.map((o) => o.host)).size} host(s)` : ''}`,
            );
          } else {
            log(`run ${run}: END STATE DIFFERS on ${c.differences.length} of ${c.hosts} hosts (< ${tools[0]}, > ${other}):`);
            for (const d of c.differences.slice(0, 3))
              for (const l of d.lines) log(`  ${d.host} ${l.a !== undefined ? '< ' + l.a : '> ' + l.b}`);
          }
        }
      }
      if (cases.has('floor')) {
        const f = await runFloor(tb, w, forks);
        record(run, 'floor', f, { connectMs: f.connectMs, execMs: f.execMs });
        if (tools.some((t) => t !== 'racksmith')) record(run, 'floor', await runAnsibleRawFloor(w));
      }
    }

    // ---- summary
    const pick = (c: Case, tool: string) => samples.filter((s) => s.case === c && s.tool === tool);
    const rows: string[][] = [];
    const summary: Record<
      string,
      Record<
        string,
        {
          wall: Summary;
          cpu: Summary;
          machineCpu: Summary;
          peakPssMb: Summary;
          peakRssSumMb: Summary;
          maxProcRssMb: Summary;
          ok: number;
          n: number;
        }
      >
    > = {};
    for (const c of ['converged', 'first-run', 'floor'] as Case[]) {
      const measured =
        c === 'floor' ? ['floor-node-ssh', 'floor-ansible-raw'] : c === 'converged' && w.become ? [...tools, 'racksmith-root'] : tools;
      for (const tool of measured) {
        const xs = pick(c, tool);
        if (!xs.length) continue;
        const s = {
          wall: summarize(xs.map((x) => x.wall)),
          cpu: summarize(xs.map((x) => x.cpu)),
          machineCpu: summarize(xs.map((x) => x.machineCpu)),
          peakPssMb: summarize(xs.map((x) => x.peakPssMb)),
          peakRssSumMb: summarize(xs.map((x) => x.peakRssSumMb)),
          maxProcRssMb: summarize(xs.map((x) => x.maxProcRssMb)),
          ok: xs.filter((x) => x.ok).length,
          n: xs.length,
        };
        (summary[c] ??= {})[tool] = s;
        rows.push([
          c,
          tool,
          fmtRange(s.wall, 2, 's'),
          fmtRange(s.cpu, 2, 's'),
          fmtRange(s.machineCpu, 1, 's'),
          fmtRange(s.peakRssSumMb, 0),
          fmtRange(s.peakPssMb, 0),
          `${s.ok}/${s.n}`,
        ]);
      }
    }
    const wall = (c: Case, t: string) => summary[c]?.[t]?.wall.median ?? NaN;
    const paired = (c: Case, other: ToolRun['tool']) =>
      [...new Set(samples.map((s) => s.run))]
        .map((run) => {
          const a = samples.find((s) => s.run === run && s.case === c && s.tool === other);
          const r = samples.find((s) => s.run === run && s.case === c && s.tool === 'racksmith');
          return a && r ? a.wall / r.wall : NaN;
        })
        .filter(Number.isFinite);
    const lines: string[] = [];
    // `converged: racksmith X ansible Y ratio Z` (plain ansible-core), `converged-mitogen: racksmith X ansible-mitogen Y ratio Z`
    const ratioLine = (c: Case, other: Tool) => {
      const r = wall(c, 'racksmith');
      const a = wall(c, other);
      if (!Number.isFinite(r) && !Number.isFinite(a)) return;
      const notOk = (['racksmith', other] as Tool[])
        .filter((t) => (summary[c]?.[t]?.ok ?? 0) < (summary[c]?.[t]?.n ?? 0))
        .map((t) => `${t} NOT OK in ${summary[c][t].n - summary[c][t].ok} of ${summary[c][t].n} runs`);
      lines.push(
        `${c}${other === 'ansible-mitogen' ? '-mitogen' : ''}: racksmith ${Number.isFinite(r) ? secs(r) : '-'} ${other} ${Number.isFinite(a) ? secs(a) : '-'} ratio ${Number.isFinite(a / r) ? (a / r).toFixed(1) + 'x' : '-'}${notOk.length ? `  (${notOk.join('; ')})` : ''}`,
      );
    };
    for (const other of ['ansible', 'ansible-mitogen'] as Tool[]) {
      if (other !== 'ansible' && !tools.includes(other)) continue;
      ratioLine('converged', other);
      ratioLine('first-run', other);
    }
    // --become: what sudo costs racksmith's converged run, and that it still takes one exec per host
    const execsMax = (t: ToolRun['tool']) => Math.max(0, ...pick('converged', t).map((s) => s.execsMax ?? 0));
    const becomeOverRoot = wall('converged', 'racksmith') / wall('converged', 'racksmith-root');
    if (w.become && Number.isFinite(becomeOverRoot)) {
      lines.push(
        `become: racksmith converged root ${secs(wall('converged', 'racksmith-root'))} become ${secs(wall('converged', 'racksmith'))} ratio ${becomeOverRoot.toFixed(2)}x (target <= 1.15x)  execs/host root ${execsMax('racksmith-root')} become ${execsMax('racksmith')}`,
      );
    }
    const fl = wall('floor', 'floor-node-ssh');
    if (Number.isFinite(fl)) {
      const rc = wall('converged', 'racksmith');
      const ar = wall('floor', 'floor-ansible-raw');
      lines.push(
        `floor: node-ssh ${secs(fl)} racksmith/floor ${Number.isFinite(rc) ? (rc / fl).toFixed(1) + 'x' : '-'}${Number.isFinite(ar) ? `  (ansible raw floor ${secs(ar)})` : ''}`,
      );
    }
    // at fleet size, what each host costs the controller (bench/scale-chart.ts charts it from 20 to 1,000)
    const conv = summary.converged?.racksmith;
    if (conv)
      lines.push(
        `per host: racksmith converged wall ${((conv.wall.median / N) * 1000).toFixed(1)} ms, controller CPU ${((conv.cpu.median / N) * 1000).toFixed(1)} ms, peak RSS ${(conv.peakRssSumMb.median / N).toFixed(2)} MiB (${N} hosts, forks ${forks})`,
      );
    const orderRuns = comparisons.filter((c) => c.orderOnly.length).length;
    const equalTo = (b: Tool) => {
      const cs = comparisons.filter((c) => c.b === b);
      return cs.every((c) => c.identical)
        ? `identical to ${b}'s on all ${N} hosts in ${cs.length} of ${cs.length} runs`
        : `DIFFERS from ${b}'s in ${cs.filter((c) => !c.identical).length} of ${cs.length} runs`;
    };
    const equal = comparisons.length
      ? `${tools[0]}'s ` +
        tools
          .slice(1)
          .map((b) => equalTo(b))
          .join(', ') +
        (orderRuns
          ? ` (same lines in a different order in ${orderRuns} run(s): ${[...new Set(comparisons.flatMap((c) => c.orderOnly.map((o) => o.section.replace(/^== /, '').split(' ')[0])))].join(', ')})`
          : '')
      : 'not compared';

    const codeAtEnd = codeVersion();
    const codeNote =
      codeAtEnd === codeAtStart
        ? `racksmith measured at ${codeAtStart}`
        : `WARNING: src/, playbooks/ or bin/ changed during the run (${codeAtStart} -> ${codeAtEnd}): the runs did not all measure the same code`;
    log(codeNote);
    const text = [
      '',
      `${tools.join(' vs ')}, ${N} hosts, ${R} run(s), forks ${forks}, login ${w.become ? 'ops + sudo (--become; racksmith-root: the same converged run as root)' : 'root'}, plays ${storage ? 'network + storage + jail' : 'network + jail'}; median (min–max); machine: ${cpus().length} cores, load ${loadavg()[0].toFixed(1)}; ${quietLine(samples)}`,
      '',
      table(['case', 'tool', 'wall', 'tool CPU', 'machine CPU', 'peak RSS MiB (tree)', 'peak PSS MiB (tree)', 'ok'], rows),
      '',
      "wall: the tool's command, start to exit. tool CPU: user+system of its process tree (here; the hosts' side is not in it).",
      "machine CPU: busy CPU-seconds of the whole machine meanwhile (hosts' sshd/python included, and anything else running).",
      'peak RSS: summed RSS of the process tree (shared pages counted in every process); PSS: shared pages split between sharers.',
      '',
      codeNote,
      `end state: ${equal}`,
      ...(site.notBenched.length ? [`not benchmarked (no bench hosts in their groups): ${site.notBenched.join(', ')}`] : []),
      ...(settles.length
        ? [`note: ${settles.length} untimed settle run(s) after failed first runs (${[...new Set(settles.map((s) => s.tool))].join(', ')})`]
        : []),
      '',
      ...lines,
      '',
    ].join('\n');

    let profile: unknown;
    if (values.profile) {
      const { profileRacksmith } = await import('./lib/profile.ts');
      profile = await profileRacksmith(tb, w, forks, log);
    }
    let synthetic: unknown;
    if (syntheticHosts) {
      const { syntheticPlan } = await import('./lib/synthetic.ts');
      synthetic = await syntheticPlan(tb, w, syntheticHosts, Math.max(R, SYNTHETIC_MIN_RUNS), log);
    }

    const result = {
      version: 1,
      date: new Date().toISOString(),
      git: { atStart: codeAtStart, atEnd: codeAtEnd },
      machine: {
        cores: cpus().length,
        cpu: cpus()[0]?.model,
        memGb: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        ansible: version('ansible-playbook', ['--version']),
        ansibleMitogen: mitogenDir ? `${version('dpkg-query', ['-W', '-f', '${Version}', 'ansible-mitogen'])} (${mitogenDir})` : undefined,
        loadAtStart,
        loadAtEnd: loadavg(),
      },
      config: {
        hosts: N,
        runs: R,
        forks,
        tools,
        become: w.become,
        cases: [...cases],
        bed: { ...BED_ENV, state: benchState },
        racksmith: 'playbooks/site.ts',
        ansible: 'bench/ansible/site.yml',
        plays: storage ? site.plays : site.plays.filter((name) => name !== site.storagePlay),
        notBenched: site.notBenched,
        disksPerHost: storage ? 2 : 1,
      },
      summary,
      ratios: {
        converged: wall('converged', 'ansible') / wall('converged', 'racksmith'),
        firstRun: wall('first-run', 'ansible') / wall('first-run', 'racksmith'),
        racksmithOverFloor: wall('converged', 'racksmith') / fl,
        pairedConverged: paired('converged', 'ansible'),
        pairedFirstRun: paired('first-run', 'ansible'),
        mitogen: tools.includes('ansible-mitogen')
          ? {
              converged: wall('converged', 'ansible-mitogen') / wall('converged', 'racksmith'),
              firstRun: wall('first-run', 'ansible-mitogen') / wall('first-run', 'racksmith'),
              pairedConverged: paired('converged', 'ansible-mitogen'),
              pairedFirstRun: paired('first-run', 'ansible-mitogen'),
            }
          : undefined,
        become: w.become
          ? {
              convergedOverRoot: becomeOverRoot,
              // per run: racksmith's become run over its root run
              pairedConverged: paired('converged', 'racksmith-root').map((x) => 1 / x),
              execsPerHost: { root: execsMax('racksmith-root'), become: execsMax('racksmith') },
            }
          : undefined,
      },
      endState: { comparisons, fstabBackupsPerHost: backups },
      settles,
      samples,
      profile,
      synthetic,
      totalSeconds: (Date.now() - t0) / 1000,
    };
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, JSON.stringify(result, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n');
    process.stdout.write(text);
    log(`results: ${out} (${((Date.now() - t0) / 1000).toFixed(0)} s in all)`);
    const bad = samples.some((s) => !s.ok && s.case !== 'first-run') || comparisons.some((c) => !c.identical);
    return bad ? 1 : 0;
  } finally {
    rmSync(runDir, { recursive: true, force: true });
    if (!values.keep) {
      log('tearing the bench bed down (--keep leaves it up)');
      await downBed(tb);
    }
    unlock();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`bench: ${(e as Error).message}\n`);
    process.exit(2);
  },
);

/** How quiet the machine was when each timed run started (measure.ts waitForQuiet). */
function quietLine(samples: readonly Sample[]): string {
  if (!samples.length) return 'no timed runs';
  const busiest = Math.max(...samples.map((x) => x.quiet.busyCores));
  const longest = Math.max(...samples.map((x) => x.quiet.ms));
  return `quiet: at most ${busiest.toFixed(2)} cores busy as each timed run started (waited up to ${(longest / 1000).toFixed(1)} s for under ${QUIET_CORES})`;
}
