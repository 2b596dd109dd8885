import { playbook, varsSchema, type HostContext } from '../src/contract/playbook.ts';
import type { Resource } from '../src/contract/resource.ts';
import { KUBELET_CONFIG, kubeletConfig } from '../src/resources/kubelet-config.ts';
import { KUBELET_HEALTHZ, restartHandler } from '../src/resources/service.ts';

/**
 * Node configuration of AIStore and Kubernetes hosts beyond sysctls (ais-k8s host-config's
 * roles, shared/reference/ais-host-tuning.md).
 *
 * Inventory variables (group_vars / host_vars / -e):
 *   kubelet_allowed_unsafe_sysctls: [net.*]   sysctls pods may set, merged into the kubelet config
 *                     (its other keys untouched), then kubelet restarted and /healthz awaited. Default [net.*] on AIS nodes of the cluster (hosts
 *                     in storage or ais and in kube_node or kube_control_plane), else none.
 *   kubelet_config_path: /var/lib/kubelet/config.yaml   (Kubespray: /etc/kubernetes/kubelet-config.yaml)
 */
const validateVars = varsSchema({
  properties: {
    kubelet_allowed_unsafe_sysctls: { type: 'array', items: { type: 'string', pattern: '^[a-z0-9_]+(\\.[A-Za-z0-9_-]+)*(\\.\\*|\\*)?$' } },
    kubelet_config_path: { type: 'string', pattern: '^/[^\\n\\0]*$' },
  },
});

/** An AIStore node that runs a kubelet: its pods need the host's net.* sysctls allowed. */
function aisKubeNode(host: HostContext): boolean {
  return (host.inGroup('storage') || host.inGroup('ais')) && (host.inGroup('kube_node') || host.inGroup('kube_control_plane'));
}

export function nodeResources(host: HostContext): Resource[] {
  host.validate(validateVars);
  const out: Resource[] = [];
  const unsafe = host.var<string[]>('kubelet_allowed_unsafe_sysctls', aisKubeNode(host) ? ['net.*'] : []);
  if (unsafe.length) {
    const kubelet = restartHandler({ service: 'kubelet', healthUrl: KUBELET_HEALTHZ, tags: ['kubelet'] });
    out.push(
      kubeletConfig({
        path: host.var('kubelet_config_path', KUBELET_CONFIG),
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
