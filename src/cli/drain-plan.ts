import type { DrainProvider } from '../contract/drain.ts';
import { kubernetesDrain } from '../drain/kubernetes.ts';
import { slurmDrain } from '../drain/slurm.ts';
import type { DrainPlan, HostDrain } from '../engine/drain-session.ts';
import { PLAY_HOSTS_VAR, playGroupHosts } from '../engine/play-hosts.ts';
import type { Host, Inventory } from '../inventory/model.ts';
import { templatingError } from '../inventory/connection.ts';
import { InputError, type SourcePos } from '../util/errors.ts';
import { printable } from '../util/printable.ts';

// --drain / racksmith_drain: which provider drains each host of the run, through which host.
// Bad input (an unknown mode, a controller that is not in the inventory) is exit 3, before any host.

export const DRAIN_MODES = ['kubernetes', 'slurm', 'none'] as const;
export type DrainMode = (typeof DRAIN_MODES)[number];

/** --drain's value, or the error that names the allowed ones. */
export function drainMode(v: string, where: string, pos?: SourcePos): DrainMode {
  if ((DRAIN_MODES as readonly string[]).includes(v)) return v as DrainMode;
  throw new InputError(`${where} must be kubernetes, slurm or none, got '${printable(v)}'`, pos);
}

/**
 * The controller of each mode for a host: Slurm's (racksmith_slurm_controller, else group
 * slurm_controller), the first control-plane host; each group through racksmith_play_hosts.
 */
function controllerOf(inv: Inventory, host: Host, mode: 'kubernetes' | 'slurm'): Host {
  const byName = new Map(inv.hosts.map((h) => [h.name, h]));
  if (mode === 'slurm') {
    const named = host.vars.racksmith_slurm_controller;
    if (named !== undefined) {
      const pos = host.varSources.racksmith_slurm_controller;
      if (typeof named !== 'string' || !byName.has(named))
        throw new InputError(`racksmith_slurm_controller of ${host.name}: no host '${printable(String(named))}' in the inventory`, pos);
      return byName.get(named)!;
    }
  }
  // the group as the plays see it: racksmith_play_hosts may point it at the operator's own group
  // (kube_control_plane: controller, as for ais-k8s inventories)
  const group = mode === 'slurm' ? 'slurm_controller' : 'kube_control_plane';
  const first = playGroupHosts(inv, group)?.[0];
  if (first === undefined)
    throw new InputError(
      `--drain ${mode} for ${host.name}: no ${mode === 'slurm' ? 'Slurm controller (set racksmith_slurm_controller, or a group slurm_controller)' : `control-plane host (group kube_control_plane, or ${PLAY_HOSTS_VAR}.kube_control_plane)`} in the inventory`,
    );
  return byName.get(first)!;
}

/**
 * The variable that names a host's node in each scheduler when that is not its inventory name:
 * racksmith's own for Slurm (a NodeName), Kubespray's for Kubernetes (kubelet's --hostname-override).
 */
export const NODE_NAME_VAR = { slurm: 'racksmith_slurm_node', kubernetes: 'kube_override_hostname' } as const;
/** Kubespray's documented default of kube_override_hostname: the inventory name, as racksmith takes it anyway. */
const INVENTORY_NAME_TEMPLATE = /^\{\{-?\s*inventory_hostname\s*-?\}\}$/;
/** A node name either scheduler takes: Slurm's NodeName, a Kubernetes node (which is lower case: checked by the API). */
const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * The host's node in its scheduler: NODE_NAME_VAR's variable (kube_override_hostname also as
 * Kubespray's default `{{ inventory_hostname }}`), else the inventory name. Kubernetes names are
 * lower case (kubelet lowers the hostname it registers), Slurm's are taken as they are.
 */
export function drainNodeName(host: Host, mode: 'kubernetes' | 'slurm'): string {
  const v = NODE_NAME_VAR[mode];
  const value = host.vars[v];
  let node = host.name;
  if (value !== undefined && !(typeof value === 'string' && INVENTORY_NAME_TEMPLATE.test(value.trim()))) {
    if (host.templated[v]) throw templatingError(host.name, `${v} (the node to drain)`, host.templated[v]);
    if (typeof value !== 'string' || !NODE_NAME.test(value))
      throw new InputError(
        `${v} of ${host.name} must be the node's name in ${mode === 'slurm' ? 'Slurm' : 'Kubernetes'} (letters, digits, '.', '_', '-'), got '${printable(String(value))}'`,
        host.varSources[v],
      );
    node = value;
  }
  return mode === 'kubernetes' ? node.toLowerCase() : node;
}

/**
 * Each host's drain: --drain for every host when given, else the host's racksmith_drain (default
 * none). Undefined when no host is drained. Messages for hosts whose racksmith_drain --drain overrides.
 */
export function drainPlan(
  inv: Inventory,
  hosts: readonly Host[],
  flag: DrainMode | undefined,
  timeoutSec: number,
): { plan?: DrainPlan; notices: string[] } {
  const out = new Map<string, HostDrain>();
  const notices: string[] = [];
  const providers = new Map<string, DrainProvider>();
  /** The host each node of a scheduler is, per provider and controller. */
  const nodes = new Map<string, string>();
  for (const host of hosts) {
    const own = host.vars.racksmith_drain;
    if (own !== undefined && typeof own !== 'string')
      throw new InputError(`racksmith_drain of ${host.name} must be kubernetes, slurm or none`, host.varSources.racksmith_drain);
    const ownMode = own === undefined ? undefined : drainMode(own, `racksmith_drain of ${host.name}`, host.varSources.racksmith_drain);
    if (flag !== undefined && ownMode !== undefined && ownMode !== flag)
      notices.push(`--drain ${flag} overrides racksmith_drain: ${ownMode} of ${host.name}`);
    const mode = flag ?? ownMode ?? 'none';
    if (mode === 'none') continue;
    const controller = controllerOf(inv, host, mode);
    const key = `${mode}\0${controller.name}`;
    let provider = providers.get(key);
    if (!provider) {
      provider =
        mode === 'slurm'
          ? slurmDrain
          : kubernetesDrain({
              kubeconfig: String(controller.vars.kube_kubeconfig ?? '/etc/kubernetes/admin.conf'),
              kubectl: String(controller.vars.kube_kubectl ?? 'kubectl'),
            });
      providers.set(key, provider);
    }
    const node = drainNodeName(host, mode);
    // two hosts on one node: the first one's resume would put it back under the other's changes
    const nodeKey = `${key}\0${node}`;
    const other = nodes.get(nodeKey);
    if (other !== undefined)
      throw new InputError(
        `--drain ${mode}: ${other} and ${host.name} are both node '${printable(node)}' of ${controller.name}: set ${NODE_NAME_VAR[mode]} to each host's own node`,
        host.varSources[NODE_NAME_VAR[mode]],
      );
    nodes.set(nodeKey, host.name);
    out.set(host.name, { provider, controller, node });
  }
  return { plan: out.size ? { hosts: out, timeoutSec } : undefined, notices };
}
