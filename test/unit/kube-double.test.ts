// The Kubernetes API server double, driven by the real kubectl (as the product runs it).
import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type KubeApiDouble, startKubeApiDouble } from '../kube-double/server.ts';
import { KUBECTL, type Kubectl, kubectlFor } from '../kube-double/kubectl.ts';
import { manifest } from '../kube-double/fixtures.ts';
import { jsonPatch, serverSideApply, strategicMergePatch } from '../kube-double/apply.ts';
import { ResourceRegistry } from '../kube-double/discovery.ts';
import type { Json, KubeObject } from '../kube-double/types.ts';

const SSA = ['apply', '--server-side', '--field-manager=racksmith', '--force-conflicts'];
// resolved when a test runs, so a missing shared/ fails those tests with a clear message
const METALLB = () => manifest('metallb-v0.16.1/metallb-native.yaml');
const FLANNEL = () => manifest('flannel-v0.28.9/kube-flannel.yml');
const CALICO_CRDS = () => manifest('calico-v3.32.1/operator-crds.yaml');
const TIGERA = () => manifest('calico-v3.32.1/tigera-operator.yaml');
const CALICO_CRS = () => manifest('calico-v3.32.1/custom-resources.yaml');

const POOL = `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata:
  name: rack-a
  namespace: metallb-system
spec:
  addresses: ["10.20.30.200-10.20.30.250", "10.20.31.0/27"]
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata:
  name: rack-a-l2
  namespace: metallb-system
spec:
  ipAddressPools: [rack-a]
`;

