// Pure logic of the Kubernetes network playbook: CIDRs, rendering, CRD-schema validation against
// the real upstream manifests (shared/fixtures/manifests), probe parsing and diffs of the kube and
// CNI resources, and inventory validation (exit-3 errors at the variable's position).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { manifest } from '../../../kube-double/fixtures.ts';
import { HostContext } from '../../../../src/contract/playbook.ts';
import type { Host } from '../../../../src/inventory/model.ts';
import { checkPoolAddress, cidrWithin, parseCidr, cidrText } from '../../../../src/kube/cidr.ts';
import { diffName, displayName, identify, kubectlRef, parseObjects, printObjects, splitDocuments } from '../../../../src/kube/objects.ts';
import { MANIFEST_PINS, findManifestPin } from '../../../../src/kube/pins.ts';
import {
  flannelNetConf,
  mirrorImage,
  renderCalicoResources,
  renderFlannel,
  renderMetallbConfig,
  renderMetallbNative,
  rewriteImages,
} from '../../../../src/kube/render.ts';
import { crdSchemas, pruneSchema, schemaKey, validateCustomResource } from '../../../../src/kube/schema.ts';
import { kubeSettings } from '../../../../src/plays/kube-settings.ts';
import {
  cniConfChanges,
  cniPluginsChanges,
  goArch,
  parseCniPluginsProbe,
  pickCniTarball,
  type CniPluginsFacts,
} from '../../../../src/resources/kube/cni.ts';
import {
  clusterProblems,
  kubeApplyChanges,
  parseClusterProbe,
  parseKubeApplyProbe,
  parseStrictArpProbe,
  strictArpChanges,
  withStrictArp,
  type ClusterFacts,
  type ManifestDoc,
} from '../../../../src/resources/kube/kube.ts';
import { ProbeError, Refusal } from '../../../../src/contract/resource.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { sha256Hex } from '../../../../src/kube/artifacts.ts';

const text = (rel: string) => readFileSync(manifest(rel), 'utf8');

describe('CIDRs and MetalLB addresses', () => {
  it.each([
    ['10.244.0.0/16', '10.244.0.0/16'],
    ['10.244.1.0/24', '10.244.1.0/24'],
    ['fd00::/56', 'fd00::/56'],
  ])('parses %s', (t, back) => expect(cidrText(parseCidr(t)!)).toBe(back));

  it.each(['10.244.0.0', '10.244.0.0/33', '300.1.1.1/8', 'x/8', '10.0.0.0/8/1', ''])('rejects %j', (t) =>
    expect(parseCidr(t)).toBeUndefined(),
  );

  it('strict parsing refuses host bits', () => {
    expect(parseCidr('10.244.0.1/16', { strict: true })).toBeUndefined();
    expect(parseCidr('10.244.0.1/16')).toBeDefined();
  });

  it.each([
    ['10.244.0.0/17', '10.244.0.0/16', true],
    ['10.244.0.0/16', '10.244.0.0/16', true],
    ['10.244.0.0/15', '10.244.0.0/16', false],
    ['10.245.0.0/24', '10.244.0.0/16', false],
    ['fd00:0:0:1::/64', 'fd00::/56', true],
    ['10.244.0.0/24', 'fd00::/56', false],
  ])('%s within %s: %s', (a, b, want) => expect(cidrWithin(parseCidr(a)!, parseCidr(b)!)).toBe(want));

  it.each([
    ['10.20.30.200-10.20.30.250', undefined],
    ['10.20.31.0/27', undefined],
    ['fd00:1::/120', undefined],
    ['fd00::1-fd00::ff', undefined],
    ['10.20.30.300/24', /not a valid CIDR/],
    ['10.20.31.5/27', /host bits set \(did you mean 10\.20\.31\.0\/27\?\)/],
    ['10.20.30.250-10.20.30.200', /first address is after the last/],
    ['10.0.0.1-fd00::1', /mixes IPv4 and IPv6/],
    ['10.0.0.1', /neither a CIDR/],
    ['10.0.0.1-10.0.0.2-10.0.0.3', /not a range/],
  ])('pool address %s', (a, want) => {
    const p = checkPoolAddress(a);
    if (want === undefined) expect(p).toBeUndefined();
    else expect(p).toMatch(want);
  });
});

describe('manifests: pins, documents, names', () => {
  it('every pinned fixture hashes to its pin', () => {
    for (const p of MANIFEST_PINS)
      expect(sha256Hex(readFileSync(manifest(`${p.component}-${p.version}/${p.file}`))), p.file).toBe(p.sha256);
  });

  it('inventory pins override and extend the built-in ones', () => {
    expect(findManifestPin('flannel', 'v0.29.0', 'kube-flannel.yml')).toBeUndefined();
    const pin = findManifestPin('flannel', 'v0.29.0', 'kube-flannel.yml', {
      'flannel-v0.29.0/kube-flannel.yml': { sha256: 'a'.repeat(64) },
    });
    expect(pin).toMatchObject({
      sha256: 'a'.repeat(64),
      url: 'https://github.com/flannel-io/flannel/releases/download/v0.29.0/kube-flannel.yml',
    });
  });

  it('identifies the documents of the 3 MB Calico CRD manifest without parsing them', () => {
    const docs = splitDocuments(text('calico-v3.32.1/operator-crds.yaml'));
    expect(docs).toHaveLength(32);
    const refs = docs.map(identify);
    expect(refs.every((r) => r.kind === 'CustomResourceDefinition' && r.apiVersion === 'apiextensions.k8s.io/v1' && !r.namespace)).toBe(
      true,
    );
    expect(refs.map((r) => r.name)).toContain('installations.operator.tigera.io');
  });

  it('identification agrees with a full parse for every upstream object', () => {
    for (const rel of ['flannel-v0.28.9/kube-flannel.yml', 'metallb-v0.16.1/metallb-native.yaml', 'calico-v3.32.1/tigera-operator.yaml']) {
      const t = text(rel);
      const objs = parseObjects(t);
      expect(splitDocuments(t).map(identify)).toEqual(
        objs.map((o) => ({
          apiVersion: o.apiVersion,
          kind: o.kind,
          name: o.metadata.name,
          ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
        })),
      );
    }
  });

  it('falls back to a parse for flow-style documents', () => {
    expect(identify('{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: y}}\n')).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'x',
      namespace: 'y',
    });
  });

  it.each([
    [
      { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'kube-flannel-ds', namespace: 'kube-flannel' },
      'apps.v1.DaemonSet.kube-flannel.kube-flannel-ds',
      'daemonset.apps/kube-flannel-ds',
    ],
    [{ apiVersion: 'v1', kind: 'Namespace', name: 'kube-flannel' }, 'v1.Namespace..kube-flannel', 'namespace/kube-flannel'],
    [
      { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', name: 'a', namespace: 'metallb-system' },
      'metallb.io.v1beta1.IPAddressPool.metallb-system.a',
      'ipaddresspool.metallb.io/a',
    ],
  ])('kubectl names of %j', (ref, file, arg) => {
    expect(diffName(ref)).toBe(file);
    expect(kubectlRef(ref)).toBe(arg);
  });
});

