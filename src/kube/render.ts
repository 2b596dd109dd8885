/**
 * Rendering: upstream manifests with the inventory's settings applied, and the custom resources
 * racksmith writes (Calico Installation, MetalLB pools and advertisements). Pure functions over
 * parsed objects; the input objects are never modified.
 */
import type { KubeObject } from './objects.ts';

const clone = <T>(v: T): T => structuredClone(v);

type Container = { name: string; image?: string; args?: string[] };
type PodSpec = { containers?: Container[]; initContainers?: Container[] };

function podSpecOf(o: KubeObject): PodSpec | undefined {
  const spec = o.spec as { template?: { spec?: PodSpec } } | undefined;
  return spec?.template?.spec;
}

/**
 * Point every container image at a mirror registry: `ghcr.io/flannel-io/flannel:v0.28.9` with
 * registry `registry.local:5000` becomes `registry.local:5000/flannel-io/flannel:v0.28.9` (the
 * mirror keeps the upstream repository paths; the registry may carry a path prefix).
 */
export function mirrorImage(image: string, registry: string): string {
  const reg = registry.replace(/\/+$/, '');
  const first = image.split('/')[0];
  const hasHost = image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  const path = hasHost ? image.slice(first.length + 1) : image.includes('/') ? image : `library/${image}`;
  return `${reg}/${path}`;
}

export function rewriteImages(objs: KubeObject[], registry: string | undefined): KubeObject[] {
  if (!registry) return objs;
  return objs.map((o) => {
    const ps = podSpecOf(o);
    if (!ps) return o;
    const c = clone(o);
    const cps = podSpecOf(c)!;
    for (const ct of [...(cps.containers ?? []), ...(cps.initContainers ?? [])]) if (ct.image) ct.image = mirrorImage(ct.image, registry);
    return c;
  });
}

// ---------------------------------------------------------------------------------------------
// Flannel

export interface FlannelSettings {
  /** net-conf.json Network: the cluster's pod CIDR. */
  network: string;
  backend: string;
  vni?: number;
  port?: number;
  directRouting?: boolean;
  mtu?: number;
  /** flanneld --iface / --iface-regex / --iface-can-reach (multi-NIC hosts). */
  iface?: string[];
  ifaceRegex?: string[];
  ifaceCanReach?: string;
  registry?: string;
}

/** The flannel network config as racksmith renders it (also what the cluster guard compares against). */
export function flannelNetConf(upstream: string | undefined, s: FlannelSettings): Record<string, unknown> {
  let base: Record<string, unknown>;
  try {
    base = upstream ? (JSON.parse(upstream) as Record<string, unknown>) : {};
  } catch {
    base = {};
  }
  const backend: Record<string, unknown> = { Type: s.backend };
  if (s.vni !== undefined) backend.VNI = s.vni;
  if (s.port !== undefined) backend.Port = s.port;
  if (s.directRouting !== undefined) backend.DirectRouting = s.directRouting;
  if (s.mtu !== undefined) backend.MTU = s.mtu;
  return { ...base, Network: s.network, Backend: backend };
}

export function renderFlannel(objs: KubeObject[], s: FlannelSettings): KubeObject[] {
  const out = objs.map((o) => {
    if (o.kind === 'ConfigMap' && o.metadata.name === 'kube-flannel-cfg') {
      const c = clone(o);
      const data = (c.data ?? {}) as Record<string, string>;
      data['net-conf.json'] = JSON.stringify(flannelNetConf(data['net-conf.json'], s), null, 2) + '\n';
      c.data = data;
      return c;
    }
    if (o.kind === 'DaemonSet' && o.metadata.name === 'kube-flannel-ds') {
      const extra = [
        ...(s.iface ?? []).map((i) => `--iface=${i}`),
        ...(s.ifaceRegex ?? []).map((i) => `--iface-regex=${i}`),
        ...(s.ifaceCanReach ? [`--iface-can-reach=${s.ifaceCanReach}`] : []),
      ];
      if (!extra.length) return o;
      const c = clone(o);
      const main = podSpecOf(c)?.containers?.find((x) => x.name === 'kube-flannel');
      if (main) main.args = [...(main.args ?? []), ...extra];
      return c;
    }
    return o;
  });
  return rewriteImages(out, s.registry);
}

// ---------------------------------------------------------------------------------------------
// Calico (operator)

export interface CalicoPool {
  name: string;
  cidr: string;
  encapsulation: string;
  natOutgoing: 'Enabled' | 'Disabled';
  blockSize: number;
  nodeSelector: string;
}

export interface CalicoSettings {
  pools: CalicoPool[];
  bgp?: 'Enabled' | 'Disabled';
  mtu?: number;
  linuxDataplane?: string;
  /** Installation.spec.calicoNetwork.nodeAddressAutodetectionV4, e.g. {kubernetes: NodeInternalIP}. */
  nodeAddressAutodetectionV4?: Record<string, unknown>;
  /** Mirror registry for air-gapped racks; Installation.spec.registry gets a trailing '/'. */
  registry?: string;
  imagePullSecrets?: string[];
  apiServer: boolean;
  goldmane: boolean;
  whisker: boolean;
}

export function renderCalicoOperator(objs: KubeObject[], registry: string | undefined): KubeObject[] {
  return rewriteImages(objs, registry);
}

