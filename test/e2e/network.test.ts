// Issue "Network tuning" acceptance on the test bed. Each host is its own network namespace, so
// net.* values are real per-host kernel state; vm.* and net.core.[rw]mem_max are per-host fakes
// (see shared/reference/testbed.md §3). Two keys do not exist in a child netns at all
// (net.core.netdev_max_backlog, net.ipv4.tcp_mem): the inventory drops them, and a separate test
// shows that a missing key is reported as a failure of that host.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, recaps, writeInventory } from './helpers.ts';

const HOSTS = ['tb7', 'tb8', 'tb9'];
const PB = 'playbooks/network.ts';
const NOT_IN_NETNS = { 'net.core.netdev_max_backlog': null, 'net.ipv4.tcp_mem': null };

const inventory = (extra: Record<string, unknown> = {}) =>
  writeInventory({
    hosts: HOSTS,
    vars: { sysctl_overrides: NOT_IN_NETNS, kernel_modules: ['br_netfilter', 'overlay'], nofile: 65536, ...extra },
    groups: { rack_a: { hosts: ['tb7'], vars: { sysctl_overrides: { ...NOT_IN_NETNS, 'net.core.somaxconn': 32768 } } } },
  });

const live = async (host: string, key: string) =>
  (await tb.hostExec(host, `cat /proc/sys/${key.replace(/\./g, '/')}`)).stdout.trim().replace(/\s+/g, ' ');

beforeAll(async () => {
  await tb.reset(HOSTS);
});

