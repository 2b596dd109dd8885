// A reader that goes away before the CLI writes (`provision runs --json | head -1`): the CLI goes
// on as if it had printed (a run would finish with its journal), no crash on EPIPE.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const BIN = resolve('bin/provision.js');

describe('output whose reader is gone', () => {
  it.each([['--help'], ['inventory', '--list', '-i', 'test/unit/fixtures/inventory/hosts.yml']])(
    'provision %s: exit 0, nothing on stderr',
    async (...args) => {
      const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      // closed before the process has even started Node: its first write meets a pipe with no reader
      child.stdout.destroy();
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const code = await new Promise<number | null>((r) => child.on('close', r));
      expect(stderr).toBe('');
      expect(code).toBe(0);
    },
    60_000,
  );
});
