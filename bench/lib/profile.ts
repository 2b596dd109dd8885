// --profile: where racksmith's time goes, without touching src/.
//
//  1. start-up, in fresh processes (bench/lib/startup.mjs): Node itself, then as installed (the
//     dist/ check, importing dist/src/cli.js and dist/playbooks/site.js) and after an edit (tsx's
//     loader, importing src/cli.ts and playbooks/site.ts), each with the dependencies it pulls in;
//  2. one converged and one first run IN this process through the engine's public API
//     (loadInventory, prepare, execute with a `connector` that times the real SSH connection, the
//     same reporters as the CLI): connect, each exec split into send -> remote start, remote run,
//     remote end -> received (the hosts share this machine's clock), local work between execs,
//     reporting;
//  3. a V8 CPU profile of the real CLI on converged hosts, self time by package / source dir;
//  4. what each resource's probe costs on a host (processes started, time; run one by one), and
//     each converged exec and each first-run exec (replayed in order on a reset host) alone;
//  5. at a production node's size (bench/lib/node-size.ts): the converged execs again with a
//     Kubernetes node's count of mounts, and a storage node's disks probed by serial.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Testbed } from './bed.ts';
import { repoRoot, resetHosts } from './bed.ts';
import { median, summarize, table, type Summary } from './stats.ts';
import { sitePlaybook, type Workload } from './workload.ts';
import type { Connection, ExecResult } from '../../src/connection/types.ts';
import type { Host } from '../../src/inventory/model.ts';
import type { RunEvent } from '../../src/engine/events.ts';
import { standaloneProbe } from '../../src/engine/probe-set.ts';
import { sourcePosition } from '../../src/util/source-map.ts';
import { NODE_DISKS, NODE_MOUNTS, storageNodeProbeMs, withMoreMounts } from './node-size.ts';

const now = () => performance.timeOrigin + performance.now(); // epoch ms, sub-ms

interface ExecRec {
  script: string;
  scriptBytes: number;
  outBytes: number;
  send: number;
  remoteStart: number;
  remoteEnd: number;
  recv: number;
}
interface HostRec {
  host: string;
  connectStart: number;
  connectEnd: number;
  execs: ExecRec[];
}

class TimedConnection implements Connection {
  constructor(
    private readonly inner: Connection,
    private readonly rec: HostRec,
  ) {}
  get host() {
    return this.inner.host;
  }
  get execCount() {
    return this.inner.execCount;
  }
  async exec(script: string, stdin?: string): Promise<ExecResult> {
    const send = now();
    const wrapped = `printf '@@RSPROF0 %s\\n' "$(date +%s%N)" >&2\n${script}\nprintf '@@RSPROF1 %s\\n' "$(date +%s%N)" >&2`;
    const r = await this.inner.exec(wrapped, stdin);
    const recv = now();
    const t0 = /@@RSPROF0 (\d+)\n/.exec(r.stderr);
    const t1 = /@@RSPROF1 (\d+)\n/.exec(r.stderr);
    this.rec.execs.push({
      script,
      scriptBytes: Buffer.byteLength(script),
      outBytes: Buffer.byteLength(r.stdout),
      send,
      remoteStart: t0 ? Number(t0[1]) / 1e6 : NaN,
      remoteEnd: t1 ? Number(t1[1]) / 1e6 : NaN,
      recv,
    });
    return { ...r, stderr: r.stderr.replace(/@@RSPROF[01] \d+\n/g, '') };
  }
  close() {
    return this.inner.close();
  }
}

const nullStream = () => Object.assign(new Writable({ write: (_c, _e, cb) => cb() }), { isTTY: false }) as unknown as NodeJS.WriteStream;

