import type { HostMemory, SysctlValue } from '../resources/tuning/sysctl.ts';

/**
 * Kernel tuning profiles for AIStore targets and Kubernetes nodes (facts:
 * shared/reference/ais-host-tuning.md §4). Memory-sized values are computed from the host's
 * RAM, not copied from the 1.5 TB machine upstream sized them for.
 */

/** tcp_mem in pages: limit = RAM/16; min = ¾·limit, pressure = limit, max = 2·min (upstream's sysctl-tuner). */
export function tcpMem(m: HostMemory): string {
  const pages = Math.floor((m.memTotalKb * 1024) / m.pageSize);
  const limit = Math.floor(pages / 16);
  const min = Math.floor((limit * 3) / 4);
  return `${min} ${limit} ${min * 2}`;
}

/** min_free_kbytes: 1% of RAM with a floor of 64 MiB (and never more than 5%). */
export function minFreeKbytes(m: HostMemory): number {
  return Math.min(Math.max(65536, Math.floor(m.memTotalKb / 100)), Math.floor(m.memTotalKb / 20));
}

export const SYSCTL_PROFILES: Record<string, Record<string, SysctlValue>> = {
  required: {
    'net.core.somaxconn': 65535,
    'net.ipv4.tcp_tw_reuse': 1,
    'net.ipv4.ip_local_port_range': '2048 65535',
    'net.ipv4.tcp_max_tw_buckets': 1440000,
  },
  network: {
    'net.core.optmem_max': 25165824,
    'net.core.rmem_max': 134217728,
    'net.core.wmem_max': 134217728,
    'net.core.netdev_max_backlog': 250000,
    'net.ipv4.tcp_mem': tcpMem,
    'net.ipv4.tcp_wmem': '4096 16384 134217728',
    'net.ipv4.tcp_rmem': '4096 262144 134217728',
    'net.ipv4.tcp_adv_win_scale': 1,
    'net.ipv4.tcp_mtu_probing': 2,
    'net.ipv4.tcp_slow_start_after_idle': 0,
    'net.ipv4.tcp_max_syn_backlog': 100000,
    'net.ipv4.tcp_rfc1337': 1,
    // ais-k8s (2026-04): conntrack must not drop the long-lived data connections' out-of-window packets
    'net.netfilter.nf_conntrack_tcp_be_liberal': 1,
  },
  vm: {
    'vm.swappiness': 10,
    'vm.min_free_kbytes': minFreeKbytes,
    'vm.vfs_cache_pressure': 50,
  },
  // RDMA and GPU jobs (Soperator's workers): memory maps of large jobs
  jobs: {
    'vm.max_map_count': 655300,
  },
};

/** Keys set only where the kernel has them: net.netfilter.* exists once nf_conntrack is loaded. */
export const OPTIONAL_SYSCTLS = ['net.netfilter.nf_conntrack_tcp_be_liberal'];

/** racksmith's drop-in of a profile: sorts after 99-sysctl.conf (→ /etc/sysctl.conf) and ais-k8s's 99-ais-*.conf, so it wins at boot. */
export const sysctlFile = (profile: string) => `/etc/sysctl.d/99-zz-racksmith-${profile}.conf`;

/** The names racksmith used before (sorted before 99-*: overridden at boot); removed when found. */
export const RETIRED_SYSCTL_FILES = [
  ...['required', 'network', 'vm', 'k8s'].map((p) => `/etc/sysctl.d/90-racksmith-${p}.conf`),
  '/etc/sysctl.d/91-racksmith-extra.conf',
];
