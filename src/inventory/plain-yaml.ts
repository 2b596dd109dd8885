import { maybeTyped, resolvePlain11, Yaml11Error, YAML11_PATTERNS } from './yaml11.ts';
import { MAX_DEPTH } from './json-text.ts';
import type { Located } from './located.ts';

/**
 * A fast reader for the plain block YAML that inventories are nearly always written in: nested
 * block mappings and sequences of plain or simply quoted scalars, one per line. It gives the same
 * value as the yaml library in Ansible's YAML 1.1 mode (yaml11.ts) and the offset of every key and value, in a fraction of
 * the time (a 1,000-host inventory: ~20 ms instead of ~400 ms).
 *
 * Anything else (flow collections other than `[]`/`{}`, anchors, tags, block scalars, escapes,
 * multi-line scalars, tabs, duplicate keys, non-string keys, anything the library might call an
 * error) returns undefined and the caller parses with the library: this reader never decides
 * what a document means where the two could differ. test/unit/plain-yaml.test.ts checks it against
 * the library on tables and on generated documents.
 */

/** Where a node was written (located.ts; json-text.ts makes them too). */
export type { Located };

export interface PlainYaml {
  value: unknown;
  root: Located;
}

/** Thrown inside the reader when the text is outside the plain subset (never escapes it). */
class NotPlain extends Error {}
const notPlain = (): never => {
  throw new NotPlain();
};