describe('network tuning', () => {
  it('--check on fresh hosts shows key: old → new per host, changes nothing, exit 2', async () => {
    const before = await Promise.all(HOSTS.map((h) => live(h, 'net.core.somaxconn')));
    const run = await provision([PB, '-i', inventory(), '--check', '--diff']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`net.core.somaxconn: ${before[1]} → 65535`);
    expect(run.stderr).toContain(`net.core.somaxconn: ${before[0]} → 32768`);
    expect(run.stderr).toContain('+net.ipv4.tcp_tw_reuse = 1');
    expect(await Promise.all(HOSTS.map((h) => live(h, 'net.core.somaxconn')))).toEqual(before);
    expect((await tb.hostExec('tb8', 'ls /etc/sysctl.d/ /etc/security/limits.d/ /etc/modules-load.d/')).stdout).not.toMatch(/racksmith/);
  });

  it('first run sets files and live values in every host, second run changes nothing', async () => {
    const first = await provision([PB, '-i', inventory(), '--json']);
    expect(first.code, first.stderr).toBe(0);
    for (const h of HOSTS) {
      expect(await live(h, 'net.ipv4.ip_local_port_range')).toBe('2048 65535');
      expect(await live(h, 'net.ipv4.tcp_tw_reuse')).toBe('1');
      expect(await live(h, 'net.ipv4.tcp_max_tw_buckets')).toBe('1440000');
      expect(await live(h, 'net.ipv4.tcp_slow_start_after_idle')).toBe('0');
      expect(await live(h, 'net.core.rmem_max')).toBe('134217728');
      expect(await live(h, 'vm.swappiness')).toBe('10');
      const files = await tb.hostExec(
        h,
        'cat /etc/sysctl.d/99-zz-racksmith-required.conf /etc/security/limits.d/90-racksmith.conf /etc/modules-load.d/racksmith.conf',
      );
      expect(files.stdout).toContain('net.ipv4.ip_local_port_range = 2048 65535');
      expect(files.stdout).toContain('* soft nofile 65536');
      expect(files.stdout).toContain('br_netfilter\noverlay\n');
      expect((await tb.hostExec(h, 'cat /etc/systemd/system.conf.d/90-racksmith-nofile.conf')).stdout).toContain(
        'DefaultLimitNOFILE=65536:65536',
      );
    }
    // the group override landed on rack_a's host only
    expect(await live('tb7', 'net.core.somaxconn')).toBe('32768');
    expect(await live('tb8', 'net.core.somaxconn')).toBe('65535');
    expect(await live('tb9', 'net.core.somaxconn')).toBe('65535');
    // min_free_kbytes is computed from each host's RAM, not copied
    const memKb = Number((await tb.hostExec('tb8', "awk '/MemTotal/{print $2}' /proc/meminfo")).stdout);
    expect(Number(await live('tb8', 'vm.min_free_kbytes'))).toBe(
      Math.min(Math.max(65536, Math.floor(memKb / 100)), Math.floor(memKb / 20)),
    );
    // (that a login gets the nofile limit: its own test below, with a value the bed can give)

    const second = await provision([PB, '-i', inventory(), '--json']);
    expect(second.code, second.stderr).toBe(0);
    for (const h of HOSTS) expect(recaps(second)[h]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it("a new login gets the nofile limit, soft and hard: a value under the bed hosts' hard ceiling, unlike what sshd passes on", async (ctx) => {
    await tb.reset(['tb8']);
    // No host can raise its hard limit above the one of the shell that started the bed (no
    // CAP_SYS_RESOURCE), and pam_limits then applies nothing of the line: read that ceiling first
    // (sshd's own limits, which a login keeps when pam_limits sets nothing) and ask for less.
    const sshd = (await tb.hostExec('tb8', 'grep "^Max open files" /proc/$(cat /run/sshd.pid)/limits')).stdout.trim().split(/\s+/);
    const [soft, hard] = [Number(sshd[3]), Number(sshd[4])];
    const want = Math.floor(hard / 2) === soft ? Math.floor(hard / 2) + 1 : Math.floor(hard / 2);
    if (want < 1024) ctx.skip(`the bed hosts' hard nofile ceiling is ${hard}: too low for any nofile racksmith takes (1024 at least)`);
    const before = (await tb.sshExec('tb8', 'ulimit -Sn; ulimit -Hn')).stdout.split('\n').slice(0, 2);
    expect(before).not.toEqual([String(want), String(want)]);
    const run = await provision([PB, '-i', inventory({ nofile: want }), '-l', 'tb8', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect((await tb.hostExec('tb8', 'cat /etc/security/limits.d/90-racksmith.conf')).stdout).toContain(
      `root soft nofile ${want}\nroot hard nofile ${want}\n`,
    );
    expect((await tb.sshExec('tb8', 'ulimit -Sn; ulimit -Hn')).stdout.split('\n').slice(0, 2)).toEqual([String(want), String(want)]);
  });

  it('a value changed by hand on one host: the next run changes exactly that key there', async () => {
    // from converged hosts (as the test before leaves them; run alone, made so here)
    expect((await provision([PB, '-i', inventory()])).code).toBe(0);
    await tb.hostExec('tb9', 'echo 0 > /proc/sys/net/ipv4/tcp_tw_reuse');
    const check = await provision([PB, '-i', inventory(), '--check', '--json']);
    expect(check.code).toBe(2);
    const changed = check.events.filter((e) => e.type === 'resource' && e.status === 'changed');
    expect(changed.map((e) => [e.host, e.id])).toEqual([['tb9', 'sysctl:/etc/sysctl.d/99-zz-racksmith-required.conf']]);
    expect(changed[0].changes.map((c: { summary: string }) => c.summary)).toEqual(['net.ipv4.tcp_tw_reuse: 0 → 1']);
    const fix = await provision([PB, '-i', inventory(), '--json']);
    expect(fix.code).toBe(0);
    expect(changedResources(fix)).toEqual([{ host: 'tb9', id: 'sysctl:/etc/sysctl.d/99-zz-racksmith-required.conf' }]);
    expect(await live('tb9', 'net.ipv4.tcp_tw_reuse')).toBe('1');
  });

  it('a key the host does not have fails its file (nothing of it written), the other resources still apply', async (ctx) => {
    await tb.reset(['tb9']);
    // (which keys a child network namespace lacks is the kernel's choice: read first)
    if ((await tb.hostExec('tb9', 'test -e /proc/sys/net/core/netdev_max_backlog')).code === 0)
      ctx.skip('net.core.netdev_max_backlog exists in a bed host on this kernel: no key of the profiles is missing there');
    const run = await provision([PB, '-i', inventory({ sysctl_overrides: {} }), '-l', 'tb9', '--json']);
    expect(run.code).toBe(1);
    const failed = run.events.filter((e) => e.type === 'resource' && e.status === 'failed');
    expect(failed.map((e) => e.id)).toEqual(['sysctl:/etc/sysctl.d/99-zz-racksmith-network.conf']);
    expect(failed[0].error).toMatch(/^refused: the host has no sysctl net\.core\.netdev_max_backlog: /);
    expect(await live('tb9', 'net.core.somaxconn')).toBe('65535');
  });

  it('a module that cannot load is a clear failure', async () => {
    const run = await provision([PB, '-i', inventory({ kernel_modules: ['racksmith_no_such_module'] }), '-l', 'tb8', '--json']);
    expect(run.code).toBe(1);
    const failed = run.events.find((e) => e.type === 'resource' && e.status === 'failed');
    expect(failed?.id).toBe('kmod:/etc/modules-load.d/racksmith.conf');
    expect(failed?.error).toMatch(/modprobe racksmith_no_such_module.*not found/s);
  });

  it("a file read after racksmith's at boot that overrides a managed key fails, naming file:line and both values; --check too", async () => {
    await tb.reset(['tb9']);
    await tb.hostExec('tb9', "printf '# local\\nnet.core.somaxconn = 1024\\n' > /etc/sysctl.d/99-zzz.conf");
    for (const mode of [['--check'], []]) {
      const run = await provision([PB, '-i', inventory(), '-l', 'tb9', '--json', ...mode]);
      expect(run.code).toBe(1);
      const failed = run.events.filter((e) => e.type === 'resource' && e.status === 'failed');
      expect(failed.map((e) => [e.id, e.error])).toEqual([
        [
          'sysctl-effect:network',
          'refused: net.core.somaxconn = 65535 (/etc/sysctl.d/99-zz-racksmith-required.conf) is overridden at boot by /etc/sysctl.d/99-zzz.conf:2 (net.core.somaxconn = 1024)',
        ],
      ]);
    }
    // the live value racksmith set is what a boot (the loader) would undo
    await tb.reboot(['tb9']);
    expect(await live('tb9', 'net.core.somaxconn')).toBe('1024');
  });

  it("takes over ais-k8s's 99-ais-*.conf when told, and removes its own earlier 90-racksmith-* names", async () => {
    await tb.reset(['tb9']);
    await tb.hostExec(
      'tb9',
      "printf 'net.core.somaxconn = 65535\\nnet.ipv4.tcp_tw_reuse = 1\\n' > /etc/sysctl.d/99-ais-required.conf; printf 'net.core.somaxconn = 65535\\n' > /etc/sysctl.d/90-racksmith-required.conf",
    );
    const inv = inventory({ sysctl_take_over: ['/etc/sysctl.d/99-ais-*.conf'] });
    const check = await provision([PB, '-i', inv, '-l', 'tb9', '--check']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain('take over /etc/sysctl.d/99-ais-required.conf: moved to 99-ais-required.conf.racksmith-taken-over');
    expect(check.stderr).toContain("remove /etc/sysctl.d/90-racksmith-required.conf (racksmith's earlier name for its drop-in)");
    const run = await provision([PB, '-i', inv, '-l', 'tb9']);
    expect(run.code, run.stderr).toBe(0);
    expect((await tb.hostExec('tb9', 'ls /etc/sysctl.d')).stdout.split('\n').filter((l) => /racksmith|ais/.test(l))).toEqual([
      '99-ais-required.conf.racksmith-taken-over',
      '99-zz-racksmith-network.conf',
      '99-zz-racksmith-required.conf',
      '99-zz-racksmith-vm.conf',
    ]);
    const again = await provision([PB, '-i', inv, '-l', 'tb9', '--json']);
    expect(recaps(again).tb9).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it('an earlier name is removed only once its replacement is written: /etc/sysctl.d full, the old file stays, the run fails', async () => {
    await tb.reset(['tb9']);
    // a one-page file system over /etc/sysctl.d holding racksmith's earlier-named drop-in: full
    await tb.hostExec(
      'tb9',
      "mount -t tmpfs -o size=4k racksmith-test-full /etc/sysctl.d && printf 'net.core.somaxconn = 65535\\n' > /etc/sysctl.d/90-racksmith-required.conf",
    );
    try {
      const run = await provision([PB, '-i', inventory(), '-l', 'tb9', '--json']);
      expect(run.code, run.stderr).toBe(1);
      const status = (id: string) => run.events.find((e) => e.type === 'resource' && e.id === id);
      expect(status('sysctl:/etc/sysctl.d/99-zz-racksmith-required.conf')).toMatchObject({
        status: 'failed',
        // (dash's printf says "I/O error" for ENOSPC)
        error: expect.stringMatching(/^step "write \/etc\/sysctl.d\/99-zz-racksmith-required.conf" exit 1: /),
      });
      expect(status('sysctl-effect:network')).toMatchObject({ status: 'skipped' });
      expect((await tb.hostExec('tb9', 'cat /etc/sysctl.d/90-racksmith-required.conf')).stdout).toBe('net.core.somaxconn = 65535\n');
    } finally {
      await tb.hostExec('tb9', 'umount /etc/sysctl.d');
    }
    // with room (the host's own /etc/sysctl.d again): the replacement is written, then the earlier name goes
    await tb.hostExec('tb9', "printf 'net.core.somaxconn = 65535\\n' > /etc/sysctl.d/90-racksmith-required.conf");
    const run = await provision([PB, '-i', inventory(), '-l', 'tb9', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const files = (await tb.hostExec('tb9', 'ls /etc/sysctl.d')).stdout.split('\n');
    expect(files).toContain('99-zz-racksmith-required.conf');
    expect(files).not.toContain('90-racksmith-required.conf');
  });

  it('limits for RDMA and GPU jobs: memlock, stack, nproc unlimited for PAM, systemd and containerd; its restart reported', async () => {
    await tb.reset(['tb9']);
    await tb.hostExec('tb9', ': > /usr/bin/containerd'); // containerd "installed": its drop-in applies
    const inv = inventory({ job_limits: true, sysctl_profiles: ['required', 'network', 'vm', 'jobs'] });
    const run = await provision([PB, '-i', inv, '-l', 'tb9', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(await tb.hostExec('tb9', 'cat /etc/security/limits.d/90-racksmith.conf').then((r) => r.stdout)).toContain(
      '* soft memlock unlimited\n* hard memlock unlimited\n* soft stack unlimited',
    );
    expect((await tb.hostExec('tb9', 'cat /etc/systemd/system.conf.d/90-racksmith-nofile.conf')).stdout).toContain(
      'DefaultLimitMEMLOCK=infinity\nDefaultLimitSTACK=infinity\nDefaultLimitNPROC=infinity\n',
    );
    expect((await tb.hostExec('tb9', 'cat /etc/systemd/system/containerd.service.d/90-racksmith-nofile.conf')).stdout).toBe(
      '# Managed by racksmith: the open-file limit that containers (and pods) inherit.\n[Service]\nLimitNOFILE=65536\nLimitMEMLOCK=infinity\nLimitSTACK=infinity\nLimitNPROC=infinity\n',
    );
    expect(await live('tb9', 'vm.max_map_count')).toBe('655300');
    expect(run.events.find((e) => e.type === 'resource' && e.id === 'restart:containerd')).toMatchObject({
      status: 'skipped',
      error: 'not restarted: no systemd (limits:/etc/systemd/system/containerd.service.d/90-racksmith-nofile.conf changed)',
    });
    // a new login gets the unlimited stack (memlock unlimited is above the bed's hard ceiling: pam_limits
    // applies nothing of that line, see test/testbed/README.md)
    expect((await tb.sshExec('tb9', 'ulimit -s')).stdout.trim()).toBe('unlimited');
    const again = await provision([PB, '-i', inv, '-l', 'tb9', '--json']);
    expect(recaps(again).tb9).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it.each([
    ['a non-integer value', { sysctl_overrides: { 'net.core.somaxconn': 'lots' } }, /sysctl_overrides/],
    ['a key outside the profiles', { sysctl_overrides: { 'net.core.somaxcon': 1 } }, /somaxcon' is not in the enabled profiles/],
    ['a malformed extra key', { sysctl_extra: { 'net core': 1 } }, /invalid name 'net core'/],
    ['an unknown profile', { sysctl_profiles: ['required', 'turbo'] }, /sysctl_profiles/],
  ])('%s in the inventory → exit 3 naming file:line, before any host is touched', async (_, vars, msg) => {
    await tb.reset(['tb9']);
    const inv = inventory(vars);
    const run = await provision([PB, '-i', inv, '-l', 'tb9']);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(msg);
    expect(run.stderr).toContain(`${inv}:`);
    expect((await tb.hostExec('tb9', 'ls /etc/sysctl.d/')).stdout).not.toMatch(/racksmith/);
  });
});
