import type { DrainNode } from '../contract/drain.ts';

// Which record of a run's drains is a given node. A node is its scheduler, its controller and its
// name: two clusters in one inventory may each have a `node001`. But one controller may be spelled
// two ways (an address in one inventory, a name in another; the journal names it by its host, the
// ledger by the address the run reaches it at), so the controller alone does not tell two apart.

/** A node by scheduler, controller and name. */
export const nodeKey = (n: DrainNode): string => `${n.via}\0${n.controller}\0${n.node}`;

/** What findNode found: the record, none, or several of the node's scheduler and name none of which is its controller's. */
export type NodeMatch<T> = { kind: 'found'; it: T } | { kind: 'none' } | { kind: 'ambiguous'; of: T[] };

/**
 * The record of `among` that is node `n`: the one of its scheduler, controller and name; else the
 * only one of its scheduler and name, when `n` is the only node of that name on its own side
 * (`rivals`: how many there are, `n` included); else none, or ambiguous (two of that name: which
 * cluster's is which is not known, and a guess could drop a node still out).
 */
export function findNode<T>(n: DrainNode, among: readonly T[], nodeOf: (t: T) => DrainNode, rivals = 1): NodeMatch<T> {
  const named = among.filter((t) => nodeOf(t).via === n.via && nodeOf(t).node === n.node);
  const exact = named.find((t) => nodeOf(t).controller === n.controller);
  if (exact !== undefined) return { kind: 'found', it: exact };
  if (!named.length) return { kind: 'none' };
  // (one node may be named by several records: a drain's event and its resume's)
  return new Set(named.map((t) => nodeKey(nodeOf(t)))).size === 1 && rivals <= 1
    ? { kind: 'found', it: named[0] }
    : { kind: 'ambiguous', of: named };
}
