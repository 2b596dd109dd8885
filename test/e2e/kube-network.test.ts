// Issue "Kubernetes networking playbook" acceptance on the test bed.
//
// THE KUBERNETES API SERVER IN THESE TESTS IS A TEST DOUBLE (test/kube-double/, see its README),
// not a real cluster: no API server can run here. The real kubectl on tb1 (the runner's binary,
// bind-mounted at /usr/local/bin/kubectl) talks plain HTTP to the double listening on the runner
// (10.77.0.1); the test writes that kubeconfig to tb1's /etc/kubernetes/admin.conf. The double runs
// no pods or controllers: rollouts are instantly complete, MetalLB's webhook becomes ready after
// `webhookReadyAfterMs`, and this file plays the Tigera operator (it creates the TigeraStatus
// objects once an Installation appears). Host-level steps (modules, sysctls, CNI plugins, configs)
// run for real on the test-bed hosts tb1 (control plane), tb2 and tb3.
//
// The CNI plugins tarball is a small stand-in (shell scripts named like the plugins) with its own
// sha256 in the inventory; the manifests are the real upstream files from shared/fixtures/manifests.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { startKubeApiDouble, type KubeApiDouble, type KubeObject as StoredObject } from '../kube-double/server.ts';
import { kubectlFor } from '../kube-double/kubectl.ts';
import { manifestsDir } from '../kube-double/fixtures.ts';
import { parseObjects, type KubeObject } from '../../src/kube/objects.ts';
import {
  renderCalicoOperator,
  renderCalicoResources,
  renderFlannel,
  renderMetallbConfig,
  renderMetallbNative,
} from '../../src/kube/render.ts';
import { changedResources, provision, recaps, writeInventory } from './helpers.ts';

const HOSTS = ['tb1', 'tb2', 'tb3'];
const PB = 'playbooks/kube-network.ts';
const NODES = [
  { name: 'tb1', podCIDR: '10.250.0.0/24' },
  { name: 'tb2', podCIDR: '10.250.1.0/24' },
  { name: 'tb3', podCIDR: '10.250.2.0/24' },
];

let work: string;
let tarball: string;
let tarSha: string;
let double: KubeApiDouble | undefined;
/** What the hosts and the current double were converged with (a test that needs it, run alone, makes it). */
let convergedWith: 'flannel' | 'calico' | undefined;

/**
 * A small stand-in for cni-plugins-linux-<arch>-<v>.tgz: executables named like the plugins
 * (shell scripts; `elf`: a copy of the runner's x86-64 /bin/true each, a real ELF program).
 */
function makeTarball(dir: string, arch = 'amd64', elf = false): { path: string; sha: string } {
  const x = join(dir, `x-${arch}${elf ? '-elf' : ''}`);
  mkdirSync(x, { recursive: true });
  for (const n of ['bridge', 'host-local', 'loopback', 'portmap', 'tuning', 'bandwidth']) {
    if (elf) cpSync('/bin/true', join(x, n));
    else writeFileSync(join(x, n), `#!/bin/sh\necho ${n}\n`);
    chmodSync(join(x, n), 0o755);
  }
  const out = join(dir, elf ? 'elf' : '.');
  mkdirSync(out, { recursive: true });
  const path = join(out, `cni-plugins-linux-${arch}-v1.8.0.tgz`);
  execFileSync('tar', ['-czf', path, '-C', x, '.']);
  return { path, sha: execFileSync('sha256sum', [path]).toString().slice(0, 64) };
}

/** A fresh API double on the runner, its kubeconfig written to tb1's admin.conf. */
async function cluster(opts: Parameters<typeof startKubeApiDouble>[0] = {}): Promise<KubeApiDouble> {
  await double?.stop();
  convergedWith = undefined;
  double = await startKubeApiDouble({ host: tb.runnerIp, nodes: NODES, kubeadm: { podSubnet: '10.250.0.0/16' }, ...opts });
  const r = await tb.hostExec(
    'tb1',
    'mkdir -p /etc/kubernetes && cat > /etc/kubernetes/admin.conf && chmod 600 /etc/kubernetes/admin.conf',
    { input: double.kubeconfig() },
  );
  expect(r.code, r.stderr).toBe(0);
  return double;
}

const base = (extra: Record<string, unknown> = {}) => ({
  kube_pod_cidr: '10.250.0.0/16',
  kube_manifest_dir: manifestsDir(),
  cni_plugins_src: tarball,
  cni_plugins_sha256: tarSha,
  ...extra,
});

const inventory = (vars: Record<string, unknown>, hostVars?: Record<string, Record<string, unknown>>) =>
  writeInventory({
    hosts: HOSTS,
    vars,
    hostVars,
    groups: { kube_control_plane: { hosts: ['tb1'] }, kube_node: { hosts: ['tb2', 'tb3'] } },
  });

const fixture = (rel: string) => parseObjects(readFileSync(join(manifestsDir(), rel), 'utf8'));

