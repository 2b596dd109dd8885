// The kube resources' shell (probe, apply, waits) run by `sh` on this machine with the real kubectl
// against the Kubernetes API double (test/kube-double/: a TEST DOUBLE, not an API server) on
// 127.0.0.1: probe → diff → apply → probe again must find nothing left to do. The e2e test runs
// the same through the CLI on the test bed; this one needs neither root nor the bed.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KUBECTL, kubectlFor } from '../../../kube-double/kubectl.ts';
import { manifest } from '../../../kube-double/fixtures.ts';
import { startKubeApiDouble, type KubeApiDouble, type RecordedRequest } from '../../../kube-double/server.ts';
import { identify, parseObjects, printObjects, refOf, splitDocuments } from '../../../../src/kube/objects.ts';
import { renderFlannel, renderMetallbConfig } from '../../../../src/kube/render.ts';
import {
  clusterGuard,
  kubeApply,
  kubectlPrelude,
  strictArp,
  waitEstablished,
  waitRollout,
  type KubeAccess,
  type ManifestDoc,
} from '../../../../src/resources/kube/kube.ts';
import type { Change, Resource } from '../../../../src/contract/resource.ts';
import { standaloneProbe } from '../../../../src/engine/probe-set.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-kube-scripts-'));
const kubeconfig = join(dir, 'kubeconfig');
const access: KubeAccess = { kubeconfig, kubectl: KUBECTL };
let d: KubeApiDouble;

function sh(script: string, setE = false): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    // on stdin, as the engine sends scripts (an argument is capped at 128 KiB)
    const child = spawn('sh', ['-s'], { env: { ...process.env, HOME: dir } });
    child.stdin.end(`{\n${setE ? 'set -e\n' : ''}${script}\n} </dev/null\n`);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', rej);
    child.on('close', (code) => res({ code: code ?? -1, stdout, stderr }));
  });
}

async function facts<F>(r: Resource<F>): Promise<F> {
  const sp = standaloneProbe(r.probe());
  const r0 = await sh(sp.script);
  const o = sp.output(r0.stdout, r0.stderr);
  return r.parse(o);
}

/** probe → diff → apply every step → probe → diff: returns the changes made; fails if any remain. */
async function converge<F>(r: Resource<F>): Promise<Change[]> {
  const f = await facts(r);
  const changes = r.diff(f);
  for (const step of changes.length ? r.apply(f, changes) : []) {
    const s = await sh(step.script, true);
    if (s.code !== 0) throw new Error(`step "${step.name}" exit ${s.code}: ${s.stderr}${s.stdout}`);
  }
  expect(r.diff(await facts(r))).toEqual([]);
  return changes;
}

const docsOf = (text: string): ManifestDoc[] => parseObjects(text).map((o) => ({ ref: refOf(o), text: printObjects([o]) }));

async function fresh(opts: Parameters<typeof startKubeApiDouble>[0] = {}): Promise<void> {
  await d?.stop();
  d = await startKubeApiDouble({ ...opts });
  writeFileSync(kubeconfig, d.kubeconfig());
}

