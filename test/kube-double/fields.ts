/**
 * Field paths and field sets, in the vocabulary of server-side apply's `fieldsV1`:
 * `f:<field>` for a map key, `k:{"name":"x"}` for an element of an associative list.
 *
 * Simplification (documented in README): a list is associative when every element is a map with a
 * unique string `name` (containers, env, volumes, webhooks, CRD versions...); every other list is
 * atomic (owned and replaced as a whole). The real server reads list types from the OpenAPI schema.
 */
import type { Json, JsonObject, KubeObject, ManagedFieldsEntry } from './types.ts';
import { isPlainObject } from './json.ts';

export type FieldPath = string[];

const SEP = '\u0000';
export const pathKey = (p: FieldPath): string => p.join(SEP);

export function isAssociativeList(list: unknown): list is JsonObject[] {
  if (!Array.isArray(list) || list.length === 0) return false;
  const names = new Set<string>();
  for (const e of list) {
    if (!isPlainObject(e) || typeof e.name !== 'string' || names.has(e.name)) return false;
    names.add(e.name);
  }
  return true;
}

export const elementSegment = (name: string): string => `k:${JSON.stringify({ name })}`;

function segmentName(seg: string): string | undefined {
  if (!seg.startsWith('k:')) return undefined;
  try {
    const k = JSON.parse(seg.slice(2)) as unknown;
    return isPlainObject(k) && typeof k.name === 'string' ? k.name : undefined;
  } catch {
    return undefined;
  }
}

/** Leaf paths of a value: non-empty maps and associative lists are descended into, anything else is a leaf. */
export function leafPaths(v: Json | undefined, prefix: FieldPath = [], out: FieldPath[] = []): FieldPath[] {
  if (isPlainObject(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v)) leafPaths(x, [...prefix, `f:${k}`], out);
  } else if (isAssociativeList(v)) {
    for (const e of v) leafPaths(e, [...prefix, elementSegment(e.name as string)], out);
  } else {
    out.push(prefix);
  }
  return out;
}

/** The value at a path, or `undefined` when absent. */
export function valueAt(root: Json | undefined, path: FieldPath): Json | undefined {
  let cur: Json | undefined = root;
  for (const seg of path) {
    if (seg.startsWith('f:')) {
      if (!isPlainObject(cur)) return undefined;
      cur = cur[seg.slice(2)];
    } else {
      const name = segmentName(seg);
      if (!Array.isArray(cur) || name === undefined) return undefined;
      cur = cur.find((e) => isPlainObject(e) && e.name === name);
    }
    if (cur === undefined) return undefined;
  }
  return cur;
}

/**
 * Deletes the value at a path. Then removes containers left empty on the way up (maps with no keys,
 * list elements with only their `name`), unless `keep` says that container is owned.
 */
export function deletePath(root: JsonObject, path: FieldPath, keep: (p: FieldPath) => boolean): void {
  const chain: Json[] = [root];
  let cur: Json | undefined = root;
  for (const seg of path.slice(0, -1)) {
    cur = valueAt(cur, [seg]);
    if (cur === undefined) return;
    chain.push(cur);
  }
  const remove = (container: Json, seg: string): void => {
    if (seg.startsWith('f:') && isPlainObject(container)) {
      delete container[seg.slice(2)];
    } else if (Array.isArray(container)) {
      const name = segmentName(seg);
      const i = container.findIndex((e) => isPlainObject(e) && e.name === name);
      if (i >= 0) container.splice(i, 1);
    }
  };
  remove(chain[chain.length - 1], path[path.length - 1]);
  for (let depth = path.length - 1; depth >= 1; depth--) {
    const node = chain[depth];
    const p = path.slice(0, depth);
    const empty = isPlainObject(node) && Object.keys(node).filter((k) => !(path[depth - 1].startsWith('k:') && k === 'name')).length === 0;
    if (!empty || keep(p) || (depth === 1 && path[0] === 'f:metadata')) break;
    remove(chain[depth - 1], path[depth - 1]);
  }
}

/** A set of leaf paths with fast "overlaps" (same path, an ancestor, or a descendant). */
export class FieldSet {
  private readonly leaves = new Map<string, FieldPath>();
  private interiorCache: Set<string> | undefined;

  constructor(paths: Iterable<FieldPath> = []) {
    for (const p of paths) this.add(p);
  }

  get size(): number {
    return this.leaves.size;
  }

  paths(): FieldPath[] {
    return [...this.leaves.values()];
  }

  has(p: FieldPath): boolean {
    return this.leaves.has(pathKey(p));
  }

  add(p: FieldPath): void {
    this.leaves.set(pathKey(p), p);
    this.interiorCache = undefined;
  }

  /**
   * Removes every path equal to, below or above one of `ps` (an owned ancestor — an atomic list or
   * an empty map — is taken over as a whole).
   */
  removeOverlapping(ps: FieldPath[]): void {
    if (ps.length === 0 || this.leaves.size === 0) return;
    const drop = new Set(ps.map(pathKey));
    for (const p of ps) for (let i = 1; i < p.length; i++) this.leaves.delete(pathKey(p.slice(0, i)));
    for (const [lk, lp] of this.leaves) {
      let k = '';
      for (let i = 0; i < lp.length; i++) {
        k = i === 0 ? lp[0] : k + SEP + lp[i];
        if (drop.has(k)) {
          this.leaves.delete(lk);
          break;
        }
      }
    }
    this.interiorCache = undefined;
  }

