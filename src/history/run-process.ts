import { readFileSync } from 'node:fs';

/**
 * Which process ran a run, so that a later run can prove it no longer runs: its pid, its start
 * (clock ticks after boot, /proc/PID/stat field 22: a pid reused by another process starts at
 * another time) and the boot it ran in (/proc/sys/kernel/random/boot_id: a restarted controller
 * runs none of the processes it had).
 */
export interface RunProcess {
  pid: number;
  start: number;
  boot: string;
}

/** The process's start (field 22 of /proc/PID/stat), or undefined when no such process lives (a zombie is dead). */
export function processStart(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // (the command name, field 2, is in parentheses and may hold spaces and parentheses itself)
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
  const start = Number(fields[19]);
  return Number.isInteger(start) ? start : undefined;
}

/** This boot's id, or undefined where the kernel does not say (no /proc). */
export function bootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** This process, as a run record keeps it; undefined where /proc does not tell (the record then proves nothing). */
export function thisProcess(): RunProcess | undefined {
  const start = processStart(process.pid);
  const boot = bootId();
  return start === undefined || boot === undefined ? undefined : { pid: process.pid, start, boot };
}

/**
 * Whether process `p` still runs: in this boot (where the kernel says which), a live process of its
 * pid with its start (the pid not another process's since).
 */
export function processAlive(p: RunProcess, f: { boot: string | undefined; startOf: (pid: number) => number | undefined }): boolean {
  return (f.boot === undefined || p.boot === f.boot) && f.startOf(p.pid) === p.start;
}

/**
 * Whether a run of this controller's history provably still runs: it has no end, it ran on this
 * controller (`controller`, as records name it) in this boot, and a live process has its pid and
 * start. Retention and `runs prune` keep such a run: its record is what tells a later run that the
 * nodes it drains are its own, not a dead run's to take over.
 */
export function stillRunning(r: { end?: string; controller?: string; process?: RunProcess }, controller: string): boolean {
  const p = r.process;
  if (r.end !== undefined || p === undefined || r.controller !== controller) return false;
  return processAlive(p, { boot: bootId(), startOf: processStart });
}