function configMap(data: Record<string, string>, name = 'demo'): string {
  const lines = Object.entries(data).map(([k, v]) => `  ${k}: "${v}"`);
  return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: default\n  labels:\n    app: demo\ndata:\n${lines.join('\n')}\n`;
}

let fileCount = 0;
function tmpFile(text: string): string {
  const f = join(tmpdir(), `kube-double-test-${process.pid}-${++fileCount}.yaml`);
  writeFileSync(f, text);
  return f;
}

async function ok(k: Kubectl, args: string[], input?: string): Promise<string> {
  const r = await k.run(args, { input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

async function getJson(k: Kubectl, args: string[]): Promise<Record<string, any>> {
  return JSON.parse(await ok(k, ['get', ...args, '-o', 'json'])) as Record<string, any>;
}

describe.skipIf(!existsSync(KUBECTL))('kube API double with the real kubectl', { timeout: 60_000 }, () => {
  let d: KubeApiDouble;
  let k: Kubectl;

  async function start(opts: Parameters<typeof startKubeApiDouble>[0] = {}): Promise<void> {
    d = await startKubeApiDouble(opts);
    k = kubectlFor(d.kubeconfig());
  }

  afterEach(async () => {
    k?.cleanup();
    await d?.stop();
  });

  describe('server-side apply of a ConfigMap', () => {
    it('stores it with server metadata and managedFields; a second apply changes nothing', async () => {
      await start();
      const file = tmpFile(configMap({ a: '1', b: '2' }));
      expect(await ok(k, [...SSA, '-f', file])).toContain('configmap/demo serverside-applied');
      const first = await getJson(k, ['configmap', 'demo', '--show-managed-fields']);
      expect(first.data).toEqual({ a: '1', b: '2' });
      expect(first.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(first.metadata.creationTimestamp).toMatch(/Z$/);
      expect(first.metadata.generation).toBe(1);
      expect(first.metadata.managedFields).toEqual([
        expect.objectContaining({
          manager: 'racksmith',
          operation: 'Apply',
          fieldsV1: { 'f:data': { 'f:a': {}, 'f:b': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } },
        }),
      ]);
      const rawBefore = JSON.stringify(d.get('ConfigMap', 'demo'));

      await ok(k, [...SSA, '-f', file]);
      const second = await getJson(k, ['configmap', 'demo', '--show-managed-fields']);
      expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
      expect(JSON.stringify(d.get('ConfigMap', 'demo'))).toBe(rawBefore);
      expect((await k.run(['diff', '--server-side', '--field-manager=racksmith', '-f', file])).code).toBe(0);

      const changed = tmpFile(configMap({ a: '1', b: '3' }));
      const diff = await k.run(['diff', '--server-side', '--field-manager=racksmith', '-f', changed]);
      expect(diff.code).toBe(1);
      expect(diff.stdout).toMatch(/^\+ {2}b: "3"$/m);
      expect(d.requests.some((r) => r.method === 'PATCH' && r.contentType === 'application/apply-patch+yaml')).toBe(true);
    });

    it('removes a field the manager stops applying, and bumps resourceVersion on a real change', async () => {
      await start();
      await ok(k, [...SSA, '-f', tmpFile(configMap({ a: '1', b: '2' }))]);
      const rv1 = Number(d.get('ConfigMap', 'demo')?.metadata.resourceVersion);
      await ok(k, [...SSA, '-f', tmpFile(configMap({ a: '1' }))]);
      const cm = d.get('ConfigMap', 'demo');
      expect(cm?.data).toEqual({ a: '1' });
      expect(Number(cm?.metadata.resourceVersion)).toBeGreaterThan(rv1);
    });

    it('reports a conflict with another manager unless forced', async () => {
      await start();
      const file = tmpFile(configMap({ a: '1' }));
      await ok(k, [...SSA, '-f', file]);
      await ok(k, ['patch', 'configmap', 'demo', '--type=merge', '-p', '{"data":{"a":"edited"}}']);
      const conflict = await k.run(['apply', '--server-side', '--field-manager=racksmith', '-f', file]);
      expect(conflict.code).not.toBe(0);
      expect(conflict.stderr).toContain('conflict with "kubectl-patch"');
      await ok(k, [...SSA, '-f', file]);
      expect(d.get('ConfigMap', 'demo')?.data).toEqual({ a: '1' });
    });

    it('--dry-run=server answers the merged object and stores nothing', async () => {
      await start();
      const created = await ok(k, [
        'apply',
        '--server-side',
        '--field-manager=racksmith',
        '--dry-run=server',
        '-f',
        tmpFile(configMap({ a: '1' })),
        '-o',
        'yaml',
      ]);
      expect(created).toContain('a: "1"');
      expect(d.get('ConfigMap', 'demo')).toBeUndefined();
      expect((await k.run(['get', 'configmap', 'demo'])).stderr).toContain('configmaps "demo" not found');

      await ok(k, [...SSA, '-f', tmpFile(configMap({ a: '1' }))]);
      const before = JSON.stringify(d.get('ConfigMap', 'demo'));
      const dry = await ok(k, [
        'apply',
        '--server-side',
        '--field-manager=racksmith',
        '--dry-run=server',
        '-f',
        tmpFile(configMap({ a: '2' })),
        '-o',
        'yaml',
      ]);
      expect(dry).toContain('a: "2"');
      expect(JSON.stringify(d.get('ConfigMap', 'demo'))).toBe(before);
    });
  });

  describe('seeded cluster state', () => {
    it('serves nodes, kube-proxy and kubeadm-config as the product reads them', async () => {
      await start({
        nodes: [
          { name: 'cp-1', podCIDR: '10.244.0.0/24' },
          { name: 'w-1', podCIDR: '10.244.1.0/24' },
        ],
        kubeProxy: { mode: 'ipvs' },
        kubeadm: { podSubnet: '10.244.0.0/16' },
      });
      const nodes = await getJson(k, ['nodes']);
      expect(nodes.items.map((n: any) => [n.metadata.name, n.spec.podCIDR])).toEqual([
        ['cp-1', '10.244.0.0/24'],
        ['w-1', '10.244.1.0/24'],
      ]);
      const kp = await getJson(k, ['configmap', 'kube-proxy', '-n', 'kube-system']);
      expect(kp.data['config.conf']).toMatch(/^mode: ipvs$/m);
      expect(kp.data['config.conf']).toMatch(/^ {2}strictARP: false$/m);
      const subnet = await ok(k, [
        'get',
        'configmap',
        'kubeadm-config',
        '-n',
        'kube-system',
        '-o',
        'jsonpath={.data.ClusterConfiguration}',
      ]);
      expect(subnet).toMatch(/^ {2}podSubnet: 10\.244\.0\.0\/16$/m);
      expect(await ok(k, ['get', 'nodes', '-o', 'jsonpath={.items[*].spec.podCIDR}'])).toBe('10.244.0.0/24 10.244.1.0/24');
    });

    it('takes the strictARP edit through client-side apply, and rolls kube-proxy', async () => {
      await start({ kubeProxy: { mode: 'ipvs' } });
      const yaml = await ok(k, ['get', 'configmap', 'kube-proxy', '-n', 'kube-system', '-o', 'yaml']);
      const edited = yaml.replace('strictARP: false', 'strictARP: true');
      expect((await k.run(['diff', '-f', '-', '-n', 'kube-system'], { input: edited })).code).toBe(1);
      await ok(k, ['apply', '-f', '-', '-n', 'kube-system'], edited);
      expect(String(d.get('ConfigMap', 'kube-proxy', 'kube-system')?.data?.['config.conf' as never])).toContain('strictARP: true');
      await ok(k, ['-n', 'kube-system', 'rollout', 'restart', 'daemonset/kube-proxy']);
      expect(await ok(k, ['-n', 'kube-system', 'rollout', 'status', 'daemonset/kube-proxy', '--timeout=20s'])).toContain(
        'successfully rolled out',
      );
    });

    it('listens on the given host; kubeconfig() can name another address of it', async () => {
      await start({ host: '127.0.0.2' });
      expect(d.url).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/);
      expect(await ok(k, ['get', 'namespace', 'kube-system', '-o', 'name'])).toBe('namespace/kube-system\n');
      expect(await ok(k, ['version'])).toContain('Server Version: v1.32.4');
      expect(d.kubeconfig('http://192.0.2.1:6443')).toContain('server: http://192.0.2.1:6443');
    });

    it('takes the protobuf bodies of kubectl create namespace/configmap/secret', async () => {
      await start();
      await ok(k, ['create', 'namespace', 'racks']);
      await ok(k, ['create', 'configmap', 'cfg', '-n', 'racks', '--from-literal=k=v']);
      await ok(k, ['create', 'secret', 'generic', 'sec', '-n', 'racks', '--from-literal=s=x']);
      expect(d.get('Namespace', 'racks')?.status).toEqual({ phase: 'Active' });
      expect(d.get('ConfigMap', 'cfg', 'racks')?.data).toEqual({ k: 'v' });
      const secret = d.get('Secret', 'sec', 'racks');
      expect([secret?.type, secret?.data]).toEqual(['Opaque', { s: Buffer.from('x').toString('base64') }]);
      const refused = await k.run(['create', 'deployment', 'web', '--image=nginx']);
      expect(refused.stderr).toContain('decodes protobuf only for');
    });

    it('answers 404 for unknown kinds, like a real server', async () => {
      await start();
      const raw = await k.run(['get', '--raw', '/apis/example.com/v1/widgets']);
      expect(raw.code).not.toBe(0);
      expect(raw.stderr).toContain('NotFound');
      const apply = await k.run([...SSA, '-f', '-'], { input: 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n' });
      expect(apply.code).not.toBe(0);
      expect(apply.stderr).toMatch(/no matches for kind "Widget"/);
    });
  });

  describe('MetalLB v0.16.1', () => {
    it('applies whole; CRDs become Established and the workloads roll out', async () => {
      await start();
      const out = await ok(k, [...SSA, '-f', METALLB()]);
      expect(out).toContain('customresourcedefinition.apiextensions.k8s.io/ipaddresspools.metallb.io serverside-applied');
      expect(out).toContain('validatingwebhookconfiguration.admissionregistration.k8s.io/metallb-webhook-configuration serverside-applied');
      expect(
        await ok(k, [
          'wait',
          '--for',
          'condition=Established',
          '--timeout=60s',
          'crd/ipaddresspools.metallb.io',
          'crd/l2advertisements.metallb.io',
          'crd/bgppeers.metallb.io',
        ]),
      ).toContain('condition met');
      expect(await ok(k, ['rollout', 'status', 'deployment/controller', '-n', 'metallb-system', '--timeout=120s'])).toContain(
        'successfully rolled out',
      );
      expect(await ok(k, ['rollout', 'status', 'daemonset/speaker', '-n', 'metallb-system', '--timeout=120s'])).toContain(
        'successfully rolled out',
      );
      const crd = await getJson(k, ['crd', 'bgppeers.metallb.io']);
      expect(crd.status.storedVersions).toEqual(['v1beta2']);
      const resources = await ok(k, ['api-resources', '--api-group=metallb.io', '-o', 'name']);
      expect(resources.split('\n')).toContain('ipaddresspools.metallb.io');

      const rv = d.store.resourceVersion;
      await ok(k, [...SSA, '-f', METALLB()]);
      expect(d.store.resourceVersion).toBe(rv);
      expect((await k.run(['diff', '--server-side', '--field-manager=racksmith', '-f', METALLB()])).code).toBe(0);
    });

    it('refuses MetalLB objects until the webhook is ready, then takes them', async () => {
      await start();
      await ok(k, [...SSA, '-f', METALLB()]);
      const pool = tmpFile(POOL);

      const refused = await k.run([...SSA, '-f', pool]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('failed calling webhook "ipaddresspoolvalidationwebhook.metallb.io"');
      expect(refused.stderr).toContain('connect: connection refused');
      const dryRefused = await k.run(['apply', '--server-side', '--field-manager=racksmith', '--dry-run=server', '-f', pool]);
      expect(dryRefused.code).not.toBe(0);
      expect(dryRefused.stderr).toContain('failed calling webhook');
      expect(d.get('IPAddressPool', 'rack-a', 'metallb-system')).toBeUndefined();
      const slices = await getJson(k, [
        'endpointslices',
        '-n',
        'metallb-system',
        '-l',
        'kubernetes.io/service-name=metallb-webhook-service',
      ]);
      expect(slices.items[0].endpoints[0].conditions.ready).toBe(false);

      d.setWebhookReady(true);
      const vwc = await getJson(k, ['validatingwebhookconfiguration', 'metallb-webhook-configuration']);
      expect(vwc.webhooks.length).toBe(6);
      for (const w of vwc.webhooks) expect(w.clientConfig.caBundle).toBeTruthy();
      const cert = await getJson(k, ['secret', 'metallb-webhook-cert', '-n', 'metallb-system']);
      expect(Object.keys(cert.data)).toEqual(expect.arrayContaining(['ca.crt', 'tls.crt', 'tls.key']));
      const ready = await getJson(k, [
        'endpointslices',
        '-n',
        'metallb-system',
        '-l',
        'kubernetes.io/service-name=metallb-webhook-service',
      ]);
      expect(ready.items[0].endpoints[0].conditions.ready).toBe(true);
      const ep = await getJson(k, ['endpoints', 'metallb-webhook-service', '-n', 'metallb-system']);
      expect(ep.subsets[0].addresses).toHaveLength(1);

      expect((await k.run(['apply', '--server-side', '--field-manager=racksmith', '--dry-run=server', '-f', pool])).code).toBe(0);
      expect(d.get('IPAddressPool', 'rack-a', 'metallb-system')).toBeUndefined();
      expect(await ok(k, [...SSA, '-f', pool])).toContain('ipaddresspool.metallb.io/rack-a serverside-applied');
      // with the CRD schema's defaults filled in, like a real server
      expect(d.get('IPAddressPool', 'rack-a', 'metallb-system')?.spec).toEqual({
        addresses: ['10.20.30.200-10.20.30.250', '10.20.31.0/27'],
        autoAssign: true,
        avoidBuggyIPs: false,
      });

      // re-applying the manifest keeps the injected caBundles: nothing changes
      const rv = d.store.resourceVersion;
      await ok(k, [...SSA, '-f', METALLB()]);
      await ok(k, [...SSA, '-f', pool]);
      expect(d.store.resourceVersion).toBe(rv);

      const bad = await k.run([...SSA, '-f', '-'], { input: POOL.replace('10.20.31.0/27', '10.20.31.0/33') });
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('denied the request: invalid CIDR "10.20.31.0/33"');
    });

    it('becomes ready webhookReadyAfterMs after the webhook configuration exists', async () => {
      await start({ webhookReadyAfterMs: 1500 });
      await ok(k, [...SSA, '-f', METALLB()]);
      const pool = tmpFile(POOL);
      expect((await k.run([...SSA, '-f', pool])).code).not.toBe(0);
      const deadline = Date.now() + 10_000;
      let applied = false;
      while (!applied && Date.now() < deadline) {
        applied = (await k.run([...SSA, '-f', pool])).code === 0;
        if (!applied) await new Promise((r) => setTimeout(r, 250));
      }
      expect(applied).toBe(true);
    });
  });

  describe('CNI manifests', () => {
    it('Flannel v0.28.9 applies cleanly and its DaemonSet rolls out', async () => {
      await start();
      const out = await ok(k, [...SSA, '-f', FLANNEL()]);
      expect(out).toContain('daemonset.apps/kube-flannel-ds serverside-applied');
      expect(await ok(k, ['-n', 'kube-flannel', 'rollout', 'status', 'ds/kube-flannel-ds', '--timeout=60s'])).toContain(
        'successfully rolled out',
      );
      expect((await k.run(['diff', '--server-side', '--field-manager=racksmith', '-f', FLANNEL()])).code).toBe(0);
    });

    it('Calico v3.32.1 operator CRDs (3 MB), operator and custom resources apply cleanly', async () => {
      await start();
      const crds = await ok(k, [...SSA, '-f', CALICO_CRDS()]);
      expect(crds.trim().split('\n')).toHaveLength(32);
      expect(
        await ok(k, [
          'wait',
          '--for=condition=Established',
          '--timeout=60s',
          'crd/installations.operator.tigera.io',
          'crd/apiservers.operator.tigera.io',
          'crd/tigerastatuses.operator.tigera.io',
          'crd/ippools.crd.projectcalico.org',
        ]),
      ).toContain('condition met');
      await ok(k, [...SSA, '-f', TIGERA()]);
      expect(await ok(k, ['-n', 'tigera-operator', 'rollout', 'status', 'deploy/tigera-operator', '--timeout=60s'])).toContain(
        'successfully rolled out',
      );
      expect(await ok(k, [...SSA, '-f', CALICO_CRS()])).toContain('installation.operator.tigera.io/default serverside-applied');

      const rv = d.store.resourceVersion;
      for (const f of [CALICO_CRDS(), TIGERA(), CALICO_CRS()]) {
        await ok(k, [...SSA, '-f', f]);
        expect((await k.run(['diff', '--server-side', '--field-manager=racksmith', '-f', f])).code).toBe(0);
      }
      expect(d.store.resourceVersion).toBe(rv);
    });
  });
});

describe('kube API double over plain HTTP', () => {
  let d: KubeApiDouble;
  beforeAll(async () => {
    d = await startKubeApiDouble();
  });
  afterAll(async () => {
    await d.stop();
  });

  it('serves /version, legacy and aggregated discovery', async () => {
    const version = (await (await fetch(`${d.url}/version`)).json()) as Record<string, string>;
    expect(version.gitVersion).toBe('v1.32.4');
    const core = (await (await fetch(`${d.url}/api/v1`)).json()) as { resources: Array<{ name: string }> };
    expect(core.resources.map((r) => r.name)).toEqual(
      expect.arrayContaining(['configmaps', 'namespaces', 'nodes', 'pods', 'services/status']),
    );
    const agg = await fetch(`${d.url}/apis`, {
      headers: { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' },
    });
    expect(agg.headers.get('content-type')).toBe('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    const body = (await agg.json()) as { items: Array<{ metadata: { name: string } }> };
    expect(body.items.map((g) => g.metadata.name)).toEqual(
      expect.arrayContaining(['apps', 'apiextensions.k8s.io', 'admissionregistration.k8s.io']),
    );
  });

  it('streams watch events after a resourceVersion', async () => {
    const list = (await (await fetch(`${d.url}/api/v1/namespaces/default/configmaps`)).json()) as { metadata: { resourceVersion: string } };
    const ac = new AbortController();
    const res = await fetch(
      `${d.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${list.metadata.resourceVersion}&fieldSelector=metadata.name%3Dw`,
      { signal: ac.signal },
    );
    const reader = res.body!.getReader();
    await fetch(`${d.url}/api/v1/namespaces/default/configmaps?fieldManager=test`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'w' }, data: { x: 'y' } }),
    });
    const { value } = await reader.read();
    const event = JSON.parse(new TextDecoder().decode(value).split('\n')[0]) as { type: string; object: { metadata: { name: string } } };
    expect(event.type).toBe('ADDED');
    expect(event.object.metadata.name).toBe('w');
    ac.abort();
  });
});

describe('kube API double merge semantics', () => {
  const deploymentType = new ResourceRegistry().lookup('apps', 'v1', 'deployments')!;
  const ctx = (manager: string) => ({
    type: deploymentType,
    manager,
    apiVersion: 'apps/v1',
    now: '2026-01-01T00:00:00Z',
    section: 'main' as const,
  });
  const deployment = (containers: Json[]): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default' },
    spec: { template: { spec: { containers } } },
  });

  it('strategic merge patch: merge keys, $patch: delete, $setElementOrder, $deleteFromPrimitiveList, null', () => {
    const live: Json = {
      spec: {
        containers: [
          { name: 'a', image: 'a:1', args: ['x'] },
          { name: 'b', image: 'b:1' },
        ],
        finalizers: ['f1', 'f2'],
        drop: 1,
      },
    };
    const patched = strategicMergePatch(live, {
      spec: {
        '$setElementOrder/containers': [{ name: 'c' }, { name: 'a' }],
        containers: [
          { name: 'a', image: 'a:2' },
          { name: 'b', $patch: 'delete' },
          { name: 'c', image: 'c:1' },
        ],
        '$deleteFromPrimitiveList/finalizers': ['f1'],
        drop: null,
      },
    });
    expect(patched).toEqual({
      spec: {
        containers: [
          { name: 'c', image: 'c:1' },
          { name: 'a', image: 'a:2', args: ['x'] },
        ],
        finalizers: ['f2'],
      },
    });
  });

  it('JSON patch: add, replace, remove, test', () => {
    const doc = { metadata: { labels: { a: '1' } }, list: [1, 2] };
    expect(
      jsonPatch(doc, [
        { op: 'add', path: '/metadata/labels/b~1c', value: '2' },
        { op: 'replace', path: '/metadata/labels/a', value: '3' },
        { op: 'add', path: '/list/-', value: 3 },
        { op: 'remove', path: '/list/0' },
        { op: 'test', path: '/list', value: [2, 3] },
      ]),
    ).toEqual({ metadata: { labels: { a: '3', 'b/c': '2' } }, list: [2, 3] });
    expect(() => jsonPatch(doc, [{ op: 'test', path: '/list', value: [] }])).toThrow(/testing value/);
  });

  it('server-side apply merges named list elements and keeps what other managers own', () => {
    const first = serverSideApply(undefined, deployment([{ name: 'web', image: 'nginx:1' }]), ctx('racksmith'), false);
    // another applier adds a sidecar container
    const second = serverSideApply(first, deployment([{ name: 'side', image: 'busybox' }]), ctx('other'), false);
    expect((second.spec as any).template.spec.containers.map((c: any) => c.name)).toEqual(['web', 'side']);
    // racksmith re-applies without the sidecar: it stays (owned by "other"); racksmith's own change lands
    const third = serverSideApply(second, deployment([{ name: 'web', image: 'nginx:2' }]), ctx('racksmith'), false);
    expect((third.spec as any).template.spec.containers).toEqual([
      { name: 'web', image: 'nginx:2' },
      { name: 'side', image: 'busybox' },
    ]);
    expect(third.metadata.managedFields?.map((m) => m.manager)).toEqual(['racksmith', 'other']);
    // "other" changing racksmith's image conflicts unless forced
    expect(() => serverSideApply(third, deployment([{ name: 'web', image: 'nginx:3' }]), ctx('other'), false)).toThrow(
      /conflict with "racksmith"/,
    );
  });
});
