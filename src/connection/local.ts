import { spawn, type ChildProcess } from 'node:child_process';
import type { Connection, ExecResult } from './types.ts';
import { Escalation, execPlan, newNonce, type Become } from './become.ts';

/**
 * Runs scripts on this machine through /bin/sh (pull mode and the local dry-run default).
 * Plain child_process: zx ran the same `/bin/sh` (through bash) and cost ~65 ms to import.
 */
export class LocalConnection implements Connection {
  execCount = 0;
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
    const run = execPlan(this.become, this.nonce, script, stdin, (s) => s);
    const r = await sh(run.args, run.stdin);
    return this.escalation ? this.escalation.result(r) : r;
  }

  async close(): Promise<void> {
    const a = this.anchor;
    this.anchor = undefined;
    if (a && a.exitCode === null) await new Promise<void>((resolve) => (a.once('exit', () => resolve()), a.stdin?.end()));
  }
}

function sh(args: string[], input: string): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', args, { stdio: ['pipe', 'pipe', 'pipe'] });
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
