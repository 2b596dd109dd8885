/**
 * The Kubernetes network playbook's inventory variables: schema, semantic checks (bad input is
 * exit 3 at the variable's file:line, before any host is touched), and the settings derived from
 * them. Variables are documented in playbooks/kube-network.ts.
 */
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { varsSchema, type HostContext } from '../contract/playbook.ts';
import { InputError, InputErrors } from '../util/errors.ts';
import { checkPoolAddress, cidrsOverlap, cidrWithin, ipToBigInt, parseCidr, poolAddressCount, type Cidr } from '../kube/cidr.ts';
import {
  CNI_PLUGINS_PINS,
  COMPONENT_FILES,
  DEFAULT_CNI_PLUGINS_VERSION,
  DEFAULT_VERSIONS,
  REQUIRED_CNI_BINARIES,
  cniPluginsUrl,
  findManifestPin,
  pinKey,
  type Component,
  type ManifestPin,
} from '../kube/pins.ts';
import type { CalicoPool, FlannelSettings, MetallbPeer, MetallbPool } from '../kube/render.ts';

const ABS = '^/[^\\n\\0]*$';
const HEX64 = '^[0-9a-f]{64}$';
const VERSION = '^v[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.-]+)?$';
const DNS1123 = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const MODULE = '^[A-Za-z0-9_-]+$';
const NO_SPACE = '^[^\\s]+$';

export const validateKubeVars = varsSchema({
  properties: {
    kube_cni: { enum: ['flannel', 'calico'] },
    kube_pod_cidr: { type: 'string' },
    kube_kubeconfig: { type: 'string', pattern: ABS },
    kube_kubectl: { type: 'string', pattern: '^[A-Za-z0-9_./+-]+$' },
    kube_proxy_mode: { enum: ['iptables', 'ipvs', 'nftables'] },
    kube_proxy_ipvs_modules: { type: 'array', items: { type: 'string', pattern: MODULE } },
    kube_ipv6: { type: 'boolean' },
    kube_image_registry: { type: 'string', pattern: NO_SPACE },
    kube_manifest_dir: { type: 'string', minLength: 1 },
    kube_manifest_base_url: { type: 'string', pattern: '^https?://[^\\s]+$' },
    kube_manifest_pins: {
      type: 'object',
      propertyNames: { pattern: '^(flannel|calico|metallb)-v[^/\\s]+/[^/\\s]+$' },
      additionalProperties: {
        type: 'object',
        required: ['sha256'],
        additionalProperties: false,
        properties: { sha256: { type: 'string', pattern: HEX64 }, url: { type: 'string', pattern: '^https?://[^\\s]+$' } },
      },
    },
    kube_wait_timeout: { type: 'integer', minimum: 1, maximum: 7200 },
    flannel_version: { type: 'string', pattern: VERSION },
    flannel_backend: { enum: ['vxlan', 'host-gw', 'wireguard', 'udp', 'ipip', 'ipsec'] },
    flannel_vni: { type: 'integer', minimum: 1, maximum: 16777215 },
    flannel_port: { type: 'integer', minimum: 1, maximum: 65535 },
    flannel_direct_routing: { type: 'boolean' },
    flannel_mtu: { type: 'integer', minimum: 576, maximum: 65535 },
    flannel_iface: { type: 'array', items: { type: 'string', pattern: NO_SPACE } },
    flannel_iface_regex: { type: 'array', items: { type: 'string', pattern: NO_SPACE } },
    flannel_iface_can_reach: { type: 'string' },
    calico_version: { type: 'string', pattern: VERSION },
    calico_ip_pools: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['cidr'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: DNS1123, maxLength: 63 },
          cidr: { type: 'string' },
          encapsulation: { type: 'string' },
          nat_outgoing: { type: 'boolean' },
          block_size: { type: 'integer' },
          node_selector: { type: 'string', minLength: 1 },
        },
      },
    },
    calico_bgp: { type: 'boolean' },
    calico_mtu: { type: 'integer', minimum: 576, maximum: 65535 },
    calico_linux_dataplane: { type: 'string' },
    calico_node_address_autodetection: { type: 'object' },
    calico_api_server: { type: 'boolean' },
    calico_goldmane: { type: 'boolean' },
    calico_whisker: { type: 'boolean' },
    calico_image_pull_secrets: { type: 'array', items: { type: 'string', pattern: DNS1123 } },
    calico_wait_tigerastatus: { type: 'boolean' },
    metallb_enabled: { type: 'boolean' },
    metallb_version: { type: 'string', pattern: VERSION },
    metallb_pools: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'addresses'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: DNS1123, maxLength: 63 },
          addresses: { type: 'array', minItems: 1, items: { type: 'string' } },
          auto_assign: { type: 'boolean' },
          avoid_buggy_ips: { type: 'boolean' },
        },
      },
    },
    metallb_mode: { enum: ['l2', 'bgp'] },
    metallb_l2_interfaces: { type: 'array', items: { type: 'string', pattern: NO_SPACE } },
    metallb_bgp_peers: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'peer_address', 'peer_asn', 'my_asn'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: DNS1123, maxLength: 63 },
          peer_address: { type: 'string' },
          peer_asn: { type: 'integer', minimum: 1, maximum: 4294967295 },
          my_asn: { type: 'integer', minimum: 1, maximum: 4294967295 },
          peer_port: { type: 'integer', minimum: 1, maximum: 65535 },
          source_address: { type: 'string' },
          hold_time: { type: 'string', pattern: '^[0-9]+(s|m|h)$' },
          ebgp_multihop: { type: 'boolean' },
          password_secret: { type: 'string', pattern: DNS1123 },
          node_selector: { type: 'object', additionalProperties: { type: 'string' } },
        },
      },
    },
    metallb_allow_strict_arp: { type: 'boolean' },
    metallb_ignore_exclude_lb: { type: 'boolean' },
    cni_plugins_version: { type: 'string', pattern: VERSION },
    cni_plugins_arch: { enum: ['amd64', 'arm64', 'arm', 'ppc64le', 's390x', 'riscv64'] },
    cni_plugins_sha256: { type: 'string', pattern: HEX64 },
    cni_plugins_src: { type: 'string', minLength: 1 },
    cni_plugins_fetch: { enum: ['controller', 'host'] },
    cni_plugins_required: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9._-]+$' } },
    cni_remove_stale_conf: { type: 'boolean' },
    ais_external_lb: { type: 'boolean' },
    ais_targets: { type: 'integer', minimum: 1 },
    kube_host_mtu: { type: 'integer', minimum: 576, maximum: 65536 },
  },
});