describe('rendering', () => {
  const flannel = () => parseObjects(text('flannel-v0.28.9/kube-flannel.yml'));

  it('flannel: net-conf.json Network and backend from the inventory, the rest as upstream', () => {
    const up = flannel();
    const out = renderFlannel(up, { network: '10.250.0.0/16', backend: 'host-gw', iface: ['bond0'] });
    const cm = out.find((o) => o.kind === 'ConfigMap')!;
    expect(JSON.parse((cm.data as Record<string, string>)['net-conf.json'])).toEqual({
      Network: '10.250.0.0/16',
      EnableNFTables: false,
      Backend: { Type: 'host-gw' },
    });
    expect((cm.data as Record<string, string>)['cni-conf.json']).toBe(
      (up.find((o) => o.kind === 'ConfigMap')!.data as Record<string, string>)['cni-conf.json'],
    );
    const ds = out.find((o) => o.kind === 'DaemonSet') as any;
    expect(ds.spec.template.spec.containers[0].args).toEqual(['--ip-masq', '--kube-subnet-mgr', '--healthz-port=8081', '--iface=bond0']);
    // the input objects are not modified
    expect(JSON.parse((up.find((o) => o.kind === 'ConfigMap')!.data as Record<string, string>)['net-conf.json']).Network).toBe(
      '10.244.0.0/16',
    );
    expect((up.find((o) => o.kind === 'DaemonSet') as any).spec.template.spec.containers[0].args).toHaveLength(3);
  });

  it('flannel vxlan options', () => {
    expect(
      flannelNetConf(undefined, { network: '10.1.0.0/16', backend: 'vxlan', vni: 4096, port: 4789, directRouting: true, mtu: 8950 }),
    ).toEqual({
      Network: '10.1.0.0/16',
      Backend: { Type: 'vxlan', VNI: 4096, Port: 4789, DirectRouting: true, MTU: 8950 },
    });
  });

  it.each([
    ['ghcr.io/flannel-io/flannel:v0.28.9', 'registry.local:5000', 'registry.local:5000/flannel-io/flannel:v0.28.9'],
    ['quay.io/tigera/operator:v1.42.3', 'registry.local:5000/mirror/', 'registry.local:5000/mirror/tigera/operator:v1.42.3'],
    ['busybox:1', 'reg.example', 'reg.example/library/busybox:1'],
    ['metallb/speaker:v1', 'reg.example', 'reg.example/metallb/speaker:v1'],
  ])('mirror image %s via %s', (img, reg, want) => expect(mirrorImage(img, reg)).toBe(want));

  it('rewrites init and main container images for a mirror', () => {
    const out = rewriteImages(flannel(), 'registry.local:5000');
    const ds = out.find((o) => o.kind === 'DaemonSet') as any;
    expect([...ds.spec.template.spec.initContainers, ...ds.spec.template.spec.containers].map((c: { image: string }) => c.image)).toEqual([
      'registry.local:5000/flannel-io/flannel-cni-plugin:v1.9.1-flannel3',
      'registry.local:5000/flannel-io/flannel:v0.28.9',
      'registry.local:5000/flannel-io/flannel:v0.28.9',
    ]);
  });

  it('metallb: --ignore-exclude-lb on the speaker only when asked', () => {
    const native = parseObjects(text('metallb-v0.16.1/metallb-native.yaml'));
    const speaker = (objs: typeof native) =>
      (objs.find((o) => o.kind === 'DaemonSet') as any).spec.template.spec.containers[0].args as string[];
    expect(speaker(renderMetallbNative(native, {}))).not.toContain('--ignore-exclude-lb');
    expect(speaker(renderMetallbNative(native, { ignoreExcludeLB: true }))).toContain('--ignore-exclude-lb');
  });

  it('metallb BGP: a peer per inventory entry and one advertisement of all pools', () => {
    const out = renderMetallbConfig({
      mode: 'bgp',
      pools: [
        { name: 'a', addresses: ['10.0.0.0/28'] },
        { name: 'b', addresses: ['10.0.1.0/28'] },
      ],
      peers: [{ name: 'tor', peerAddress: '10.0.0.1', peerASN: 64501, myASN: 64500, holdTime: '90s', nodeSelector: { rack: 'a' } }],
    });
    expect(out.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata.name}`)).toEqual([
      'metallb.io/v1beta1 IPAddressPool a',
      'metallb.io/v1beta1 IPAddressPool b',
      'metallb.io/v1beta2 BGPPeer tor',
      'metallb.io/v1beta1 BGPAdvertisement racksmith-bgp',
    ]);
    expect(out[2].spec).toEqual({
      myASN: 64500,
      peerASN: 64501,
      peerAddress: '10.0.0.1',
      holdTime: '90s',
      nodeSelectors: [{ matchLabels: { rack: 'a' } }],
    });
    expect(out[3].spec).toEqual({ ipAddressPools: ['a', 'b'] });
  });

  it('calico: registry gets its trailing slash', () => {
    const [inst] = renderCalicoResources({ pools: [], registry: 'registry.local:5000', apiServer: false, goldmane: false, whisker: false });
    expect((inst.spec as any).registry).toBe('registry.local:5000/');
  });
});

describe('rendered custom resources against the real upstream CRD schemas', () => {
  const calico = crdSchemas(
    parseObjects(
      splitDocuments(text('calico-v3.32.1/operator-crds.yaml'))
        .filter((d) => /name: (installations|apiservers|goldmanes|whiskers)\.operator\.tigera\.io/.test(d))
        .join('---\n'),
    ),
  );
  const metallb = crdSchemas(parseObjects(text('metallb-v0.16.1/metallb-native.yaml')));
  const check = (schemas: Map<string, Record<string, unknown>>, o: { apiVersion: string; kind: string }) => {
    const s = schemas.get(schemaKey(o));
    expect(s, `CRD for ${schemaKey(o)}`).toBeDefined();
    return validateCustomResource(o as any, s!);
  };

  it('the Installation (+ APIServer, Goldmane, Whisker) rendered from an inventory is valid for Calico v3.32.1', () => {
    const objs = renderCalicoResources({
      pools: [
        {
          name: 'default-ipv4-ippool',
          cidr: '10.244.0.0/17',
          encapsulation: 'VXLANCrossSubnet',
          natOutgoing: 'Enabled',
          blockSize: 26,
          nodeSelector: 'all()',
        },
        {
          name: 'racksmith-pool-1',
          cidr: '10.244.128.0/17',
          encapsulation: 'IPIP',
          natOutgoing: 'Disabled',
          blockSize: 24,
          nodeSelector: "rack == 'b'",
        },
      ],
      bgp: 'Disabled',
      mtu: 8950,
      linuxDataplane: 'Iptables',
      nodeAddressAutodetectionV4: { kubernetes: 'NodeInternalIP' },
      registry: 'registry.local:5000',
      imagePullSecrets: ['mirror-pull'],
      apiServer: true,
      goldmane: true,
      whisker: true,
    });
    expect(objs.map((o) => o.kind)).toEqual(['Installation', 'APIServer', 'Goldmane', 'Whisker']);
    for (const o of objs) expect(check(calico, o)).toEqual([]);
  });

  it('the IPAddressPool and L2Advertisement (and BGP objects) rendered from an inventory are valid for MetalLB v0.16.1', () => {
    const l2 = renderMetallbConfig({
      mode: 'l2',
      pools: [{ name: 'rack-a', addresses: ['10.20.30.200-10.20.30.250', '10.20.31.0/27'], autoAssign: true, avoidBuggyIPs: true }],
      l2Interfaces: ['bond0'],
    });
    expect(l2.map((o) => o.kind)).toEqual(['IPAddressPool', 'L2Advertisement']);
    const bgp = renderMetallbConfig({
      mode: 'bgp',
      pools: [{ name: 'a', addresses: ['10.0.0.0/28'] }],
      peers: [{ name: 'tor', peerAddress: '10.0.0.1', peerASN: 64501, myASN: 64500, ebgpMultiHop: true, passwordSecret: 'bgp-pass' }],
    });
    for (const o of [...l2, ...bgp]) expect(check(metallb, o)).toEqual([]);
  });

  it.each([
    [
      'an unknown encapsulation',
      (i: any) => (i.spec.calicoNetwork.ipPools[0].encapsulation = 'GRE'),
      'spec.calicoNetwork.ipPools[0].encapsulation',
      /must be one of: IPIPCrossSubnet, IPIP, VXLAN, VXLANCrossSubnet, None/,
    ],
    [
      'a block size as a string',
      (i: any) => (i.spec.calicoNetwork.ipPools[0].blockSize = '26'),
      'spec.calicoNetwork.ipPools[0].blockSize',
      /must be integer/,
    ],
    [
      'a misspelt autodetection method',
      (i: any) => (i.spec.calicoNetwork.nodeAddressAutodetectionV4 = { interfaces: 'eth0' }),
      'spec.calicoNetwork.nodeAddressAutodetectionV4.interfaces',
      /not a field/,
    ],
    ['a pool without cidr', (i: any) => delete i.spec.calicoNetwork.ipPools[0].cidr, 'spec.calicoNetwork.ipPools[0].cidr', /required/],
    ['an unknown top-level spec field', (i: any) => (i.spec.calicoNetwerk = {}), 'spec.calicoNetwerk', /not a field/],
  ])('an Installation with %s is rejected at its path', (_, mutate, path, msg) => {
    const [inst] = renderCalicoResources({
      pools: [{ name: 'p', cidr: '10.244.0.0/16', encapsulation: 'VXLAN', natOutgoing: 'Enabled', blockSize: 26, nodeSelector: 'all()' }],
      apiServer: false,
      goldmane: false,
      whisker: false,
    });
    mutate(inst);
    const problems = check(calico, inst);
    expect(problems.map((p) => p.path)).toContain(path);
    expect(problems.find((p) => p.path === path)!.message).toMatch(msg);
  });

  it('rejects an IPAddressPool without addresses and an L2Advertisement with a wrong type', () => {
    const [pool, adv] = renderMetallbConfig({ mode: 'l2', pools: [{ name: 'a', addresses: ['10.0.0.0/28'] }] });
    delete (pool.spec as any).addresses;
    (adv.spec as any).ipAddressPools = 'a';
    expect(check(metallb, pool).map((p) => `${p.path} ${p.message}`)).toEqual(['spec.addresses is required']);
    expect(check(metallb, adv).map((p) => `${p.path} ${p.message}`)).toEqual(['spec.ipAddressPools must be array']);
  });

  it('pruning keeps what the object reaches and drops the rest', () => {
    const s = {
      type: 'object',
      properties: {
        a: { type: 'object', properties: { b: { type: 'string' }, c: { type: 'integer' } } },
        d: { type: 'string', description: 'x' },
      },
    };
    expect(pruneSchema(s, [{ a: { b: 'x' } }])).toEqual({
      type: 'object',
      properties: { a: { type: 'object', properties: { b: { type: 'string' } } } },
    });
  });
});

// ---------------------------------------------------------------------------------------------
// kube resources: probe parsing and diffs

const doc = (apiVersion: string, kind: string, name: string, namespace?: string): ManifestDoc => ({
  ref: { apiVersion, kind, name, ...(namespace ? { namespace } : {}) },
  text: '',
});
const DOCS = [
  doc('v1', 'Namespace', 'kube-flannel'),
  doc('rbac.authorization.k8s.io/v1', 'ClusterRole', 'flannel'),
  doc('v1', 'ConfigMap', 'kube-flannel-cfg', 'kube-flannel'),
  doc('apps/v1', 'DaemonSet', 'kube-flannel-ds', 'kube-flannel'),
];

describe('kubeApply: probe output → facts → changes', () => {
  it('converged: rc=0, no changes', () => {
    const f = parseKubeApplyProbe('rc=0\n== stderr\n', 0, '', false);
    expect(kubeApplyChanges(DOCS, f)).toEqual([]);
  });

  it('fresh cluster: the namespace is missing, so its objects are creations; cluster-scoped ones come from the diff', () => {
    const out = [
      'missing-namespace kube-flannel',
      'rc=1',
      '@@object rbac.authorization.k8s.io.v1.ClusterRole..flannel',
      '@@create',
      '@@object v1.Namespace..kube-flannel',
      '@@create',
      '== stderr',
      '',
    ].join('\n');
    const f = parseKubeApplyProbe(out, 0, '', false);
    expect(kubeApplyChanges(DOCS, f).map((c) => c.summary)).toEqual([
      'create Namespace kube-flannel',
      'create ClusterRole flannel',
      'create ConfigMap kube-flannel/kube-flannel-cfg',
      'create DaemonSet kube-flannel/kube-flannel-ds',
    ]);
  });

  // kubectl diff prints a differing object whole (a context longer than it) with its managedFields
  const configMapDiff = (owner: string) =>
    [
      '@@ -1,17 +1,17 @@',
      ' apiVersion: v1',
      ' data:',
      '   net-conf.json: |',
      '     {',
      '       "Network": "10.244.0.0/16",',
      '       "Backend": {',
      '-        "Type": "host-gw"',
      '+        "Type": "vxlan"',
      '       }',
      '     }',
      ' kind: ConfigMap',
      ' metadata:',
      '   managedFields:',
      '   - apiVersion: v1',
      '     fieldsV1:',
      '       f:data:',
      '         f:net-conf.json: {}',
      `     manager: ${owner}`,
      '     operation: Apply',
      '   name: kube-flannel-cfg',
      '   namespace: kube-flannel',
    ].join('\n');

  it('an update carries the hunks of the diff, without managedFields', () => {
    const f = parseKubeApplyProbe(
      `rc=1\n@@object v1.ConfigMap.kube-flannel.kube-flannel-cfg\n${configMapDiff('racksmith')}\n== stderr\n`,
      0,
      '',
      false,
    );
    const hunk =
      '@@ -4,7 +4,7 @@\n     {\n       "Network": "10.244.0.0/16",\n       "Backend": {\n-        "Type": "host-gw"\n+        "Type": "vxlan"\n       }\n     }\n kind: ConfigMap';
    expect(kubeApplyChanges(DOCS, f)).toEqual([{ summary: 'update ConfigMap kube-flannel/kube-flannel-cfg', diff: hunk }]);
  });

  it("a difference only in fields racksmith does not apply (another manager's) is no update", () => {
    const f = parseKubeApplyProbe(
      `rc=1\n@@object v1.ConfigMap.kube-flannel.kube-flannel-cfg\n${configMapDiff('someone-else')}\n== stderr\n`,
      0,
      '',
      false,
    );
    expect(kubeApplyChanges(DOCS, f)).toEqual([]);
    expect(f).toEqual(parseKubeApplyProbe('rc=0\n== stderr\n', 0, '', false)); // the facts of a converged cluster
  });

  it('a kubectl failure is a probe error with its message', () => {
    expect(() => parseKubeApplyProbe('rc=1\n== stderr\nerror: Unauthorized\n', 0, '', false)).toThrow(/Unauthorized/);
    // a warning on stderr next to a diff is not a failure: the diff is read
    expect(parseKubeApplyProbe('rc=1\n@@object v1.Namespace..x\n@@create\n== stderr\nWarning: deprecated\n', 0, '', false).objects).toEqual(
      {
        'v1.Namespace..x': { create: true, diff: '' },
      },
    );
    expect(() => parseKubeApplyProbe('rc=2\n== stderr\nerror: You must be logged in to the server (Unauthorized)\n', 0, '', false)).toThrow(
      /kubectl diff failed \(exit 2\): error: You must be logged in/,
    );
    expect(() => parseKubeApplyProbe('', 127, 'racksmith: kubectl not found on this host (set kube_kubectl)\n', false)).toThrow(ProbeError);
    expect(() => parseKubeApplyProbe('', 3, 'The connection to the server 10.0.0.1:6443 was refused', false)).toThrow(
      /cannot read the cluster: The connection to the server/,
    );
  });

  it('kinds not served yet (CRDs pending) are facts, not failures', () => {
    // kubectl uses exit > 1 for errors; an exit 1 without any diff but with an error counts as one too
    const f = parseKubeApplyProbe(
      'rc=1\n== stderr\nerror: resource mapping not found for name: "default" namespace: "" from "c.yaml": no matches for kind "Installation" in version "operator.tigera.io/v1"\n',
      0,
      '',
      false,
    );
    expect(f.unknownKind).toMatch(/no matches for kind/);
    const g = parseKubeApplyProbe(
      'rc=2\n== stderr\nerror: resource mapping not found for name: "default" namespace: "" from "c.yaml": no matches for kind "Installation" in version "operator.tigera.io/v1"\nensure CRDs are installed first\n',
      0,
      '',
      false,
    );
    expect(g.unknownKind).toMatch(/no matches for kind "Installation"/);
    expect(kubeApplyChanges([doc('operator.tigera.io/v1', 'Installation', 'default')], g)).toEqual([
      { summary: 'create Installation default (the API server does not serve its kind yet)' },
    ]);
  });

  it('a webhook that does not serve is a fact only for gated resources', () => {
    const out =
      'rc=1\n== exists\nipaddresspool.metallb.io/rack-a\n== stderr\nError from server (InternalError): Internal error occurred: failed calling webhook "ipaddresspoolvalidationwebhook.metallb.io": connect: connection refused\n'.replace(
        'rc=1',
        'rc=2',
      );
    expect(() => parseKubeApplyProbe(out, 0, '', false)).toThrow(/failed calling webhook/);
    const f = parseKubeApplyProbe(out, 0, '', true);
    expect(f.webhookError).toMatch(/failed calling webhook/);
    const docs = [
      doc('metallb.io/v1beta1', 'IPAddressPool', 'rack-a', 'metallb-system'),
      doc('metallb.io/v1beta1', 'L2Advertisement', 'racksmith-l2', 'metallb-system'),
    ];
    expect(kubeApplyChanges(docs, f).map((c) => c.summary)).toEqual([
      expect.stringMatching(/^verify IPAddressPool metallb-system\/rack-a once the admission webhook serves/),
      'create L2Advertisement metallb-system/racksmith-l2 once the admission webhook serves',
    ]);
  });
});

const CLUSTER: ClusterFacts = {
  podSubnets: ['10.244.0.0/16'],
  nodes: [
    { name: 'n1', podCIDR: '10.244.0.0/24' },
    { name: 'n2', podCIDR: '10.244.1.0/24' },
  ],
  daemonSets: ['kube-system/kube-proxy'],
  kubeProxyMode: 'iptables',
};

describe('cluster guard: the pod network agrees with the inventory', () => {
  const flannel = { cni: 'flannel' as const, podCidr: '10.244.0.0/16', flannel: { network: '10.244.0.0/16', backend: 'vxlan' } };
  const calico = (cidr: string, podCidr = '10.244.0.0/16') => ({
    cni: 'calico' as const,
    podCidr,
    calicoPools: [{ name: 'default-ipv4-ippool', cidr }],
  });

  it.each([
    ['flannel on a matching kubeadm cluster', flannel, CLUSTER, []],
    ['flannel, kubeadm without podSubnet but nodes with podCIDRs', flannel, { ...CLUSTER, podSubnets: [] }, []],
    ['flannel, no kubeadm-config at all', flannel, { ...CLUSTER, podSubnets: null }, []],
    [
      'flannel, inventory CIDR differs from kubeadm',
      { ...flannel, podCidr: '10.99.0.0/16', flannel: { network: '10.99.0.0/16', backend: 'vxlan' } },
      CLUSTER,
      [
        /kube_pod_cidr 10\.99\.0\.0\/16 differs from the cluster's pod CIDR 10\.244\.0\.0\/16/,
        /nodes have pod CIDRs outside kube_pod_cidr 10\.99\.0\.0\/16: n1 10\.244\.0\.0\/24, n2 10\.244\.1\.0\/24/,
      ],
    ],
    [
      'flannel, nodes without podCIDR',
      flannel,
      { ...CLUSTER, podSubnets: [], nodes: [{ name: 'n1', podCIDR: '' }] },
      [/no node has a spec\.podCIDR .* --pod-network-cidr=10\.244\.0\.0\/16/],
    ],
    [
      'flannel running with another Network',
      flannel,
      { ...CLUSTER, flannelNetConf: '{"Network": "10.245.0.0/16", "Backend": {"Type": "vxlan"}}' },
      [/flannel runs with Network 10\.245\.0\.0\/16/],
    ],
    [
      'flannel running with another backend',
      flannel,
      { ...CLUSTER, flannelNetConf: '{"Network": "10.244.0.0/16", "Backend": {"Type": "host-gw"}}' },
      [/backend host-gw.*must not be changed at runtime/],
    ],
    [
      'flannel while Calico runs',
      flannel,
      { ...CLUSTER, daemonSets: ['calico-system/calico-node'] },
      [/another CNI runs in this cluster \(calico: DaemonSet calico-system\/calico-node\)/],
    ],
    ['calico pool inside the pod CIDR', calico('10.244.0.0/17'), CLUSTER, []],
    [
      'calico pool outside the pod CIDR',
      calico('10.50.0.0/16', '10.50.0.0/16'),
      CLUSTER,
      [
        /Calico IP pool default-ipv4-ippool \(10\.50\.0\.0\/16\) is outside the cluster's pod network 10\.244\.0\.0\/16/,
        /kube_pod_cidr 10\.50\.0\.0\/16 differs/,
      ],
    ],
    [
      'calico pool whose CIDR would change',
      calico('10.244.0.0/17'),
      { ...CLUSTER, calicoPools: [{ name: 'default-ipv4-ippool', cidr: '10.244.0.0/16' }] },
      [/already exists with CIDR 10\.244\.0\.0\/16, not 10\.244\.0\.0\/17: a pool's CIDR cannot be modified/],
    ],
    [
      'calico while flannel runs',
      calico('10.244.0.0/16'),
      { ...CLUSTER, daemonSets: ['kube-flannel/kube-flannel-ds'] },
      [/another CNI runs in this cluster \(flannel/],
    ],
    [
      'an inventory proxy mode the cluster does not run',
      { ...flannel, kubeProxyMode: 'ipvs' },
      CLUSTER,
      [/kube_proxy_mode is ipvs but kube-proxy runs in iptables mode/],
    ],
    ["kube-proxy's empty mode means iptables", { ...flannel, kubeProxyMode: 'iptables' }, { ...CLUSTER, kubeProxyMode: '' }, []],
  ] as Array<[string, any, ClusterFacts, RegExp[]]>)('%s', (_, o, facts, want) => {
    const problems = clusterProblems(o, facts);
    expect(problems).toHaveLength(want.length);
    want.forEach((re, i) => expect(problems[i]).toMatch(re));
  });

  it('parses the probe sections', () => {
    const out = [
      '== kubeadm',
      'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.244.0.0/16,fd00::/56\n  serviceSubnet: 10.96.0.0/12',
      '== nodes',
      'n1\t10.244.0.0/24',
      'n2\t',
      '== daemonsets',
      'kube-system/kube-proxy',
      '== flannel',
      '',
      '== calico',
      '[{"name":"default-ipv4-ippool","cidr":"10.244.0.0/16"}]',
      '== kube-proxy',
      'kind: KubeProxyConfiguration\nmode: ipvs\n',
    ].join('\n');
    expect(parseClusterProbe(out)).toEqual({
      podSubnets: ['10.244.0.0/16', 'fd00::/56'],
      nodes: [
        { name: 'n1', podCIDR: '10.244.0.0/24' },
        { name: 'n2', podCIDR: '' },
      ],
      daemonSets: ['kube-system/kube-proxy'],
      calicoPools: [{ name: 'default-ipv4-ippool', cidr: '10.244.0.0/16' }],
      kubeProxyMode: 'ipvs',
    });
    expect(() => parseClusterProbe('== kubeadm\n')).toThrow(ProbeError);
  });
});

describe('kube-proxy strictARP', () => {
  const config = (mode: string, strict: boolean) =>
    `apiVersion: kubeproxy.config.k8s.io/v1alpha1\nipvs:\n  scheduler: ""\n  strictARP: ${strict}\n  syncPeriod: 0s\nkind: KubeProxyConfiguration\nmode: ${mode}\n`;
  const facts = (mode: string, strict: boolean) =>
    parseStrictArpProbe(JSON.stringify({ metadata: { resourceVersion: '7' }, data: { 'config.conf': config(mode, strict) } }));

  it('needed in IPVS mode: a change with the config diff when allowed, a refusal otherwise', () => {
    const [c] = strictArpChanges(facts('ipvs', false), true);
    expect(c.summary).toBe('kube-system/kube-proxy config.conf: ipvs.strictARP false → true (kube-proxy is restarted)');
    expect(c.diff).toContain('-  strictARP: false\n+  strictARP: true');
    expect(() => strictArpChanges(facts('ipvs', false), false)).toThrow(Refusal);
    expect(() => strictArpChanges(facts('ipvs', false), false)).toThrow(/metallb_allow_strict_arp: true/);
  });

  it.each([
    ['already set', facts('ipvs', true)],
    ['iptables mode', facts('iptables', false)],
    ['nftables mode', facts('nftables', false)],
    ['no kube-proxy ConfigMap', parseStrictArpProbe('')],
  ])('not needed: %s', (_, f) => {
    expect(strictArpChanges(f, false)).toEqual([]);
  });

  it('edits only ipvs.strictARP, keeping the rest of the document', () => {
    expect(withStrictArp(config('ipvs', false))).toBe(config('ipvs', true));
    expect(withStrictArp('kind: KubeProxyConfiguration\nmode: ipvs\n')).toBe(
      'kind: KubeProxyConfiguration\nmode: ipvs\nipvs:\n  strictARP: true\n',
    );
  });
});

describe('CNI plugins and configs on the host', () => {
  const SHA = 'a'.repeat(64);
  const push = { kind: 'push' as const, bytes: Buffer.from(''), origin: '/m/cni.tgz' };
  const o = { version: 'v1.8.0', required: ['bridge', 'portmap'], tarballs: [{ arch: 'amd64', sha256: SHA, source: push }] };
  const installed = (files: Record<string, number>, live: Record<string, number | null> = files): CniPluginsFacts => ({
    arch: 'x86_64',
    marker: { version: 'v1.8.0', sha256: SHA, files },
    live,
    curl: false,
    wget: false,
  });

  it('parses the probe', () => {
    const out =
      'arch aarch64\ntools curl=no wget=yes\n== marker\nversion v1.8.0\nsha256 ' +
      SHA +
      '\nfile bridge 10\nfile portmap 20\n== live\nbridge 10\nportmap -\n';
    expect(parseCniPluginsProbe(out)).toEqual({
      arch: 'aarch64',
      marker: { version: 'v1.8.0', sha256: SHA, files: { bridge: 10, portmap: 20 } },
      live: { bridge: 10, portmap: null },
      curl: false,
      wget: true,
    });
  });

  it.each([
    [
      'nothing installed',
      { arch: 'x86_64', live: { bridge: null, portmap: null }, curl: false, wget: false },
      ['install CNI plugins v1.8.0 into /opt/cni/bin (from /m/cni.tgz)'],
    ],
    [
      'another version installed',
      { ...installed({ bridge: 1 }), marker: { version: 'v1.7.1', sha256: 'b'.repeat(64), files: { bridge: 1 } } },
      ['replace CNI plugins v1.7.1 → v1.8.0 in /opt/cni/bin (from /m/cni.tgz)'],
    ],
    ['converged', installed({ bridge: 10, portmap: 20 }), []],
    [
      'a plugin deleted, another replaced',
      installed({ bridge: 10, portmap: 20 }, { bridge: 11, portmap: null }),
      ['reinstall CNI plugins v1.8.0 in /opt/cni/bin: bridge changed (10 → 11 bytes), portmap missing'],
    ],
  ] as Array<[string, CniPluginsFacts, string[]]>)('%s', (_, f, want) => {
    expect(cniPluginsChanges(o, '/opt/cni/bin', f).map((c) => c.summary)).toEqual(want);
  });

  // Calico's install-cni copies its own builds of these over the tarball's at every start
  const calico = { ...o, sharedWithCni: { cni: 'calico', plugins: ['host-local', 'portmap'] } };
  it.each([
    ["calico's builds of shared plugins: converged", installed({ bridge: 10, portmap: 20 }, { bridge: 10, portmap: 37 }), []],
    [
      'a shared plugin missing is put back; what the CNI installed is said to stay',
      installed({ bridge: 10, portmap: 20, 'host-local': 30 }, { bridge: 10, portmap: null, 'host-local': 31 }),
      [
        "reinstall CNI plugins v1.8.0 in /opt/cni/bin: portmap missing; leaves host-local as they are (calico's DaemonSet installs its own builds of them)",
      ],
    ],
    [
      'a plugin of the tarball only still counts when changed',
      installed({ bridge: 10, portmap: 20 }, { bridge: 11, portmap: 37 }),
      [
        "reinstall CNI plugins v1.8.0 in /opt/cni/bin: bridge changed (10 → 11 bytes); leaves portmap as they are (calico's DaemonSet installs its own builds of them)",
      ],
    ],
    [
      'a first install on a node where calico-node already ran',
      { arch: 'x86_64', live: { bridge: null, portmap: 37, 'host-local': 31 }, curl: false, wget: false },
      [
        "install CNI plugins v1.8.0 into /opt/cni/bin (from /m/cni.tgz); leaves host-local, portmap as they are (calico's DaemonSet installs its own builds of them)",
      ],
    ],
  ] as Array<[string, CniPluginsFacts, string[]]>)('%s', (_, f, want) => {
    expect(cniPluginsChanges(calico, '/opt/cni/bin', f).map((c) => c.summary)).toEqual(want);
  });

  describe("the tarball of the host's architecture", () => {
    const AMD = { arch: 'amd64', sha256: 'a'.repeat(64), source: push };
    const ARM = { arch: 'arm64', sha256: 'b'.repeat(64), source: { ...push, origin: '/m/arm.tgz' } };
    it.each<[string, string | undefined]>([
      ['x86_64', 'amd64'],
      ['aarch64', 'arm64'],
      ['armv7l', 'arm'],
      ['ppc64le', 'ppc64le'],
      ['s390x', 's390x'],
      ['riscv64', 'riscv64'],
      ['i686', undefined],
      ['', undefined],
      ['constructor', undefined],
    ])('uname -m %j is %j in upstream file names', (machine, want) => expect(goArch(machine)).toBe(want));

    it.each<[string, string, Array<typeof AMD>, string | RegExp]>([
      ['x86_64 takes amd64 of both', 'x86_64', [AMD, ARM], 'amd64'],
      ['aarch64 (GH200) takes arm64 of both', 'aarch64', [AMD, ARM], 'arm64'],
      ['x86_64 with the one amd64 tarball', 'x86_64', [AMD], 'amd64'],
      [
        'aarch64 with only the amd64 tarball: refused',
        'aarch64',
        [AMD],
        'this host is aarch64 (arm64), the CNI plugins tarball v1.8.0 is for amd64: its plugins would fail every pod here with "exec format error"; nothing written. Set cni_plugins_arch: arm64 for this host\'s group, with cni_plugins_src and cni_plugins_sha256 of cni-plugins-linux-arm64-v1.8.0.tgz (or leave all three unset for the pinned tarball of each host\'s architecture)',
      ],
      [
        'x86_64 with only an arm64 tarball: refused',
        'x86_64',
        [ARM],
        /^this host is x86_64 \(amd64\), the CNI plugins tarball v1\.8\.0 is for arm64/,
      ],
      [
        'a machine without a build: refused',
        'i686',
        [AMD, ARM],
        /^this host is i686, which has no CNI plugins build \(the CNI plugins tarball is for amd64, arm64\)/,
      ],
      ['no answer: refused', '', [AMD], /^cannot tell this host's architecture/],
    ])('%s', (_, machine, tarballs, want) => {
      if (typeof want === 'string' && !want.includes(' ')) expect(pickCniTarball('v1.8.0', tarballs, machine).arch).toBe(want);
      else {
        expect(() => pickCniTarball('v1.8.0', tarballs, machine)).toThrow(Refusal);
        expect(() => pickCniTarball('v1.8.0', tarballs, machine)).toThrow(want);
      }
    });

    it('the changes: an amd64 install on an arm64 host is replaced by the arm64 tarball; without one, refused before any change', () => {
      const both = { ...o, tarballs: [AMD, ARM] };
      const amdInstalled: CniPluginsFacts = { ...installed({ bridge: 10, portmap: 20 }), arch: 'aarch64' };
      expect(cniPluginsChanges(both, '/opt/cni/bin', amdInstalled).map((c) => c.summary)).toEqual([
        'replace CNI plugins v1.8.0 → v1.8.0 in /opt/cni/bin (from /m/arm.tgz)',
      ]);
      expect(() => cniPluginsChanges({ ...o, tarballs: [AMD] }, '/opt/cni/bin', amdInstalled)).toThrow(/exec format error/);
      expect(() => cniPluginsChanges({ ...o, tarballs: [AMD] }, '/opt/cni/bin', { ...amdInstalled, marker: undefined })).toThrow(
        /exec format error/,
      );
      // a lazy source (the controller's download) is asked only for the host's own architecture
      let asked = '';
      const lazy = (t: typeof AMD) => ({ ...t, source: () => ((asked += t.arch), t.source) });
      cniPluginsChanges({ ...o, tarballs: [lazy(AMD), lazy(ARM)] }, '/opt/cni/bin', { ...amdInstalled, marker: undefined });
      expect(asked).toBe('arm64');
    });
  });

  it('refuses a tarball without a required plugin, and a host download without curl or wget', () => {
    expect(() => cniPluginsChanges(o, '/opt/cni/bin', installed({ bridge: 10 }))).toThrow(/has no portmap/);
    const url = { ...o, tarballs: [{ ...o.tarballs[0], source: { kind: 'url' as const, url: 'http://mirror/cni.tgz' } }] };
    expect(() => cniPluginsChanges(url, '/opt/cni/bin', { arch: 'x86_64', live: {}, curl: false, wget: false })).toThrow(
      /neither curl nor wget/,
    );
    expect(cniPluginsChanges(url, '/opt/cni/bin', { arch: 'x86_64', live: {}, curl: true, wget: false })).toHaveLength(1);
  });

  it.each([
    ['flannel', ['10-flannel.conflist'], false, []],
    ['calico', ['10-calico.conflist', 'calico-kubeconfig'], false, []],
    [
      'flannel',
      ['10-calico.conflist', '10-flannel.conflist', 'calico-kubeconfig'],
      true,
      ['move stale /etc/cni/net.d/10-calico.conflist (calico) to /etc/cni/net.d.racksmith-stale/'],
    ],
    [
      'calico',
      ['10-containerd-net.conflist'],
      true,
      ["move stale /etc/cni/net.d/10-containerd-net.conflist (containerd's example bridge) to /etc/cni/net.d.racksmith-stale/"],
    ],
  ] as Array<['flannel' | 'calico', string[], boolean, string[]]>)('%s with %j (remove: %s)', (cni, files, removeStale, want) => {
    expect(cniConfChanges({ cni, removeStale }, '/etc/cni/net.d', { files }).map((c) => c.summary)).toEqual(want);
  });

  it('refuses a stale config unless allowed to move it', () => {
    expect(() => cniConfChanges({ cni: 'calico', removeStale: false }, '/etc/cni/net.d', { files: ['10-flannel.conflist'] })).toThrow(
      /stale CNI config in \/etc\/cni\/net\.d: \/etc\/cni\/net\.d\/10-flannel\.conflist \(flannel\)/,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// inventory validation

function ctx(vars: Record<string, unknown>): HostContext {
  const varSources = Object.fromEntries(Object.keys(vars).map((k, i) => [k, { file: 'inv.yaml', line: i + 1, col: 3 }]));
  const host: Host = {
    name: 'n1',
    vars,
    varSources,
    templated: {},
    groups: ['all'],
    connection: { kind: 'ssh', address: 'n1' },
    pos: { file: 'inv.yaml' },
  };
  return new HostContext(host, [host]);
}
const settingsError = (vars: Record<string, unknown>): string => {
  try {
    kubeSettings(ctx(vars));
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error('no error');
};

describe('inventory variables', () => {
  const ok = { kube_cni: 'flannel', kube_pod_cidr: '10.244.0.0/16' };

  it('defaults: upstream manifests, pinned CNI plugins pushed by the controller', () => {
    const s = kubeSettings(ctx(ok));
    expect(s.manifests.map((m) => m.sources[0])).toEqual([
      'https://github.com/flannel-io/flannel/releases/download/v0.28.9/kube-flannel.yml',
    ]);
    expect(s.modules).toEqual(['overlay', 'br_netfilter']);
    // one pinned tarball per architecture: each host takes its own (not amd64 everywhere)
    expect(s.cniPlugins).toMatchObject({
      version: 'v1.8.0',
      tarballs: [
        {
          arch: 'amd64',
          sha256: 'ab3bda535f9d90766cccc90d3dddb5482003dd744d7f22bcf98186bf8eea8be6',
          source: {
            fetch: 'controller',
            src: 'https://github.com/containernetworking/plugins/releases/download/v1.8.0/cni-plugins-linux-amd64-v1.8.0.tgz',
          },
        },
        {
          arch: 'arm64',
          sha256: '57ce466fc3b79db1f19b8f4c63e07a1112306efa53c94fe810a2150dd9e07ddb',
          source: {
            fetch: 'controller',
            src: 'https://github.com/containernetworking/plugins/releases/download/v1.8.0/cni-plugins-linux-arm64-v1.8.0.tgz',
          },
        },
      ],
    });
    expect(s.metallb.enabled).toBe(false);
    expect(s.kubeconfig).toBe('/etc/kubernetes/admin.conf');
  });

  it('mirror directory and HTTP mirror layouts', () => {
    expect(kubeSettings(ctx({ ...ok, kube_manifest_dir: '/srv/m' })).manifests[0].sources).toEqual([
      '/srv/m/flannel-v0.28.9/kube-flannel.yml',
    ]);
    expect(kubeSettings(ctx({ ...ok, kube_manifest_base_url: 'http://mirror/k8s/' })).manifests[0].sources).toEqual([
      'http://mirror/k8s/flannel-v0.28.9/kube-flannel.yml',
    ]);
  });

  it('calico pools default to the pod CIDR; IPVS adds its modules', () => {
    const s = kubeSettings(
      ctx({ ...ok, kube_cni: 'calico', kube_proxy_mode: 'ipvs', metallb_pools: [{ name: 'a', addresses: ['10.0.0.0/28'] }] }),
    );
    expect(s.calico.pools).toEqual([
      {
        name: 'default-ipv4-ippool',
        cidr: '10.244.0.0/16',
        encapsulation: 'VXLANCrossSubnet',
        natOutgoing: 'Enabled',
        blockSize: 26,
        nodeSelector: 'all()',
      },
    ]);
    expect(s.modules).toEqual(['overlay', 'br_netfilter', 'ip_vs', 'ip_vs_rr', 'ip_vs_wrr', 'ip_vs_sh', 'nf_conntrack']);
    expect(s.manifests.map((m) => `${m.pin.component}/${m.pin.file}`)).toEqual([
      'calico/operator-crds.yaml',
      'calico/tigera-operator.yaml',
      'metallb/metallb-native.yaml',
    ]);
  });

  it.each([
    [{ kube_pod_cidr: '10.244.0.0/16' }, /inv\.yaml: n1: kube_cni is required/],
    [{ kube_cni: 'cilium', kube_pod_cidr: '10.244.0.0/16' }, /kube_cni must be one of: flannel, calico/],
    [{ kube_cni: 'flannel' }, /kube_pod_cidr is required/],
    [{ ...ok, kube_pod_cidr: '10.244.0.0' }, /inv\.yaml:2:3: n1: kube_pod_cidr: '10\.244\.0\.0' is not a CIDR/],
    [{ ...ok, kube_pod_cidr: 'fd00::/56' }, /IPv6 and dual-stack pod networks are not supported/],
    [
      { ...ok, metallb_pools: [{ name: 'a', addresses: ['10.0.0.0/33'] }] },
      /inv\.yaml:3:3: n1: metallb_pools\[0\]\.addresses\[0\]: '10\.0\.0\.0\/33' is not a valid CIDR/,
    ],
    [{ ...ok, metallb_pools: [{ name: 'a', addresses: ['10.244.5.0/28'] }] }, /overlaps the pod network 10\.244\.0\.0\/16/],
    [{ ...ok, metallb_pools: [{ name: 'A_B', addresses: ['10.0.0.0/28'] }] }, /metallb_pools\.0\.name must match pattern/],
    [{ ...ok, metallb_enabled: true }, /metallb_pools is empty/],
    [
      { ...ok, metallb_pools: [{ name: 'a', addresses: ['10.0.0.0/28'] }], metallb_mode: 'bgp' },
      /metallb_mode bgp needs metallb_bgp_peers/,
    ],
    [
      {
        ...ok,
        metallb_pools: [{ name: 'a', addresses: ['10.0.0.0/28'] }],
        metallb_mode: 'bgp',
        metallb_bgp_peers: [{ name: 'r', peer_address: 'router', peer_asn: 1, my_asn: 2 }],
      },
      /peer_address: 'router' is not an IP address/,
    ],
    [
      { ...ok, kube_cni: 'calico', calico_ip_pools: [{ cidr: '10.245.0.0/16' }] },
      /calico_ip_pools\[0\]\.cidr: 10\.245\.0\.0\/16 is outside kube_pod_cidr 10\.244\.0\.0\/16/,
    ],
    [
      { ...ok, kube_cni: 'calico', calico_ip_pools: [{ cidr: '10.244.0.0/17' }, { cidr: '10.244.0.0/18' }] },
      /overlaps calico_ip_pools\[0\]/,
    ],
    [{ ...ok, kube_cni: 'calico', calico_ip_pools: [{ cidr: '10.244.0.0/16', block_size: 8 }] }, /block_size: 8 must be between 20 and 32/],
    [
      { ...ok, flannel_version: 'v0.29.0' },
      /flannel v0\.29\.0: no pinned sha256 for kube-flannel\.yml; pin it in kube_manifest_pins as 'flannel-v0\.29\.0\/kube-flannel\.yml/,
    ],
    [{ ...ok, cni_plugins_version: 'v1.9.1' }, /CNI plugins v1\.9\.1: no pinned sha256; set cni_plugins_arch and cni_plugins_sha256/],
    [
      { ...ok, cni_plugins_version: 'v1.9.1', cni_plugins_arch: 'arm64' },
      /CNI plugins v1\.9\.1 for arm64: no pinned sha256; set cni_plugins_sha256/,
    ],
    [
      { ...ok, cni_plugins_src: '/m/cni.tgz', cni_plugins_sha256: 'a'.repeat(64) },
      /name one tarball, of one architecture: set cni_plugins_arch/,
    ],
    [{ ...ok, cni_plugins_sha256: 'a'.repeat(64) }, /set cni_plugins_arch/],
    [
      { ...ok, cni_plugins_arch: 'arm64', cni_plugins_src: '/m/cni-plugins-linux-amd64-v1.8.0.tgz' },
      /cni_plugins_arch is arm64, but cni_plugins_src \/m\/cni-plugins-linux-amd64-v1\.8\.0\.tgz is the amd64 tarball/,
    ],
    [{ ...ok, cni_plugins_fetch: 'host', cni_plugins_src: 'cni.tgz' }, /use an http\(s\) URL or an absolute path on the host/],
    [{ ...ok, kube_manifest_pins: { 'flannel-v1/x.yml': { sha256: 'nope' } } }, /kube_manifest_pins/],
  ])('%j → %s', (vars, msg) => expect(settingsError(vars as Record<string, unknown>)).toMatch(msg));

  it.each<[string, Record<string, unknown>, Array<{ arch: string; sha256: string }>]>([
    [
      'cni_plugins_arch alone: its pinned tarball',
      { cni_plugins_arch: 'arm64' },
      [{ arch: 'arm64', sha256: '57ce466fc3b79db1f19b8f4c63e07a1112306efa53c94fe810a2150dd9e07ddb' }],
    ],
    [
      'an upstream-named mirror file: its architecture from the name, the pin of it',
      { cni_plugins_src: '/m/cni-plugins-linux-arm64-v1.8.0.tgz' },
      [{ arch: 'arm64', sha256: '57ce466fc3b79db1f19b8f4c63e07a1112306efa53c94fe810a2150dd9e07ddb' }],
    ],
    [
      'any file with its architecture and checksum said',
      { cni_plugins_src: '/m/cni.tgz', cni_plugins_arch: 'arm64', cni_plugins_sha256: 'c'.repeat(64) },
      [{ arch: 'arm64', sha256: 'c'.repeat(64) }],
    ],
  ])('CNI plugins: %s', (_, vars, want) => {
    expect(kubeSettings(ctx({ ...ok, ...vars })).cniPlugins.tarballs.map(({ arch, sha256 }) => ({ arch, sha256 }))).toEqual(want);
  });

  it('several problems are reported together', () => {
    const msg = settingsError({
      ...ok,
      kube_cni: 'calico',
      calico_ip_pools: [{ cidr: '10.1.0.0/16' }],
      metallb_pools: [{ name: 'a', addresses: ['x'] }],
    });
    expect(msg).toMatch(/calico_ip_pools\[0\]\.cidr/);
    expect(msg).toMatch(/metallb_pools\[0\]\.addresses\[0\]/);
  });
});

it('printObjects round-trips through parseObjects', () => {
  const objs = parseObjects(text('flannel-v0.28.9/kube-flannel.yml'));
  expect(parseObjects(printObjects(objs))).toEqual(objs);
  expect(displayName({ apiVersion: 'v1', kind: 'Namespace', name: 'x' })).toBe('Namespace x');
});

describe('plan-time checks of issue #23: MetalLB pools for AIS external access, CNI MTU against the host MTU', () => {
  const ok = { kube_cni: 'flannel', kube_pod_cidr: '10.244.0.0/16' };
  const pools = (addresses: string[]) => ({ metallb_pools: [{ name: 'ais', addresses }] });

  it.each<[string, Record<string, unknown>, RegExp | undefined]>([
    ['4 targets, 5 addresses', { ...pools(['10.0.0.1-10.0.0.5']), ais_external_lb: true, ais_targets: 4 }, undefined],
    [
      '4 targets, 4 addresses: refused with the numbers',
      { ...pools(['10.0.0.1-10.0.0.2', '10.0.1.0/31']), ais_external_lb: true, ais_targets: 4 },
      /inv.yaml:3:3: n1: metallb_pools hold 4 addresses; AIS external access \(ais_external_lb\) needs one per target plus one for the proxy: 4 targets \+ 1 = 5/,
    ],
    ['off: no check', { ...pools(['10.0.0.1-10.0.0.1']), ais_targets: 4 }, undefined],
    ['on without MetalLB', { ais_external_lb: true }, /ais_external_lb needs MetalLB/],
    ['flannel vxlan 8950 on 9000 hosts', { nic_mtu: [{ name: 'eth0', mtu: 9000 }], flannel_mtu: 8950 }, undefined],
    [
      'flannel vxlan 8980 on 9000 hosts: refused',
      { nic_mtu: [{ name: 'eth0', mtu: 9000 }], flannel_mtu: 8980 },
      /flannel_mtu 8980 does not fit the host MTU 9000 minus 50 bytes of vxlan encapsulation \(at most 8950\)/,
    ],
    ['host-gw: no overhead', { kube_host_mtu: 9000, flannel_backend: 'host-gw', flannel_mtu: 9000 }, undefined],
    [
      'calico IPIP pool 8990 on 9000 (ais-k8s says host - 20)',
      { kube_cni: 'calico', kube_host_mtu: 9000, calico_mtu: 8990, calico_ip_pools: [{ cidr: '10.244.0.0/16', encapsulation: 'IPIP' }] },
      /calico_mtu 8990 does not fit the host MTU 9000 minus 20 bytes of IPIP encapsulation \(at most 8980\)/,
    ],
    ['no host MTU known: no check', { flannel_mtu: 9000 }, undefined],
  ])('%s', (_, vars, want) => {
    if (want) expect(settingsError({ ...ok, ...vars })).toMatch(want);
    else expect(() => kubeSettings(ctx({ ...ok, ...vars }))).not.toThrow();
  });

  it('AIS targets default to the inventory hosts in storage', () => {
    const mk = (name: string, groups: string[], vars: Record<string, unknown> = {}): Host => ({
      name,
      vars,
      varSources: {},
      templated: {},
      groups,
      connection: { kind: 'ssh', address: name },
      pos: { file: 'inv.yaml' },
    });
    const vars = { ...ok, ...pools(['10.0.0.1-10.0.0.2']), ais_external_lb: true };
    const host = mk('cp', ['all'], vars);
    const all = [host, mk('s1', ['all', 'storage']), mk('s2', ['all', 'storage'])];
    expect(() => kubeSettings(new HostContext(host, all))).toThrow(/2 targets \+ 1 = 3/);
  });
});
