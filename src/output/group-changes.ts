import type { ResourceResult } from '../engine/events.ts';
import { clusterByValues } from './fold-values.ts';

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
export function groupChanges(results: ResourceResult[], hostOrder: string[] = [], withDiffs = true): ChangeGroup[] {
  const groups = new Map<string, ChangeGroup>();
  for (const r of results) {
    // Only what was made: a failed resource's changes were not (its error is under Problems).
    if (r.status !== 'changed') continue;
    const summaries = r.changes.map((c) => c.summary);
    const diffs = withDiffs ? r.changes.map((c) => c.diff).filter((d): d is string => !!d) : [];
    const key = JSON.stringify([r.id, summaries, diffs]);
    let g = groups.get(key);
    if (!g) {
      g = { id: r.id, summaries, diffs, hosts: [] };
      groups.set(key, g);
    }
    if (!g.hosts.includes(r.host)) g.hosts.push(r.host);
  }
  // Hosts in inventory order, not in the order they happened to finish.
  for (const g of groups.values()) inOrder(g.hosts, hostOrder);
  return [...groups.values()];
}

function inOrder(hosts: string[], hostOrder: readonly string[]): string[] {
  const rank = new Map(hostOrder.map((h, i) => [h, i]));
  return hosts.sort((a, b) => (rank.get(a) ?? 0) - (rank.get(b) ?? 0));
}

/** A change group whose summaries may hold slots (‹1›), each slot's values listed (fold-values.ts). */
export interface FoldedChangeGroup extends ChangeGroup {
  values: string[][];
}

/**
 * Groups of one resource that differ only in values (each host mounts its own /dev/sdX), and
 * carry the same diffs, folded into one with their summaries as templates and the values listed.
 */
export function foldChangeValues(groups: readonly ChangeGroup[], hostOrder: string[] = []): FoldedChangeGroup[] {
  // (values listed in the hosts' order: each group by its first host)
  const rank = new Map(hostOrder.map((h, i) => [h, i]));
  const byFirstHost = [...groups].sort((a, b) => (rank.get(a.hosts[0]) ?? 0) - (rank.get(b.hosts[0]) ?? 0));
  return clusterByValues(
    byFirstHost,
    (g) => JSON.stringify([g.id, g.diffs]),
    (g) => g.summaries,
  ).map((c) =>
    c.members.length === 1
      ? { ...c.members[0], values: [] }
      : {
          ...c.members[0],
          summaries: c.templates,
          values: c.values,
          hosts: inOrder(
            c.members.flatMap((g) => g.hosts),
            hostOrder,
          ),
        },
  );
}