describe.skipIf(!existsSync(KUBECTL))('kube resources against the API double with the real kubectl', { timeout: 60_000 }, () => {
  beforeAll(() => fresh());
  afterAll(async () => {
    await d?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('flannel: creations on a fresh cluster (namespace first), applied, then converged', async () => {
    const objs = renderFlannel(parseObjects(readFileSync(manifest('flannel-v0.28.9/kube-flannel.yml'), 'utf8')), {
      network: '10.244.0.0/16',
      backend: 'vxlan',
    });
    const r = kubeApply({
      name: 'flannel',
      access,
      docs: objs.map((o) => ({ ref: refOf(o), text: printObjects([o]) })),
      waits: [waitRollout('kube-flannel', 'daemonset/kube-flannel-ds', 30)],
    });
    const f = await facts(r);
    expect(f.missingNamespaces).toEqual(['kube-flannel']);
    const changes = await converge(r);
    expect(changes.map((c) => c.summary)).toEqual([
      'create Namespace kube-flannel',
      'create ClusterRole flannel',
      'create ClusterRoleBinding flannel',
      'create ServiceAccount kube-flannel/flannel',
      'create ConfigMap kube-flannel/kube-flannel-cfg',
      'create DaemonSet kube-flannel/kube-flannel-ds',
    ]);
    expect(d.get('DaemonSet', 'kube-flannel-ds', 'kube-flannel')).toBeDefined();
    // the facts of a converged cluster are byte-stable (saved plans hash them)
    const sp = standaloneProbe(r.probe());
    const a = sp.output((await sh(sp.script)).stdout);
    const b = sp.output((await sh(sp.script)).stdout);
    expect(a.stdout).toBe(b.stdout);
  });

  it('an object changed by another manager: an update with a diff, taken back by the apply', async () => {
    const k = kubectlFor(d.kubeconfig());
    await k.run(['-n', 'kube-flannel', 'patch', 'configmap', 'kube-flannel-cfg', '--type=merge', '-p', '{"data":{"net-conf.json":"{}"}}']);
    k.cleanup();
    const objs = renderFlannel(parseObjects(readFileSync(manifest('flannel-v0.28.9/kube-flannel.yml'), 'utf8')), {
      network: '10.244.0.0/16',
      backend: 'vxlan',
    });
    const r = kubeApply({ name: 'flannel', access, docs: objs.map((o) => ({ ref: refOf(o), text: printObjects([o]) })) });
    const changes = await converge(r);
    expect(changes).toHaveLength(1);
    expect(changes[0].summary).toBe('update ConfigMap kube-flannel/kube-flannel-cfg');
    expect(changes[0].diff).toMatch(/^-\s+net-conf\.json: '\{\}'$/m);
    expect(changes[0].diff).toContain('"Network": "10.244.0.0/16"');
  });

  it('a rollout that does not finish: the wait step fails with what to look at', async () => {
    const k = kubectlFor(d.kubeconfig());
    await k.run([
      '-n',
      'kube-flannel',
      'patch',
      'daemonset',
      'kube-flannel-ds',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"numberReady":0,"numberAvailable":0,"updatedNumberScheduled":0}}',
    ]);
    k.cleanup();
    const step = waitRollout('kube-flannel', 'daemonset/kube-flannel-ds', 2);
    const s = await sh(`${kubectlPrelude(access)}\n${step.script}`, true);
    expect(s.code).toBe(1);
    expect(s.stderr).toContain(
      'kube-flannel/daemonset/kube-flannel-ds not rolled out within 2s; look at: kubectl -n kube-flannel describe daemonset/kube-flannel-ds',
    );
  });

  it('the cluster guard reads kubeadm-config, nodes, DaemonSets and the live flannel config', async () => {
    const g = clusterGuard({ access, cni: 'calico', podCidr: '10.244.0.0/16', calicoPools: [{ name: 'p', cidr: '10.244.0.0/16' }] });
    const f = await facts(g);
    expect(f).toMatchObject({
      podSubnets: ['10.244.0.0/16'],
      nodes: [{ name: 'node-1', podCIDR: '10.244.0.0/24' }],
      kubeProxyMode: 'iptables',
    });
    expect(f.daemonSets).toEqual(expect.arrayContaining(['kube-system/kube-proxy', 'kube-flannel/kube-flannel-ds']));
    expect(JSON.parse(f.flannelNetConf!).Network).toBe('10.244.0.0/16');
    expect(() => g.diff(f)).toThrow(/another CNI runs in this cluster \(flannel/);
  });

  it('Calico: the Installation kind is unknown until the CRDs are applied and Established', async () => {
    const inst: ManifestDoc = {
      ref: { apiVersion: 'operator.tigera.io/v1', kind: 'Installation', name: 'default' },
      text: 'apiVersion: operator.tigera.io/v1\nkind: Installation\nmetadata:\n  name: default\nspec: {}\n',
    };
    const ri = kubeApply({ name: 'calico-installation', access, docs: [inst] });
    expect((await facts(ri)).unknownKind).toMatch(/no matches for kind "Installation"/);
    const crdText = readFileSync(manifest('calico-v3.32.1/operator-crds.yaml'), 'utf8');
    // the Installation CRD alone (the e2e test applies all 32, 3 MB)
    const docs = splitDocuments(crdText)
      .map((t) => ({ ref: identify(t), text: t }))
      .filter((x) => x.ref.name === 'installations.operator.tigera.io');
    const crds = kubeApply({ name: 'calico-crds', access, docs, waits: [waitEstablished(['installations.operator.tigera.io'], 30)] });
    expect((await converge(crds)).map((c) => c.summary)).toEqual(['create CustomResourceDefinition installations.operator.tigera.io']);
    expect(await converge(ri)).toEqual([{ summary: 'create Installation default' }]);
  });

  it('strictARP: set in IPVS mode with the resourceVersion precondition, kube-proxy restarted', async () => {
    await fresh({ kubeProxy: { mode: 'ipvs', strictARP: false } });
    const r = strictArp({ access, allow: true, timeoutSec: 30 });
    const changes = await converge(r);
    expect(changes[0].summary).toMatch(/strictARP false → true/);
    const cm = d.get('ConfigMap', 'kube-proxy', 'kube-system')!;
    expect((cm.data as Record<string, string>)['config.conf']).toMatch(/\n {2}strictARP: true\n/);
    expect((cm.data as Record<string, string>)['kubeconfig.conf']).toBeTruthy(); // kubeadm's other key kept
    expect(cm.metadata.managedFields!.map((m) => m.manager)).toEqual(expect.arrayContaining(['kubeadm', 'racksmith']));
    expect(
      (d.get('DaemonSet', 'kube-proxy', 'kube-system')!.spec as any).template.metadata.annotations['kubectl.kubernetes.io/restartedAt'],
    ).toBeTruthy();
  });

  it('strictARP: a ConfigMap changed between probe and apply is not overwritten', async () => {
    await fresh({ kubeProxy: { mode: 'ipvs', strictARP: false } });
    const r = strictArp({ access, allow: true, timeoutSec: 30 });
    const f = await facts(r);
    const changes = r.diff(f);
    const k = kubectlFor(d.kubeconfig());
    await k.run(['-n', 'kube-system', 'label', 'configmap', 'kube-proxy', 'touched=yes']);
    k.cleanup();
    const s = await sh(r.apply(f, changes)[0].script, true);
    expect(s.code).not.toBe(0);
    expect(s.stderr).toMatch(/the object has been modified|conflict|Conflict/i);
  });

  describe('MetalLB config behind its webhook', () => {
    afterEach(() => d.setWebhookReady(false));

    it('probe: a webhook that does not serve is a fact; apply waits until it serves, then applies', async () => {
      await fresh({ webhookReadyAfterMs: 2500 });
      await converge(
        kubeApply({ name: 'metallb', access, docs: docsOf(readFileSync(manifest('metallb-v0.16.1/metallb-native.yaml'), 'utf8')) }),
      );
      const cfg = renderMetallbConfig({ mode: 'l2', pools: [{ name: 'rack-a', addresses: ['10.20.30.200-10.20.30.250'] }] });
      const r = kubeApply({
        name: 'metallb-config',
        access,
        docs: cfg.map((o) => ({ ref: refOf(o), text: printObjects([o]) })),
        webhookGate: { configuration: 'metallb-webhook-configuration', namespace: 'metallb-system', service: 'metallb-webhook-service' },
        timeoutSec: 30,
        pollSec: 1,
      });
      const f = await facts(r);
      expect(f.webhookError).toMatch(/failed calling webhook/);
      const t0 = Date.now();
      const changes = await converge(r);
      expect(changes.map((c) => c.summary)).toEqual([
        'create IPAddressPool metallb-system/rack-a once the admission webhook serves',
        'create L2Advertisement metallb-system/racksmith-l2 once the admission webhook serves',
      ]);
      expect(Date.now() - t0).toBeLessThan(30_000);
      expect(d.get('IPAddressPool', 'rack-a', 'metallb-system')).toBeDefined();
    });

    it('a configuration the webhook denies fails at once with its message', async () => {
      d.setWebhookReady(true);
      const bad = renderMetallbConfig({ mode: 'l2', pools: [{ name: 'bad', addresses: ['10.0.0.0/99'] }] });
      const r = kubeApply({
        name: 'metallb-config',
        access,
        docs: bad.map((o) => ({ ref: refOf(o), text: printObjects([o]) })),
        webhookGate: { configuration: 'metallb-webhook-configuration', namespace: 'metallb-system', service: 'metallb-webhook-service' },
        timeoutSec: 30,
        pollSec: 1,
      });
      const f = await facts(r).catch((e: Error) => e);
      // the dry run in the probe is denied too: a probe error with the webhook's message
      expect(String(f)).toMatch(/denied the request: invalid CIDR "10\.0\.0\.0\/99"/);
      const steps = r.apply({ missingNamespaces: [], rc: 1, objects: {} }, [{ summary: 'x' }]);
      const t0 = Date.now();
      const s = await sh(steps[0].script, true);
      expect(s.code).toBe(1);
      expect(s.stderr).toMatch(
        /^the admission webhook rejected the configuration: Error from server \(Forbidden\): .*denied the request: invalid CIDR "10\.0\.0\.0\/99" in pool "bad"$/m,
      );
      expect(Date.now() - t0).toBeLessThan(10_000);
    });

    it('a webhook that never serves: a timeout naming what is missing', async () => {
      await fresh({});
      await converge(
        kubeApply({ name: 'metallb', access, docs: docsOf(readFileSync(manifest('metallb-v0.16.1/metallb-native.yaml'), 'utf8')) }),
      );
      const cfg = renderMetallbConfig({ mode: 'l2', pools: [{ name: 'rack-a', addresses: ['10.20.30.200-10.20.30.250'] }] });
      const r = kubeApply({
        name: 'metallb-config',
        access,
        docs: cfg.map((o) => ({ ref: refOf(o), text: printObjects([o]) })),
        webhookGate: { configuration: 'metallb-webhook-configuration', namespace: 'metallb-system', service: 'metallb-webhook-service' },
        timeoutSec: 3,
        pollSec: 1,
      });
      const f = await facts(r);
      const s = await sh(r.apply(f, r.diff(f))[0].script, true);
      expect(s.code).toBe(1);
      expect(s.stderr).toMatch(
        /webhook metallb-webhook-configuration not serving after 3s \(caBundle set: no; ready endpoint behind metallb-system\/metallb-webhook-service: no\)/,
      );
      expect(d.get('IPAddressPool', 'rack-a', 'metallb-system')).toBeUndefined();
    });
  });

  // MetalLB's controller (its cert-rotator) writes the webhook certificate into the Secret the
  // manifest ships empty, and the caBundles into the webhook configuration and the bgppeers
  // conversion webhook, whenever it starts: before, during or after racksmith's apply; the Tigera
  // operator writes its defaults and status into the Installation. Those fields are the
  // controllers'; racksmith's verdict looks at the fields racksmith applies, so no timing of such a
  // write makes a run fail or fight it. Each write is placed by an event of the double.
  describe('controllers writing their own fields while racksmith converges', () => {
    const native = () => docsOf(readFileSync(manifest('metallb-v0.16.1/metallb-native.yaml'), 'utf8'));
    const isDryRunOf = (path: string) => (q: RecordedRequest) =>
      q.method === 'PATCH' && q.path.endsWith(path) && q.query.includes('dryRun');
    const isReadOf = (path: string) => (q: RecordedRequest) => q.method === 'GET' && q.path.endsWith(path);
    const SECRET = '/namespaces/metallb-system/secrets/metallb-webhook-cert';
    const VWC = '/validatingwebhookconfigurations/metallb-webhook-configuration';
    const CRD = '/customresourcedefinitions/bgppeers.metallb.io';
    const cases: Array<[string, (q: RecordedRequest) => boolean]> = [
      ['after the apply, before the verify reads the Secret', isReadOf(SECRET)],
      ["between the verify's read of the Secret and its dry run", isDryRunOf(SECRET)],
      ["between the verify's read of the webhook configuration and its dry run", isDryRunOf(VWC)],
      ["between the verify's read of the bgppeers CRD and its dry run", isDryRunOf(CRD)],
    ];
    for (const [when, at] of cases) {
      it(`the rotator writes ${when}: the apply is verified, the certificate kept`, async () => {
        await fresh({});
        const r = kubeApply({ name: 'metallb', access, docs: native() });
        const f = await facts(r);
        for (const step of r.apply(f, r.diff(f))) {
          const s = await sh(step.script, true);
          expect(s.code, s.stderr).toBe(0);
        }
        let wrote = false;
        d.beforeRequest(at, () => {
          d.setWebhookReady(true);
          wrote = true;
        });
        const verify = r.diff(await facts(r));
        expect(wrote).toBe(true); // the write happened where this test put it
        expect(verify).toEqual([]);
        const data = d.get('Secret', 'metallb-webhook-cert', 'metallb-system')!.data as Record<string, string>;
        expect(Object.keys(data).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
      });
    }

    it("the Tigera operator's defaults and status written into the Installation between the verify's read and dry run: verified", async () => {
      await fresh({});
      const crd = splitDocuments(readFileSync(manifest('calico-v3.32.1/operator-crds.yaml'), 'utf8'))
        .map((t) => ({ ref: identify(t), text: t }))
        .filter((x) => x.ref.name === 'installations.operator.tigera.io');
      await converge(
        kubeApply({ name: 'calico-crds', access, docs: crd, waits: [waitEstablished(['installations.operator.tigera.io'], 30)] }),
      );
      const inst: ManifestDoc = {
        ref: { apiVersion: 'operator.tigera.io/v1', kind: 'Installation', name: 'default' },
        text: 'apiVersion: operator.tigera.io/v1\nkind: Installation\nmetadata:\n  name: default\nspec:\n  registry: registry.local:5000/\n',
      };
      const r = kubeApply({ name: 'calico-installation', access, docs: [inst] });
      const f = await facts(r);
      for (const step of r.apply(f, r.diff(f))) expect((await sh(step.script, true)).code).toBe(0);
      let wrote = false;
      d.beforeRequest(isDryRunOf('/installations/default'), () => {
        const live = d.get('Installation', 'default')!;
        d.cluster.seed({ ...live, spec: { ...(live.spec as object), variant: 'Calico' }, status: { variant: 'Calico' } }, 'operator');
        wrote = true;
      });
      expect(r.diff(await facts(r))).toEqual([]);
      expect(wrote).toBe(true);
      expect(d.get('Installation', 'default')!.spec).toEqual({ registry: 'registry.local:5000/', variant: 'Calico' });
    });

    it('the rotator wrote before the apply: the re-run changes nothing; an apply for another object keeps the certificate', async () => {
      await fresh({ webhookReady: true });
      await converge(kubeApply({ name: 'metallb', access, docs: native() }));
      const filled = d.get('Secret', 'metallb-webhook-cert', 'metallb-system')!;
      expect(Object.keys(filled.data as object).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
      const r = kubeApply({ name: 'metallb', access, docs: native() });
      expect(r.diff(await facts(r))).toEqual([]);
      // drift in another object of the same manifest: the apply sends the empty Secret again
      const k = kubectlFor(d.kubeconfig());
      await k.run([
        '-n',
        'metallb-system',
        'patch',
        'service',
        'metallb-webhook-service',
        '--type=merge',
        '-p',
        '{"spec":{"ports":[{"port":444,"targetPort":9443}]}}',
      ]);
      k.cleanup();
      const changes = await converge(r);
      expect(changes.map((c) => c.summary)).toEqual(['update Service metallb-system/metallb-webhook-service']);
      expect(d.get('Secret', 'metallb-webhook-cert', 'metallb-system')!.data).toEqual(filled.data);
      const vwc = d.get('ValidatingWebhookConfiguration', 'metallb-webhook-configuration')!;
      expect((vwc.webhooks as Array<{ clientConfig: { caBundle?: string } }>).every((w) => w.clientConfig.caBundle)).toBe(true);
    });
  });

  it('a diff that takes no options after its files (kubectl diff passes them there): a probe error that says so, not a wrong verdict', async () => {
    const bin = join(dir, 'strict-diff');
    mkdirSync(bin, { recursive: true });
    // like a diff whose getopt stops at the first operand
    writeFileSync(
      join(bin, 'diff'),
      `#!/bin/sh\ncase "$1" in -*) exec /usr/bin/diff "$@" ;; esac\necho "diff: $3: No such file or directory" >&2\nexit 2\n`,
      {
        mode: 0o755,
      },
    );
    const r = kubeApply({
      name: 'x',
      access,
      docs: docsOf('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: default\n'),
    });
    const sp = standaloneProbe(`PATH=${bin}:$PATH\n${r.probe()}`);
    const run = await sh(sp.script);
    const o = sp.output(run.stdout, run.stderr);
    expect(() => r.parse(o)).toThrow(/this host's diff does not take options after its files.*install GNU diffutils/);
  });

  it('kubectl or the kubeconfig missing: a probe error that says which', async () => {
    const r = kubeApply({ name: 'x', access: { kubeconfig: join(dir, 'nope'), kubectl: KUBECTL }, docs: [] });
    await expect(facts(r)).rejects.toThrow(/kubeconfig .*nope is not readable on this host \(set kube_kubeconfig\)/);
    const r2 = kubeApply({ name: 'x', access: { kubeconfig, kubectl: 'no-such-kubectl' }, docs: [] });
    await expect(facts(r2)).rejects.toThrow(/no-such-kubectl not found on this host \(set kube_kubectl\)/);
  });
});