/** Bytes each encapsulation takes from the host MTU (Calico's and Flannel's documented overheads, IPv4). */
export const ENCAP_OVERHEAD: Record<string, number> = {
  VXLAN: 50,
  VXLANCrossSubnet: 50,
  IPIP: 20,
  IPIPCrossSubnet: 20,
  None: 0,
  vxlan: 50,
  'host-gw': 0,
  wireguard: 80,
  udp: 28,
  ipip: 20,
  ipsec: 73,
};

/**
 * The CNI MTU must fit the host MTU minus the encapsulation: a larger one drops every full-size
 * packet between nodes. The host MTU: kube_host_mtu, else the smallest of node.ts's nic_mtu.
 */
export function cniMtuProblem(
  cniMtu: number | undefined,
  hostMtu: number | undefined,
  encapsulations: string[],
  what: string,
): string | undefined {
  if (cniMtu === undefined || hostMtu === undefined) return undefined;
  const overhead = Math.max(0, ...encapsulations.map((e) => ENCAP_OVERHEAD[e] ?? 0));
  if (cniMtu <= hostMtu - overhead) return undefined;
  const via = encapsulations.filter((e) => (ENCAP_OVERHEAD[e] ?? 0) === overhead)[0] ?? 'none';
  return `${what} ${cniMtu} does not fit the host MTU ${hostMtu} minus ${overhead} bytes of ${via} encapsulation (at most ${hostMtu - overhead})`;
}

/**
 * AIStore's external access (one LoadBalancer per target and one for the proxy) needs at least
 * targets + 1 addresses in the MetalLB pools.
 */
export function aisPoolProblem(pools: ReadonlyArray<{ addresses: string[] }>, targets: number): string | undefined {
  const have = pools.reduce((n, p) => n + p.addresses.reduce((m, a) => m + poolAddressCount(a), 0n), 0n);
  if (have >= BigInt(targets + 1)) return undefined;
  return `metallb_pools hold ${have} address${have === 1n ? '' : 'es'}; AIS external access (ais_external_lb) needs one per target plus one for the proxy: ${targets} targets + 1 = ${targets + 1}`;
}

