// Everything, in the order a new rack needs it: the packages every play below needs (one
// transaction per host), host tuning and node configuration first, then storage, the jail, and
// the Kubernetes network (whose cluster step runs once, on the first control-plane host).
// Its plays target the groups storage, jail, kube_control_plane and kube_node: point them at your
// own groups with racksmith_play_hosts: { storage: ais, jail: 'ais:&gpu-nodes', kube_control_plane:
// controller, kube_node: ais } in all's vars or -e (docs/playbooks.md "Plays on your groups").
import { playbook, type HostContext, jailPackages, nodePackages, prerequisites, STORAGE_PACKAGES } from '../src/index.ts';
import network from './network.ts';
import node from './node.ts';
import storage from './storage.ts';
import jail from './jail.ts';
import kubeNetwork from './kube-network.ts';

/** Every package the host's plays below need, in one transaction per host. */
function sitePrerequisites(host: HostContext) {
  return prerequisites(host, 'site', [
    ...nodePackages(host),
    ...(host.inGroup('storage') ? STORAGE_PACKAGES : []),
    ...(host.inGroup('jail') ? jailPackages(host) : []),
  ]);
}

export default playbook({
  name: 'site',
  plays: [
    { name: 'host prerequisites', hosts: 'all', tags: ['packages'], resources: sitePrerequisites },
    ...network.plays,
    ...node.plays,
    ...storage.plays,
    ...jail.plays,
    ...kubeNetwork.plays,
  ],
});
