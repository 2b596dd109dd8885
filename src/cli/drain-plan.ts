import type { DrainProvider } from '../contract/drain.ts';
import { kubernetesDrain } from '../drain/kubernetes.ts';
import { slurmDrain } from '../drain/slurm.ts';
import type { DrainPlan, HostDrain } from '../engine/drain-session.ts';
import { PLAY_HOSTS_VAR, playGroupHosts } from '../engine/play-hosts.ts';
import type { Host, Inventory } from '../inventory/model.ts';
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
    out.set(host.name, { provider, controller, node: host.name });
  }
  return { plan: out.size ? { hosts: out, timeoutSec } : undefined, notices };
}