export type CniPluginsSourceSpec =
  { fetch: 'controller'; src: string } | { fetch: 'host'; kind: 'url'; url: string } | { fetch: 'host'; kind: 'file'; path: string };

/** One CNI plugins tarball: its architecture (Go name, as upstream names the file), checksum and source. */
export interface CniTarballSpec {
  arch: string;
  sha256: string;
  source: CniPluginsSourceSpec;
}

export interface KubeSettings {
  cni: 'flannel' | 'calico';
  podCidr: string;
  kubeconfig: string;
  kubectl: string;
  proxyMode?: 'iptables' | 'ipvs' | 'nftables';
  modules: string[];
  ipv6: boolean;
  registry?: string;
  timeoutSec: number;
  /** The manifests to load, with where to get each. */
  manifests: Array<{ pin: ManifestPin; sources: string[] }>;
  versions: Record<Component, string>;
  flannel: Omit<FlannelSettings, 'network' | 'registry'>;
  calico: {
    pools: CalicoPool[];
    bgp?: 'Enabled' | 'Disabled';
    mtu?: number;
    linuxDataplane?: string;
    nodeAddressAutodetectionV4: Record<string, unknown>;
    apiServer: boolean;
    goldmane: boolean;
    whisker: boolean;
    imagePullSecrets: string[];
    waitTigeraStatus: boolean;
  };
  metallb: {
    enabled: boolean;
    pools: MetallbPool[];
    mode: 'l2' | 'bgp';
    l2Interfaces?: string[];
    peers: MetallbPeer[];
    allowStrictArp: boolean;
    ignoreExcludeLB: boolean;
  };
  /**
   * The CNI plugins release: one tarball per architecture it may install, each host taking the one
   * of its own (`uname -m`, read on the host: cni.ts). The pinned ones of the version by default;
   * one when the inventory names it (cni_plugins_arch, or cni_plugins_src/cni_plugins_sha256).
   */
  cniPlugins: { version: string; tarballs: CniTarballSpec[]; required: string[] };
  removeStaleConf: boolean;
}

const IPV4_BLOCK = { min: 20, max: 32 };
const IPV6_BLOCK = { min: 116, max: 128 };

/** A controller-side path from the inventory: relative to the file that set the variable. */
export function inventoryPath(host: HostContext, name: string, p: string): string {
  if (isAbsolute(p)) return p;
  const f = host.varPos(name)?.file;
  if (f && existsSync(f)) return resolve(dirname(f), p);
  return resolve(p);
}

/** The host's variables as kubeSettings reads them, and the errors it collects (reported together). */
interface Vars {
  host: HostContext;
  v: <T>(name: string, fallback: T) => T;
  err: (name: string, msg: string) => void;
  errors: InputError[];
}