export interface InProcessProfile {
  hosts: number;
  wallMs: number;
  loadInventoryMs: number;
  loadPlaybookMs: number;
  prepareMs: number;
  executeMs: number;
  /** Time inside the event sinks (progress, NDJSON, journal) during execute. */
  emitMs: number;
  /** HumanReporter.finish: progress finish, change groups, recap table. */
  finishMs: number;
  execsPerHost: number[];
  connectMs: Summary;
  /** Per exec index (0 = probe of play 1, ...): medians over hosts. */
  execs: Array<{
    index: number;
    hosts: number;
    sendToRemoteStartMs: Summary;
    remoteMs: Summary;
    remoteEndToRecvMs: Summary;
    scriptKb: number;
    outKb: number;
  }>;
  /** Local work between an exec's reply and the next exec (parse, diff, next script), per host. */
  localBetweenExecsMs: Summary;
  /** From execute() start until the first host starts connecting / the last host's last reply. */
  firstConnectAtMs: number;
  lastReplyAtMs: number;
  /** Waiting at the barrier between plays: from a host's last reply in play k to its first send in play k+1, median over hosts. */
  playBarrierMs: Summary;
  recap: { changed: number; failed: number; unreachable: number };
  /** The scripts the first host was sent (for forks counting). */
  scripts: string[];
}

async function inProcessRun(w: Workload, forks: number): Promise<InProcessProfile> {
  const { loadInventory } = await import('../../src/inventory/load.ts');
  const { loadPlaybook } = await import('../../src/cli.ts');
  const { prepare, execute } = await import('../../src/engine/index.ts');
  const { connect } = await import('../../src/connection/connect.ts');
  const { HumanReporter } = await import('../../src/output/human.ts');
  const { jsonSink } = await import('../../src/output/json.ts');
  const { journalSink } = await import('../../src/output/journal.ts');

  const t0 = now();
  const inv = loadInventory(w.racksmithInventory);
  const t1 = now();
  const pb = await loadPlaybook(sitePlaybook);
  const t2 = now();
  const prepared = prepare(inv, [pb], {});
  const t3 = now();
  const recs = new Map<string, HostRec>();
  const playStarts: Array<{ play: string; at: number }> = [];
  const human = new HumanReporter({ diff: false, verbose: 0, out: nullStream() });
  const json = jsonSink(nullStream());
  const journal = journalSink(join(w.dir, 'profile-journal.ndjson'));
  let emitMs = 0;
  let changed = 0;
  let failed = 0;
  let unreachable = 0;
  const emit = (e: RunEvent) => {
    const a = now();
    human.onEvent(e);
    json(e);
    journal(e);
    emitMs += now() - a;
    if (e.type === 'play_start') playStarts.push({ play: e.play, at: now() });
    if (e.type === 'host_recap') {
      changed += e.changed;
      failed += e.failed;
      if (e.unreachable) unreachable++;
    }
  };
  const hostNames = [...new Set(prepared.flatMap((p) => p.hosts.map((h) => h.host.name)))];
  emit({ type: 'run_start', playbooks: [sitePlaybook], hosts: hostNames, check: false });
  const te = now();
  const outcome = await execute(
    prepared,
    {
      inventoryFile: w.racksmithInventory,
      acceptNewHostKeys: false,
      connectTimeoutMs: 10_000,
      check: false,
      forks,
      connectAttempts: 3,
      connector: async (host: Host, o) => {
        const rec: HostRec = { host: host.name, connectStart: now(), connectEnd: NaN, execs: [] };
        recs.set(host.name, rec);
        const c = await connect(host, o);
        rec.connectEnd = now();
        return new TimedConnection(c, rec);
      },
    },
    emit,
  );
  const te2 = now();
  await human.finish(outcome);
  const t4 = now();

  const rs = [...recs.values()];
  const maxExecs = Math.max(0, ...rs.map((r) => r.execs.length));
  const execs = [];
  for (let i = 0; i < maxExecs; i++) {
    const xs = rs.map((r) => r.execs[i]).filter(Boolean);
    execs.push({
      index: i,
      hosts: xs.length,
      sendToRemoteStartMs: summarize(xs.map((x) => x.remoteStart - x.send)),
      remoteMs: summarize(xs.map((x) => x.remoteEnd - x.remoteStart)),
      remoteEndToRecvMs: summarize(xs.map((x) => x.recv - x.remoteEnd)),
      scriptKb: median(xs.map((x) => x.scriptBytes)) / 1024,
      outKb: median(xs.map((x) => x.outBytes)) / 1024,
    });
  }
  // gaps between consecutive execs of a host: local work, or waiting for the other hosts of a play
  const play2 = playStarts[1]?.at ?? Infinity;
  const local: number[] = [];
  const barrier: number[] = [];
  for (const r of rs) {
    for (let i = 1; i < r.execs.length; i++) {
      const gap = r.execs[i].send - r.execs[i - 1].recv;
      if (r.execs[i - 1].recv < play2 && r.execs[i].send >= play2) barrier.push(gap);
      else local.push(gap);
    }
  }
  return {
    hosts: rs.length,
    wallMs: t4 - t0,
    loadInventoryMs: t1 - t0,
    loadPlaybookMs: t2 - t1,
    prepareMs: t3 - t2,
    executeMs: te2 - te,
    emitMs,
    finishMs: t4 - te2,
    execsPerHost: [...new Set(rs.map((r) => r.execs.length))],
    connectMs: summarize(rs.map((r) => r.connectEnd - r.connectStart)),
    execs,
    localBetweenExecsMs: summarize(local),
    firstConnectAtMs: Math.min(...rs.map((r) => r.connectStart)) - te,
    lastReplyAtMs: Math.max(...rs.map((r) => r.execs.at(-1)?.recv ?? 0)) - te,
    playBarrierMs: summarize(barrier),
    recap: { changed, failed, unreachable },
    scripts: recs.get(w.hosts[0])?.execs.map((e) => e.script) ?? [],
  };
}

