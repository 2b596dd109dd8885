// Issue 33, "always exits": whatever a file named in the input turns out to be (a device that never
// ends, a FIFO no one writes, a directory, a file far too large), the process ends within seconds
// with a clear error: bad input found before any host is exit 3 and no host is contacted; a file
// only a host's connection reads (its ssh config's UserKnownHostsFile) fails that host, and the
// process still exits when the run ends. Each run is spawned with a deadline that fails the test
// (never a fixed sleep), and none may need the backstop that ends a process a leak kept alive.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory, type CliRun } from './helpers.ts';

const HOSTS = ['tb1', 'tb2'];
const [GOOD, BAD] = HOSTS;
const PB = 'test/fixtures/playbooks/demo.ts';
/** A run that has not ended by then is killed: the test fails on its exit code. */
const DEADLINE_MS = 20_000;
/** What "within seconds" means here, with the sources compiled on a loaded 2-core machine. */
const WITHIN_MS = 12_000;
let work: string;

beforeAll(async () => {
  await tb.reset(HOSTS);
  work = mkdtempSync(join(tmpdir(), 'rs-exits-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Every kind of file that is not input racksmith can read, made fresh under the work dir. */
const BAD_FILES: Array<[string, () => string, RegExp]> = [
  ['/dev/zero (never ends)', () => '/dev/zero', /\/dev\/zero is a character device, not a regular file/],
  [
    'a FIFO no one writes',
    () => {
      const p = join(work, `fifo-${Math.random().toString(36).slice(2)}`);
      execFileSync('mkfifo', [p]);
      return p;
    },
    /fifo-\w+ is a FIFO, not a regular file/,
  ],
  [
    'a directory',
    () => {
      const p = join(work, `dir-${Math.random().toString(36).slice(2)}`);
      mkdirSync(p);
      return p;
    },
    /dir-\w+ is a directory, not a regular file/,
  ],
  [
    'a file of 1 GiB (sparse)',
    () => {
      const p = join(work, `huge-${Math.random().toString(36).slice(2)}`);
      writeFileSync(p, '');
      truncateSync(p, 2 ** 30);
      return p;
    },
    /huge-\w+ is 1073741824 bytes, over the limit of \d+/,
  ],
];

async function timed(args: string[]): Promise<CliRun & { ms: number }> {
  const t0 = Date.now();
  const run = await provision(args, { timeoutMs: DEADLINE_MS });
  return { ...run, ms: Date.now() - t0 };
}

/** Ended by itself, in time, with nothing left open (the backstop never had to end it). */
function endedInTime(run: CliRun & { ms: number }): void {
  expect(run.code, `killed after ${DEADLINE_MS} ms: the process did not exit\n${run.stderr}`).not.toBe(-1);
  expect(run.ms, run.stderr).toBeLessThan(WITHIN_MS);
  expect(run.stderr).not.toContain('still open after the run');
  expect(run.stderr).not.toContain('internal error');
}

/** The demo playbook's directory on no host: nothing ran. */
async function noHostTouched(): Promise<void> {
  for (const h of HOSTS) expect((await tb.hostExec(h, 'test -e /tmp/rsdemo; echo $?')).stdout.trim(), h).toBe('1');
}

describe('bad input in a file the inventory or command line names: exit 3 within seconds, no host contacted', () => {
  it.each(BAD_FILES)('racksmith_known_hosts of one host is %s', async (_, make, says) => {
    const inv = writeInventory({ hosts: HOSTS, hostVars: { [BAD]: { racksmith_known_hosts: make() } } });
    const run = await timed([PB, '-i', inv]);
    endedInTime(run);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(says);
    expect(run.stderr).toContain(`${inv}:`); // at the variable that names it
    expect(run.stderr).toContain(`${BAD}: known_hosts file`);
    await noHostTouched();
  });

  it.each(BAD_FILES)('--known-hosts is %s', async (_, make, says) => {
    const run = await timed([PB, '-i', writeInventory({ hosts: HOSTS }), '--known-hosts', make()]);
    endedInTime(run);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(says);
    expect(run.stderr).toContain('--known-hosts: known_hosts file');
    await noHostTouched();
  });

  it.each(BAD_FILES)('ansible_ssh_private_key_file of one host is %s', async (_, make, says) => {
    const inv = writeInventory({ hosts: HOSTS, hostVars: { [BAD]: { ansible_ssh_private_key_file: make() } } });
    const run = await timed([PB, '-i', inv]);
    endedInTime(run);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(says);
    expect(run.stderr).toContain(`${BAD}: private key file`);
    await noHostTouched();
  });

  it.each(BAD_FILES)('--resume names %s', async (_, make, says) => {
    const run = await timed([PB, '-i', writeInventory({ hosts: HOSTS }), '--resume', make()]);
    endedInTime(run);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(says);
    await noHostTouched();
  });

  it.each<[string, () => string, string]>([
    ['a FIFO no one reads', () => BAD_FILES[1][1](), 'it is a FIFO or socket, not a file'],
    ['/dev/full', () => '/dev/full', 'ENOSPC'],
    ['a directory', () => BAD_FILES[2][1](), 'it is a directory'],
  ])('--journal is %s', async (_, make, says) => {
    const run = await timed([PB, '-i', writeInventory({ hosts: HOSTS }), '--journal', make()]);
    endedInTime(run);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain(says);
    await noHostTouched();
  });
});

describe("a file only one host's connection reads: that host fails, the others run, the process exits", () => {
  it.each(BAD_FILES)("its ssh config's UserKnownHostsFile is %s", async (_, make, says) => {
    await tb.reset(HOSTS);
    // the inventory names no known_hosts for BAD: its ssh config (racksmith_ssh_config) does
    const config = join(work, `ssh_config-${Math.random().toString(36).slice(2)}`);
    writeFileSync(config, `Host ${tb.host(BAD).ip}\n  UserKnownHostsFile ${make()}\n`);
    const inv = join(work, `inventory-${Math.random().toString(36).slice(2)}.yaml`);
    const host = (h: string, vars: Record<string, string>) => ({ ansible_host: tb.host(h).ip, ansible_port: tb.host(h).port, ...vars });
    writeFileSync(
      inv,
      stringify({
        all: {
          vars: { ansible_user: 'root', ansible_ssh_private_key_file: tb.keyPath },
          hosts: { [GOOD]: host(GOOD, { racksmith_known_hosts: tb.knownHostsPath }), [BAD]: host(BAD, { racksmith_ssh_config: config }) },
        },
      }),
    );
    const run = await timed([PB, '-i', inv, '--json']);
    endedInTime(run);
    expect(run.code, run.stderr).toBe(1);
    expect(recaps(run)[BAD]).toMatchObject({ unreachable: true, error: expect.stringMatching(says) });
    expect(recaps(run)[GOOD]).toMatchObject({ unreachable: false, failed: 0 });
    expect((await tb.hostExec(GOOD, 'test -e /tmp/rsdemo; echo $?')).stdout.trim()).toBe('0');
    expect((await tb.hostExec(BAD, 'test -e /tmp/rsdemo; echo $?')).stdout.trim()).toBe('1');
  });
});
