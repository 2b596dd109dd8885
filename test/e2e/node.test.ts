// playbooks/node.ts on the test bed: each family applied, re-run for 0 changes, and --check that
// changes nothing. Each test resets the hosts it uses.
import { describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory, type CliRun } from './helpers.ts';
import { localAptRepo } from './local-repo.ts';
import { channelsUnsettable } from './nic-channels.ts';

const PB = 'playbooks/node.ts';

// A kubelet config as kubeadm writes it (lists not indented under their key).
const KUBEADM = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
`;

const put = (host: string, path: string, content: string) =>
  tb.hostExec(host, `mkdir -p "$(dirname ${path})" && printf '%s' '${content.replace(/'/g, `'\\''`)}' > ${path}`);
const cat = async (host: string, path: string) => (await tb.hostExec(host, `cat ${path}`)).stdout;

describe('kubelet allowedUnsafeSysctls', () => {
  const HOSTS = ['tb1', 'tb2'];
  const CONF = '/var/lib/kubelet/config.yaml';
  // AIS nodes of the cluster: net.* by default
  const inventory = () => writeInventory({ hosts: HOSTS, groups: { storage: { hosts: HOSTS }, kube_node: { hosts: HOSTS } } });

  it('merged into the kubeadm config with every other key byte-identical; re-run 0 changes; --check changes nothing', async () => {
    await tb.reset(HOSTS);
    for (const h of HOSTS) await put(h, CONF, KUBEADM);
    await put('tb2', CONF, `${KUBEADM}allowedUnsafeSysctls:\n- kernel.shm*\n`);

    const check = await provision([PB, '-i', inventory(), '--check', '--diff']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain('allowedUnsafeSysctls: [] → [net.*]');
    expect(check.stderr).toContain('allowedUnsafeSysctls: [kernel.shm*] → [kernel.shm*, net.*]');
    expect(await cat('tb1', CONF)).toBe(KUBEADM);

    const first = await provision([PB, '-i', inventory(), '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(await cat('tb1', CONF)).toBe(`${KUBEADM}allowedUnsafeSysctls:\n- net.*\n`);
    expect(await cat('tb2', CONF)).toBe(`${KUBEADM}allowedUnsafeSysctls:\n- kernel.shm*\n- net.*\n`);

    // the bed runs no systemd: the restart is reported, not silently skipped
    const handler = first.events.find((e) => e.type === 'resource' && e.host === 'tb1' && e.id === 'restart:kubelet');
    expect(handler).toMatchObject({ status: 'skipped', error: `not restarted: no systemd (kubelet-config:${CONF} changed)` });

    const second = await provision([PB, '-i', inventory(), '--json']);
    expect(second.code, second.stderr).toBe(0);
    for (const h of HOSTS) expect(recaps(second)[h]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it('with systemd (a stand-in systemctl and curl): restarted once, /healthz awaited; --check says "would restart kubelet"', async () => {
    await tb.reset(['tb1']);
    await put('tb1', CONF, KUBEADM);
    // Test doubles: there is no systemd in the bed. systemctl records what it was asked; curl
    // answers /healthz. Both in /usr/local/bin, first on PATH.
    await tb.hostExec(
      'tb1',
      `mkdir -p /run/systemd/system /usr/local/bin
printf '#!/bin/sh\necho "$*" >> /var/log/systemctl-double.log\n' > /usr/local/bin/systemctl
printf '#!/bin/sh\necho "$*" >> /var/log/curl-double.log\n' > /usr/local/bin/curl
chmod +x /usr/local/bin/systemctl /usr/local/bin/curl`,
    );
    const inv = writeInventory({ hosts: ['tb1'], groups: { storage: { hosts: ['tb1'] }, kube_node: { hosts: ['tb1'] } } });
    const check = await provision([PB, '-i', inv, '--check']);
    expect(check.code).toBe(2);
    expect(check.stderr).toContain(`would restart kubelet (kubelet-config:${CONF} changed)`);
    expect((await tb.hostExec('tb1', 'cat /var/log/systemctl-double.log')).code).not.toBe(0); // never called

    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.events.find((e) => e.id === 'restart:kubelet')).toMatchObject({ status: 'changed' });
    expect(await cat('tb1', '/var/log/systemctl-double.log')).toBe('restart kubelet\nis-active --quiet kubelet\n');
    expect(await cat('tb1', '/var/log/curl-double.log')).toContain('http://127.0.0.1:10248/healthz');

    const again = await provision([PB, '-i', inv, '--json']);
    expect(recaps(again).tb1).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    expect(await cat('tb1', '/var/log/systemctl-double.log')).toBe('restart kubelet\nis-active --quiet kubelet\n');
  });

  it('a host without a kubelet config fails with a clear message; the path is configurable', async () => {
    await tb.reset(['tb1']);
    const missing = await provision([PB, '-i', inventory(), '-l', 'tb1', '--json']);
    expect(missing.code).toBe(1);
    const failed = missing.events.find((e) => e.type === 'resource' && e.status === 'failed');
    expect(failed?.error).toMatch(/\/var\/lib\/kubelet\/config\.yaml does not exist: is the kubelet installed/);
    expect(failed?.error).toContain("if the kubelet's config is elsewhere, set kubelet_config_path");

    const alt = '/etc/kubernetes/kubelet-config.yaml';
    await put('tb1', alt, KUBEADM);
    const inv = writeInventory({
      hosts: ['tb1'],
      vars: { kubelet_config_path: alt, kubelet_allowed_unsafe_sysctls: ['net.core.somaxconn'] },
    });
    const run = await provision([PB, '-i', inv]);
    expect(run.code, run.stderr).toBe(0);
    expect(await cat('tb1', alt)).toBe(`${KUBEADM}allowedUnsafeSysctls:\n- net.core.somaxconn\n`);
  });
});

const event = (run: CliRun, host: string, id: string) => run.events.find((e) => e.type === 'resource' && e.host === host && e.id === id);

describe('NIC queues (ethtool), ethtool from the local repository', () => {
  const H = 'tb4';
  const inv = () =>
    writeInventory({
      hosts: [H],
      vars: { package_mirror: { apt: localAptRepo(['ethtool']) }, nic_queues: [{ name: 'eth0', channels: 2, rings: { rx: 256 } }] },
    });
  const channels = async () =>
    (await tb.hostExec(H, "ethtool -l eth0 | sed -n '/Current/,$p' | grep -E '^(RX|TX):'")).stdout.replace(/\s+/g, ' ').trim();

  it('channels applied on veth live and at boot (udev rule), idempotent; rings reported unsupported by veth; --check changes nothing', async (ctx) => {
    await tb.reset([H]);
    const check = await provision([PB, '-i', inv(), '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(event(check, H, 'packages:node')?.changes[0].summary).toMatch(/^install ethtool \(apt from /);
    expect(event(check, H, 'nic-channels:eth0')).toMatchObject({ status: 'changed', pending: 'packages:node' });
    expect((await tb.hostExec(H, 'command -v ethtool')).code).not.toBe(0);

    const first = await provision([PB, '-i', inv(), '--json']);
    const unsettable = await channelsUnsettable(H, 'eth0', 2); // ethtool is there now
    if (unsettable) ctx.skip(unsettable);
    expect(first.code, first.stderr).toBe(0);
    expect(event(first, H, 'nic-channels:eth0')).toMatchObject({
      status: 'changed',
      changes: [
        { summary: 'create /etc/udev/rules.d/60-racksmith-nic-channels-eth0.rules' },
        { summary: 'eth0 channels: rx 1 → 2, tx 1 → 2' },
      ],
    });
    expect(event(first, H, 'nic-rings:eth0')).toMatchObject({ status: 'skipped', error: 'rings: not supported by driver veth (eth0)' });
    expect(await channels()).toBe('RX: 2 TX: 2');
    expect(await cat(H, '/etc/udev/rules.d/60-racksmith-nic-channels-eth0.rules')).toContain(
      'ACTION=="add", SUBSYSTEM=="net", KERNEL=="eth0", RUN+="/usr/sbin/ethtool -L $name rx 2 tx 2"',
    );

    const second = await provision([PB, '-i', inv(), '--json']);
    expect(recaps(second)[H]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    expect(event(second, H, 'nic-rings:eth0')).toMatchObject({ status: 'skipped', error: 'rings: not supported by driver veth (eth0)' });

    await tb.hostExec(H, 'ethtool -L eth0 rx 1 tx 1');
    const drift = await provision([PB, '-i', inv(), '--check', '--json']);
    expect(drift.code).toBe(2);
    expect(event(drift, H, 'nic-channels:eth0')?.changes.map((c: { summary: string }) => c.summary)).toEqual([
      'eth0 channels: rx 1 → 2, tx 1 → 2',
    ]);
    expect(await channels()).toBe('RX: 1 TX: 1');
  });
});

describe('MTU per interface, persisted through the detected network stack', () => {
  const H = 'tb5';
  const inv = () => writeInventory({ hosts: [H], vars: { nic_mtu: [{ name: 'eth0', mtu: 9000 }] } });
  const liveMtu = async () => (await cat(H, '/sys/class/net/eth0/mtu')).trim();
  const IFACES = 'auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet manual\n';

  it('ifupdown: 9000 live and in the eth0 stanza; re-run 0 changes; --check changes nothing', async () => {
    await tb.reset([H]);
    await put(H, '/etc/network/interfaces', IFACES);
    const check = await provision([PB, '-i', inv(), '--check']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain('eth0 mtu: 1500 → 9000');
    expect(check.stderr).toContain('persist mtu 9000 for eth0 in /etc/network/interfaces (ifupdown)');
    expect(await liveMtu()).toBe('1500');
    expect(await cat(H, '/etc/network/interfaces')).toBe(IFACES);

    const run = await provision([PB, '-i', inv()]);
    expect(run.code, run.stderr).toBe(0);
    expect(await liveMtu()).toBe('9000');
    expect(await cat(H, '/etc/network/interfaces')).toBe(
      'auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet manual\n    post-up ip link set dev eth0 mtu 9000 # racksmith\n',
    );
    const again = await provision([PB, '-i', inv(), '--json']);
    expect(recaps(again)[H]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it('systemd-networkd: a drop-in for the .network file that matches eth0', async () => {
    await tb.reset([H]);
    await put(H, '/etc/systemd/network/10-eth0.network', '[Match]\nName=eth0\n\n[Network]\nAddress=10.0.0.1/24\n');
    const run = await provision([PB, '-i', inv()]);
    expect(run.code, run.stderr).toBe(0);
    expect(await liveMtu()).toBe('9000');
    expect(await cat(H, '/etc/systemd/network/10-eth0.network.d/90-racksmith-mtu.conf')).toBe(
      '# Managed by racksmith.\n[Link]\nMTUBytes=9000\n',
    );
    const again = await provision([PB, '-i', inv(), '--json']);
    expect(recaps(again)[H]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it('no known network stack configures eth0: refused, nothing changed (not even live)', async () => {
    await tb.reset([H]);
    const run = await provision([PB, '-i', inv(), '--json']);
    expect(run.code).toBe(1);
    expect(event(run, H, 'mtu:eth0')).toMatchObject({
      status: 'failed',
      error:
        'refused: cannot persist mtu 9000 for eth0: no network stack racksmith knows configures it (netplan, NetworkManager, systemd-networkd, ifupdown)',
    });
    expect(await liveMtu()).toBe('1500');
    await tb.reset([H]); // (no host keeps the jumbo MTU after this file)
  });
});

describe('chrony from ntp_servers, and the CPU governor', () => {
  const H = 'tb6';
  const inv = (vars: Record<string, unknown>) =>
    writeInventory({ hosts: [H], vars: { package_mirror: { apt: localAptRepo(['chrony']) }, ...vars } });

  it('chrony installed from the local repository, its sources written, the restart reported (no systemd); re-run 0 changes; --check changes nothing', async () => {
    await tb.reset([H]);
    const vars = { ntp_servers: ['10.85.0.1', 'ntp.example'] };
    const check = await provision([PB, '-i', inv(vars), '--check']);
    expect(check.code, check.stderr).toBe(2);
    expect((await tb.hostExec(H, 'ls /etc/chrony')).code).not.toBe(0);
    const first = await provision([PB, '-i', inv(vars), '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(await cat(H, '/etc/chrony/sources.d/racksmith.sources')).toBe(
      '# Managed by racksmith: NTP servers (ntp_servers).\nserver 10.85.0.1 iburst\nserver ntp.example iburst\n',
    );
    expect(event(first, H, 'restart:chrony')).toMatchObject({
      status: 'skipped',
      error: 'not restarted: no systemd (chrony:/etc/chrony/sources.d/racksmith.sources changed)',
    });
    const second = await provision([PB, '-i', inv(vars), '--json']);
    expect(recaps(second)[H]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    expect(event(second, H, 'restart:chrony')).toMatchObject({ status: 'ok' });
  });

  it('ntp_pools: pool lines after the server lines; re-run 0 changes; --check of a pools-only change writes nothing', async () => {
    await tb.reset([H]);
    const vars = { ntp_servers: ['10.85.0.1'], ntp_pools: ['pool.ntp.example'] };
    const first = await provision([PB, '-i', inv(vars), '--json']);
    expect(first.code, first.stderr).toBe(0);
    const both =
      '# Managed by racksmith: NTP servers (ntp_servers) and pools (ntp_pools).\nserver 10.85.0.1 iburst\npool pool.ntp.example iburst\n';
    expect(await cat(H, '/etc/chrony/sources.d/racksmith.sources')).toBe(both);
    const second = await provision([PB, '-i', inv(vars), '--json']);
    expect(recaps(second)[H]).toMatchObject({ changed: 0, failed: 0 });
    const poolsOnly = { ntp_pools: ['0.pool.ntp.example', '1.pool.ntp.example'] };
    const check = await provision([PB, '-i', inv(poolsOnly), '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(event(check, H, 'chrony:/etc/chrony/sources.d/racksmith.sources')).toMatchObject({ status: 'changed' });
    expect(await cat(H, '/etc/chrony/sources.d/racksmith.sources')).toBe(both);
    const third = await provision([PB, '-i', inv(poolsOnly), '--json']);
    expect(third.code, third.stderr).toBe(0);
    expect(await cat(H, '/etc/chrony/sources.d/racksmith.sources')).toBe(
      '# Managed by racksmith: NTP pools (ntp_pools).\npool 0.pool.ntp.example iburst\npool 1.pool.ntp.example iburst\n',
    );
  });

  it('the governor where cpufreq does not exist: "not supported on this host", every run, nothing written', async () => {
    await tb.reset([H]);
    const run = await provision([PB, '-i', inv({ cpu_governor: 'performance' }), '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(event(run, H, 'cpu-governor')).toMatchObject({
      status: 'skipped',
      error: 'cpufreq: not supported on this host (no /sys/devices/system/cpu/cpu*/cpufreq)',
    });
    expect((await tb.hostExec(H, 'ls /etc/udev/rules.d/60-racksmith-cpufreq.rules')).code).not.toBe(0);
  });
});