interface CpuNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}

/**
 * A frame of the built code (dist/racksmith.js, one module for all of racksmith) as the source it
 * came from, through the build's source map (`sourcePosition`, as error messages read it): a
 * profile's self time then still falls by source directory. Other frames as they are. Lines 0-based.
 */
function sourceFrame(url: string, line: number, col: number): { url: string; line: number } {
  if (!url.startsWith('file:') || !url.includes('/dist/')) return { url, line };
  const pos = sourcePosition(fileURLToPath(url), line + 1, col + 1);
  return pos ? { url: pathToFileURL(pos.file).href, line: pos.line - 1 } : { url, line };
}

function category(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1] === 'esbuild' || nm[1] === 'get-tsconfig' ? 'tsx' : nm[1];
  const src = /\/(src\/[^/]+|playbooks|bench|bin)\//.exec(url);
  return src ? src[1] : url;
}

/** Run the CLI once under --cpu-prof on converged hosts and attribute main-thread self time. */
function cpuProfile(
  w: Workload,
  forks: number,
): {
  wallMs: number;
  sampledMs: number;
  categories: Array<{ name: string; ms: number }>;
  top: Array<{ fn: string; where: string; ms: number }>;
} {
  const dir = mkdtempSync(join(tmpdir(), 'rs-cpuprof-'));
  const t = now();
  spawnSync(
    process.execPath,
    [
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
      join(repoRoot, 'bin/provision.js'),
      sitePlaybook,
      '-i',
      w.racksmithInventory,
      '-f',
      String(forks),
      '--json',
    ],
    {
      cwd: repoRoot,
      env: { ...process.env, XDG_STATE_HOME: join(w.dir, 'racksmith-state') },
      stdio: 'ignore',
    },
  );
  const wallMs = now() - t;
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return { wallMs, sampledMs: 0, categories: [], top: [] };
  const prof = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { nodes: CpuNode[]; samples: number[]; timeDeltas: number[] };
  rmSync(dir, { recursive: true, force: true });
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0) / 1000));
  const cats = new Map<string, number>();
  const fns = new Map<string, { fn: string; where: string; ms: number }>();
  let total = 0;
  for (const [id, ms] of self) {
    const n = byId.get(id)!;
    const { functionName: fn } = n.callFrame;
    const { url, line: lineNumber } = sourceFrame(n.callFrame.url, n.callFrame.lineNumber, n.callFrame.columnNumber);
    total += ms;
    const c = category(url, fn);
    cats.set(c, (cats.get(c) ?? 0) + ms);
    const key = `${fn}@${url}:${lineNumber}`;
    const where = url ? `${url.replace(/^file:\/\//, '').replace(repoRoot + '/', '')}:${lineNumber + 1}` : '';
    const f = fns.get(key) ?? { fn: fn || '(anonymous)', where, ms: 0 };
    f.ms += ms;
    fns.set(key, f);
  }
  return {
    wallMs,
    sampledMs: total,
    categories: [...cats].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms),
    top: [...fns.values()]
      .filter((f) => !f.fn.startsWith('('))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 15),
  };
}

