import type { ResourceResult } from '../engine/events.ts';

export interface ChangeGroup {
  id: string;
  summaries: string[];
  diffs: string[];
  hosts: string[];
}

/**
 * Fold identical changes on many hosts into one entry with the host list: on a rack of 40
 * identical nodes the operator reads one diff, not forty.
 */
export function groupChanges(results: ResourceResult[], hostOrder: string[] = []): ChangeGroup[] {
  const groups = new Map<string, ChangeGroup>();
  for (const r of results) {
    // Only what was made: a failed resource's changes were not (its error is under Problems).
    if (r.status !== 'changed') continue;
    const summaries = r.changes.map((c) => c.summary);
    const diffs = r.changes.map((c) => c.diff).filter((d): d is string => !!d);
    const key = JSON.stringify([r.id, summaries, diffs]);
    let g = groups.get(key);
    if (!g) {
      g = { id: r.id, summaries, diffs, hosts: [] };
      groups.set(key, g);
    }
    if (!g.hosts.includes(r.host)) g.hosts.push(r.host);
  }
  // Hosts in inventory order, not in the order they happened to finish.
  const rank = new Map(hostOrder.map((h, i) => [h, i]));
  for (const g of groups.values()) g.hosts.sort((a, b) => (rank.get(a) ?? 0) - (rank.get(b) ?? 0));
  return [...groups.values()];
}

/** `tb1, tb2, tb3` or `tb1 … tb40 (40 hosts)` when the list is long. */
export function hostList(hosts: string[], max = 8): string {
  if (hosts.length <= max) return hosts.join(', ');
  return `${hosts.slice(0, max - 1).join(', ')}, … ${hosts[hosts.length - 1]} (${hosts.length} hosts)`;
}
