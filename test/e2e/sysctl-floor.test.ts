// Sysctl floors (issue #38) on the bed: a higher live value, set by hand on a host, is kept through a
// run and a reboot; a vector is kept field by field; re-runs and dry runs change nothing. net.* is
// per network namespace on the bed and a reboot is a fresh one (kernel defaults), so the value
// after the reboot comes from the persisted drop-in, not from the run that set it.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory } from './helpers.ts';

const HOST = 'tb6';
const PB = 'playbooks/network.ts';
const FILE = '/etc/sysctl.d/99-zz-racksmith-required.conf';
const NET_FILE = '/etc/sysctl.d/99-zz-racksmith-network.conf';

const inventory = () =>
  writeInventory({
    hosts: [HOST],
    vars: {
      // not in a child netns (network.test.ts)
      sysctl_overrides: { 'net.core.netdev_max_backlog': null, 'net.ipv4.tcp_mem': null },
      sysctl_never_lower: ['net.core.somaxconn', 'net.ipv4.tcp_rmem'],
      nofile: 65536,
    },
  });

const live = async (key: string) =>
  (await tb.hostExec(HOST, `cat /proc/sys/${key.replace(/\./g, '/')}`)).stdout.trim().replace(/\s+/g, ' ');

beforeAll(async () => {
  await tb.reset([HOST]);
});

describe('sysctl_never_lower', () => {
  it('a higher live value is kept through a run and a reboot; re-runs and dry runs change nothing', async () => {
    await tb.reset([HOST]);
    const set = await tb.hostExec(HOST, "sysctl -q -w net.core.somaxconn=100000 'net.ipv4.tcp_rmem=4096 1000000 6291456'");
    expect(set.code, set.stderr).toBe(0);
    // (sysctl -w exits 0 on a failed write: read back)
    expect(await live('net.core.somaxconn')).toBe('100000');
    expect(await live('net.ipv4.tcp_rmem')).toBe('4096 1000000 6291456');

    const check = await provision([PB, '-i', inventory(), '--check', '--diff']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain("kept: the host has more: net.core.somaxconn 100000 (racksmith's 65535)");
    expect(check.stderr).toContain('net.ipv4.tcp_rmem: 4096 1000000 6291456 → 4096 1000000 134217728');
    expect(check.stderr).not.toContain('net.core.somaxconn: 100000 →');
    expect((await tb.hostExec(HOST, `ls ${FILE} 2>&1`)).code).not.toBe(0);
    expect(await live('net.ipv4.tcp_rmem')).toBe('4096 1000000 6291456');

    const first = await provision([PB, '-i', inventory(), '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(await live('net.core.somaxconn')).toBe('100000');
    expect(await live('net.ipv4.tcp_rmem')).toBe('4096 1000000 134217728'); // the field racksmith had more of raised
    expect(await live('net.ipv4.tcp_tw_reuse')).toBe('1'); // unfloored keys set as ever
    const files = (await tb.hostExec(HOST, `cat ${FILE} ${NET_FILE}`)).stdout;
    expect(files).toContain('net.core.somaxconn = 100000\n');
    expect(files).toContain('net.ipv4.tcp_rmem = 4096 1000000 134217728\n');

    const again = await provision([PB, '-i', inventory(), '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(recaps(again)[HOST]).toMatchObject({ changed: 0, failed: 0 });

    // a reboot starts a fresh netns from kernel defaults: what comes back is the persisted value
    await tb.reboot([HOST]);
    expect(await live('net.core.somaxconn')).toBe('100000');
    expect(await live('net.ipv4.tcp_rmem')).toBe('4096 1000000 134217728');
    const afterReboot = await provision([PB, '-i', inventory(), '--json']);
    expect(afterReboot.code, afterReboot.stderr).toBe(0);
    expect(recaps(afterReboot)[HOST]).toMatchObject({ changed: 0, failed: 0 });
    const dry = await provision([PB, '-i', inventory(), '--check']);
    expect(dry.code, dry.stderr).toBe(0);
  });

  it("without floors the same host value is lowered to racksmith's (the default)", async () => {
    await tb.reset([HOST]);
    await tb.hostExec(HOST, 'sysctl -q -w net.core.somaxconn=100000');
    const inv = writeInventory({
      hosts: [HOST],
      vars: { sysctl_overrides: { 'net.core.netdev_max_backlog': null, 'net.ipv4.tcp_mem': null }, nofile: 65536 },
    });
    const check = await provision([PB, '-i', inv, '--check']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain('net.core.somaxconn: 100000 → 65535');
    expect(check.stderr).not.toContain('kept: the host has more');
  });
});
