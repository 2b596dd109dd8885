// playbooks/node.ts on the test bed: each family applied, re-run for 0 changes, and --check that
// changes nothing. Each test resets the hosts it uses.
import { describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory } from './helpers.ts';

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
