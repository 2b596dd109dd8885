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
 * slurm_controller), the first control-plane host; each group through racksmith_play_hosts
 * (worked out once per mode: it is the same for every host).
 */
class Controllers {
  private readonly byName: ReadonlyMap<string, Host>;
  private readonly firstOf = new Map<string, string | undefined>();

  constructor(private readonly inv: Inventory) {
    this.byName = new Map(inv.hosts.map((h) => [h.name, h]));
  }

  of(host: Host, mode: 'kubernetes' | 'slurm'): Host {
    if (mode === 'slurm') {
      const named = host.vars.racksmith_slurm_controller;
      if (named !== undefined) {
        const pos = host.varSources.racksmith_slurm_controller;
        if (typeof named !== 'string' || !this.byName.has(named))
          throw new InputError(`racksmith_slurm_controller of ${host.name}: no host '${printable(String(named))}' in the inventory`, pos);
        return this.byName.get(named)!;
      }
    }
    // the group as the plays see it: racksmith_play_hosts may point it at the operator's own group
    // (kube_control_plane: controller, as for ais-k8s inventories)
    const group = mode === 'slurm' ? 'slurm_controller' : 'kube_control_plane';
    if (!this.firstOf.has(group)) this.firstOf.set(group, playGroupHosts(this.inv, group)?.[0]);
    const first = this.firstOf.get(group);
    if (first === undefined)
      throw new InputError(
        `--drain ${mode} for ${host.name}: no ${mode === 'slurm' ? 'Slurm controller (set racksmith_slurm_controller, or a group slurm_controller)' : `control-plane host (group kube_control_plane, or ${PLAY_HOSTS_VAR}.kube_control_plane)`} in the inventory`,
      );
    return this.byName.get(first)!;
  }
}

/**
 * The variable that names a host's node in each scheduler when that is not its inventory name:
 * racksmith's own for Slurm (a NodeName), Kubespray's for Kubernetes (kubelet's --hostname-override).
 */
export const NODE_NAME_VAR = { slurm: 'racksmith_slurm_node', kubernetes: 'kube_override_hostname' } as const;
/** Kubespray's default of kube_override_hostname (the inventory name), and its short form (up to the first dot). */
const INVENTORY_NAME_TEMPLATE = /^\{\{-?\s*inventory_hostname(_short)?\s*-?\}\}$/;
/** A Slurm NodeName: no blanks, commas or brackets (its host-list syntax). */
const SLURM_NODE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** A Kubernetes node name: a DNS-1123 subdomain (lower case, at most 253 characters). */
const KUBE_NODE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The host's node in its scheduler: NODE_NAME_VAR's variable (kube_override_hostname also as
 * Kubespray's default `{{ inventory_hostname }}`, or `{{ inventory_hostname_short }}`), else the
 * inventory name. Kubernetes names are lower case (kubelet lowers the hostname it registers), Slurm's
 * are taken as they are. A name the scheduler cannot have is exit 3 here, before any host.
 */
export function drainNodeName(host: Host, mode: 'kubernetes' | 'slurm'): string {
  const v = NODE_NAME_VAR[mode];
  const value = host.vars[v];
  const pos = value === undefined ? host.pos : host.varSources[v];
  let node = host.name;
  const template = typeof value === 'string' ? INVENTORY_NAME_TEMPLATE.exec(value.trim()) : null;
  if (template) node = template[1] ? host.name.split('.')[0] : host.name;
  else if (value !== undefined) {
    if (host.templated[v]) throw templatingError(host.name, `${v} (the node to drain)`, host.templated[v]);
    if (value === '')
      throw new InputError(
        `${v} of ${host.name} is empty: to Kubespray that is the host's own hostname, which racksmith does not know before it reaches the host; give the node's name`,
        pos,
      );
    if (typeof value !== 'string')
      throw new InputError(`${v} of ${host.name} must be the node's name, got '${printable(String(value))}'`, pos);
    node = value;
  }
  if (mode === 'slurm' && !SLURM_NODE.test(node))
    throw new InputError(
      `${host.name}: '${printable(node)}' is no Slurm node name (letters, digits, '.', '_', '-'): set ${v} to its NodeName`,
      pos,
    );
  if (mode === 'kubernetes') {
    node = node.toLowerCase();
    if (node.length > 253 || !KUBE_NODE.test(node))
      throw new InputError(
        `${host.name}: '${printable(node)}' is no Kubernetes node name (a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most 253): set ${v} to its node's name`,
        pos,
      );
  }
  return node;
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
  const controllers = new Controllers(inv);
  const nodes = new NodeOwners(inv.hosts, controllers);
  for (const host of hosts) {
    const own = host.vars.racksmith_drain;
    if (own !== undefined && typeof own !== 'string')
      throw new InputError(`racksmith_drain of ${host.name} must be kubernetes, slurm or none`, host.varSources.racksmith_drain);
    const ownMode = own === undefined ? undefined : drainMode(own, `racksmith_drain of ${host.name}`, host.varSources.racksmith_drain);
    if (flag !== undefined && ownMode !== undefined && ownMode !== flag)
      notices.push(`--drain ${flag} overrides racksmith_drain: ${ownMode} of ${host.name}`);
    const mode = flag ?? ownMode ?? 'none';
    if (mode === 'none') continue;
    const controller = controllers.of(host, mode);
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
    nodes.checkOwn(host, mode, controller, node);
    out.set(host.name, { provider, controller, node });
  }
  return { plan: out.size ? { hosts: out, timeoutSec } : undefined, notices };
}

/**
 * Which inventory hosts are which node of a scheduler (per mode and controller), over the whole
 * inventory, not only the run's hosts: a host whose variable names another host's node (a typo
 * of racksmith_slurm_node) would drain and resume that node while its own keeps its jobs through
 * the change. Hosts whose controller or node name cannot be worked out (they are not drained by
 * this run) are left out.
 */
class NodeOwners {
  private readonly index = new Map<string, Map<string, Host[]>>();

  constructor(
    private readonly hosts: readonly Host[],
    private readonly controllers: Controllers,
  ) {}

  /** Exit 3 (at the variable that names the node) when another inventory host is the same node. */
  checkOwn(host: Host, mode: 'kubernetes' | 'slurm', controller: Host, node: string): void {
    const other = this.of(mode, controller)
      .get(node)
      ?.find((h) => h !== host);
    if (!other) return;
    const v = NODE_NAME_VAR[mode];
    const setter = [host, other].find((h) => h.vars[v] !== undefined);
    throw new InputError(
      `--drain ${mode}: ${host.name} and ${other.name} are both node '${printable(node)}' of ${controller.name} (the first one's resume would put it back under the other's changes): set ${v} to each host's own node`,
      setter ? setter.varSources[v] : host.pos,
    );
  }

  private of(mode: 'kubernetes' | 'slurm', controller: Host): Map<string, Host[]> {
    const key = `${mode}\0${controller.name}`;
    let nodes = this.index.get(key);
    if (nodes) return nodes;
    this.index.set(key, (nodes = new Map()));
    for (const h of this.hosts) {
      let node: string;
      try {
        if (this.controllers.of(h, mode) !== controller) continue;
        node = drainNodeName(h, mode);
      } catch {
        continue;
      }
      const list = nodes.get(node);
      if (list) list.push(h);
      else nodes.set(node, [h]);
    }
    return nodes;
  }
}
