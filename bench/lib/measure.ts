// Run one timed command: wall time, CPU of its whole process tree, peak memory of the tree.
//
//   /usr/bin/time -f ... python3 reaper.py CMD...
//     - reaper.py keeps every descendant in the tree (ControlPersist masters included) and reaps
//       them at the end, so /usr/bin/time's user+sys covers the whole tree;
//     - the tree below reaper.py is polled every POLL_MS: peak of the summed PSS (shared pages
//       counted once: Ansible's forked workers share most of their memory) and of the summed RSS.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const POLL_MS = 50;
const reaper = join(import.meta.dirname, 'reaper.py');
/**
 * The system's Python for the reaper, isolated and without site packages (it needs neither): not
 * whatever `python3` comes first on PATH. A pyenv shim there made every measured command ~75 ms
 * longer (the reaper started in 90–104 ms, in 17–21 ms so), 7% of a converged 20-host run.
 */
const REAPER_PYTHON = existsSync('/usr/bin/python3') ? ['/usr/bin/python3', '-I', '-S'] : ['python3'];

export interface Measurement {
  /** Wall time from spawn to exit, seconds. */
  wall: number;
  /** user + system CPU seconds of the tool's whole process tree (local side only). */
  cpu: number;
  /** Busy CPU seconds of the whole machine during the run (includes the hosts' sshd/python, and any other load). */
  machineCpu: number;
  /** Peak of the summed PSS of the tree, MiB. */
  peakPssMb: number;
  /** Peak of the summed RSS of the tree, MiB (counts shared pages once per process). */
  peakRssSumMb: number;
  /** Largest RSS of a single process, MiB (getrusage). */
  maxProcRssMb: number;
  /** Most processes seen in the tree at once. */
  peakProcs: number;
  code: number;
  stdout: string;
  stderr: string;
  /** 1-minute load average before the run: it lags by a minute; `quiet` is how busy the machine was when it started. */
  loadBefore: number;
  /** How long the machine took to become quiet before the run (waitForQuiet), and how busy it still was, in cores. */
  quiet: Quiet;
}

export interface Quiet {
  ms: number;
  busyCores: number;
}

/** Quiet: the whole machine busy on less than this many cores over the last sample. */
export const QUIET_CORES = 0.3;
const QUIET_SAMPLE_MS = 500;
const QUIET_MAX_MS = 20_000;

/**
 * Waits for a quiet machine before a timed command: the last run's writes flushed (`sync` returns
 * when they are), then the machine's busy CPU sampled over half a second until it is under
 * QUIET_CORES, or QUIET_MAX_MS passed (the measurement then says how busy it still was). It is
 * also the honest "how loaded": the 1-minute load average read 104–133 before runs of a 200-host
 * bed whose cores were idle (busy 0–0.06 cores), as it still averages the reset and the first run.
 */
export async function waitForQuiet(): Promise<Quiet> {
  const t0 = performance.now();
  await new Promise<void>((res) =>
    spawn('sync', { stdio: 'ignore' })
      .on('close', () => res())
      .on('error', () => res()),
  );
  let busyCores: number;
  do {
    const b0 = readProcStatBusy();
    const s0 = performance.now();
    await new Promise((res) => setTimeout(res, QUIET_SAMPLE_MS));
    busyCores = (readProcStatBusy() - b0) / ((performance.now() - s0) / 1000);
  } while (busyCores >= QUIET_CORES && performance.now() - t0 < QUIET_MAX_MS);
  return { ms: performance.now() - t0, busyCores };
}

function readProcStatBusy(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  const [user, nice, system, , , irq, softirq, steal] = cpu;
  return (user + nice + system + irq + softirq + (steal ?? 0)) / 100; // USER_HZ = 100
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ')) if (c.trim()) out.push(Number(c));
    } catch {
      /* gone */
    }
  }
  return out;
}

function treeBelow(root: number): number[] {
  const out: number[] = [];
  const stack = childrenOf(root);
  while (stack.length) {
    const p = stack.pop()!;
    out.push(p);
    stack.push(...childrenOf(p));
  }
  return out;
}

function memOf(pid: number): { pss: number; rss: number } {
  try {
    const t = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(t)?.[1] ?? 0);
    return { pss: kb('Pss'), rss: kb('Rss') };
  } catch {
    return { pss: 0, rss: 0 };
  }
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
}

export async function measure(cmd: string[], o: RunOptions = {}): Promise<Measurement> {
  const quiet = await waitForQuiet();
  const tmp = mkdtempSync(join(tmpdir(), 'rs-bench-'));
  const timeFile = join(tmp, 'time');
  const loadBefore = Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  const busy0 = readProcStatBusy();
  const t0 = performance.now();
  const child = spawn('/usr/bin/time', ['-f', '%e %U %S %M', '-o', timeFile, ...REAPER_PYTHON, reaper, ...cmd], {
    env: o.env ?? process.env,
    cwd: o.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  let peakPss = 0;
  let peakRss = 0;
  let peakProcs = 0;
  const poll = () => {
    if (!child.pid) return;
    const wrappers = childrenOf(child.pid); // reaper.py
    let pss = 0;
    let rss = 0;
    let n = 0;
    for (const w of wrappers) {
      for (const p of treeBelow(w)) {
        const m = memOf(p);
        pss += m.pss;
        rss += m.rss;
        n++;
      }
    }
    peakPss = Math.max(peakPss, pss);
    peakRss = Math.max(peakRss, rss);
    peakProcs = Math.max(peakProcs, n);
  };
  const timer = setInterval(poll, POLL_MS);
  const killer = o.timeoutMs ? setTimeout(() => child.kill('SIGTERM'), o.timeoutMs) : undefined;
  const code = await new Promise<number>((res, rej) => {
    child.on('error', rej);
    child.on('close', (c) => res(c ?? 1));
  });
  const wall = (performance.now() - t0) / 1000;
  clearInterval(timer);
  if (killer) clearTimeout(killer);
  const busy1 = readProcStatBusy();
  let cpu = NaN;
  let maxRss = NaN;
  try {
    const line = readFileSync(timeFile, 'utf8').trim().split('\n').pop()!;
    const [, u, s, m] = line.split(' ').map(Number);
    cpu = u + s;
    maxRss = m / 1024;
  } catch {
    /* time could not write it */
  }
  rmSync(tmp, { recursive: true, force: true });
  // /usr/bin/time reports "Command exited with non-zero status N" on stderr: the code is ours
  return {
    wall,
    cpu,
    machineCpu: busy1 - busy0,
    peakPssMb: peakPss / 1024,
    // a short run can end between two polls: the largest single process is a lower bound of the tree
    peakRssSumMb: Math.max(peakRss / 1024, Number.isFinite(maxRss) ? maxRss : 0),
    maxProcRssMb: maxRss,
    peakProcs,
    code,
    stdout,
    stderr,
    loadBefore,
    quiet,
  };
}