/** Validate the variables and derive the settings. Throws InputError(s) located at the variables. */
export function kubeSettings(host: HostContext): KubeSettings {
  host.validate(validateKubeVars);
  const errors: InputError[] = [];
  const vars: Vars = {
    host,
    v: (name, fallback) => host.var(name, fallback),
    err: (name, msg) => errors.push(host.error(name, msg)),
    errors,
  };
  const v = vars.v;
  const { cni, podCidr, pod } = podNetwork(vars);
  const { versions, manifests, metallbPoolsVar, metallbEnabled } = manifestSources(vars, cni);
  const canReach = v<string | undefined>('flannel_iface_can_reach', undefined);
  if (canReach !== undefined && !ipToBigInt(canReach))
    vars.err('flannel_iface_can_reach', `flannel_iface_can_reach: '${canReach}' is not an IP address`);
  const calicoPools = calicoPoolsOf(vars, cni, pod, podCidr);
  const calicoBgp = v<boolean | undefined>('calico_bgp', undefined);
  const metallb = metallbOf(vars, metallbPoolsVar, metallbEnabled, pod, podCidr);
  checkCniMtu(vars, cni, calicoPools);
  if (metallbEnabled) {
    if (!metallb.pools.length)
      vars.err('metallb_enabled', 'metallb_enabled is true but metallb_pools is empty: MetalLB needs at least one address pool');
    if (metallb.mode === 'bgp' && !metallb.peers.length) vars.err('metallb_mode', 'metallb_mode bgp needs metallb_bgp_peers');
  }
  const { proxyMode, modules } = kernelModules(vars);
  const cniPlugins = cniPluginsOf(vars);
  if (errors.length === 1) throw errors[0];
  if (errors.length) throw new InputErrors(errors);

  return {
    cni,
    podCidr,
    kubeconfig: v('kube_kubeconfig', '/etc/kubernetes/admin.conf'),
    kubectl: v('kube_kubectl', 'kubectl'),
    proxyMode,
    modules,
    ipv6: v('kube_ipv6', false),
    registry: v<string | undefined>('kube_image_registry', undefined),
    timeoutSec: v('kube_wait_timeout', 300),
    manifests,
    versions,
    flannel: {
      backend: v('flannel_backend', 'vxlan'),
      vni: v<number | undefined>('flannel_vni', undefined),
      port: v<number | undefined>('flannel_port', undefined),
      directRouting: v<boolean | undefined>('flannel_direct_routing', undefined),
      mtu: v<number | undefined>('flannel_mtu', undefined),
      iface: v<string[] | undefined>('flannel_iface', undefined),
      ifaceRegex: v<string[] | undefined>('flannel_iface_regex', undefined),
      ifaceCanReach: canReach,
    },
    calico: {
      pools: calicoPools,
      bgp: calicoBgp === undefined ? undefined : calicoBgp ? 'Enabled' : 'Disabled',
      mtu: v<number | undefined>('calico_mtu', undefined),
      linuxDataplane: v<string | undefined>('calico_linux_dataplane', undefined),
      nodeAddressAutodetectionV4: v('calico_node_address_autodetection', { kubernetes: 'NodeInternalIP' }),
      apiServer: v('calico_api_server', true),
      goldmane: v('calico_goldmane', false),
      whisker: v('calico_whisker', false),
      imagePullSecrets: v('calico_image_pull_secrets', []),
      waitTigeraStatus: v('calico_wait_tigerastatus', true),
    },
    metallb: {
      enabled: metallbEnabled,
      pools: metallb.pools,
      mode: metallb.mode,
      l2Interfaces: v<string[] | undefined>('metallb_l2_interfaces', undefined),
      peers: metallb.peers,
      allowStrictArp: v('metallb_allow_strict_arp', false),
      ignoreExcludeLB: v('metallb_ignore_exclude_lb', false),
    },
    cniPlugins,
    removeStaleConf: v('cni_remove_stale_conf', false),
  };
}

/** The CNI and the pod network: without them nothing else can be checked, so they throw at once. */
function podNetwork({ host, v }: Vars): { cni: 'flannel' | 'calico'; podCidr: string; pod: Cidr } {
  const cni = v<'flannel' | 'calico' | undefined>('kube_cni', undefined);
  if (!cni) throw host.error('kube_cni', 'kube_cni is required: flannel or calico');
  const podCidr = v<string | undefined>('kube_pod_cidr', undefined);
  if (!podCidr) throw host.error('kube_pod_cidr', 'kube_pod_cidr is required (the cluster pod CIDR, kubeadm --pod-network-cidr)');
  const pod = parseCidr(podCidr, { strict: true });
  if (!pod) throw host.error('kube_pod_cidr', `kube_pod_cidr: '${podCidr}' is not a CIDR with its host bits zero (e.g. 10.244.0.0/16)`);

  if (cni === 'flannel' && pod.family !== 4)
    throw host.error(
      'kube_pod_cidr',
      `kube_pod_cidr: flannel is rendered with an IPv4 Network; IPv6 and dual-stack pod networks are not supported by this playbook yet`,
    );
  return { cni, podCidr, pod };
}

type MetallbPoolsVar = Array<{ name: string; addresses: string[]; auto_assign?: boolean; avoid_buggy_ips?: boolean }>;