/** Every field of `want` is in `got` with the same value (lists: same length, element-wise). */
function expectContains(got: unknown, want: unknown, path = ''): void {
  if (Array.isArray(want)) {
    expect(Array.isArray(got), `${path} is a list`).toBe(true);
    expect((got as unknown[]).length, `${path} length`).toBe(want.length);
    want.forEach((w, i) => expectContains((got as unknown[])[i], w, `${path}[${i}]`));
  } else if (want && typeof want === 'object') {
    expect(got && typeof got === 'object', `${path} is an object`).toBeTruthy();
    for (const [k, v] of Object.entries(want)) {
      if (path === '' && k === 'metadata') {
        const m = v as KubeObject['metadata'];
        for (const mk of ['name', 'namespace', 'labels', 'annotations'] as const)
          if (m[mk] !== undefined) expectContains((got as StoredObject).metadata[mk], m[mk], `metadata.${mk}`);
        continue;
      }
      if (k === 'creationTimestamp' && v === null) continue;
      expectContains((got as Record<string, unknown>)[k], v, path ? `${path}.${k}` : k);
    }
  } else {
    expect(got, path).toEqual(want);
  }
}

/** The rendered objects are stored in the double as rendered. */
function expectStored(d: KubeApiDouble, objs: KubeObject[]): void {
  for (const o of objs) {
    const got = d.get(o.kind, o.metadata.name, o.metadata.namespace);
    expect(got, `${o.kind} ${o.metadata.name} stored`).toBeDefined();
    expectContains(got, o);
  }
}

const hostFile = async (h: string, p: string) => (await tb.hostExec(h, `cat ${p}`)).stdout;
const live = async (h: string, key: string) => (await tb.hostExec(h, `cat /proc/sys/${key.replace(/\./g, '/')}`)).stdout.trim();
const failures = (run: { events: Array<Record<string, any>> }) => run.events.filter((e) => e.type === 'resource' && e.status === 'failed');
const kubeWrites = (d: KubeApiDouble) =>
  d.requests.filter((r) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method) && !r.query.includes('dryRun'));

beforeAll(async () => {
  await tb.reset(HOSTS);
  work = mkdtempSync(join(tmpdir(), 'rs-kube-e2e-'));
  ({ path: tarball, sha: tarSha } = makeTarball(work));
});

// The Kubernetes plays load br_netfilter and set its bridge-nf-call-* keys: a kernel built
// without it (the bed's has no module loading) cannot show them. Read first; a skip says so.
let noBridgeNetfilter: string | undefined;
beforeEach(async (ctx) => {
  noBridgeNetfilter ??= (await tb.hostExec(HOSTS[0], 'test -e /proc/sys/net/bridge/bridge-nf-call-iptables')).code
    ? 'this kernel has no br_netfilter (no /proc/sys/net/bridge/bridge-nf-call-iptables in a bed host): the Kubernetes plays need it'
    : '';
  if (noBridgeNetfilter) ctx.skip(noBridgeNetfilter);
});

