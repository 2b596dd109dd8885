/** Entries a per-process memo keeps before it starts over: a fleet's distinct values fit, a long run stays bounded. */
export const MEMO_ENTRIES = 4096;

/** `memo.set(key, value)`, emptying the memo first when it is full; returns `value`. */
export function remember<K, V>(memo: Map<K, V>, key: K, value: V): V {
  if (memo.size >= MEMO_ENTRIES) memo.clear();
  memo.set(key, value);
  return value;
}
