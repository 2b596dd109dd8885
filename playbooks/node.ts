import {
  playbook,
  varsSchema,
  type HostContext,
  type Resource,
  KUBELET_CONFIG,
  kubeletConfig,
  KUBELET_HEALTHZ,
  restartHandler,
  mtu,
  chronySources,
  cpuGovernor,
  transparentHugepages,
  nicQueues,
  type NicSelector,
  nodePackages,
  prerequisites,
  THP_MODES,
} from '../src/index.ts';

/**
 * Node configuration of AIStore and Kubernetes hosts beyond sysctls (ais-k8s host-config's
 * roles, shared/reference/ais-host-tuning.md).
 *
 * Hosts: all. The kubelet default below asks for the groups storage/ais and kube_node/kube_control_plane
 * as racksmith_play_hosts maps them (docs/playbooks.md "Plays on your groups").
 *
 * Inventory variables (group_vars / host_vars / -e):
 *   kubelet_allowed_unsafe_sysctls: [net.*]   sysctls pods may set, merged into the kubelet config
 *                     (its other keys untouched), then kubelet restarted and /healthz awaited. Default [net.*] on AIS nodes of the cluster (hosts
 *                     in storage or ais and in kube_node or kube_control_plane), else none.
 *   kubelet_config_path: /var/lib/kubelet/config.yaml   (Kubespray: /etc/kubernetes/kubelet-config.yaml)
 *   nic_mtu:          [{ driver: mlx5_core, mtu: 9000 }]   by name, mac or driver; set live and persisted
 *                     through the stack the host uses (netplan, NetworkManager, systemd-networkd,
 *                     ifupdown; none of them: refused). ais-k8s: 9000 on mlx5_core NICs.
 *   nic_queues:       [{ driver: mlx5_core, channels: cores, rings: { rx: 8192 } }]   ethtool -L (a
 *                     count or `cores`, physical cores) and -G, live and at boot (udev rule); a setting
 *                     the driver lacks is reported per NIC. ais-k8s: the example above.
 *   ntp_servers:      [ntp1.example, 10.0.0.1]   chrony's servers (/etc/chrony/sources.d/racksmith.sources),
 *                     chrony restarted after a change; chrony_conf, chrony_sources_dir, chrony_service (chrony)
 *   ntp_pools:        [pool.ntp.org]   pool names (each resolves to several servers): `pool NAME iburst`
 *                     lines in the same file, after the ntp_servers lines; either list alone is enough
 *   cpu_governor:     performance   through sysfs, at boot by a udev rule ("not supported on this host"
 *                     without cpufreq). Default: unset (ais-k8s: performance, opt-in tag)
 *   transparent_hugepages: { enabled: never, defrag: never }   the kernel's THP modes (either key alone is
 *                     enough), through sysfs and at boot by tmpfiles.d `w` lines (/etc/tmpfiles.d/racksmith-thp.conf;
 *                     "not supported on this host" without THP). Default: unset (the kernel's own)
 *   package_mirror, install_packages: ethtool / chrony installed where missing (src/plays/prerequisites.ts)
 */
const validateVars = varsSchema({
  properties: {
    kubelet_allowed_unsafe_sysctls: { type: 'array', items: { type: 'string', pattern: '^[a-z0-9_]+(\\.[A-Za-z0-9_-]+)*(\\.\\*|\\*)?$' } },
    kubelet_config_path: { type: 'string', pattern: '^/[^\\n\\0]*$' },
    ntp_servers: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9.:-]+$' } },
    ntp_pools: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9.:-]+$' } },
    chrony_conf: { type: 'string', pattern: '^/[^\\n\\0]*$' },
    chrony_sources_dir: { type: 'string', pattern: '^/[^\\n\\0]*$' },
    chrony_service: { type: 'string', pattern: '^[A-Za-z0-9:_.@-]+$' },
    cpu_governor: { type: 'string', pattern: '^[a-z0-9_]+$' },
    transparent_hugepages: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      properties: { enabled: { enum: [...THP_MODES.enabled] }, defrag: { enum: [...THP_MODES.defrag] } },
    },
    nic_mtu: { type: 'array', items: nicItem({ mtu: { type: 'integer', minimum: 576, maximum: 65536 } }, ['mtu']) },
    nic_queues: {
      type: 'array',
      items: nicItem(
        {
          channels: { anyOf: [{ type: 'integer', minimum: 1, maximum: 65535 }, { const: 'cores' }] },
          rings: {
            type: 'object',
            minProperties: 1,
            additionalProperties: false,
            properties: { rx: { type: 'integer', minimum: 1, maximum: 65535 }, tx: { type: 'integer', minimum: 1, maximum: 65535 } },
          },
        },
        [],
        [{ required: ['channels'] }, { required: ['rings'] }],
      ),
    },
  },
});

