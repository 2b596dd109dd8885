import { playbook, kubeClusterResources, kubeNodeResources } from '../src/index.ts';

/**
 * Kubernetes networking on bare metal: one CNI (Flannel or Calico via the Tigera operator) and,
 * optionally, MetalLB. Facts and versions: shared/reference/k8s-networking.md.
 *
 * Play 1, every node (kube_control_plane + kube_node): kernel modules (overlay, br_netfilter, and
 * the ip_vs set when kube-proxy runs IPVS) in /etc/modules-load.d/racksmith-k8s.conf; sysctls
 * (ip_forward, bridge-nf-call-ip{,6}tables) in /etc/sysctl.d/99-zz-racksmith-k8s.conf
 * (checked by its effect at boot); /etc/cni/net.d
 * and /opt/cni/bin; the containernetworking plugins from a checksummed tarball; a stale config of
 * another CNI in /etc/cni/net.d is refused (or moved away); Calico: NetworkManager leaves cali*,
 * tunl*, vxlan.calico alone (only where NetworkManager is installed).
 *
 * Play 2, once, on kube_control_plane[0] over the same SSH connection, with its kubeconfig:
 * `kubectl apply --server-side --field-manager=racksmith --force-conflicts` of
 *   - Flannel: kube-flannel.yml with net-conf.json Network = kube_pod_cidr and the backend;
 *   - Calico: the operator CRDs, tigera-operator.yaml, then Installation/APIServer from the inventory;
 *   - MetalLB: strictARP in kube-proxy's ConfigMap when kube-proxy runs IPVS (only with
 *     metallb_allow_strict_arp), metallb-native.yaml, then the pools and advertisements once the
 *     webhook really serves.
 * An object differs only when a field racksmith applies differs (kubectl diff with the
 * managedFields): what a controller owns is never fought nor counted, at whatever moment it writes
 * it (MetalLB's cert-rotator fills the webhook Secret the manifest ships empty, and the caBundles).
 * The probe needs a diff that takes options after its files, as kubectl passes them (GNU
 * diffutils); another is a clear probe error.
 * Each step waits (CRDs Established, rollouts, tigerastatus, webhook) with a timeout. The cluster's
 * pod CIDR (kubeadm-config podSubnet, nodes' podCIDR) must agree with the inventory, and no other
 * CNI may run: otherwise the play refuses before applying anything.
 *
 * Manifests are pinned (src/kube/pins.ts: version + sha256). The controller reads them from a
 * mirror directory or URL, verifies the sha256 before anything is applied (a mismatch refuses
 * every host: exit 1), renders, validates racksmith's custom resources against the CRD schemas in
 * the very manifests being applied, and sends the rendered YAML inside the apply script: nodes
 * need no internet.
 *
 * Hosts: groups `kube_control_plane` and `kube_node`; point them at your own groups or patterns
 * without editing this file with racksmith_play_hosts: { kube_control_plane: controller,
 * kube_node: ais } (all's vars or -e; docs/playbooks.md "Plays on your groups"): the cluster step then runs on
 * the first host of `controller`.
 *
 * Inventory variables (required: kube_cni, kube_pod_cidr):
 *   kube_cni:             flannel | calico
 *   kube_pod_cidr:        10.244.0.0/16        the cluster's pod CIDR (kubeadm podSubnet)
 *   kube_kubeconfig:      /etc/kubernetes/admin.conf   on the control-plane host
 *   kube_kubectl:         kubectl
 *   kube_proxy_mode:      iptables | ipvs | nftables   (kernel modules; checked against the cluster)
 *   kube_proxy_ipvs_modules: [ip_vs, ip_vs_rr, ip_vs_wrr, ip_vs_sh, nf_conntrack]
 *   kube_ipv6:            false                also net.ipv6.conf.all.forwarding=1
 *   kube_image_registry:  registry.local:5000  mirror with upstream repository paths (air-gapped)
 *   kube_manifest_dir:    /srv/mirror/manifests   on the controller: <dir>/<component>-<version>/<file>
 *   kube_manifest_base_url: http://mirror/manifests  same layout over HTTP (else upstream URLs)
 *   kube_manifest_pins:   {'flannel-v0.29.0/kube-flannel.yml': {sha256: ..., url: ...}}
 *   kube_wait_timeout:    300                  seconds per wait
 *   flannel_version: v0.28.9; flannel_backend: vxlan (host-gw, wireguard, ...); flannel_vni,
 *   flannel_port, flannel_direct_routing, flannel_mtu; flannel_iface / flannel_iface_regex: [..];
 *   flannel_iface_can_reach: 10.0.0.1
 *   calico_version: v3.32.1
 *   calico_ip_pools:      [{name, cidr, encapsulation: VXLANCrossSubnet, nat_outgoing: true,
 *                          block_size: 26, node_selector: all()}]   default: one pool = kube_pod_cidr
 *   calico_bgp: true|false; calico_mtu; calico_linux_dataplane: Iptables|BPF|Nftables
 *   calico_node_address_autodetection: {kubernetes: NodeInternalIP} | {interface: bond0} | {cidrs: [...]} ...
 *   calico_api_server: true; calico_goldmane: false; calico_whisker: false
 *   calico_image_pull_secrets: [name]; calico_wait_tigerastatus: true
 *   metallb_pools:        [{name: rack-a, addresses: [10.20.30.200-10.20.30.250, 10.20.31.0/27],
 *                          auto_assign: true, avoid_buggy_ips: false}]   (MetalLB is on when set)
 *   metallb_enabled; metallb_version: v0.16.1; metallb_mode: l2 | bgp; metallb_l2_interfaces: [bond0]
 *   metallb_bgp_peers:    [{name, peer_address, peer_asn, my_asn, peer_port, source_address,
 *                          hold_time: 90s, ebgp_multihop, password_secret, node_selector: {k: v}}]
 *   metallb_allow_strict_arp: false           may set kube-proxy ipvs.strictARP and restart it
 *   metallb_ignore_exclude_lb: false          announce from control-plane nodes too
 *   cni_plugins_version: v1.8.0; cni_plugins_sha256 (pinned for known versions, amd64 and arm64)
 *   cni_plugins_arch:     amd64 | arm64 | arm | ppc64le | s390x | riscv64   default: each host's own
 *                         (its uname -m: x86_64 -> amd64, aarch64 -> arm64; the pinned tarball of it,
 *                         the controller loads only the architectures its hosts have). A host whose
 *                         architecture is not the tarball's is refused before anything is written,
 *                         and a plugin whose ELF machine is not the tarball's fails the install.
 *   cni_plugins_src:      upstream URL | controller path | file:///host/path | http mirror URL
 *                         names ONE tarball: its architecture is cni_plugins_arch, else the upstream
 *                         file name's (cni-plugins-linux-<arch>-<version>.tgz), else an input error.
 *                         Offline/mixed fleets: per group (e.g. group_vars of the arm64 hosts)
 *                         cni_plugins_arch, cni_plugins_src and, for an unpinned version, cni_plugins_sha256
 *   cni_plugins_fetch:    controller (read + verify on the controller, pushed in the script: works
 *                         offline) | host (curl/wget or a path on the host; verified there)
 *   cni_plugins_required: [bridge, host-local, loopback, portmap]
 *                         With Calico, calico-node's install-cni copies its own bandwidth, host-local,
 *                         loopback, portmap and tuning over the tarball's at every start: those
 *                         need only be there, one already there is kept (and said), so the two
 *                         installers do not take turns; the tarball's other plugins are checked as before.
 *   cni_remove_stale_conf: false              move another CNI's config out of /etc/cni/net.d
 *   ais_external_lb:      false                AIStore external access through MetalLB: the pools must
 *                          hold at least ais_targets + 1 addresses (refused before anything runs)
 *   ais_targets:          number of AIS targets (default: the inventory's hosts in storage)
 *   kube_host_mtu:        the nodes' MTU (default: the smallest nic_mtu of node.ts); calico_mtu /
 *                          flannel_mtu must fit it minus the encapsulation (VXLAN 50, IPIP 20, WireGuard 80)
 */
export default playbook({
  name: 'kubernetes network',
  plays: [
    {
      name: 'kubernetes network: nodes',
      hosts: 'kube_control_plane:kube_node',
      tags: ['kube', 'kube-node'],
      resources: kubeNodeResources,
    },
    {
      name: 'kubernetes network: cluster',
      hosts: 'kube_control_plane[0]',
      tags: ['kube', 'kube-cluster'],
      resources: kubeClusterResources,
    },
  ],
});
