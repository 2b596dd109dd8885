import { spawn, type ChildProcess } from 'node:child_process';
import type { Connection, ExecResult } from './types.ts';
import { Escalation, execPlan, newNonce, type Become } from './become.ts';
import { execTag, KILL_TIMEOUT_MS, killGroupsScript } from './kill-groups.ts';

/**
 * Runs scripts on this machine through /bin/sh (pull mode and the local dry-run default).
 * Plain child_process: zx ran the same `/bin/sh` (through bash) and cost ~65 ms to import.
 * Each script's shell is a process group of its own, as sshd makes each remote command one: a
 * terminal's Ctrl-C reaches racksmith, not the step in flight, and abort() ends the group whole.
 */
export class LocalConnection implements Connection {
  execCount = 0;
  /** The scripts running now, by their tag (kill-groups.ts). */
  private readonly running = new Map<string, ChildProcess>();
  /** `cat` reading a pipe from this process: it ends when the connection closes, or this process dies. */
  private anchor: ChildProcess | undefined;
  private readonly nonce = newNonce();
  constructor(
    readonly host: string,
    /** -c local -b: the scripts run escalated, as over SSH. */
    private readonly become?: Become,
  ) {
    this.escalation = become ? new Escalation(become, this.nonce) : undefined;
  }
  /** Under become: its first refusal ends every later exec of this connection (become.ts). */
  private readonly escalation?: Escalation;

  /** The scripts' parent is this (long-lived) process: the session is a child that close() ends. */
  get sessionPid(): number | undefined {
    if (!this.anchor) {
      this.anchor = spawn('cat', [], { stdio: ['pipe', 'ignore', 'ignore'] });
      this.anchor.on('error', () => {});
      this.anchor.unref();
    }
    return this.anchor.pid;
  }

  async exec(script: string, stdin?: string): Promise<ExecResult> {
    this.escalation?.refuseAgain();
    this.execCount++;
    const tag = execTag();
    const run = execPlan(this.become, this.nonce, script, stdin, (s) => s, tag);
    let r: ExecResult;
    try {
      r = await sh(run.args, run.stdin, (child) => this.running.set(tag, child));
    } finally {
      this.running.delete(tag);
    }
    return this.escalation ? this.escalation.result(r) : r;
  }

  /**
   * End now (--host-timeout, Ctrl-C): kill the process group of every script still running. Under
   * become the escalated shells are not this user's to signal: they are found by their tag and
   * killed by an escalated shell first, as over SSH (refused escalation: none was started).
   */
  async abort(): Promise<void> {
    if (this.running.size > 0 && this.escalation && !this.escalation.refused) {
      const k = execPlan(this.become, this.nonce, killGroupsScript([...this.running.keys()]), undefined, (s) => s);
      const kill = sh(k.args, k.stdin).catch(() => undefined);
      await Promise.race([kill, new Promise((r) => setTimeout(r, KILL_TIMEOUT_MS).unref())]);
    }
    for (const child of this.running.values()) {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // (already gone)
      }
    }
    await this.close();
  }

  async close(): Promise<void> {
    const a = this.anchor;
    this.anchor = undefined;
    if (!a || a.exitCode !== null) return;
    // held again while it ends: an unreferenced child left alone in the loop lets Node exit
    // before its exit is seen (exit 13, an unsettled await: no recap, no end of the run)
    a.ref();
    await new Promise<void>((resolve) => (a.once('exit', () => resolve()), a.stdin?.end()));
  }
}

function sh(args: string[], input: string, started?: (child: ChildProcess) => void): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    // detached: a session and process group of its own (see the class)
    const child = spawn('/bin/sh', args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    started?.(child);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => stdout.push(b));
    child.stderr.on('data', (b: Buffer) => stderr.push(b));
    // a script that exits without reading all its input: its exit status tells what happened
    child.stdin.on('error', () => {});
    child.once('error', reject);
    child.once('close', (code) =>
      resolve({ stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8'), code }),
    );
    child.stdin.end(input);
  });
}
