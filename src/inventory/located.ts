/** Where a node was written: `at` is the offset of its first character (the library's range[0]). */
export interface Located {
  at: number;
  /** A mapping's entries by key, with the key's offset. */
  keys?: Map<string, { keyAt: number; value: Located }>;
  /** A sequence's items. */
  items?: Located[];
}