/** Each resource's probe alone, on one host (nsenter, no SSH): processes started and milliseconds. */
async function probeCosts(
  tb: Testbed,
  w: Workload,
  host: string,
): Promise<Array<{ id: string; processes: number; remoteMs: number; bytes: number }>> {
  const { loadInventory } = await import('../../src/inventory/load.ts');
  const { loadPlaybook } = await import('../../src/cli.ts');
  const { prepare } = await import('../../src/engine/index.ts');
  const inv = loadInventory(w.racksmithInventory);
  const prepared = prepare(inv, [await loadPlaybook(sitePlaybook)], { limit: host });
  const resources = prepared.flatMap((p) => p.hosts.flatMap((h) => h.resources));
  const costs = await forksPerExec(
    tb,
    host,
    resources.map((r) => standaloneProbe(r.probe()).script),
  );
  return resources.map((r, i) => ({
    id: r.id,
    processes: costs[i].processes,
    remoteMs: costs[i].remoteMs,
    bytes: Buffer.byteLength(standaloneProbe(r.probe()).script),
  }));
}

/** Processes a converged host may start for site.ts, every exec's together (issue #39). */
export const CONVERGED_PROCESS_TARGET = 10;

/**
 * Processes each converged exec starts on a host, its remote time when run alone (nsenter, no
 * SSH), and the machine's busy CPU meanwhile (/proc/stat, which no namespace hides: the kernel's
 * work for the host's disks counts, and so would anything else running): the pid counter of the
 * host's own pid namespace (forks: a subshell counts, as strace -f counts its clones), less the
 * measurement's own 4 (two dates, cut, the `sh -s` itself).
 */
async function forksPerExec(
  tb: Testbed,
  host: string,
  scripts: string[],
  repeats = 3,
): Promise<Array<{ exec: number; processes: number; remoteMs: number; machineCpuMs: number }>> {
  const { scriptAsStdin } = await import('../../src/connection/transport.ts');
  const busy = 'read -r _ us ni sy _ _ iq si st _ < /proc/stat; rs_busy=$((us + ni + sy + iq + si + st))';
  const out = [];
  for (const [i, script] of scripts.entries()) {
    const procs: number[] = [];
    const times: number[] = [];
    const cpu: number[] = [];
    for (let k = 0; k < repeats; k++) {
      const r = await tb.hostExec(
        host,
        `a=$(cut -d" " -f5 /proc/loadavg); ${busy}; c=$rs_busy; t=$(date +%s%N); sh -s >/dev/null 2>&1; u=$(date +%s%N); ${busy}; b=$(cut -d" " -f5 /proc/loadavg); echo "$((b - a - 4)) $(( (u - t) / 1000 )) $((rs_busy - c))"`,
        { input: scriptAsStdin(script) },
      );
      const [n, us, ticks] = r.stdout.trim().split(' ').map(Number);
      procs.push(n);
      times.push(us / 1000);
      cpu.push(ticks * (1000 / CLOCK_TICKS));
    }
    out.push({ exec: i + 1, processes: median(procs), remoteMs: median(times), machineCpuMs: median(cpu) });
  }
  return out;
}

/** /proc/stat's unit (USER_HZ): 100 a second on every Linux architecture racksmith runs on. */
const CLOCK_TICKS = 100;

function startup(): { dist: Record<string, number>; tsx: Record<string, number>; deps: Record<string, number>; nodeOnlyMs: number } {
  const runs = (mode: string) =>
    Array.from(
      { length: 3 },
      () =>
        JSON.parse(
          execFileSync(process.execPath, [join(repoRoot, 'bench/lib/startup.mjs'), mode], { cwd: repoRoot, encoding: 'utf8' }).trim(),
        ) as Record<string, number>,
    );
  const med = (xs: Array<Record<string, number>>) => Object.fromEntries(Object.keys(xs[0]).map((k) => [k, median(xs.map((x) => x[k]))]));
  const node = Array.from({ length: 3 }, () => {
    const t = now();
    execFileSync(process.execPath, ['-e', '']);
    return now() - t;
  });
  return { dist: med(runs('dist')), tsx: med(runs('tsx')), deps: med(runs('deps')), nodeOnlyMs: median(node) };
}