  overlaps(p: FieldPath): boolean {
    let k = '';
    for (let i = 0; i < p.length; i++) {
      k = i === 0 ? p[0] : k + SEP + p[i];
      if (this.leaves.has(k)) return true;
    }
    return this.interior().has(pathKey(p));
  }

  equals(other: FieldSet): boolean {
    if (other.size !== this.size) return false;
    for (const k of this.leaves.keys()) if (!other.leaves.has(k)) return false;
    return true;
  }

  private interior(): Set<string> {
    if (!this.interiorCache) {
      const s = new Set<string>();
      for (const p of this.leaves.values()) {
        let k = '';
        for (let i = 0; i < p.length - 1; i++) {
          k = i === 0 ? p[0] : k + SEP + p[i];
          s.add(k);
        }
      }
      this.interiorCache = s;
    }
    return this.interiorCache;
  }

  toFieldsV1(): JsonObject {
    const root: JsonObject = {};
    for (const p of this.leaves.values()) {
      let node = root;
      for (const seg of p) {
        const next = node[seg];
        if (isPlainObject(next)) node = next;
        else node = node[seg] = {};
      }
    }
    return root;
  }

  static fromFieldsV1(f: Json | undefined): FieldSet {
    const set = new FieldSet();
    const walk = (node: Json, prefix: FieldPath): void => {
      const keys = isPlainObject(node) ? Object.keys(node).filter((k) => k !== '.') : [];
      if (keys.length === 0) {
        if (prefix.length) set.add(prefix);
        return;
      }
      for (const k of keys) walk((node as JsonObject)[k], [...prefix, k]);
    };
    if (isPlainObject(f)) walk(f, []);
    return set;
  }
}

/** metadata fields the server owns: never part of a field set, never taken from a client's body. */
export const SERVER_METADATA = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
];

/**
 * The part of an object a writer can own: everything but apiVersion/kind, the identity
 * (metadata.name/namespace) and server-owned metadata. `section` picks the main resource (without
 * status when status is a subresource) or only the status.
 */
export function ownedView(obj: KubeObject, section: 'main' | 'status', statusSubresource: boolean): JsonObject {
  const view: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind' || v === undefined) continue;
    const isStatus = k === 'status' && statusSubresource;
    if ((section === 'status') !== isStatus) continue;
    if (k === 'metadata' && isPlainObject(v)) {
      const meta: JsonObject = {};
      for (const [mk, mv] of Object.entries(v)) {
        if (mk === 'name' || mk === 'namespace' || SERVER_METADATA.includes(mk) || mv === undefined) continue;
        meta[mk] = mv;
      }
      if (Object.keys(meta).length) view.metadata = meta;
      continue;
    }
    view[k] = v as Json;
  }
  return view;
}

/** Leaf paths of an owned view (see ownedView). */
export function viewLeaves(view: JsonObject): FieldPath[] {
  const out: FieldPath[] = [];
  for (const [k, v] of Object.entries(view)) leafPaths(v, [`f:${k}`], out);
  return out;
}

/** Paths whose value differs between two owned views (changed, added and removed). */
export function viewChanges(before: JsonObject, after: JsonObject): FieldPath[] {
  const out: FieldPath[] = [];
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) changedPaths(before[k], after[k], [`f:${k}`], out);
  return out;
}

/** Paths whose value differs between two versions of an object (changed, added and removed). */
export function changedPaths(before: Json | undefined, after: Json | undefined, prefix: FieldPath, out: FieldPath[] = []): FieldPath[] {
  if (before === undefined && after === undefined) return out;
  // (a map that was empty and gets a field, as a node's `spec: {}` cordoned, changes that field, as
  // the API server records it: `f:spec: {f:unschedulable: {}}`, not the whole map)
  if (isPlainObject(before) && isPlainObject(after) && (Object.keys(before).length > 0 || Object.keys(after).length > 0)) {
    for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) changedPaths(before[k], after[k], [...prefix, `f:${k}`], out);
    return out;
  }
  if (isAssociativeList(before) && isAssociativeList(after)) {
    const b = new Map(before.map((e) => [e.name as string, e]));
    const a = new Map(after.map((e) => [e.name as string, e]));
    for (const n of new Set([...b.keys(), ...a.keys()])) changedPaths(b.get(n), a.get(n), [...prefix, elementSegment(n)], out);
    return out;
  }
  if (JSON.stringify(before) === JSON.stringify(after)) return out;
  if (before === undefined) return leafPaths(after, prefix, out);
  if (after === undefined) return leafPaths(before, prefix, out);
  out.push(prefix);
  return out;
}

export function parseManagedFields(obj: KubeObject): Array<{ entry: ManagedFieldsEntry; set: FieldSet }> {
  const mf = obj.metadata.managedFields;
  if (!Array.isArray(mf)) return [];
  return mf.map((entry) => ({ entry, set: FieldSet.fromFieldsV1(entry.fieldsV1) }));
}

/** Renders a path the way apply conflicts name it: `.spec.template.spec.containers[name="x"].image`. */
export function pathString(p: FieldPath): string {
  return p
    .map((seg) => {
      if (seg.startsWith('f:')) return `.${seg.slice(2)}`;
      const name = segmentName(seg);
      return name === undefined ? `[${seg}]` : `[name="${name}"]`;
    })
    .join('');
}
