/**
 * Texts that differ only in a few values (a device name, a UUID, an address) folded into one:
 * the words that vary become numbered slots `‹1›`, each slot's values listed once. A rack whose
 * hosts each mount their own /dev/sdX reads one change, not one per host.
 */

/** A word: a value, a path, a name (`/dev/loop3`, `10.0.0.1:22`, `net.core.somaxconn`); the rest separates. */
const TOKEN = /[\p{L}\p{N}_./+-]+(?::[\p{L}\p{N}_./+-]+)*|[^\p{L}\p{N}_./+-]+/gu;
const isWord = (t: string) => /^[\p{L}\p{N}_./+-]/u.test(t);
/** A word that can be a value holds a digit or a slash (sdb3, /dev/sdb, 10.0.0.1, a UUID): `create` and `remove` are not values. */
const isValue = (t: string) => /[\p{N}/]/u.test(t);

/** At most this many slots in a text, and at most half its words: beyond that they are different texts. */
export const MAX_SLOTS = 2;

/** A cluster's members, and (when there are several) their texts as templates with the slots' values. */
export interface ValueCluster<T> {
  members: T[];
  templates: string[];
  /** Per slot (‹1› first), its distinct values in the members' order; empty when nothing varies. */
  values: string[][];
}

interface Building<T> {
  key: string;
  members: T[];
  tokens: string[][][];
  /** Per text, the token positions that vary among the members. */
  varying: Array<Set<number>>;
}

/**
 * `items` clustered: items of the same `key` (a resource id) whose texts (`textsOf`: a change's
 * summaries, a message) differ only in values join one cluster, in the order of their first
 * member. Texts differ in more than values when their number differs, their words' count or a
 * separator differs, or a text would have more than MAX_SLOTS slots (or more than half its words).
 */
export function clusterByValues<T>(
  items: readonly T[],
  key: (t: T) => string,
  textsOf: (t: T) => readonly string[],
): Array<ValueCluster<T>> {
  const clusters: Array<Building<T>> = [];
  const byKey = new Map<string, Array<Building<T>>>();
  for (const item of items) {
    const k = key(item);
    const tokens = textsOf(item).map((s) => s.match(TOKEN) ?? []);
    const candidates = byKey.get(k) ?? [];
    if (!candidates.some((c) => tryAdd(c, item, tokens))) {
      const c: Building<T> = { key: k, members: [item], tokens: [tokens], varying: tokens.map(() => new Set()) };
      clusters.push(c);
      candidates.push(c);
      byKey.set(k, candidates);
    }
  }
  return clusters.map(finish);
}

function tryAdd<T>(c: Building<T>, item: T, tokens: string[][]): boolean {
  const first = c.tokens[0];
  if (tokens.length !== first.length) return false;
  const varying = c.varying.map((v) => new Set(v));
  for (let i = 0; i < tokens.length; i++) {
    const a = first[i];
    const b = tokens[i];
    if (a.length !== b.length) return false;
    for (let k = 0; k < a.length; k++) {
      if (a[k] === b[k]) continue;
      if (!isWord(a[k]) || !isWord(b[k]) || !isValue(a[k]) || !isValue(b[k])) return false;
      varying[i].add(k);
    }
    const words = a.filter(isWord).length;
    if (varying[i].size > MAX_SLOTS || varying[i].size * 2 > words) return false;
  }
  c.members.push(item);
  c.tokens.push(tokens);
  c.varying = varying;
  return true;
}

function finish<T>(c: Building<T>): ValueCluster<T> {
  const values: string[][] = [];
  const slotOf = new Map<string, number>(); // the same values in several places share one slot
  const templates = c.tokens[0].map((first, i) => {
    const out = [...first];
    for (const k of [...c.varying[i]].sort((x, y) => x - y)) {
      const { prefix, suffix, middles } = narrowed([...new Set(c.tokens.map((t) => t[i][k]))]);
      // one slot only where every member has the same value in both places, not merely the same set
      const id = JSON.stringify(c.tokens.map((t) => t[i][k].slice(prefix.length, t[i][k].length - suffix.length)));
      if (!slotOf.has(id)) slotOf.set(id, values.push(middles));
      out[k] = `${prefix}‹${slotOf.get(id)}›${suffix}`;
    }
    return out.join('');
  });
  return { members: c.members, templates, values };
}

/** Where a value's parts may be cut: `/sys/block/‹1›/queue/scheduler`, `10.0.0.‹1›`, `/dev/‹1›`. */
const SEPARATOR = /[/.:]/;

/**
 * Values with the parts they all share (up to a separator) taken out, so a slot holds only what
 * differs: /sys/block/loop3/queue/scheduler and …/loop4/… read `/sys/block/‹1›/queue/scheduler`.
 */
function narrowed(vals: readonly string[]): { prefix: string; suffix: string; middles: string[] } {
  const shortest = Math.min(...vals.map((v) => v.length));
  let pre = 0;
  while (pre < shortest && vals.every((v) => v[pre] === vals[0][pre])) pre++;
  while (pre > 0 && !SEPARATOR.test(vals[0][pre - 1])) pre--;
  let suf = 0;
  while (suf < shortest - pre && vals.every((v) => v[v.length - 1 - suf] === vals[0][vals[0].length - 1 - suf])) suf++;
  while (suf > 0 && !SEPARATOR.test(vals[0][vals[0].length - suf])) suf--;
  return {
    prefix: vals[0].slice(0, pre),
    suffix: vals[0].slice(vals[0].length - suf),
    middles: vals.map((v) => v.slice(pre, v.length - suf)),
  };
}

/** A slot's values on one line: `‹1›: sdb, sdc, … sdz (24 values)`. */
export function slotLine(slot: number, values: readonly string[], max = 6): string {
  const shown = values.length <= max ? values.join(', ') : `${values.slice(0, max - 1).join(', ')}, … ${values[values.length - 1]}`;
  return `‹${slot}›: ${shown}${values.length > max ? ` (${values.length} values)` : ''}`;
}
