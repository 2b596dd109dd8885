// fstab round trip on real hosts: a mount path that needs escaping (or holds characters that
// must not be taken for separators) is written once and read back the same: the second run
// changes nothing and /etc/fstab has one line for it; duplicates an older run left are collapsed.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, writeInventory } from './helpers.ts';

const PB = 'test/fixtures/playbooks/mounts.ts';
const HOST = 'tb4';

/** The lines of the host's /etc/fstab that mount a tmpfs (the fixture's only kind). */
async function tmpfsLines(): Promise<string[]> {
  const r = await tb.hostExec(HOST, 'cat /etc/fstab');
  return r.stdout.split('\n').filter((l) => /^tmpfs\s/.test(l));
}

describe('fstab entries round-trip', () => {
  beforeAll(async () => {
    await tb.reset([HOST]);
  });

  it.each([
    ['a space and a backslash', '/mnt/rs a\\b', '/mnt/rs\\040a\\134b'],
    ['a non-breaking space (not a separator)', '/mnt/rs\u00a0nb', '/mnt/rs\u00a0nb'],
  ])('%s: converges, then zero changes and one fstab line per run', async (_, path, escaped) => {
    await tb.hostExec(HOST, 'umount /mnt/rs* 2>/dev/null; sed -i "/^tmpfs /d" /etc/fstab');
    const inv = writeInventory({ hosts: [HOST], vars: { fx_mount: path } });
    const first = await provision([PB, '-i', inv, '--json']);
    expect(first.stderr).not.toMatch(/still differs|internal error/);
    expect(first.code).toBe(0);
    expect(changedResources(first)).toEqual([{ host: HOST, id: `mount:${path}` }]);
    for (let i = 0; i < 2; i++) {
      const again = await provision([PB, '-i', inv, '--json']);
      expect(again.code).toBe(0);
      expect(changedResources(again)).toEqual([]);
    }
    expect(await tmpfsLines()).toEqual([`tmpfs ${escaped} tmpfs size=1m 0 0`]);
    // util-linux reads the entry as the same path, and the kernel has it mounted there
    const seen = await tb.hostExec(HOST, `findmnt --fstab -J -o TARGET`);
    expect((JSON.parse(seen.stdout) as { filesystems: Array<{ target: string }> }).filesystems.map((f) => f.target)).toContain(path);
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code).toBe(0);
  });

  it.each([
    ['a tab', '/mnt/rs\tt'],
    ['a control character', '/mnt/rs\x01c'],
  ])('a mount path with %s is exit 3 at its variable, nothing changed', async (_, path) => {
    const before = await tb.hostExec(HOST, 'cat /etc/fstab');
    const inv = writeInventory({ hosts: [HOST], vars: { fx_mount: path } });
    const r = await provision([PB, '-i', inv]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/inventory\.(yaml|ini):\d+:\d+: .*mount path must not contain control characters/);
    expect((await tb.hostExec(HOST, 'cat /etc/fstab')).stdout).toBe(before.stdout);
  });

  it('duplicate lines an older run appended are collapsed into one', async () => {
    const path = '/mnt/rs\u00a0dup';
    await tb.hostExec(HOST, 'umount /mnt/rs* 2>/dev/null; sed -i "/^tmpfs /d" /etc/fstab');
    const inv = writeInventory({ hosts: [HOST], vars: { fx_mount: path } });
    expect((await provision([PB, '-i', inv])).code).toBe(0);
    const line = (await tmpfsLines())[0];
    await tb.hostExec(HOST, `printf '%s\\n%s\\n' '${line}' '${line}' >> /etc/fstab`);
    expect(await tmpfsLines()).toHaveLength(3);
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code).toBe(2); // the duplicates are a pending change
    expect(await tmpfsLines()).toHaveLength(3); // and check mode left them
    const fix = await provision([PB, '-i', inv, '--json']);
    expect(fix.code).toBe(0);
    expect(changedResources(fix)).toEqual([{ host: HOST, id: `mount:${path}` }]);
    expect(await tmpfsLines()).toEqual([line]);
    const again = await provision([PB, '-i', inv, '--json']);
    expect(changedResources(again)).toEqual([]);
  });
});
