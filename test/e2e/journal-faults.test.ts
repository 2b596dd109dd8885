// The run journal on real test-bed hosts: one that cannot be written is bad input before any host
// (exit 3), one whose file system fills mid-run is a warning: the hosts in flight finish, the recap
// reaches the terminal, exit 1, never "internal error".
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, writeInventory } from './helpers.ts';

const HOSTS = ['tb7', 'tb8', 'tb9'];
const PB = 'test/fixtures/playbooks/demo.ts';
let work: string;
let small: string | undefined;

beforeAll(async () => {
  await tb.reset(HOSTS);
  work = mkdtempSync(join(tmpdir(), 'rs-journal-e2e-'));
});
afterAll(() => {
  if (small) execFileSync('umount', [small]);
  rmSync(work, { recursive: true, force: true });
});

/** A tmpfs of one page (4 KiB) in the work dir: the journal's first lines fit, the run's do not. */
function onePageFs(): string {
  small = join(work, 'small');
  execFileSync('mkdir', ['-p', small]);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4k,mode=0700', 'racksmith-test-journal', small]);
  return small;
}

describe('journal faults', () => {
  it('a journal file system that fills mid-run: a warning, every host converges, the recap on the terminal, exit 1', async () => {
    await tb.reset(HOSTS);
    const inv = writeInventory({ hosts: HOSTS });
    const journal = join(onePageFs(), 'run.ndjson');
    const r = await provision([PB, '-i', inv, '--journal', journal]);
    expect(r.stderr).not.toContain('internal error');
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`warning: journal ${journal}: ENOSPC: no space left on device: the journal ends here; the run goes on`);
    expect(r.stderr).toMatch(/RECAP/);
    // every host converged: the totals row (the hosts are not listed: none is not ok)
    expect(r.stderr).toMatch(new RegExp(`^total \\(${HOSTS.length} hosts\\)\\s+0\\s+${6 * HOSTS.length}\\s+0\\s+0\\s+0\\s+`, 'm'));
    expect(r.stderr).toContain(`journal: ${journal} (incomplete: ENOSPC: no space left on device)`);
    // The journal holds what fitted, starting with the run's first line.
    const text = readFileSync(journal, 'utf8');
    expect(JSON.parse(text.split('\n')[0]).type).toBe('run_start');
    expect(statSync(journal).size).toBeLessThanOrEqual(4096);
    // Every host was converged in full: a second run (journal elsewhere) changes nothing.
    for (const h of HOSTS) expect((await tb.hostExec(h, 'cat /tmp/rsdemo/b.conf')).stdout).toContain('foo=1');
    const again = await provision([PB, '-i', inv, '--journal', join(work, 'again.ndjson')]);
    expect(again.code, again.stderr).toBe(0);
  });

  it.each<[string, () => string, string]>([
    ['a directory', () => work, 'it is a directory'],
    ['/dev/full (its first line fails)', () => '/dev/full', 'ENOSPC'],
    ['a place where no file can be made', () => '/proc/sys/racksmith.ndjson', 'cannot write the journal'],
  ])('a journal that cannot be written (%s) is exit 3 and no host is contacted', async (_, path, says) => {
    await tb.reset(HOSTS);
    const inv = writeInventory({ hosts: HOSTS });
    const r = await provision([PB, '-i', inv, '--journal', path()]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain(says);
    expect(r.stderr).not.toContain('internal error');
    // nothing ran: no host has the demo's directory
    for (const h of HOSTS) expect((await tb.hostExec(h, 'test -e /tmp/rsdemo; echo $?')).stdout.trim()).toBe('1');
  });
});
