// Everything, in the order a new rack needs it: host tuning and node configuration first, then storage, the jail, and
// the Kubernetes network (whose cluster step runs once, on the first control-plane host).
import { playbook } from '../src/contract/playbook.ts';
import network from './network.ts';
import node from './node.ts';
import storage from './storage.ts';
import jail from './jail.ts';
import kubeNetwork from './kube-network.ts';

export default playbook({
  name: 'site',
  plays: [...network.plays, ...node.plays, ...storage.plays, ...jail.plays, ...kubeNetwork.plays],
});