/** The operator custom resources: Installation `default` (+ APIServer, Goldmane, Whisker). */
export function renderCalicoResources(s: CalicoSettings): KubeObject[] {
  const calicoNetwork: Record<string, unknown> = {};
  if (s.bgp) calicoNetwork.bgp = s.bgp;
  if (s.mtu !== undefined) calicoNetwork.mtu = s.mtu;
  if (s.linuxDataplane) calicoNetwork.linuxDataplane = s.linuxDataplane;
  if (s.nodeAddressAutodetectionV4) calicoNetwork.nodeAddressAutodetectionV4 = clone(s.nodeAddressAutodetectionV4);
  calicoNetwork.ipPools = s.pools.map((p) => ({
    name: p.name,
    cidr: p.cidr,
    blockSize: p.blockSize,
    encapsulation: p.encapsulation,
    natOutgoing: p.natOutgoing,
    nodeSelector: p.nodeSelector,
  }));
  const spec: Record<string, unknown> = {};
  if (s.registry) spec.registry = s.registry.endsWith('/') ? s.registry : `${s.registry}/`;
  if (s.imagePullSecrets?.length) spec.imagePullSecrets = s.imagePullSecrets.map((name) => ({ name }));
  spec.calicoNetwork = calicoNetwork;
  const out: KubeObject[] = [{ apiVersion: 'operator.tigera.io/v1', kind: 'Installation', metadata: { name: 'default' }, spec }];
  if (s.apiServer) out.push({ apiVersion: 'operator.tigera.io/v1', kind: 'APIServer', metadata: { name: 'default' }, spec: {} });
  if (s.goldmane) out.push({ apiVersion: 'operator.tigera.io/v1', kind: 'Goldmane', metadata: { name: 'default' } });
  if (s.whisker) out.push({ apiVersion: 'operator.tigera.io/v1', kind: 'Whisker', metadata: { name: 'default' } });
  return out;
}

// ---------------------------------------------------------------------------------------------
// MetalLB

export const METALLB_NAMESPACE = 'metallb-system';

export interface MetallbPool {
  name: string;
  addresses: string[];
  autoAssign?: boolean;
  avoidBuggyIPs?: boolean;
}

export interface MetallbPeer {
  name: string;
  peerAddress: string;
  peerASN: number;
  myASN: number;
  peerPort?: number;
  sourceAddress?: string;
  holdTime?: string;
  ebgpMultiHop?: boolean;
  /** Secret (in metallb-system) with the session password under key `password`. */
  passwordSecret?: string;
  /** Only nodes with these labels peer. */
  nodeSelector?: Record<string, string>;
}

export interface MetallbSettings {
  pools: MetallbPool[];
  mode: 'l2' | 'bgp';
  l2Interfaces?: string[];
  peers?: MetallbPeer[];
  registry?: string;
  ignoreExcludeLB?: boolean;
}

export function renderMetallbNative(objs: KubeObject[], s: Pick<MetallbSettings, 'registry' | 'ignoreExcludeLB'>): KubeObject[] {
  const out = objs.map((o) => {
    if (!s.ignoreExcludeLB || o.kind !== 'DaemonSet' || o.metadata.name !== 'speaker') return o;
    const c = clone(o);
    const sp = podSpecOf(c)?.containers?.find((x) => x.name === 'speaker');
    if (sp && !(sp.args ?? []).includes('--ignore-exclude-lb')) sp.args = [...(sp.args ?? []), '--ignore-exclude-lb'];
    return c;
  });
  return rewriteImages(out, s.registry);
}

/** Pools and their advertisements (L2, or BGP peers + advertisement). */
export function renderMetallbConfig(s: MetallbSettings): KubeObject[] {
  const meta = (name: string) => ({ name, namespace: METALLB_NAMESPACE });
  const out: KubeObject[] = s.pools.map((p) => {
    const spec: Record<string, unknown> = { addresses: [...p.addresses] };
    if (p.autoAssign !== undefined) spec.autoAssign = p.autoAssign;
    if (p.avoidBuggyIPs !== undefined) spec.avoidBuggyIPs = p.avoidBuggyIPs;
    return { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: meta(p.name), spec };
  });
  const poolNames = s.pools.map((p) => p.name);
  if (s.mode === 'l2') {
    const spec: Record<string, unknown> = { ipAddressPools: poolNames };
    if (s.l2Interfaces?.length) spec.interfaces = [...s.l2Interfaces];
    out.push({ apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: meta('racksmith-l2'), spec });
  } else {
    for (const peer of s.peers ?? []) {
      const spec: Record<string, unknown> = { myASN: peer.myASN, peerASN: peer.peerASN, peerAddress: peer.peerAddress };
      if (peer.peerPort !== undefined) spec.peerPort = peer.peerPort;
      if (peer.sourceAddress) spec.sourceAddress = peer.sourceAddress;
      if (peer.holdTime) spec.holdTime = peer.holdTime;
      if (peer.ebgpMultiHop !== undefined) spec.ebgpMultiHop = peer.ebgpMultiHop;
      if (peer.passwordSecret) spec.passwordSecret = { name: peer.passwordSecret, namespace: METALLB_NAMESPACE };
      if (peer.nodeSelector) spec.nodeSelectors = [{ matchLabels: { ...peer.nodeSelector } }];
      out.push({ apiVersion: 'metallb.io/v1beta2', kind: 'BGPPeer', metadata: meta(peer.name), spec });
    }
    out.push({
      apiVersion: 'metallb.io/v1beta1',
      kind: 'BGPAdvertisement',
      metadata: meta('racksmith-bgp'),
      spec: { ipAddressPools: poolNames },
    });
  }
  return out;
}