// Characters that make the library read the text differently or report an error: control
// characters, tabs, CR, BOM, NEL and Unicode line separators.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const UNUSUAL = /[\x00-\x09\x0b-\x1f\x7f\x85\ufeff\ufffe\uffff\u2028\u2029\ud800-\udfff]/;
// The library's limit on an implicit block-mapping key (its `:` at most this far from the key's start).
const MAX_IMPLICIT_KEY = 1024;
// A plain scalar may not start with these (they begin other kinds of node).
const INDICATOR = /^[,[\]{}#&*!|>'"%@`]/;

/**
 * A plain scalar's value, as Ansible's loader gives it (YAML 1.1, yaml11.ts). A scalar PyYAML
 * cannot construct (a bare `=`) is left to the library, which reports it where it stands.
 */
function scalarValue(raw: string): unknown {
  if (!maybeTyped(raw)) return raw; // host names, paths, words: no pattern to test
  try {
    return resolvePlain11(raw);
  } catch (e) {
    if (e instanceof Yaml11Error) notPlain();
    throw e;
  }
}

interface Frame {
  kind: 'map' | 'seq';
  indent: number;
  value: Record<string, unknown> | unknown[];
  loc: Located;
}

/** The document's value and node offsets, or undefined when it is not plain block YAML. */
export function parsePlainYaml(text: string): PlainYaml | undefined {
  if (UNUSUAL.test(text)) return undefined;
  try {
    return new Reader(text).read();
  } catch (e) {
    if (e instanceof NotPlain) return undefined;
    throw e;
  }
}

/** An empty value that a more indented block on the next lines may still fill. */
interface Pending {
  indent: number;
  /** Where the library puts the null when nothing follows: after the indicator and spaces. */
  nullAt: number;
  /** A mapping's key may hold a sequence at its own indent (`key:` then `- x`). */
  seqAtSameIndent: boolean;
  set(value: unknown, loc: Located): void;
}

class Reader {
  private readonly stack: Frame[] = [];
  private pending: Pending | undefined;
  private root: { value: unknown; loc: Located } | undefined;

  constructor(private readonly text: string) {}

  read(): PlainYaml | undefined {
    const t = this.text;
    let first = true;
    for (let start = 0; start < t.length;) {
      let end = t.indexOf('\n', start);
      if (end < 0) end = t.length;
      let i = start;
      while (i < end && t.charCodeAt(i) === 32) i++;
      if (i < end && t.charCodeAt(i) !== 35 /* # */) {
        if (first && t.startsWith('---', i) && i === start && (end === i + 3 || t.charCodeAt(i + 3) === 32)) {
          // a document start marker: only on its own (or before a comment)
          if (this.restIsComment(i + 3, end) === false) notPlain();
        } else {
          this.line(i - start, i, end);
        }
        first = false;
      }
      start = end + 1;
    }
    if (!this.root) return undefined; // an empty document: the library says what it is
    this.settlePending();
    return { value: this.root.value, root: this.root.loc };
  }

  /** One line with content: `indent` spaces, content from `at` to `end`. */
  private line(indent: number, at: number, end: number): void {
    const t = this.text;
    if ((t.startsWith('---', at) || t.startsWith('...', at)) && indent === 0) notPlain(); // more documents
    if (t.charCodeAt(at) === 37 /* % */) notPlain(); // a directive
    const isItem = t.charCodeAt(at) === 45 /* - */ && (at + 1 === end || t.charCodeAt(at + 1) === 32);

    if (this.pending) {
      const p = this.pending;
      if (indent > p.indent || (indent === p.indent && isItem && p.seqAtSameIndent)) {
        this.pending = undefined;
        this.open(isItem ? 'seq' : 'map', indent, at, p.set);
      } else {
        this.settlePending();
      }
    }
    if (!this.root) {
      this.open(isItem ? 'seq' : 'map', indent, at, (value, loc) => (this.root = { value, loc }));
    }
    // Close the blocks this line is outside of.
    let top = this.stack[this.stack.length - 1];
    while (top && (top.indent > indent || (top.indent === indent && top.kind === 'seq' && !isItem && this.stack.length > 1))) {
      this.stack.pop();
      top = this.stack[this.stack.length - 1];
    }
    if (!top || top.indent !== indent) notPlain(); // an indentation the library would reject or read otherwise
    if (top.kind === 'seq') {
      if (!isItem) notPlain();
      this.item(top, at, end);
    } else {
      if (isItem) notPlain();
      this.entry(top, at, end);
    }
  }

  /** Start a block collection whose first line is at `at`. */
  private open(kind: 'map' | 'seq', indent: number, at: number, set: (value: unknown, loc: Located) => void): void {
    if (this.stack.length >= MAX_DEPTH) notPlain(); // the library reports the depth with its position
    const loc: Located = kind === 'map' ? { at, keys: new Map() } : { at, items: [] };
    const value = kind === 'map' ? {} : [];
    set(value, loc);
    this.stack.push({ kind, indent, value, loc });
  }

  /** Nothing more indented followed an empty value: it is null. */
  private settlePending(): void {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    p.set(null, { at: p.nullAt });
  }

  /** `- ...` in a sequence. */
  private item(seq: Frame, at: number, end: number): void {
    const t = this.text;
    let v = at + 1;
    while (v < end && t.charCodeAt(v) === 32) v++;
    const items = seq.value as unknown[];
    const locs = seq.loc.items!;
    const slot = items.push(undefined) - 1;
    locs.push({ at: v });
    if (v === end || this.restIsComment(v, end)) {
      // `-` alone: a nested block on the next lines, or null
      this.pending = { indent: seq.indent, nullAt: v, seqAtSameIndent: false, set: itemSetter(items, locs, slot) };
      return;
    }
    if (t.charCodeAt(v) === 45 && (v + 1 === end || t.charCodeAt(v + 1) === 32)) notPlain(); // `- - x`
    const c = t.charCodeAt(v);
    if (c !== 91 && c !== 123 && this.keyEnd(v, end) !== undefined) {
      // `- key: value`: a mapping whose keys line up at the first key's column
      const indent = seq.indent + (v - at);
      this.open('map', indent, v, itemSetter(items, locs, slot));
      this.entry(this.stack[this.stack.length - 1], v, end);
      return;
    }
    const { value, loc } = this.scalar(v, end);
    items[slot] = value;
    locs[slot] = loc ?? { at: v };
  }

  /** `key: value` or `key:` in a mapping. */
  private entry(map: Frame, at: number, end: number): void {
    const t = this.text;
    const k = this.keyEnd(at, end) ?? notPlain();
    const key = k.key;
    if (key === '__proto__' || key === '<<') notPlain();
    const keys = map.loc.keys!;
    if (keys.has(key)) notPlain(); // duplicates: the library reports them
    const obj = map.value as Record<string, unknown>;
    let v = k.colon + 1;
    while (v < end && t.charCodeAt(v) === 32) v++;
    const slot = { keyAt: at, value: { at: v } as Located };
    keys.set(key, slot);
    if (v === end || this.restIsComment(v, end)) {
      obj[key] = null;
      this.pending = { indent: map.indent, nullAt: v, seqAtSameIndent: true, set: entrySetter(obj, key, slot) };
      return;
    }
    const { value, loc } = this.scalar(v, end);
    obj[key] = value;
    if (loc) slot.value = loc;
  }

  /**
   * The key of a `key:` line starting at `at`: plain (up to the first `: ` or a final `:`) or
   * quoted; undefined when the line has no such separator (it is a scalar).
   */
  private keyEnd(at: number, end: number): { key: string; colon: number } | undefined {
    const t = this.text;
    const c = t.charCodeAt(at);
    if (c === 39 /* ' */ || c === 34 /* " */) {
      const q = this.quoted(at, end);
      if (t.charCodeAt(q.after) !== 58 /* : */) return undefined;
      if (q.after + 1 < end && t.charCodeAt(q.after + 1) !== 32) notPlain();
      if (q.after - at > MAX_IMPLICIT_KEY) notPlain();
      return { key: q.value, colon: q.after };
    }
    let colon = -1;
    for (let i = at; i < end; i++) {
      const ch = t.charCodeAt(i);
      if (ch === 58 /* : */ && (i + 1 === end || t.charCodeAt(i + 1) === 32)) {
        colon = i;
        break;
      }
      if (ch === 35 /* # */ && t.charCodeAt(i - 1) === 32) return undefined; // a comment before any separator
    }
    if (colon < 0) return undefined;
    if (colon - at > MAX_IMPLICIT_KEY) notPlain();
    const raw = t.slice(at, colon);
    if (raw.endsWith(' ') || raw.endsWith(':') || !plainOk(raw)) notPlain();
    const key = scalarValue(raw);
    // numbers, booleans, null, dates (read as text) as keys: the library's business (YamlSource.keyKind)
    if (typeof key !== 'string' || YAML11_PATTERNS.TIMESTAMP.test(raw)) notPlain();
    return { key: key as string, colon };
  }

  /** A value from `at` to the end of the line (before any comment): a scalar or a one-line flow collection. */
  private scalar(at: number, end: number): { value: unknown; loc?: Located } {
    const t = this.text;
    const c = t.charCodeAt(at);
    if (c === 39 || c === 34) {
      const q = this.quoted(at, end);
      if (!this.restIsComment(q.after, end)) notPlain();
      return { value: q.value };
    }
    if (c === 91 /* [ */ || c === 123 /* { */) {
      const f = this.flow(at, end);
      if (!this.restIsComment(f.next, end)) notPlain();
      return { value: f.value, loc: f.loc };
    }
    // a plain scalar: up to a comment (` #`), trailing spaces dropped
    let stop = end;
    for (let i = at + 1; i < end; i++) {
      if (t.charCodeAt(i) === 35 && t.charCodeAt(i - 1) === 32) {
        stop = i;
        break;
      }
    }
    const raw = trimSpaces(t.slice(at, stop));
    if (!plainOk(raw) || raw.includes(': ') || raw.endsWith(':')) notPlain();
    return { value: scalarValue(raw) };
  }

  /**
   * A flow collection that opens and closes on this line (`[a, b]`, `{ k: v, k2: [1] }`) of plain
   * or quoted scalars: no empty entries, no trailing comma, no `:` inside a plain scalar.
   */
  private flow(at: number, end: number, depth = this.stack.length): { value: unknown; loc: Located; next: number } {
    if (depth >= MAX_DEPTH) notPlain();
    const t = this.text;
    const skip = (i: number) => {
      while (i < end && t.charCodeAt(i) === 32) i++;
      return i;
    };
    const node = (i: number): { value: unknown; loc: Located; next: number } => {
      const c = t.charCodeAt(i);
      if (c === 91 || c === 123) return this.flow(i, end, depth + 1);
      if (c === 39 || c === 34) {
        const q = this.quoted(i, end);
        return { value: q.value, loc: { at: i }, next: q.after };
      }
      let j = i;
      for (; j < end; j++) {
        const ch = t.charCodeAt(j);
        if (ch === 44 || ch === 93 || ch === 125) break; // , ] }
        if (ch === 58 || ch === 91 || ch === 123 || (ch === 35 && t.charCodeAt(j - 1) === 32)) notPlain(); // : [ { or a comment
      }
      const raw = trimSpaces(t.slice(i, j));
      if (!plainOk(raw)) notPlain();
      return { value: scalarValue(raw), loc: { at: i }, next: j };
    };
    const isSeq = t.charCodeAt(at) === 91;
    const close = isSeq ? 93 : 125;
    const items: unknown[] = [];
    const obj: Record<string, unknown> = {};
    const loc: Located = isSeq ? { at, items: [] } : { at, keys: new Map() };
    let i = skip(at + 1);
    if (t.charCodeAt(i) === close) return { value: isSeq ? items : obj, loc, next: i + 1 };
    for (;;) {
      if (i >= end) notPlain(); // continues on the next line
      if (isSeq) {
        const n = node(i);
        items.push(n.value);
        loc.items!.push(n.loc);
        i = skip(n.next);
      } else {
        const keyAt = i;
        const k = t.charCodeAt(i) === 39 || t.charCodeAt(i) === 34 ? this.quoted(i, end) : undefined;
        let key: unknown;
        if (k) {
          key = k.value;
          i = k.after;
        } else {
          let j = i;
          while (j < end && !',:[]{}#'.includes(t[j])) j++;
          const raw = trimSpaces(t.slice(i, j));
          if (!plainOk(raw) || j - i !== raw.length) notPlain();
          key = scalarValue(raw);
          if (YAML11_PATTERNS.TIMESTAMP.test(raw)) notPlain(); // a date: see keyEnd
          i = j;
        }
        if (typeof key !== 'string' || key === '__proto__' || key === '<<' || loc.keys!.has(key)) notPlain();
        if (t.charCodeAt(i) !== 58 || t.charCodeAt(i + 1) !== 32) notPlain(); // `key: value` only
        const n = node(skip(i + 1));
        obj[key as string] = n.value;
        loc.keys!.set(key as string, { keyAt, value: n.loc });
        i = skip(n.next);
      }
      const c = t.charCodeAt(i);
      if (c === close) return { value: isSeq ? items : obj, loc, next: i + 1 };
      if (c !== 44) notPlain();
      i = skip(i + 1);
      if (t.charCodeAt(i) === close || t.charCodeAt(i) === 44) notPlain(); // a trailing comma or an empty entry
    }
  }

  /** A '…' or "…" scalar on one line (no escapes in double quotes). */
  private quoted(at: number, end: number): { value: string; after: number } {
    const t = this.text;
    const q = t[at];
    if (q === '"') {
      const close = t.indexOf('"', at + 1);
      if (close < 0 || close >= end) notPlain();
      const value = t.slice(at + 1, close);
      if (value.includes('\\')) notPlain();
      return { value, after: close + 1 };
    }
    let value = '';
    let i = at + 1;
    for (;;) {
      const close = t.indexOf("'", i);
      if (close < 0 || close >= end) notPlain();
      value += t.slice(i, close);
      if (t[close + 1] === "'") {
        value += "'";
        i = close + 2;
      } else {
        return { value, after: close + 1 };
      }
    }
  }

  /** Only spaces from `i` to `end`, then nothing or a comment (a `#` after a space). */
  private restIsComment(i: number, end: number): boolean {
    const t = this.text;
    const from = i;
    while (i < end && t.charCodeAt(i) === 32) i++;
    if (i === end) return true;
    return t.charCodeAt(i) === 35 && (i > from || t.charCodeAt(i - 1) === 32);
  }
}

// Setters of a value that the next lines give (a nested block, or null): made only for such a
// line, so that the variables they hold are not kept in a heap context for every line.
function itemSetter(items: unknown[], locs: Located[], slot: number): Pending['set'] {
  return (value, loc) => {
    items[slot] = value;
    locs[slot] = loc;
  };
}

function entrySetter(obj: Record<string, unknown>, key: string, slot: { value: Located }): Pending['set'] {
  return (value, loc) => {
    obj[key] = value;
    slot.value = loc;
  };
}

/** Trailing spaces off (not String#trimEnd: YAML keeps a no-break space and other Unicode spaces). */
function trimSpaces(s: string): string {
  let end = s.length;
  while (end > 0 && s.charCodeAt(end - 1) === 32) end--;
  return end === s.length ? s : s.slice(0, end);
}

/** A plain scalar's text that the library reads as one plain scalar. */
function plainOk(raw: string): boolean {
  if (raw === '' || INDICATOR.test(raw)) return false;
  const c = raw[0];
  // `-` starts a plain scalar only before a non-space character (`-1`); `?` and `:` are left to the library
  if (c === '?' || c === ':' || (c === '-' && (raw.length === 1 || raw[1] === ' '))) return false;
  return !raw.includes(' #');
}

/** The offset of the node at `path` (of its key when `key`), else of the nearest ancestor. */
export function locate(root: Located, path: ReadonlyArray<string | number>, key: boolean): number {
  let node: Located | undefined = root;
  let best = root.at;
  for (let i = 0; i < path.length; i++) {
    const last = i === path.length - 1;
    if (node.keys) {
      const pair = node.keys.get(String(path[i]));
      if (!pair) break;
      if (last && key) {
        best = pair.keyAt;
        break;
      }
      node = pair.value;
      best = node.at;
    } else if (node.items) {
      node = node.items[Number(path[i])];
      if (!node) break;
      best = node.at;
    } else break;
  }
  return best;
}
