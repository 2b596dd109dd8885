import type { Host } from './model.ts';
import { formatPos, type SourcePos } from '../util/errors.ts';

/** A variable the inventory (or -e) sets that no play reads, whose name is close to one a play reads. */
export interface LikelyTypo {
  variable: string;
  suggestion: string;
  pos?: SourcePos;
  /** The tool whose name for the suggested variable it is (an inventory brought from ais-k8s, Kubespray). */
  from?: string;
}

/**
 * The names the playbooks operators come from give racksmith's variables (shared/reference,
 * anchor-gaps.md): nowhere near racksmith's by spelling, so without this an inventory brought
 * along sets them, no play reads them, and racksmith's defaults win without a word (an
 * ais_fs_mount_options of the operator's own, a Kubespray kube_pods_subnet).
 */
export const FOREIGN_NAMES: Readonly<Record<string, { name: string; from: string }>> = {
  ais_devices: { name: 'storage_disks', from: 'ais-k8s' },
  mpath_prefix: { name: 'storage_mount_prefix', from: 'ais-k8s' },
  ais_fs_mount_options: { name: 'storage_mount_options', from: 'ais-k8s' },
  bkdevtune_list: { name: 'storage_disks', from: 'ais-k8s' },
  blkdevtune: { name: 'io_profiles', from: 'ais-k8s' },
  kube_pods_subnet: { name: 'kube_pod_cidr', from: 'Kubespray' },
  kube_network_plugin: { name: 'kube_cni', from: 'Kubespray' },
  kube_proxy_strict_arp: { name: 'metallb_allow_strict_arp', from: 'Kubespray' },
  metallb_config: { name: 'metallb_pools', from: 'Kubespray' },
};

/**
 * Variables set for the hosts of a run that no play declares but whose name is within edit
 * distance 2 of one a play declares (1 for names under 6 characters, where 2 would match
 * unrelated words): `sysctl_overides` set beside a play that reads `sysctl_overrides`. Each is
 * reported once per place it was set. Connection and racksmith variables are not plays', so they
 * are neither suggested nor reported.
 */
export function likelyTypos(hosts: readonly Host[], declared: ReadonlySet<string>): LikelyTypo[] {
  const candidates = [...declared];
  const out: LikelyTypo[] = [];
  const seen = new Set<string>();
  for (const h of hosts) {
    for (const name of Object.keys(h.vars)) {
      if (declared.has(name) || name.startsWith('ansible_') || name.startsWith('racksmith_')) continue;
      const pos = h.varSources[name];
      const key = `${name}\0${pos ? formatPos(pos) : h.name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const foreign = Object.hasOwn(FOREIGN_NAMES, name) ? FOREIGN_NAMES[name] : undefined;
      if (foreign && declared.has(foreign.name)) {
        out.push({ variable: name, suggestion: foreign.name, pos, from: foreign.from });
        continue;
      }
      const suggestion = closest(name, candidates);
      if (suggestion) out.push({ variable: name, suggestion, pos });
    }
  }
  return out;
}

function closest(name: string, candidates: readonly string[]): string | undefined {
  const limit = name.length < 6 ? 1 : 2;
  let best: { name: string; d: number } | undefined;
  for (const c of candidates) {
    if (Math.abs(c.length - name.length) > limit) continue;
    const d = editDistance(name, c, limit);
    if (d <= limit && (!best || d < best.d)) best = { name: c, d };
  }
  return best?.name;
}

/** Damerau-Levenshtein (optimal string alignment): a swapped pair of letters is one edit. Stops past `limit`. */
export function editDistance(a: string, b: string, limit = Infinity): number {
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, prev2[j - 2] + 1);
      cur.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin > limit) return rowMin;
    prev2 = prev;
    prev = cur;
  }
  return prev[b.length];
}

export function typoWarning(t: LikelyTypo): string {
  const at = t.pos ? `${formatPos(t.pos)}: ` : '';
  if (t.from)
    return `${at}${t.variable} is read by no play: it is ${t.from}'s name; racksmith's is ${t.suggestion} (its value may take another shape: see the playbook's header)`;
  return `${at}${t.variable} is read by no play: did you mean ${t.suggestion}?`;
}