/** A NIC entry: exactly one of name, mac, driver, and the setting's own keys. */
function nicItem(props: Record<string, object>, required: string[] = [], anyOf?: object[]) {
  return {
    type: 'object',
    additionalProperties: false,
    required,
    oneOf: [{ required: ['name'] }, { required: ['mac'] }, { required: ['driver'] }],
    ...(anyOf ? { anyOf } : {}),
    properties: {
      name: { type: 'string', pattern: '^[A-Za-z0-9_.:@-]{1,15}$' },
      mac: { type: 'string', pattern: '^([0-9a-f]{2}:){5}[0-9a-f]{2}$' },
      driver: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$' },
      ...props,
    },
  };
}

type NicEntry = NicSelector & { mtu?: number; channels?: number | 'cores'; rings?: { rx?: number; tx?: number } };
const selectorOf = (e: NicEntry): NicSelector => (e.name ? { name: e.name } : e.mac ? { mac: e.mac } : { driver: e.driver });

/** An AIStore node that runs a kubelet: its pods need the host's net.* sysctls allowed. */
function aisKubeNode(host: HostContext): boolean {
  return (host.inGroup('storage') || host.inGroup('ais')) && (host.inGroup('kube_node') || host.inGroup('kube_control_plane'));
}

export function nodeResources(host: HostContext): Resource[] {
  host.validate(validateVars);
  const out: Resource[] = prerequisites(host, 'node', nodePackages(host));
  const after = out.map((r) => r.id);
  for (const e of host.var<NicEntry[]>('nic_mtu', [])) out.push(mtu({ select: selectorOf(e), mtu: e.mtu!, after, tags: ['mtu'] }));
  for (const e of host.var<NicEntry[]>('nic_queues', [])) {
    // ethtool's answers need ethtool: probed again once the packages are in
    if (e.channels !== undefined)
      out.push(nicQueues({ select: selectorOf(e), channels: e.channels, dependsOn: after, tags: ['nic-queues'] }));
    if (e.rings !== undefined) out.push(nicQueues({ select: selectorOf(e), rings: e.rings, dependsOn: after, tags: ['nic-queues'] }));
  }
  const servers = host.var<string[]>('ntp_servers', []);
  const pools = host.var<string[]>('ntp_pools', []);
  if (servers.length || pools.length) {
    const chronyd = restartHandler({ service: host.var('chrony_service', 'chrony'), tags: ['ntp'] });
    out.push(
      chronySources({
        servers,
        pools,
        conf: host.var<string | undefined>('chrony_conf', undefined),
        sourcesDir: host.var<string | undefined>('chrony_sources_dir', undefined),
        dependsOn: after, // chrony.conf comes with the package
        notify: [chronyd.id],
        tags: ['ntp'],
      }),
      chronyd,
    );
  }
  const governor = host.var<string | undefined>('cpu_governor', undefined);
  if (governor) out.push(cpuGovernor({ governor, tags: ['cpufreq'] }));
  const thp = host.var<{ enabled?: string; defrag?: string } | undefined>('transparent_hugepages', undefined);
  if (thp) out.push(transparentHugepages({ ...thp, tags: ['thp'] }));
  const unsafe = host.var<string[]>('kubelet_allowed_unsafe_sysctls', aisKubeNode(host) ? ['net.*'] : []);
  if (unsafe.length) {
    const kubelet = restartHandler({ service: 'kubelet', healthUrl: KUBELET_HEALTHZ, tags: ['kubelet'] });
    out.push(
      kubeletConfig({
        path: host.var('kubelet_config_path', KUBELET_CONFIG),
        pathSetting: 'kubelet_config_path',
        allowedUnsafeSysctls: unsafe,
        notify: [kubelet.id],
        tags: ['kubelet'],
      }),
      kubelet,
    );
  }
  return out;
}

export default playbook({
  name: 'node',
  hosts: 'all',
  tags: ['node'],
  resources: nodeResources,
});
