// Issue #33 on the test bed: what is refused before any host is contacted (two resources that
// set one thing, a tag selection that selects nothing) is refused with a host whose sshd is
// stopped (a run that tried it would say UNREACHABLE, exit 1); and a sysctl key the host lacks
// fails its resource in check mode as at apply, and a GPU node without a driver fails gpu-driver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, writeInventory } from './helpers.ts';

const DOWN = 'tb6';
const UP = 'tb5';
const FIXTURE = 'test/fixtures/playbooks/conflicts.ts';
const NETWORK = 'playbooks/network.ts';
const NOT_IN_NETNS = { 'net.core.netdev_max_backlog': null, 'net.ipv4.tcp_mem': null };
const at = (file: string) => `\\(${file.replace(/[./]/g, (c) => `\\${c}`)}:\\d+:\\d+\\)`;

const live = async (host: string, key: string) => (await tb.hostExec(host, `cat /proc/sys/${key.replace(/\./g, '/')}`)).stdout.trim();

describe('refused before any host is contacted', () => {
  beforeAll(async () => {
    await tb.reset([DOWN]);
    await tb.stopSshd(DOWN);
  });
  afterAll(async () => {
    await tb.startSshd(DOWN);
  });

  it('control: a run that contacts the host finds it unreachable', async () => {
    const run = await provision([NETWORK, '-i', writeInventory({ hosts: [DOWN] }), '--check', '--timeout', '2']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('UNREACHABLE');
  });

  it.each([
    [
      'an operator sysctl file beside the bundled 65535',
      'sysctl',
      [NETWORK, FIXTURE],
      `sysctl:/etc/sysctl\\.d/99-zz-racksmith-required\\.conf ${at(NETWORK)} and sysctl:/etc/sysctl\\.d/95-rack\\.conf ${at(FIXTURE)} both claim sysctl:net\\.core\\.somaxconn`,
    ],
    [
      'a file written whole and edited',
      'file',
      [FIXTURE],
      `file:/etc/rs-conflict\\.conf ${at(FIXTURE)} and line:/etc/rs-conflict\\.conf:b ${at(FIXTURE)} both claim file:/etc/rs-conflict\\.conf`,
    ],
    [
      'one mountpoint in two plays',
      'mount',
      [FIXTURE],
      `mount:/srv/rs-conflict ${at(FIXTURE)} and mount:/srv/rs-conflict ${at(FIXTURE)} both claim mountpoint:/srv/rs-conflict`,
    ],
    [
      'one limits item in two drop-ins',
      'limits',
      [FIXTURE],
      `limits:/etc/security/limits\\.d/95-rack\\.conf ${at(FIXTURE)} and limits:/etc/security/limits\\.d/90-racksmith\\.conf ${at(FIXTURE)} both claim limits:\\*:soft:nofile, limits:\\*:hard:nofile`,
    ],
    [
      'one udev rule file',
      'udev',
      [FIXTURE],
      `udev-rules:/etc/udev/rules\\.d/60-rs-conflict\\.rules ${at(FIXTURE)} and file:/etc/udev/rules\\.d/60-rs-conflict\\.rules ${at(FIXTURE)} both claim file:/etc/udev/rules\\.d/60-rs-conflict\\.rules`,
    ],
  ])('%s: exit 3 naming both resources and their lines, in a run and in --syntax-check', async (_, conflict, playbooks, msg) => {
    const inv = writeInventory({ hosts: [DOWN], vars: { conflict } });
    for (const extra of [['--check'], [], ['--syntax-check']]) {
      const run = await provision([...playbooks, '-i', inv, ...extra, '--timeout', '2']);
      expect(run.code, run.stderr).toBe(3);
      expect(run.stderr).toMatch(new RegExp(`host ${DOWN}: ${msg}`));
      expect(run.stderr).not.toContain('UNREACHABLE');
    }
  });

  it.each([
    [['-t', 'nosuch'], /-t\/--tags: no resource carries tag\(s\) nosuch; tags in this run: kmod, limits, network, sysctl\n/],
    [['-t', 'sysctl,sysclt'], /no resource carries tag\(s\) sysclt; tags in this run: /],
    [['--skip-tags', 'network'], /--skip-tags network selects no resource of this run; tags in this run: /],
  ])('%j: exit 3 listing the tags the run has', async (args, msg) => {
    const inv = writeInventory({ hosts: [DOWN], vars: { kernel_modules: ['overlay'] } });
    const run = await provision([NETWORK, '-i', inv, ...args, '--timeout', '2']);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(msg);
    expect(run.stderr).not.toContain('UNREACHABLE');
  });
});

describe('what is not a conflict', () => {
  it('stacked line edits of one file apply together, then nothing changes', async () => {
    await tb.reset([UP]);
    const inv = writeInventory({ hosts: [UP], vars: { conflict: 'edits' } });
    const first = await provision([FIXTURE, '-i', inv, '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect((await tb.hostExec(UP, 'cat /etc/rs-edits.conf')).stdout).toBe('a = 1\nb = 2\n');
    const again = await provision([FIXTURE, '-i', inv, '--check', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(changedResources(again)).toEqual([]);
  });
});

describe('a sysctl key the host lacks', () => {
  const inventory = (vars: Record<string, unknown>) =>
    writeInventory({ hosts: [UP], vars: { sysctl_overrides: NOT_IN_NETNS, nofile: 65536, ...vars } });
  const EXTRA = 'sysctl:/etc/sysctl.d/99-zz-racksmith-extra.conf';
  const NO_KEY =
    'refused: the host has no sysctl net.ipv4.racksmith_nokey: /proc/sys/net/ipv4/racksmith_nokey does not exist (a module not loaded, or not in this kernel or namespace)';

  it('fails its resource in --check as at apply; the other resources still apply', async () => {
    await tb.reset([UP]);
    const inv = inventory({ sysctl_extra: { 'net.ipv4.racksmith_nokey': 1, 'net.ipv4.tcp_keepalive_time': 600 } });
    const before = await live(UP, 'net.core.somaxconn');
    for (const args of [['--check'], []]) {
      const run = await provision([NETWORK, '-i', inv, '--json', ...args]);
      expect(run.code, run.stderr).toBe(1);
      const failed = run.events.filter((e) => e.type === 'resource' && e.status === 'failed');
      expect(failed.map((e) => [e.id, e.error])).toEqual([[EXTRA, NO_KEY]]);
      expect(await live(UP, 'net.core.somaxconn')).toBe(args.length ? before : '65535');
    }
    // the refused file is not written, so nothing of it loads at boot either
    expect((await tb.hostExec(UP, 'ls /etc/sysctl.d/')).stdout).not.toContain('extra');
  });

  it('waits for a module of kernel_modules in --check: pending, not failed', async () => {
    const inv = inventory({ sysctl_extra: { 'net.ipv4.racksmith_nokey': 1 }, kernel_modules: ['racksmith_no_such_module'] });
    const run = await provision([NETWORK, '-i', inv, '--check', '--json']);
    expect(run.code, run.stderr).toBe(2);
    const extra = run.events.find((e) => e.type === 'resource' && e.id === EXTRA);
    expect(extra).toMatchObject({ status: 'changed' });
    expect(extra?.changes.map((c: { summary: string }) => c.summary)).toEqual([
      'depends on a pending change of kmod:/etc/modules-load.d/racksmith.conf',
    ]);
  });
});

describe('a GPU node with no driver found', () => {
  it('fails gpu-driver in --check as at apply; its binds and the jail wait, nothing is mounted', async () => {
    await tb.reset([UP]);
    // (the export is never reached: the jail's mounts wait for the driver check)
    const inv = writeInventory({
      hosts: [UP],
      groups: { jail: { hosts: [UP] } },
      vars: { jail_source: `${tb.sharedMount}/rs-no-such-export`, jail_fstype: 'none', jail_options: ['bind'] },
    });
    const fstab = (await tb.hostExec(UP, 'cat /etc/fstab')).stdout;
    for (const args of [['--check'], []]) {
      const run = await provision(['playbooks/jail.ts', '-i', inv, '--json', ...args]);
      expect(run.code, run.stderr).toBe(1);
      const event = (id: string) => run.events.find((e) => e.type === 'resource' && e.id === id);
      expect(event('gpu-driver:/mnt/jail')).toMatchObject({
        status: 'failed',
        error: 'refused: no NVIDIA driver found: set jail_gpu: false for a CPU node',
      });
      expect(event('gpu-binds:/mnt/jail')).toMatchObject({ status: 'skipped' });
      expect(event('mount:/mnt/jail')).toMatchObject({ status: 'skipped' });
    }
    expect((await tb.hostExec(UP, 'findmnt -rn -o TARGET | grep -c ^/mnt/jail || true')).stdout.trim()).toBe('0');
    expect((await tb.hostExec(UP, 'cat /etc/fstab')).stdout).toBe(fstab);
  });
});
