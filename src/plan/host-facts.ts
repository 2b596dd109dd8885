import { factsHash } from '../engine/facts-hash.ts';
import type { HostFacts } from '../facts/types.ts';

/**
 * A host's facts as a saved plan records them: a hash per part (`arch`, `os`, `memory`...; one
 * per NIC, disk and GPU by name), so `apply` can say which part moved, never what it was.
 */
/**
 * Interfaces that container runtimes and CNIs make and remove as pods come and go (a pod's veth,
 * Calico's cali*, Flannel's cni0/flannel.1, Docker's bridges, tunnels): left out of the
 * fingerprint, or a saved plan for a Kubernetes node would be refused whenever a pod started.
 */
export const POD_INTERFACE = /^(veth|cali|cni|flannel|docker|br-|kube-|tunl|vxlan|cilium|lxc|weave|genev|nodelocaldns)/;

export function factsFingerprint(f: HostFacts): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(f)) {
    if (Array.isArray(value)) continue;
    out[key] = factsHash(value);
  }
  for (const n of f.nics) if (!POD_INTERFACE.test(n.name)) out[`nics.${n.name}`] = factsHash(n);
  for (const d of f.disks) out[`disks.${d.name}`] = factsHash(d);
  for (const g of f.gpus) out[`gpus.${g.address}`] = factsHash(g);
  return out;
}

/** The parts whose hash differs, or that one side has and the other not, in order. */
export function changedFactParts(planned: Record<string, string>, now: Record<string, string>): string[] {
  const keys = [...new Set([...Object.keys(planned), ...Object.keys(now)])];
  return keys.filter((k) => planned[k] !== now[k]);
}

/** Why apply refuses a host whose facts are not those of the review; undefined when they are. */
export function factsDrift(planned: Record<string, string> | undefined, now: HostFacts): string | undefined {
  if (!planned) return 'refused: the plan holds no facts of this host (make a new plan)';
  const changed = changedFactParts(planned, factsFingerprint(now));
  if (changed.length === 0) return undefined;
  return `refused: host facts changed since the plan: ${changed.join(', ')} (make a new plan)`;
}
