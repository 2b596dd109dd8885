import type { Connection, ExecResult } from './types.ts';
import { scriptAsStdin } from './transport.ts';

/** Runs scripts on this machine through /bin/sh (pull mode and the local dry-run default). */
export class LocalConnection implements Connection {
  execCount = 0;
  constructor(readonly host: string) {}

  async exec(script: string, stdin?: string): Promise<ExecResult> {
    this.execCount++;
    // zx costs ~65 ms to import: load it only when a host is actually run locally.
    const { $ } = await import('zx');
    const opts = { nothrow: true, quiet: true, verbose: false } as const;
    const out =
      stdin === undefined
        ? await $({ ...opts, input: scriptAsStdin(script) })`/bin/sh -s`
        : await $({ ...opts, input: stdin })`/bin/sh -c ${script}`;
    return { stdout: out.stdout, stderr: out.stderr, code: out.exitCode };
  }

  async close(): Promise<void> {}
}