const ms = (x: number) => (Number.isFinite(x) ? `${x.toFixed(1)} ms` : '-');
const sm = (s: Summary) => (s.n ? `${s.median.toFixed(1)} ms (${s.min.toFixed(1)}–${s.max.toFixed(1)})` : '-');

function describe(name: string, p: InProcessProfile): string {
  const lines = [
    `${name}: ${p.hosts} hosts, ${ms(p.wallMs)} in-process (no start-up); changed ${p.recap.changed}, failed ${p.recap.failed}, unreachable ${p.recap.unreachable}; execs per host ${p.execsPerHost.join('/')}`,
    `  load inventory ${ms(p.loadInventoryMs)}, load playbook ${ms(p.loadPlaybookMs)} (module cached: see start-up), prepare ${ms(p.prepareMs)}, execute ${ms(p.executeMs)}, report finish ${ms(p.finishMs)}, event sinks ${ms(p.emitMs)}`,
    `  connect (TCP + SSH handshake + auth), per host: ${sm(p.connectMs)}; first connect at +${ms(p.firstConnectAtMs)}, last reply at +${ms(p.lastReplyAtMs)}`,
    table(
      ['exec', 'hosts', 'send → remote start', 'remote run', 'remote end → received', 'script KiB', 'output KiB'],
      p.execs.map((e) => [
        String(e.index + 1),
        String(e.hosts),
        sm(e.sendToRemoteStartMs),
        sm(e.remoteMs),
        sm(e.remoteEndToRecvMs),
        e.scriptKb.toFixed(1),
        e.outKb.toFixed(1),
      ]),
    )
      .split('\n')
      .map((l) => '  ' + l)
      .join('\n'),
    `  local work between execs (parse, diff, next script): ${sm(p.localBetweenExecsMs)}; waiting at the play barrier: ${sm(p.playBarrierMs)}`,
  ];
  return lines.join('\n');
}

