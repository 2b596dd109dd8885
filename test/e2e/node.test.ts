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

    const second = await provision([PB, '-i', inventory(), '--json']);
    expect(second.code, second.stderr).toBe(0);
    for (const h of HOSTS) expect(recaps(second)[h]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
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
