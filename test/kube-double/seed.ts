/** The objects a fresh kubeadm cluster has, as far as the double's users read them. */
import type { KubeObject } from './types.ts';
import type { Cluster } from './cluster.ts';

export interface NodeSeed {
  name: string;
  podCIDR?: string;
  /** Node InternalIP (data only; default 192.0.2.10, .11, ...). */
  internalIP?: string;
  labels?: Record<string, string>;
  /** Control-plane role label + NoSchedule taint; default: true for the first node only. */
  controlPlane?: boolean;
}

export interface SeedOptions {
  /** Default: one node `node-1` with podCIDR 10.244.0.0/24. */
  nodes?: NodeSeed[];
  /** The kube-proxy ConfigMap + DaemonSet in kube-system; false: none. Default mode iptables, strictARP false. */
  kubeProxy?: { mode?: 'ipvs' | 'iptables' | ''; strictARP?: boolean } | false;
  /** The kubeadm-config ConfigMap; false: none. podSubnet null: kubeadm ran without --pod-network-cidr. */
  kubeadm?: { podSubnet?: string | null; serviceSubnet?: string; kubernetesVersion?: string } | false;
}

export const DEFAULT_NODES: NodeSeed[] = [{ name: 'node-1', podCIDR: '10.244.0.0/24' }];

const KUBEADM = 'kubeadm';

export function kubeProxyConfig(mode: string, strictARP: boolean, clusterCIDR: string): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
bindAddressHardFail: false
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: ${clusterCIDR}
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpBeLiberal: false
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
  udpStreamTimeout: 0s
  udpTimeout: 0s
detectLocal:
  bridgeInterface: ""
  interfaceNamePrefix: ""
detectLocalMode: ""
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  localhostNodePorts: null
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: 0s
  scheduler: ""
  strictARP: ${strictARP}
  syncPeriod: 0s
  tcpFinTimeout: 0s
  tcpTimeout: 0s
  udpTimeout: 0s
kind: KubeProxyConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
metricsBindAddress: ""
mode: ${mode === '' ? '""' : mode}
nftables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForProxy: ""
winkernel:
  enableDSR: false
  forwardHealthCheckVip: false
  networkName: ""
  rootHnsEndpointName: ""
  sourceVip: ""
`;
}

function clusterConfiguration(podSubnet: string | null, serviceSubnet: string, version: string): string {
  return `apiServer: {}
apiVersion: kubeadm.k8s.io/v1beta4
caCertificateValidityPeriod: 87600h0m0s
certificateValidityPeriod: 8760h0m0s
certificatesDir: /etc/kubernetes/pki
clusterName: kubernetes
controllerManager: {}
dns: {}
encryptionAlgorithm: RSA-2048
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kind: ClusterConfiguration
kubernetesVersion: ${version}
networking:
  dnsDomain: cluster.local
${podSubnet ? `  podSubnet: ${podSubnet}\n` : ''}  serviceSubnet: ${serviceSubnet}
proxy: {}
scheduler: {}
`;
}

function node(seed: NodeSeed, index: number, kubeletVersion: string): KubeObject {
  const controlPlane = seed.controlPlane ?? index === 0;
  const labels: Record<string, string> = {
    'beta.kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'kubernetes.io/hostname': seed.name,
    'kubernetes.io/os': 'linux',
    ...(controlPlane ? { 'node-role.kubernetes.io/control-plane': '' } : {}),
    ...(seed.labels ?? {}),
  };
  const spec: Record<string, unknown> = {};
  if (seed.podCIDR) Object.assign(spec, { podCIDR: seed.podCIDR, podCIDRs: [seed.podCIDR] });
  if (controlPlane) spec.taints = [{ effect: 'NoSchedule', key: 'node-role.kubernetes.io/control-plane' }];
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: seed.name, labels },
    spec: spec as KubeObject['spec'],
    status: {
      addresses: [
        { type: 'InternalIP', address: seed.internalIP ?? `192.0.2.${10 + index}` },
        { type: 'Hostname', address: seed.name },
      ],
      allocatable: { cpu: '2', memory: '24Gi', pods: '110' },
      capacity: { cpu: '2', memory: '24Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }],
      nodeInfo: {
        architecture: 'amd64',
        containerRuntimeVersion: 'containerd://1.7.24',
        kernelVersion: '6.1.0-28-amd64',
        kubeProxyVersion: kubeletVersion,
        kubeletVersion,
        operatingSystem: 'linux',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
      },
    },
  };
}

function daemonSet(name: string, namespace: string, app: string, image: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace, labels: { 'k8s-app': app } },
    spec: {
      selector: { matchLabels: { 'k8s-app': app } },
      template: {
        metadata: { labels: { 'k8s-app': app } },
        spec: { containers: [{ name: app, image }], hostNetwork: true, nodeSelector: { 'kubernetes.io/os': 'linux' } },
      },
    },
  };
}

export function seedCluster(cluster: Cluster, opts: SeedOptions, kubernetesVersion: string): void {
  for (const name of ['default', 'kube-node-lease', 'kube-public', 'kube-system']) {
    cluster.seed({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, 'kube-apiserver');
  }
  cluster.seed(
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kubernetes', namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } },
      spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }], type: 'ClusterIP' },
    },
    'kube-apiserver',
  );
  (opts.nodes ?? DEFAULT_NODES).forEach((n, i) => cluster.seed(node(n, i, kubernetesVersion), 'kubelet'));

  const kubeadm = opts.kubeadm === false ? undefined : (opts.kubeadm ?? {});
  const podSubnet = kubeadm?.podSubnet === undefined ? '10.244.0.0/16' : kubeadm.podSubnet;
  if (kubeadm) {
    cluster.seed(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
        data: {
          ClusterConfiguration: clusterConfiguration(
            podSubnet,
            kubeadm.serviceSubnet ?? '10.96.0.0/12',
            kubeadm.kubernetesVersion ?? kubernetesVersion,
          ),
        },
      },
      KUBEADM,
    );
  }
  if (opts.kubeProxy !== false) {
    const kp = opts.kubeProxy ?? {};
    cluster.seed(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'kube-proxy', namespace: 'kube-system', labels: { app: 'kube-proxy' } },
        data: {
          'config.conf': kubeProxyConfig(kp.mode ?? 'iptables', kp.strictARP ?? false, podSubnet ?? ''),
          'kubeconfig.conf':
            'apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\n    server: https://control-plane:6443\n  name: default\ncontexts:\n- context:\n    cluster: default\n    namespace: default\n    user: default\n  name: default\ncurrent-context: default\nusers:\n- name: default\n  user:\n    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n',
        },
      },
      KUBEADM,
    );
    cluster.seed(daemonSet('kube-proxy', 'kube-system', 'kube-proxy', `registry.k8s.io/kube-proxy:${kubernetesVersion}`), KUBEADM);
  }
  cluster.seed(
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { 'k8s-app': 'kube-dns' } },
        template: {
          metadata: { labels: { 'k8s-app': 'kube-dns' } },
          spec: { containers: [{ name: 'coredns', image: 'registry.k8s.io/coredns/coredns:v1.11.3' }] },
        },
      },
    },
    KUBEADM,
  );
  cluster.seed(
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        clusterIP: '10.96.0.10',
        selector: { 'k8s-app': 'kube-dns' },
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
        ],
      },
    },
    KUBEADM,
  );
}