afterAll(async () => {
  await double?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('Flannel + MetalLB', () => {
  const vars = () =>
    base({
      kube_cni: 'flannel',
      flannel_backend: 'vxlan',
      metallb_pools: [{ name: 'rack-a', addresses: ['10.77.0.200-10.77.0.220', '10.77.5.0/28'] }],
    });
  /** Hosts and cluster converged with these vars (as the first-run test leaves them). */
  const converged = async (): Promise<KubeApiDouble> => {
    if (convergedWith === 'flannel') return double!;
    const d = await cluster({ webhookReadyAfterMs: 500 });
    const run = await provision([PB, '-i', inventory(vars()), '--json']);
    expect(run.code, run.stderr).toBe(0);
    convergedWith = 'flannel';
    return d;
  };

  it('--check on fresh hosts and a fresh cluster: host diffs and the objects to create, nothing changed, exit 2', async () => {
    const d = await cluster({ webhookReadyAfterMs: 3000 });
    const run = await provision([PB, '-i', inventory(vars()), '--check', '--diff', '--json']);
    expect(run.code, run.stderr).toBe(2);
    const changed = changedResources(run);
    for (const h of HOSTS) {
      expect(changed).toContainEqual({ host: h, id: 'kmod:/etc/modules-load.d/racksmith-k8s.conf' });
      expect(changed).toContainEqual({ host: h, id: 'cni-plugins:/opt/cni/bin' });
    }
    const flannel = run.events.find((e) => e.type === 'resource' && e.id === 'kube:flannel')!;
    expect(flannel.host).toBe('tb1');
    expect(flannel.changes.map((c: { summary: string }) => c.summary)).toEqual(
      expect.arrayContaining([
        'create Namespace kube-flannel',
        'create ConfigMap kube-flannel/kube-flannel-cfg',
        'create DaemonSet kube-flannel/kube-flannel-ds',
      ]),
    );
    // MetalLB's config waits for the manifest that defines its kinds: reported, not guessed
    const cfg = run.events.find((e) => e.type === 'resource' && e.id === 'kube:metallb-config')!;
    expect(cfg.changes[0].summary).toMatch(/depends on a pending change of kube:metallb/);
    expect(run.stderr).toContain('+br_netfilter');
    // nothing was written: not on the hosts, not in the cluster
    expect((await tb.hostExec('tb2', 'ls /etc/modules-load.d /etc/sysctl.d; ls /opt/cni/bin 2>&1')).stdout).not.toMatch(/racksmith|bridge/);
    expect(kubeWrites(d)).toEqual([]);
    expect(d.get('DaemonSet', 'kube-flannel-ds', 'kube-flannel')).toBeUndefined();
  });

  it('first run converges hosts and cluster; MetalLB config only after its webhook serves; second run changes nothing', async () => {
    const d = await cluster({ webhookReadyAfterMs: 4000 });
    const t0 = Date.now();
    const first = await provision([PB, '-i', inventory(vars()), '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(Date.now() - t0).toBeGreaterThan(4000); // it waited for the webhook

    // host level, every node
    for (const h of HOSTS) {
      expect(await hostFile(h, '/etc/modules-load.d/racksmith-k8s.conf')).toMatch(/^overlay\nbr_netfilter\n$/m);
      expect(await hostFile(h, '/etc/sysctl.d/99-zz-racksmith-k8s.conf')).toContain('net.bridge.bridge-nf-call-iptables = 1');
      expect(await live(h, 'net.ipv4.ip_forward')).toBe('1');
      expect(await live(h, 'net.bridge.bridge-nf-call-iptables')).toBe('1');
      expect(await live(h, 'net.bridge.bridge-nf-call-ip6tables')).toBe('1');
      const bin = await tb.hostExec(
        h,
        'for p in bridge host-local loopback portmap; do /opt/cni/bin/$p; done; stat -c %a /opt/cni/bin/portmap; cat /opt/cni/bin/.racksmith-cni-plugins',
      );
      expect(bin.stdout).toContain('bridge\nhost-local\nloopback\nportmap\n755\n');
      expect(bin.stdout).toContain(`sha256 ${tarSha}`);
      expect((await tb.hostExec(h, 'stat -c %a /etc/cni/net.d')).stdout.trim()).toBe('755');
    }
    // NetworkManager drop-in is for Calico only
    expect((await tb.hostExec('tb2', 'ls /etc/NetworkManager/conf.d 2>&1')).stdout).not.toContain('calico.conf');

    // cluster level: the stored objects are the rendered manifests, with the inventory's CIDR
    const flannel = renderFlannel(fixture('flannel-v0.28.9/kube-flannel.yml'), { network: '10.250.0.0/16', backend: 'vxlan' });
    expectStored(d, flannel);
    const netConf = JSON.parse(
      String((d.get('ConfigMap', 'kube-flannel-cfg', 'kube-flannel')!.data as Record<string, string>)['net-conf.json']),
    );
    expect(netConf).toMatchObject({ Network: '10.250.0.0/16', Backend: { Type: 'vxlan' } });
    expectStored(d, renderMetallbNative(fixture('metallb-v0.16.1/metallb-native.yaml'), {}));
    const config = renderMetallbConfig({ mode: 'l2', pools: [{ name: 'rack-a', addresses: ['10.77.0.200-10.77.0.220', '10.77.5.0/28'] }] });
    expectStored(d, config);
    expect(d.get('IPAddressPool', 'rack-a', 'metallb-system')!.spec).toMatchObject({
      addresses: ['10.77.0.200-10.77.0.220', '10.77.5.0/28'],
    });
    expect(d.get('L2Advertisement', 'racksmith-l2', 'metallb-system')!.spec).toEqual({ ipAddressPools: ['rack-a'] });
    // every object went through racksmith's server-side apply
    const ds = d.get('DaemonSet', 'kube-flannel-ds', 'kube-flannel')!;
    expect(ds.metadata.managedFields?.map((m) => [m.manager, m.operation])).toContainEqual(['racksmith', 'Apply']);

    // the MetalLB config was written only once the webhook served: after its CA bundle and at
    // least ~4 s after the webhook configuration was created
    const vwc = d.get('ValidatingWebhookConfiguration', 'metallb-webhook-configuration')!;
    expect((vwc.webhooks as Array<{ clientConfig: { caBundle?: string } }>).every((w) => w.clientConfig.caBundle)).toBe(true);
    const pool = d.get('IPAddressPool', 'rack-a', 'metallb-system')!;
    const secs = (o: StoredObject) => Date.parse(o.metadata.creationTimestamp!) / 1000;
    expect(secs(pool) - secs(vwc)).toBeGreaterThanOrEqual(3);
    // the gate probed the real path: a server-side dry run of the pools was accepted first
    expect(d.requests.some((r) => r.method === 'PATCH' && r.path.includes('/ipaddresspools/') && r.query.includes('dryRun=All'))).toBe(
      true,
    );

    // second run: nothing to do on the hosts or the cluster; one exec per host per play
    const writes = kubeWrites(d).length;
    const second = await provision([PB, '-i', inventory(vars()), '--json']);
    expect(second.code, second.stderr).toBe(0);
    expect(changedResources(second)).toEqual([]);
    // one exec for both plays: the node play's exec also probed the cluster play (nothing changed since)
    expect(recaps(second).tb1).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    expect(recaps(second).tb2).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    expect(recaps(second).tb3).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    expect(kubeWrites(d).length).toBe(writes);
    convergedWith = 'flannel';
  });

  // MetalLB's cert-rotator (simulated by the double) fills the webhook Secret the manifest ships
  // empty, and the caBundles, when its controller starts. Here it writes exactly between
  // kube:metallb's apply and its verify, after the verify read the Secret and before its dry run:
  // the moment of the flake once seen under load ("still differs after apply: update Secret"),
  // placed by an event of the double (its next request), not a timer.
  it("MetalLB's cert-rotator writing inside the verify of racksmith's apply: converged, the certificate kept, the re-run changes nothing", async () => {
    const d = await cluster({});
    const secret = '/namespaces/metallb-system/secrets/metallb-webhook-cert';
    const patchOf = (dryRun: boolean) => (q: { method: string; path: string; query: string }) =>
      q.method === 'PATCH' && q.path.endsWith(secret) && q.query.includes('dryRun') === dryRun;
    let wrote = false;
    d.beforeRequest(patchOf(false), () =>
      d.beforeRequest(patchOf(true), () => {
        d.setWebhookReady(true);
        wrote = true;
      }),
    );
    const inv = inventory({ ...vars(), kube_wait_timeout: 30 });
    const first = await provision([PB, '-i', inv, '--json']);
    expect(failures(first)).toEqual([]);
    expect(first.code, first.stderr).toBe(0);
    expect(wrote).toBe(true); // the write happened where this test put it
    const cert = d.get('Secret', 'metallb-webhook-cert', 'metallb-system')!.data as Record<string, string>;
    expect(Object.keys(cert).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    expect(d.get('IPAddressPool', 'rack-a', 'metallb-system')).toBeDefined();

    const second = await provision([PB, '-i', inv, '--json']);
    expect(second.code, second.stderr).toBe(0);
    expect(changedResources(second)).toEqual([]);
    expect(d.get('Secret', 'metallb-webhook-cert', 'metallb-system')!.data).toEqual(cert);
    convergedWith = 'flannel';
  });

  it('drift by hand in the cluster is shown as a diff in --check and restored by the next run', async () => {
    const d = await converged();
    const k = kubectlFor(d.kubeconfig());
    try {
      const r = await k.run([
        '-n',
        'metallb-system',
        'patch',
        'ipaddresspool',
        'rack-a',
        '--type=merge',
        '-p',
        '{"spec":{"addresses":["10.77.0.200-10.77.0.201"]}}',
      ]);
      expect(r.code, r.stderr).toBe(0);
    } finally {
      k.cleanup();
    }
    const check = await provision([PB, '-i', inventory(vars()), '--check', '--diff', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(changedResources(check)).toEqual([{ host: 'tb1', id: 'kube:metallb-config' }]);
    const ev = check.events.find((e) => e.type === 'resource' && e.id === 'kube:metallb-config')!;
    expect(ev.changes[0].summary).toBe('update IPAddressPool metallb-system/rack-a');
    expect(ev.changes[0].diff).toContain('+  - 10.77.5.0/28');
    const fix = await provision([PB, '-i', inventory(vars()), '--json']);
    expect(fix.code, fix.stderr).toBe(0);
    expect(changedResources(fix)).toEqual([{ host: 'tb1', id: 'kube:metallb-config' }]);
    expect(d.get('IPAddressPool', 'rack-a', 'metallb-system')!.spec).toMatchObject({
      addresses: ['10.77.0.200-10.77.0.220', '10.77.5.0/28'],
    });
  });

  it('a pod CIDR that disagrees with the cluster is refused before anything is applied', async () => {
    const d = await converged();
    const writes = kubeWrites(d).length;
    const run = await provision([PB, '-i', inventory(vars()), '-e', 'kube_pod_cidr=10.99.0.0/16', '--json']);
    expect(run.code).toBe(1);
    const f = failures(run).find((e) => e.id === 'kube:cluster-network');
    expect(f?.error).toMatch(/kube_pod_cidr 10\.99\.0\.0\/16 differs from the cluster's pod CIDR 10\.250\.0\.0\/16/);
    expect(f?.error).toMatch(/flannel runs with Network 10\.250\.0\.0\/16/);
    expect(kubeWrites(d).length).toBe(writes);
    expect(
      JSON.parse(String((d.get('ConfigMap', 'kube-flannel-cfg', 'kube-flannel')!.data as Record<string, string>)['net-conf.json'])).Network,
    ).toBe('10.250.0.0/16');
  });
});

describe('Calico + MetalLB with kube-proxy in IPVS mode', () => {
  let operator: NodeJS.Timeout | undefined;
  const vars = (extra: Record<string, unknown> = {}) =>
    base({
      kube_cni: 'calico',
      kube_pod_cidr: '10.244.0.0/16',
      kube_proxy_mode: 'ipvs',
      // the test bed's kernel has no ip_vs: load only what it has
      kube_proxy_ipvs_modules: ['nf_conntrack'],
      calico_ip_pools: [{ cidr: '10.244.0.0/17', encapsulation: 'VXLAN', block_size: 24 }],
      calico_node_address_autodetection: { cidrs: ['10.77.0.0/24'] },
      metallb_pools: [{ name: 'lb', addresses: ['10.77.0.230-10.77.0.240'] }],
      ...extra,
    });
  const calicoCluster = () =>
    cluster({
      nodes: NODES.map((n, i) => ({ ...n, podCIDR: `10.244.${i}.0/24` })),
      kubeadm: { podSubnet: '10.244.0.0/16' },
      kubeProxy: { mode: 'ipvs', strictARP: false },
      webhookReadyAfterMs: 1500,
    });

  /** Plays the Tigera operator: once the Installation exists, report the components Available. */
  function simulateOperator(d: KubeApiDouble): void {
    const k = kubectlFor(d.kubeconfig());
    let busy = false;
    let done = false;
    operator = setInterval(async () => {
      if (busy || done || !d.get('Installation', 'default')) return;
      busy = true;
      try {
        for (const name of ['calico', 'ippools', 'apiserver']) {
          await k.run(['apply', '--server-side', '--field-manager=tigera-operator', '-f', '-'], {
            input: JSON.stringify({ apiVersion: 'operator.tigera.io/v1', kind: 'TigeraStatus', metadata: { name }, spec: {} }),
          });
          const status = {
            status: {
              conditions: [
                {
                  type: 'Available',
                  status: 'True',
                  reason: 'AllObjectsAvailable',
                  message: 'All objects are available',
                  lastTransitionTime: new Date().toISOString(),
                },
              ],
            },
          };
          await k.run(['patch', 'tigerastatus', name, '--subresource=status', '--type=merge', '-p', JSON.stringify(status)]);
        }
        done = true;
      } finally {
        busy = false;
      }
    }, 300);
  }
  afterEach(() => clearInterval(operator));

  /** Hosts and cluster converged with strictARP allowed (as the first-run test leaves them). */
  const converged = async (): Promise<KubeApiDouble> => {
    if (convergedWith === 'calico') return double!;
    await tb.reset(HOSTS);
    const d = await calicoCluster();
    simulateOperator(d);
    const run = await provision([PB, '-i', inventory(vars({ metallb_allow_strict_arp: true })), '--json']);
    expect(run.code, run.stderr).toBe(0);
    convergedWith = 'calico';
    return d;
  };

  it('strictARP needed but not allowed: refused in --check, before anything is applied', async () => {
    await tb.reset(HOSTS);
    const d = await calicoCluster();
    const run = await provision([PB, '-i', inventory(vars()), '--check', '--json']);
    expect(run.code).toBe(1);
    const f = failures(run).find((e) => e.id === 'kube:kube-proxy-strict-arp');
    expect(f?.error).toMatch(/IPVS mode without ipvs\.strictARP: true.*metallb_allow_strict_arp: true/);
    expect(kubeWrites(d)).toEqual([]);
  });

  it('first run: operator, Installation from the inventory, strictARP, MetalLB; NetworkManager only where installed; second run changes nothing', async () => {
    const d = await calicoCluster();
    simulateOperator(d);
    // tb2 has NetworkManager installed (a stand-in binary), tb3 has none
    await tb.hostExec('tb2', 'printf "#!/bin/sh\\n" > /usr/sbin/NetworkManager && chmod 755 /usr/sbin/NetworkManager');
    const inv = inventory(vars({ metallb_allow_strict_arp: true }));
    const first = await provision([PB, '-i', inv, '--json']);
    expect(first.code, first.stderr).toBe(0);

    expect(await hostFile('tb1', '/etc/modules-load.d/racksmith-k8s.conf')).toContain('br_netfilter\nnf_conntrack\n');
    expect(await hostFile('tb2', '/etc/NetworkManager/conf.d/calico.conf')).toContain(
      'unmanaged-devices=interface-name:cali*;interface-name:tunl*;interface-name:vxlan.calico',
    );
    expect((await tb.hostExec('tb3', 'ls /etc/NetworkManager/conf.d/calico.conf')).code).not.toBe(0);

    // the operator's CRDs and Deployment as upstream ships them, then racksmith's Installation
    expect(d.get('CustomResourceDefinition', 'installations.operator.tigera.io')).toBeDefined();
    expectStored(d, renderCalicoOperator(fixture('calico-v3.32.1/tigera-operator.yaml'), undefined));
    const resources = renderCalicoResources({
      pools: [
        {
          name: 'default-ipv4-ippool',
          cidr: '10.244.0.0/17',
          encapsulation: 'VXLAN',
          natOutgoing: 'Enabled',
          blockSize: 24,
          nodeSelector: 'all()',
        },
      ],
      nodeAddressAutodetectionV4: { cidrs: ['10.77.0.0/24'] },
      apiServer: true,
      goldmane: false,
      whisker: false,
    });
    expectStored(d, resources);
    expect((d.get('Installation', 'default')!.spec as any).calicoNetwork.ipPools[0]).toMatchObject({
      cidr: '10.244.0.0/17',
      encapsulation: 'VXLAN',
      blockSize: 24,
      natOutgoing: 'Enabled',
    });

    // kube-proxy: strictARP set by racksmith (taking the field over from kubeadm), then restarted
    const kp = d.get('ConfigMap', 'kube-proxy', 'kube-system')!;
    expect(String((kp.data as Record<string, string>)['config.conf'])).toMatch(/\n {2}strictARP: true\n/);
    expect(String((kp.data as Record<string, string>)['config.conf'])).toMatch(/\nmode: ipvs\n/);
    expect(
      (d.get('DaemonSet', 'kube-proxy', 'kube-system')!.spec as any).template.metadata.annotations['kubectl.kubernetes.io/restartedAt'],
    ).toBeTruthy();
    expect(d.get('IPAddressPool', 'lb', 'metallb-system')!.spec).toMatchObject({ addresses: ['10.77.0.230-10.77.0.240'] });

    const second = await provision([PB, '-i', inv, '--json']);
    expect(second.code, second.stderr).toBe(0);
    expect(changedResources(second)).toEqual([]);
    expect(recaps(second).tb1).toMatchObject({ changed: 0, execs: 1 }); // both plays, one exec
    expect(recaps(second).tb2).toMatchObject({ changed: 0, execs: 1 });
    convergedWith = 'calico';
  });

  it('a Calico pool outside the cluster pod CIDR is refused with an explanation', async () => {
    const d = await converged();
    const writes = kubeWrites(d).length;
    const run = await provision([
      PB,
      '-i',
      inventory(vars({ metallb_allow_strict_arp: true, kube_pod_cidr: '10.50.0.0/16', calico_ip_pools: [{ cidr: '10.50.0.0/16' }] })),
      '--json',
    ]);
    expect(run.code).toBe(1);
    const f = failures(run).find((e) => e.id === 'kube:cluster-network');
    expect(f?.error).toMatch(
      /Calico IP pool default-ipv4-ippool \(10\.50\.0\.0\/16\) is outside the cluster's pod network 10\.244\.0\.0\/16/,
    );
    expect(f?.error).toMatch(/not within the platform's configured pod network/);
    // nothing applied: the Installation keeps its pool
    expect(kubeWrites(d).length).toBe(writes);
    expect((d.get('Installation', 'default')!.spec as any).calicoNetwork.ipPools[0].cidr).toBe('10.244.0.0/17');
  });

  it("calico-node's install-cni copying its own plugins over the tarball's: the next run keeps them and changes nothing; a missing one is put back", async () => {
    await converged();
    // a test double of calico-node's init container (UPDATE_CNI_BINARIES defaults to true): its
    // builds of the upstream plugins replace the tarball's, atomically, at every start
    const calicoInstallCni =
      'for p in bandwidth host-local loopback portmap tuning; do printf "#!/bin/sh\\necho calico-%s\\n" $p > /opt/cni/bin/.$p.tmp && chmod 755 /opt/cni/bin/.$p.tmp && mv /opt/cni/bin/.$p.tmp /opt/cni/bin/$p; done';
    expect((await tb.hostExec('tb2', calicoInstallCni)).code).toBe(0);
    const inv = inventory(vars({ metallb_allow_strict_arp: true }));
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code, check.stderr).toBe(0);
    const rerun = await provision([PB, '-i', inv, '--json']);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(changedResources(rerun)).toEqual([]);
    expect((await tb.hostExec('tb2', '/opt/cni/bin/host-local; /opt/cni/bin/bridge')).stdout).toBe('calico-host-local\nbridge\n');

    // a plugin gone is still drift: put back from the tarball, Calico's others left as they are
    await tb.hostExec('tb2', 'rm /opt/cni/bin/portmap');
    const fix = await provision([PB, '-i', inv, '--json']);
    expect(fix.code, fix.stderr).toBe(0);
    expect(changedResources(fix)).toEqual([{ host: 'tb2', id: 'cni-plugins:/opt/cni/bin' }]);
    const change = fix.events.find((e) => e.type === 'resource' && e.host === 'tb2' && e.id === 'cni-plugins:/opt/cni/bin')!;
    expect(change.changes[0].summary).toBe(
      "reinstall CNI plugins v1.8.0 in /opt/cni/bin: portmap missing; leaves bandwidth, host-local, loopback, tuning as they are (calico's DaemonSet installs its own builds of them)",
    );
    expect((await tb.hostExec('tb2', 'for p in portmap host-local tuning; do /opt/cni/bin/$p; done')).stdout).toBe(
      'portmap\ncalico-host-local\ncalico-tuning\n',
    );
    const again = await provision([PB, '-i', inv, '--json']);
    expect(changedResources(again)).toEqual([]);
  }, 240_000); // four runs, the first a full converge when this test runs alone

  it("another CNI's config in /etc/cni/net.d is refused on that node, or moved away when allowed", async () => {
    await converged();
    await tb.hostExec('tb3', 'printf "{}\\n" > /etc/cni/net.d/10-flannel.conflist');
    const inv = (extra: Record<string, unknown>) => inventory(vars({ metallb_allow_strict_arp: true, ...extra }));
    const run = await provision([PB, '-i', inv({}), '--json']);
    expect(run.code).toBe(1);
    expect(failures(run).map((e) => [e.host, e.id])).toEqual([['tb3', 'cni-conf:/etc/cni/net.d']]);
    expect(failures(run)[0].error).toMatch(
      /stale CNI config in \/etc\/cni\/net\.d: \/etc\/cni\/net\.d\/10-flannel\.conflist \(flannel\).*lexicographically first/,
    );
    const fix = await provision([PB, '-i', inv({ cni_remove_stale_conf: true }), '--json']);
    expect(fix.code, fix.stderr).toBe(0);
    expect(changedResources(fix)).toEqual([{ host: 'tb3', id: 'cni-conf:/etc/cni/net.d' }]);
    expect((await tb.hostExec('tb3', 'ls /etc/cni/net.d /etc/cni/net.d.racksmith-stale')).stdout).toMatch(
      /net\.d:\n\n.*stale:\n10-flannel\.conflist/s,
    );
  }, 240_000); // three runs, the first a full converge when this test runs alone
});

describe('safety: pinned manifests and input validation', () => {
  it('a manifest with one byte changed is refused on every host: nothing applied, exit 1', async () => {
    await tb.reset(HOSTS);
    const d = await cluster();
    const mirror = join(work, 'mirror');
    cpSync(manifestsDir(), mirror, { recursive: true });
    const f = join(mirror, 'metallb-v0.16.1', 'metallb-native.yaml');
    chmodSync(f, 0o644);
    const bytes = readFileSync(f);
    bytes[bytes.indexOf('v0.16.1')] = 'V'.charCodeAt(0); // one byte
    writeFileSync(f, bytes);
    const run = await provision([
      PB,
      '-i',
      inventory(base({ kube_cni: 'flannel', kube_manifest_dir: mirror, metallb_pools: [{ name: 'a', addresses: ['10.77.0.200/30'] }] })),
      '--json',
    ]);
    expect(run.code).toBe(1);
    const refused = failures(run);
    expect(refused.map((e) => e.id)).toEqual(['kube-artifacts', 'kube-artifacts', 'kube-artifacts', 'kube-artifacts']);
    expect(refused[0].error).toMatch(
      /metallb v0\.16\.1 metallb-native\.yaml: sha256 mismatch .* pinned bf25feebb7582ca7df845efd52ffbc2960d6cbf4cfc972f47fded9f788b67f0b/,
    );
    expect(run.events.filter((e) => e.type === 'resource' && e.status === 'changed')).toEqual([]);
    expect(kubeWrites(d)).toEqual([]);
    expect((await tb.hostExec('tb2', 'ls /etc/modules-load.d /etc/sysctl.d /opt/cni 2>&1')).stdout).not.toMatch(/racksmith|bin/);
  });

  it.each([
    [
      'an invalid MetalLB pool CIDR',
      { metallb_pools: [{ name: 'a', addresses: ['10.77.0.300/24'] }] },
      /metallb_pools\[0\]\.addresses\[0\]: '10\.77\.0\.300\/24' is not a valid CIDR/,
    ],
    [
      'a MetalLB range backwards',
      { metallb_pools: [{ name: 'a', addresses: ['10.77.0.250-10.77.0.200'] }] },
      /the first address is after the last/,
    ],
    [
      'a Calico pool outside kube_pod_cidr',
      { kube_cni: 'calico', calico_ip_pools: [{ cidr: '10.1.0.0/16' }] },
      /calico_ip_pools\[0\]\.cidr: 10\.1\.0\.0\/16 is outside kube_pod_cidr 10\.250\.0\.0\/16/,
    ],
    [
      'an encapsulation the Calico CRD does not know',
      { kube_cni: 'calico', calico_ip_pools: [{ cidr: '10.250.0.0/16', encapsulation: 'GRE' }] },
      /encapsulation must be one of: IPIPCrossSubnet, IPIP, VXLAN, VXLANCrossSubnet, None/,
    ],
    [
      'a pod CIDR with host bits',
      { kube_pod_cidr: '10.250.0.1/16' },
      /kube_pod_cidr: '10\.250\.0\.1\/16' is not a CIDR with its host bits zero/,
    ],
  ])('%s in the inventory → exit 3 naming file:line, before any host is touched', async (_, extra, msg) => {
    await tb.reset(['tb2']); // whatever an earlier test left there, this one is to see nothing written
    const d = double ?? (await cluster());
    const before = d.requests.length;
    const inv = inventory(base({ kube_cni: 'flannel', ...extra }));
    const run = await provision([PB, '-i', inv]);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(msg);
    expect(run.stderr).toContain(`${inv}:`);
    expect(d.requests.length).toBe(before);
    expect((await tb.hostExec('tb2', 'ls /etc/modules-load.d /opt 2>&1')).stdout).not.toMatch(/racksmith|cni/);
  });
});

describe("CNI plugins of the host's architecture", () => {
  it('an aarch64 host: the amd64 tarball refused before anything is written, the arm64 one installed, an arm64-named tarball of x86-64 programs refused by the install', async () => {
    await tb.reset(['tb3']);
    // test double: an aarch64 machine (uname -m a wrapper earlier in PATH, /proc/sys/kernel/arch a
    // file bound over it, as jail.test.ts's; a reset host starts without either)
    const arm = await tb.hostExec(
      'tb3',
      `printf '#!/bin/sh\\n[ "$1" = -m ] && { echo aarch64; exit 0; }\\nexec /usr/bin/uname "$@"\\n' > /usr/local/bin/uname && chmod 755 /usr/local/bin/uname && { [ ! -e /proc/sys/kernel/arch ] || { echo aarch64 > /run/tb-arch && mount --bind /run/tb-arch /proc/sys/kernel/arch; }; } && uname -m`,
    );
    expect(arm.stdout, arm.stderr).toBe('aarch64\n');
    const inv = (extra: Record<string, unknown>) =>
      writeInventory({ hosts: ['tb3'], vars: base({ kube_cni: 'flannel', ...extra }), groups: { kube_node: { hosts: ['tb3'] } } });
    const cniBin = async () => (await tb.hostExec('tb3', 'ls -A /opt/cni/bin 2>/dev/null')).stdout;

    // the amd64 stand-in (base's, its name says amd64) on an aarch64 host: refused, nothing in /opt/cni/bin
    for (const mode of [['--check'], []]) {
      const amd = await provision([PB, '-i', inv({}), '--json', ...mode]);
      expect(amd.code, amd.stderr).toBe(1);
      expect(failures(amd).map((e) => [e.id, e.error])).toEqual([
        [
          'cni-plugins:/opt/cni/bin',
          expect.stringMatching(
            /^refused: this host is aarch64 \(arm64\), the CNI plugins tarball v1\.8\.0 is for amd64: its plugins would fail every pod here with "exec format error"; nothing written\. Set cni_plugins_arch: arm64/,
          ),
        ],
      ]);
    }
    expect(await cniBin()).toBe('');

    const armTar = makeTarball(work, 'arm64');
    const ok = await provision([PB, '-i', inv({ cni_plugins_src: armTar.path, cni_plugins_sha256: armTar.sha }), '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect((await tb.hostExec('tb3', '/opt/cni/bin/portmap; grep ^sha256 /opt/cni/bin/.racksmith-cni-plugins')).stdout).toBe(
      `portmap\nsha256 ${armTar.sha}\n`,
    );

    // named and pinned arm64, holding x86-64 programs: the install refuses it, the plugins stay
    const lying = makeTarball(work, 'arm64', true);
    const bad = await provision([PB, '-i', inv({ cni_plugins_src: lying.path, cni_plugins_sha256: lying.sha }), '--json']);
    expect(bad.code, bad.stderr).toBe(1);
    expect(failures(bad)[0].error).toMatch(
      /the CNI plugins tarball's bridge is not a linux-arm64 program \(ELF machine bytes 3e00\): refusing to install it \(nothing changed\)/,
    );
    expect((await tb.hostExec('tb3', '/opt/cni/bin/portmap; grep ^sha256 /opt/cni/bin/.racksmith-cni-plugins')).stdout).toBe(
      `portmap\nsha256 ${armTar.sha}\n`,
    );
    await tb.reset(['tb3']);
  });
});

describe('CNI plugins fetched by the host', () => {
  it('from a path on the host (shared dir), checksummed there; an http URL without curl/wget is a clear refusal', async () => {
    await tb.reset(['tb3']);
    const shared = join(tb.sharedDir, `rs-kube-${process.pid}.tgz`);
    cpSync(tarball, shared);
    const inv = (src: string) =>
      writeInventory({
        hosts: ['tb3'],
        vars: base({ kube_cni: 'flannel', cni_plugins_fetch: 'host', cni_plugins_src: src, cni_plugins_arch: 'amd64' }),
        groups: { kube_node: { hosts: ['tb3'] } },
      });
    const ok = await provision([PB, '-i', inv(`file://${tb.sharedMount}/rs-kube-${process.pid}.tgz`), '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect((await tb.hostExec('tb3', '/opt/cni/bin/portmap')).stdout).toBe('portmap\n');

    await tb.hostExec('tb3', 'rm -f /opt/cni/bin/portmap');
    const curl = await provision([PB, '-i', inv(`http://${tb.runnerIp}:1/cni.tgz`), '--json']);
    expect(curl.code).toBe(1);
    expect(failures(curl)[0].error).toMatch(/neither curl nor wget on this host/);
    rmSync(shared, { force: true });
  });
});
