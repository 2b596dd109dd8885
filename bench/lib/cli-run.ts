// One run of racksmith's CLI as an operator starts it (node bin/provision.js ...), under
// /usr/bin/time for its peak RSS, its journal followed as it is written: a caller may press
// Ctrl-C (SIGINT to the process group, as a terminal does) when the journal shows a moment.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, watch } from 'node:fs';
import { dirname, join } from 'node:path';
import { repoRoot } from './bed.ts';
import { parseJournal, type JournalEvent } from './behaviour.ts';

export interface CliRun {
  code: number;
  /** Start to exit, seconds. */
  wall: number;
  /** Peak RSS of the CLI's process (/usr/bin/time %M), MiB. */
  peakRssMb: number;
  /** The journal's events once the run ended. */
  events: JournalEvent[];
  stderr: string;
  /** When interrupted: seconds from SIGINT to exit, and how many hosts had started then. */
  interrupt?: { afterHosts: number; toExit: number };
}

export interface CliRunOptions {
  journal: string;
  env: NodeJS.ProcessEnv;
  /** Called with each journal event as it is written: true sends SIGINT (once). */
  interruptWhen?: (e: JournalEvent, startedHosts: number) => boolean;
  timeoutMs?: number;
}

/**
 * Follows a file being appended to: each complete line, in order, as it lands (inotify on its
 * directory; the file may not exist yet when the run starts).
 */
function followLines(file: string, onLine: (line: string) => void): () => void {
  let offset = 0;
  let rest = '';
  const buf = Buffer.alloc(1 << 16);
  const drain = () => {
    if (!existsSync(file)) return;
    const fd = openSync(file, 'r');
    try {
      for (let n; (n = readSync(fd, buf, 0, buf.length, offset)) > 0;) {
        offset += n;
        const parts = (rest + buf.toString('utf8', 0, n)).split('\n');
        rest = parts.pop()!;
        for (const l of parts) if (l) onLine(l);
      }
    } finally {
      closeSync(fd);
    }
  };
  const w = watch(dirname(file), () => drain());
  drain();
  return () => {
    w.close();
    drain();
  };
}

export async function runCli(args: string[], o: CliRunOptions): Promise<CliRun> {
  mkdirSync(dirname(o.journal), { recursive: true });
  const rssFile = `${o.journal}.rss`;
  const t0 = performance.now();
  // detached: its own process group, which SIGINT goes to (time ignores it while it waits)
  const child = spawn(
    '/usr/bin/time',
    ['-f', '%M', '-o', rssFile, process.execPath, join(repoRoot, 'bin/provision.js'), ...args, '--journal', o.journal],
    { cwd: repoRoot, env: o.env, stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-20_000)));
  let interrupt: { at: number; afterHosts: number } | undefined;
  const started = new Set<string>();
  const stopFollowing = followLines(o.journal, (line) => {
    if (interrupt || !o.interruptWhen) return;
    const [e] = parseJournal(line);
    if (!e) return;
    if (e.type === 'host_start' && e.host) started.add(e.host);
    if (o.interruptWhen(e, started.size)) {
      interrupt = { at: performance.now(), afterHosts: started.size };
      process.kill(-child.pid!, 'SIGINT');
    }
  });
  const killer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), o.timeoutMs ?? 60 * 60_000);
  const code = await new Promise<number>((res, rej) => {
    child.on('error', rej);
    child.on('close', (c) => res(c ?? 1));
  });
  const end = performance.now();
  clearTimeout(killer);
  stopFollowing();
  // GNU time writes "Command exited with non-zero status N" before the figure: the last line is it
  const rssKb = existsSync(rssFile) ? Number(readFileSync(rssFile, 'utf8').trim().split('\n').pop()) : NaN;
  return {
    code,
    wall: (end - t0) / 1000,
    peakRssMb: rssKb / 1024,
    events: existsSync(o.journal) ? parseJournal(readFileSync(o.journal, 'utf8')) : [],
    stderr,
    interrupt: interrupt && { afterHosts: interrupt.afterHosts, toExit: (end - interrupt.at) / 1000 },
  };
}