export async function profileRacksmith(tb: Testbed, w: Workload, forks: number, log: (s: string) => void): Promise<unknown> {
  log('profile: start-up phases (fresh processes, median of 3)');
  const st = startup();
  log('profile: in-process runs (first run on reset hosts, then converged)');
  await resetHosts(tb, w.hosts);
  const first = await inProcessRun(w, forks);
  // converge whatever the first run left (see the first-run note in the report)
  for (let k = 0; k < 3; k++) {
    const r = await inProcessRun(w, forks);
    if (r.recap.changed === 0 && r.recap.failed === 0) break;
  }
  const converged = await inProcessRun(w, forks);
  log('profile: CPU profile of the CLI on converged hosts');
  const cpu = cpuProfile(w, forks);
  log(`profile: probe cost per resource on ${w.hosts[0]}`);
  const probes = await probeCosts(tb, w, w.hosts[0]);
  const alone = await forksPerExec(tb, w.hosts[0], converged.scripts);
  log(`profile: at a node's size (${NODE_MOUNTS} mounts more on ${w.hosts[0]}; ${NODE_DISKS} disks on a fake root)`);
  const ownLines = Number((await tb.hostExec(w.hosts[0], 'wc -l < /proc/self/mountinfo')).stdout.trim());
  const bigTable = await withMoreMounts(tb, w.hosts[0], NODE_MOUNTS, async (lines) => ({
    lines,
    execs: await forksPerExec(tb, w.hosts[0], converged.scripts),
  }));
  const storageNode = await storageNodeProbeMs(NODE_DISKS);
  // a first run's execs change the host: replayed once each, in order, on a reset host
  await resetHosts(tb, [w.hosts[0]]);
  const firstAlone = await forksPerExec(tb, w.hosts[0], first.scripts, 1);

  const text = [
    '',
    "Where racksmith's time goes",
    '',
    `start-up (fresh process): node alone ${ms(st.nodeOnlyMs)}; as installed (dist/): node boot ${ms(st.dist.bootMs)}, dist/ check ${ms(st.dist.checkMs)}, import dist/src/cli.js ${ms(st.dist.cliImportMs)}, import dist/playbooks/site.js ${ms(st.dist.playbookImportMs)}`,
    `  after an edit (sources through tsx): node boot ${ms(st.tsx.bootMs)}, tsx register ${ms(st.tsx.tsxRegisterMs)}, import src/cli.ts ${ms(st.tsx.cliImportMs)}, import playbooks/site.ts ${ms(st.tsx.playbookImportMs)}`,
    `  dependencies imported alone, in this order, no tsx: ${Object.entries(st.deps)
      .filter(([k]) => k !== 'bootMs')
      .map(([k, v]) => `${k} ${v.toFixed(0)} ms`)
      .join(', ')}`,
    '',
    describe('converged', converged),
    '',
    describe('first run', first),
    '',
    `CPU profile of the CLI, converged (${ms(cpu.wallMs)} wall, ${ms(cpu.sampledMs)} sampled on the main thread), self time by package/source:`,
    '  ' +
      cpu.categories
        .slice(0, 14)
        .map((c) => `${c.name} ${c.ms.toFixed(0)}`)
        .join(', '),
    '  top functions: ' +
      cpu.top
        .slice(0, 8)
        .map((f) => `${f.fn} (${f.where}) ${f.ms.toFixed(0)} ms`)
        .join('; '),
    '',
    `converged execs run alone on ${w.hosts[0]} (nsenter, no SSH): ${alone.map((f) => `exec ${f.exec}: ${f.processes} processes, ${f.remoteMs.toFixed(1)} ms`).join('; ')}`,
    // issue #39's target: what a converged host pays for site.ts (subshells count: each is a fork)
    `processes per converged host: ${alone.reduce((a, f) => a + f.processes, 0)} (target <= ${CONVERGED_PROCESS_TARGET})`,
    `at a node's size: ${w.hosts[0]}'s converged execs with ${bigTable.lines} mount table lines (${NODE_MOUNTS} tmpfs mounts more than its own ${ownLines}): ${bigTable.execs.map((f) => `exec ${f.exec}: ${f.processes} processes, ${f.remoteMs.toFixed(1)} ms`).join('; ')}`,
    `  ${storageNode.found} of ${NODE_DISKS} data disks by serial, mounted, probed in one script (a fake root of a storage node, udev entries of ~1.2 KB; local sh, median of 5): ${storageNode.ms.toFixed(1)} ms`,
    `first-run execs replayed alone in order on reset ${w.hosts[0]} (nsenter, no SSH; busy CPU of the machine meanwhile, in 10 ms ticks): ${firstAlone.map((f) => `exec ${f.exec}: ${f.processes} processes, ${f.remoteMs.toFixed(1)} ms, ${f.machineCpuMs.toFixed(0)} ms CPU`).join('; ')}`,
    `each resource's probe alone on ${w.hosts[0]} (nsenter, median of 3): ${probes.reduce((a, p) => a + p.processes, 0)} processes, ${ms(probes.reduce((a, p) => a + p.remoteMs, 0))} in all; processes / ms:`,
    ...[...probes]
      .sort((a, b) => b.remoteMs - a.remoteMs)
      .map((p) => `  ${p.id.padEnd(72)} ${String(p.processes).padStart(4)} ${p.remoteMs.toFixed(1).padStart(7)}`),
    '',
  ].join('\n');
  process.stdout.write(text);
  const strip = (p: InProcessProfile) => ({ ...p, scripts: undefined });
  return {
    startup: st,
    converged: strip(converged),
    firstRun: strip(first),
    cpuProfile: cpu,
    probes,
    convergedExecsAlone: alone,
    nodeSize: {
      mountTableLines: bigTable.lines,
      ownLines,
      convergedExecs: bigTable.execs,
      storageNodeDisks: NODE_DISKS,
      storageNodeProbeMs: storageNode.ms,
    },
    firstRunExecsAlone: firstAlone,
  };
}