/** The components' versions and each pinned manifest's sources (a local directory, a mirror, or its upstream URL). */
function manifestSources(
  { host, v, err }: Vars,
  cni: Component,
): Pick<KubeSettings, 'manifests' | 'versions'> & { metallbPoolsVar: MetallbPoolsVar; metallbEnabled: boolean } {
  const pins = v<Record<string, { sha256: string; url?: string }>>('kube_manifest_pins', {});
  const versions: Record<Component, string> = {
    flannel: v('flannel_version', DEFAULT_VERSIONS.flannel),
    calico: v('calico_version', DEFAULT_VERSIONS.calico),
    metallb: v('metallb_version', DEFAULT_VERSIONS.metallb),
  };
  const metallbPoolsVar = v<MetallbPoolsVar>('metallb_pools', []);
  const metallbEnabled = v('metallb_enabled', metallbPoolsVar.length > 0);
  const components: Component[] = [cni, ...(metallbEnabled ? (['metallb'] as const) : [])];
  const dir = v<string | undefined>('kube_manifest_dir', undefined);
  const base = v<string | undefined>('kube_manifest_base_url', undefined);
  const manifests: KubeSettings['manifests'] = [];
  for (const c of components) {
    for (const file of COMPONENT_FILES[c]) {
      const pin = findManifestPin(c, versions[c], file, pins);
      if (!pin) {
        err(
          `${c}_version`,
          `${c} ${versions[c]}: no pinned sha256 for ${file}; pin it in kube_manifest_pins as '${pinKey(c, versions[c], file)}: {sha256: ...}'`,
        );
        continue;
      }
      const key = pinKey(c, pin.version, file);
      const sources = dir
        ? [resolve(inventoryPath(host, 'kube_manifest_dir', dir), key)]
        : base
          ? [`${base.replace(/\/+$/, '')}/${key}`]
          : [pin.url];
      manifests.push({ pin, sources });
    }
  }
  return { versions, manifests, metallbPoolsVar, metallbEnabled };
}

/** Calico's IP pools (checked only when Calico is the CNI): inside the pod CIDR, sized blocks, no overlaps. */
function calicoPoolsOf({ v, err }: Vars, cni: string, pod: Cidr, podCidr: string): CalicoPool[] {
  const poolsVar = v<
    Array<{ name?: string; cidr: string; encapsulation?: string; nat_outgoing?: boolean; block_size?: number; node_selector?: string }>
  >('calico_ip_pools', [{ cidr: podCidr }]);
  const calicoPools: CalicoPool[] = [];
  if (cni !== 'calico') return calicoPools;
  const names = new Set<string>();
  poolsVar.forEach((p, i) => {
    const where = `calico_ip_pools[${i}]`;
    const c = parseCidr(p.cidr, { strict: true });
    const name = p.name ?? (i === 0 ? 'default-ipv4-ippool' : `racksmith-pool-${i}`);
    if (names.has(name)) err('calico_ip_pools', `${where}: pool name '${name}' is used twice`);
    names.add(name);
    if (!c) {
      err('calico_ip_pools', `${where}.cidr: '${p.cidr}' is not a CIDR with its host bits zero`);
      return;
    }
    if (c.family === pod.family && !cidrWithin(c, pod))
      err(
        'calico_ip_pools',
        `${where}.cidr: ${p.cidr} is outside kube_pod_cidr ${podCidr}; Calico pools must be inside the cluster's pod CIDR`,
      );
    const bs = p.block_size ?? (c.family === 4 ? 26 : 122);
    const range = c.family === 4 ? IPV4_BLOCK : IPV6_BLOCK;
    if (bs < range.min || bs > range.max || bs < c.prefix)
      err('calico_ip_pools', `${where}.block_size: ${bs} must be between ${Math.max(range.min, c.prefix)} and ${range.max} for ${p.cidr}`);
    for (const [j, q] of calicoPools.entries()) {
      const qc = parseCidr(q.cidr)!;
      if (cidrsOverlap(c, qc)) err('calico_ip_pools', `${where}.cidr: ${p.cidr} overlaps calico_ip_pools[${j}] ${q.cidr}`);
    }
    calicoPools.push({
      name,
      cidr: p.cidr,
      encapsulation: p.encapsulation ?? (c.family === 4 ? 'VXLANCrossSubnet' : 'None'),
      natOutgoing: p.nat_outgoing === false ? 'Disabled' : 'Enabled',
      blockSize: bs,
      nodeSelector: p.node_selector ?? 'all()',
    });
  });
  return calicoPools;
}

/** MetalLB's pools and BGP peers, checked (addresses, overlaps with the pod network, AIS's external LB). */
function metallbOf(
  { host, v, err, errors }: Vars,
  metallbPoolsVar: MetallbPoolsVar,
  metallbEnabled: boolean,
  pod: Cidr,
  podCidr: string,
): { pools: MetallbPool[]; mode: 'l2' | 'bgp'; peers: MetallbPeer[] } {
  const metallbPools: MetallbPool[] = [];
  const lbNames = new Set<string>();
  metallbPoolsVar.forEach((p, i) => {
    if (lbNames.has(p.name)) err('metallb_pools', `metallb_pools[${i}]: pool name '${p.name}' is used twice`);
    lbNames.add(p.name);
    p.addresses.forEach((a, j) => {
      const problem = checkPoolAddress(a);
      if (problem) err('metallb_pools', `metallb_pools[${i}].addresses[${j}]: ${problem}`);
      else if (a.includes('/') && cidrsOverlap(parseCidr(a)!, pod))
        err('metallb_pools', `metallb_pools[${i}].addresses[${j}]: ${a} overlaps the pod network ${podCidr}`);
    });
    metallbPools.push({ name: p.name, addresses: p.addresses, autoAssign: p.auto_assign, avoidBuggyIPs: p.avoid_buggy_ips });
  });
  const mode = v<'l2' | 'bgp'>('metallb_mode', 'l2');
  const peersVar = v<Array<Record<string, unknown>>>('metallb_bgp_peers', []);
  const peers: MetallbPeer[] = peersVar.map((p, i) => {
    if (!ipToBigInt(String(p.peer_address)))
      err('metallb_bgp_peers', `metallb_bgp_peers[${i}].peer_address: '${String(p.peer_address)}' is not an IP address`);
    if (p.source_address !== undefined && !ipToBigInt(String(p.source_address)))
      err('metallb_bgp_peers', `metallb_bgp_peers[${i}].source_address: '${String(p.source_address)}' is not an IP address`);
    return {
      name: String(p.name),
      peerAddress: String(p.peer_address),
      peerASN: Number(p.peer_asn),
      myASN: Number(p.my_asn),
      peerPort: p.peer_port as number | undefined,
      sourceAddress: p.source_address as string | undefined,
      holdTime: p.hold_time as string | undefined,
      ebgpMultiHop: p.ebgp_multihop as boolean | undefined,
      passwordSecret: p.password_secret as string | undefined,
      nodeSelector: p.node_selector as Record<string, string> | undefined,
    };
  });
  if (v('ais_external_lb', false)) {
    // AIS targets: the inventory's storage hosts unless given
    const targets =
      v<number | undefined>('ais_targets', undefined) ?? host.inventoryHosts.filter((h) => h.groups.includes('storage')).length;
    if (!metallbEnabled) err('ais_external_lb', 'ais_external_lb needs MetalLB: set metallb_pools');
    else if (!errors.length) {
      const problem = aisPoolProblem(metallbPoolsVar, targets);
      if (problem) err('metallb_pools', problem);
    }
  }
  return { pools: metallbPools, mode, peers };
}

/** The CNI's MTU against the hosts' (kube_host_mtu, else the smallest nic_mtu) and its encapsulations. */
function checkCniMtu({ v, err }: Vars, cni: string, calicoPools: CalicoPool[]): void {
  const hostMtu =
    v<number | undefined>('kube_host_mtu', undefined) ??
    (v<Array<{ mtu: number }>>('nic_mtu', []).length ? Math.min(...v<Array<{ mtu: number }>>('nic_mtu', []).map((e) => e.mtu)) : undefined);
  const mtuWhat = cni === 'calico' ? 'calico_mtu' : 'flannel_mtu';
  const encaps = cni === 'calico' ? calicoPools.map((p) => p.encapsulation) : [v('flannel_backend', 'vxlan')];
  const mtuProblem = cniMtuProblem(v<number | undefined>(mtuWhat, undefined), hostMtu, encaps, mtuWhat);
  if (mtuProblem) err(mtuWhat, mtuProblem);
}

/** kube-proxy's mode and the kernel modules it and the CNI need. */
function kernelModules({ v }: Vars): Pick<KubeSettings, 'proxyMode' | 'modules'> {
  const proxyMode = v<'iptables' | 'ipvs' | 'nftables' | undefined>('kube_proxy_mode', undefined);
  const modules = ['overlay', 'br_netfilter'];
  if (proxyMode === 'ipvs') modules.push(...v('kube_proxy_ipvs_modules', ['ip_vs', 'ip_vs_rr', 'ip_vs_wrr', 'ip_vs_sh', 'nf_conntrack']));
  if (proxyMode === 'nftables') modules.push('nf_tables');
  return { proxyMode, modules: [...new Set(modules)] };
}

/** The architecture an upstream CNI plugins file name says (`cni-plugins-linux-arm64-v1.8.0.tgz` -> arm64). */
export function cniTarballArchOfName(src: string): string | undefined {
  return /cni-plugins-linux-([a-z0-9]+)-v[^/]*$/.exec(src)?.[1];
}

/**
 * The CNI plugins' release: the tarballs a host may take (by its architecture), each with its
 * pinned sha256 and where it is fetched from (by the controller, or by each host). By default the
 * version's pinned tarballs, one per architecture. cni_plugins_src or cni_plugins_sha256 name one
 * tarball: its architecture is cni_plugins_arch, else the upstream file name's; neither is an
 * input error (a tarball of one architecture installed on every host is what this prevents).
 */
function cniPluginsOf({ host, v, err }: Vars): KubeSettings['cniPlugins'] {
  const cpVersion = v('cni_plugins_version', DEFAULT_CNI_PLUGINS_VERSION);
  const required = v('cni_plugins_required', REQUIRED_CNI_BINARIES);
  const fetch = v<'controller' | 'host'>('cni_plugins_fetch', 'controller');
  const pins = CNI_PLUGINS_PINS.find((p) => p.version === cpVersion)?.sha256 ?? {};
  const sourceOf = (src: string): CniPluginsSourceSpec => {
    if (fetch === 'controller') return { fetch, src: /^(https?|file):\/\//.test(src) ? src : inventoryPath(host, 'cni_plugins_src', src) };
    if (/^https?:\/\//.test(src)) return { fetch, kind: 'url', url: src };
    const path = src.startsWith('file://') ? decodeURIComponent(new URL(src).pathname) : src;
    if (!path.startsWith('/'))
      err(
        'cni_plugins_src',
        `cni_plugins_src: with cni_plugins_fetch: host, use an http(s) URL or an absolute path on the host (got '${src}')`,
      );
    return { fetch, kind: 'file', path };
  };
  const archVar = v<string | undefined>('cni_plugins_arch', undefined);
  const srcVar = v<string | undefined>('cni_plugins_src', undefined);
  const shaVar = v<string | undefined>('cni_plugins_sha256', undefined);
  if (archVar === undefined && srcVar === undefined && shaVar === undefined) {
    // the default: every pinned architecture of the version; each host takes its own
    const tarballs = Object.entries(pins).map(([arch, sha256]) => ({ arch, sha256, source: sourceOf(cniPluginsUrl(cpVersion, arch)) }));
    if (!tarballs.length)
      err(
        'cni_plugins_version',
        `CNI plugins ${cpVersion}: no pinned sha256; set cni_plugins_arch and cni_plugins_sha256 (per group where architectures differ)`,
      );
    return { version: cpVersion, tarballs, required };
  }
  const named = srcVar === undefined ? undefined : cniTarballArchOfName(srcVar);
  if (archVar !== undefined && named !== undefined && named !== archVar)
    err('cni_plugins_arch', `cni_plugins_arch is ${archVar}, but cni_plugins_src ${srcVar} is the ${named} tarball`);
  const arch = archVar ?? named;
  if (arch === undefined)
    err(
      srcVar !== undefined ? 'cni_plugins_src' : 'cni_plugins_sha256',
      `CNI plugins: cni_plugins_src/cni_plugins_sha256 name one tarball, of one architecture: set cni_plugins_arch (amd64, arm64, ...) to it, per group where the hosts' architectures differ`,
    );
  const a = arch ?? 'amd64';
  const sha256 = shaVar ?? pins[a];
  if (!sha256) err('cni_plugins_version', `CNI plugins ${cpVersion} for ${a}: no pinned sha256; set cni_plugins_sha256`);
  return {
    version: cpVersion,
    tarballs: [{ arch: a, sha256: sha256!, source: sourceOf(srcVar ?? cniPluginsUrl(cpVersion, a)) }],
    required,
  };
}
