/**
 * Write semantics: server-side apply (with field ownership and conflicts), the Update bookkeeping of
 * managedFields, and the three classic patch formats (JSON merge, strategic merge, JSON patch).
 *
 * Server-side apply, simplified (see README):
 * - The applied configuration is merged over the live object: maps merge key by key, associative
 *   lists (see fields.ts) merge element by element, every other list is replaced whole.
 * - Fields the manager applied last time but no longer applies are removed, unless another manager
 *   owns them.
 * - A changed value owned by another manager is a conflict (409) unless `force` is set, in which
 *   case ownership moves to the applier.
 */
import type { Json, JsonObject, KubeObject, ManagedFieldsEntry, ResourceType } from './types.ts';
import { ApiError } from './errors.ts';
import { clone, deepEqual, dropNulls, isPlainObject } from './json.ts';
import {
  type FieldPath,
  FieldSet,
  SERVER_METADATA,
  deletePath,
  isAssociativeList,
  ownedView,
  parseManagedFields,
  pathString,
  valueAt,
  viewChanges,
  viewLeaves,
} from './fields.ts';

export interface WriteContext {
  type: ResourceType;
  manager: string;
  /** apiVersion of the request (recorded in managedFields). */
  apiVersion: string;
  now: string;
  section: 'main' | 'status';
}

const subresourceOf = (ctx: WriteContext): string => (ctx.section === 'status' ? 'status' : '');

function entryFor(ctx: WriteContext, operation: 'Apply' | 'Update', set: FieldSet): ManagedFieldsEntry {
  const e: ManagedFieldsEntry = {
    manager: ctx.manager,
    operation,
    apiVersion: ctx.apiVersion,
    time: ctx.now,
    fieldsType: 'FieldsV1',
    fieldsV1: set.toFieldsV1(),
  };
  if (ctx.section === 'status') e.subresource = 'status';
  return e;
}

/** Removes what a client may not set: server-owned metadata, and status or non-status per section. */
export function prepareBody(body: KubeObject, ctx: WriteContext): KubeObject {
  const obj = dropNulls(clone(body) as unknown as Json) as unknown as KubeObject;
  if (!isPlainObject(obj.metadata)) obj.metadata = { name: '' };
  for (const k of SERVER_METADATA) delete obj.metadata[k];
  if (ctx.section === 'status') {
    const status = obj.status;
    for (const k of Object.keys(obj)) if (!['apiVersion', 'kind', 'metadata'].includes(k)) delete obj[k];
    if (status !== undefined) obj.status = status;
  } else if (ctx.type.statusSubresource) {
    delete obj.status;
  }
  return obj;
}

/** Merges an applied configuration over a live value (maps by key, associative lists by name). */
export function mergeApplied(live: Json | undefined, applied: Json): Json {
  if (isPlainObject(applied) && isPlainObject(live)) {
    const out: JsonObject = { ...live };
    for (const [k, v] of Object.entries(applied)) out[k] = mergeApplied(live[k], v);
    return out;
  }
  if (isAssociativeList(applied) && (isAssociativeList(live) || (Array.isArray(live) && live.length === 0))) {
    return mergeNamedLists(live as JsonObject[], applied);
  }
  return clone(applied);
}

/**
 * Merges two associative lists the way structured-merge-diff orders them: live-only elements keep
 * their place, applied elements come in the applied order, shared ones merged.
 */
function mergeNamedLists(live: JsonObject[], applied: JsonObject[]): Json[] {
  const name = (e: JsonObject) => e.name as string;
  const liveByName = new Map(live.map((e) => [name(e), e]));
  const appliedNames = new Set(applied.map(name));
  const emitted = new Set<string>();
  const out: Json[] = [];
  let li = 0;
  let ri = 0;
  while (li < live.length || ri < applied.length) {
    if (li < live.length && emitted.has(name(live[li]))) {
      li++;
    } else if (li < live.length && !appliedNames.has(name(live[li]))) {
      out.push(live[li++]);
    } else if (ri < applied.length) {
      const r = applied[ri++];
      out.push(mergeApplied(liveByName.get(name(r)), r));
      emitted.add(name(r));
    } else {
      li++;
    }
  }
  return out;
}

function conflictError(ctx: WriteContext, conflicts: Array<{ manager: string; apiVersion: string; path: FieldPath }>): ApiError {
  const causes = conflicts.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with "${c.manager}" using ${c.apiVersion}`,
    field: pathString(c.path),
  }));
  const n = conflicts.length;
  const lines = causes.map((c) => `- ${c.message}: ${c.field}`).join('\n');
  const message =
    n === 1
      ? `Apply failed with 1 conflict: ${causes[0].message}: ${causes[0].field}`
      : `Apply failed with ${n} conflicts: conflicts with "${conflicts[0].manager}":\n${lines}`;
  void ctx;
  return new ApiError(409, 'Conflict', message, { causes });
}

/**
 * Server-side apply of `body` over `existing` (undefined: create). Returns the next object with
 * managedFields updated; server-owned metadata and (per section) status are kept from `existing`.
 */
export function serverSideApply(existing: KubeObject | undefined, body: KubeObject, ctx: WriteContext, force: boolean): KubeObject {
  const config = prepareBody(body, ctx);
  const statusSub = ctx.type.statusSubresource;
  const configView = ownedView(config, ctx.section, statusSub);
  const newSet = new FieldSet(viewLeaves(configView));
  const managers = existing ? parseManagedFields(existing) : [];
  const mine = managers.find(
    (m) => m.entry.manager === ctx.manager && m.entry.operation === 'Apply' && (m.entry.subresource ?? '') === subresourceOf(ctx),
  );
  const others = managers.filter((m) => m !== mine);
  const dirty = new Set<ManagedFieldsEntry>();

  if (existing) {
    const conflicts: Array<{ manager: string; apiVersion: string; path: FieldPath; owner: (typeof others)[number] }> = [];
    for (const p of newSet.paths()) {
      const before = valueAt(existing as unknown as Json, p);
      if (before !== undefined && deepEqual(before, valueAt(configView, p))) continue;
      for (const o of others) {
        if (o.set.overlaps(p)) conflicts.push({ manager: o.entry.manager, apiVersion: o.entry.apiVersion, path: p, owner: o });
      }
    }
    if (conflicts.length > 0 && !force) throw conflictError(ctx, conflicts);
    for (const o of others) {
      const taken = conflicts.filter((c) => c.owner === o).map((c) => c.path);
      if (taken.length) {
        o.set.removeOverlapping(taken);
        dirty.add(o.entry);
      }
    }
  }

  const base = (
    existing ? clone(existing) : { apiVersion: config.apiVersion, kind: config.kind, metadata: { ...config.metadata } }
  ) as KubeObject;
  if (mine) {
    const ownedByOthers = (p: FieldPath) => others.some((o) => o.set.overlaps(p));
    const keep = (p: FieldPath) => newSet.has(p) || others.some((o) => o.set.has(p));
    for (const p of mine.set.paths()) {
      if (!newSet.has(p) && !ownedByOthers(p)) deletePath(base as unknown as JsonObject, p, keep);
    }
  }
  const merged = mergeApplied(base as unknown as Json, configView as Json) as unknown as KubeObject;
  merged.apiVersion = base.apiVersion;
  merged.kind = base.kind;

  const entries: ManagedFieldsEntry[] = [];
  let placed = false;
  for (const m of managers) {
    if (m === mine) {
      placed = true;
      if (newSet.size) entries.push(newSet.equals(m.set) ? m.entry : entryFor(ctx, 'Apply', newSet));
    } else if (m.set.size) {
      entries.push(dirty.has(m.entry) ? { ...m.entry, fieldsV1: m.set.toFieldsV1() } : m.entry);
    }
  }
  if (!placed && newSet.size) entries.push(entryFor(ctx, 'Apply', newSet));
  merged.metadata.managedFields = entries;
  return merged;
}

/**
 * Records a non-apply write (create, update, patch) by `ctx.manager` in managedFields: the fields it
 * changed become its own (operation Update) and leave every other manager.
 */
export function recordUpdate(existing: KubeObject | undefined, next: KubeObject, ctx: WriteContext): KubeObject {
  const statusSub = ctx.type.statusSubresource;
  const after = ownedView(next, ctx.section, statusSub);
  const changed = existing ? viewChanges(ownedView(existing, ctx.section, statusSub), after) : viewLeaves(after);
  const out = clone(next);
  const managers = existing ? parseManagedFields(existing) : [];
  if (changed.length === 0) {
    out.metadata.managedFields = managers.map((m) => m.entry);
    return out;
  }
  const present = changed.filter((p) => valueAt(after, p) !== undefined);
  const isMine = (e: ManagedFieldsEntry) =>
    e.manager === ctx.manager && e.operation === 'Update' && (e.subresource ?? '') === subresourceOf(ctx);
  const entries: ManagedFieldsEntry[] = [];
  let placed = false;
  for (const m of managers) {
    m.set.removeOverlapping(changed);
    if (isMine(m.entry)) {
      placed = true;
      present.forEach((p) => m.set.add(p));
      if (m.set.size) entries.push(entryFor(ctx, 'Update', m.set));
    } else if (m.set.size) {
      entries.push({ ...m.entry, fieldsV1: m.set.toFieldsV1() });
    }
  }
  if (!placed && present.length) entries.push(entryFor(ctx, 'Update', new FieldSet(present)));
  out.metadata.managedFields = entries;
  return out;
}

// ---- patch formats ----

/** RFC 7386 JSON merge patch. */
export function jsonMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isPlainObject(patch)) return clone(patch);
  const out: JsonObject = isPlainObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = jsonMergePatch(out[k], v);
  }
  return out;
}

/** Merge keys of the strategic-merge lists kubectl patches (client-side apply, rollout restart, edit). */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  volumes: 'name',
  env: 'name',
  imagePullSecrets: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  conditions: 'type',
  hostAliases: 'ip',
  taints: 'key',
  webhooks: 'name',
  ownerReferences: 'uid',
  versions: 'name',
};
const MERGED_PRIMITIVE_LISTS = new Set(['finalizers']);

function mergeKeyFor(field: string, items: Json[]): string | undefined {
  const objs = items.filter(isPlainObject);
  if (objs.length === 0) return undefined;
  if (field === 'ports') return objs.every((o) => 'containerPort' in o) ? 'containerPort' : 'port';
  if (MERGE_KEYS[field]) return MERGE_KEYS[field];
  return objs.every((o) => typeof o.name === 'string') ? 'name' : undefined;
}

function stripDirectives(v: Json): Json {
  if (Array.isArray(v)) return v.filter((e) => !(isPlainObject(e) && e.$patch === 'delete')).map(stripDirectives);
  if (!isPlainObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = stripDirectives(x);
  return out;
}

function strategicList(target: Json | undefined, patch: Json[], field: string): Json {
  if (MERGED_PRIMITIVE_LISTS.has(field) && Array.isArray(target) && patch.every((e) => !isPlainObject(e))) {
    return [...target, ...patch.filter((e) => !target.some((t) => deepEqual(t, e)))];
  }
  const key = mergeKeyFor(field, patch);
  if (!key || !Array.isArray(target) || patch.some((e) => isPlainObject(e) && e.$patch === 'replace')) {
    return stripDirectives(patch.filter((e) => !(isPlainObject(e) && e.$patch === 'replace')));
  }
  const out = clone(target);
  for (const el of patch) {
    if (!isPlainObject(el)) continue;
    const i = out.findIndex((t) => isPlainObject(t) && deepEqual(t[key], el[key]));
    if (el.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) {
      out[i] = strategicMergePatch(out[i], el);
    } else {
      out.push(strategicMergePatch(undefined, el));
    }
  }
  return out;
}

function reorder(list: Json, order: Json, field: string): Json {
  if (!Array.isArray(list) || !Array.isArray(order)) return list;
  const key = mergeKeyFor(field, order);
  const idOf = (e: Json): string => JSON.stringify(key && isPlainObject(e) ? e[key] : e);
  const rank = new Map(order.map((e, i) => [idOf(e), i]));
  return [...list]
    .map((e, i) => ({ e, i }))
    .sort((a, b) => (rank.get(idOf(a.e)) ?? order.length + a.i) - (rank.get(idOf(b.e)) ?? order.length + b.i))
    .map((x) => x.e);
}

/**
 * Strategic merge patch for the directives kubectl sends: `$patch` (replace/delete),
 * `$setElementOrder/<list>`, `$deleteFromPrimitiveList/<list>`, `$retainKeys`; lists merge by the
 * merge keys above (or `name`), other lists are replaced.
 */
export function strategicMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isPlainObject(patch)) return clone(patch);
  if (patch.$patch === 'replace') return stripDirectives(patch);
  const out: JsonObject = isPlainObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const f = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[f];
      if (Array.isArray(cur) && Array.isArray(v)) out[f] = cur.filter((x) => !v.some((d) => deepEqual(d, x)));
      continue;
    }
    if (k.startsWith('$')) continue;
    if (v === null || (isPlainObject(v) && v.$patch === 'delete')) delete out[k];
    else if (Array.isArray(v)) out[k] = strategicList(out[k], v, k);
    else out[k] = strategicMergePatch(out[k], v);
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/')) {
      const f = k.slice('$setElementOrder/'.length);
      if (out[f] !== undefined) out[f] = reorder(out[f], v, f);
    }
  }
  if (Array.isArray(patch.$retainKeys)) {
    const keep = patch.$retainKeys;
    for (const k of Object.keys(out)) if (!keep.includes(k)) delete out[k];
  }
  return out;
}

function invalidPatch(message: string): ApiError {
  return new ApiError(422, 'Invalid', `the server rejected our request due to an error in our request: ${message}`);
}

function parsePointer(ptr: string): string[] {
  if (ptr === '') return [];
  if (!ptr.startsWith('/')) throw invalidPatch(`invalid JSON pointer ${JSON.stringify(ptr)}`);
  return ptr
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** RFC 6902 JSON patch. */
export function jsonPatch(target: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw invalidPatch('a JSON patch must be a list of operations');
  let doc = clone(target);
  const parentOf = (path: string[]): { parent: Json; key: string } => {
    let cur: Json = doc;
    for (const seg of path.slice(0, -1)) {
      const next: Json | undefined = Array.isArray(cur) ? cur[Number(seg)] : isPlainObject(cur) ? cur[seg] : undefined;
      if (next === undefined) throw invalidPatch(`doc is missing path: /${path.join('/')}`);
      cur = next;
    }
    return { parent: cur, key: path[path.length - 1] };
  };
  const get = (path: string[]): Json | undefined => {
    if (path.length === 0) return doc;
    const { parent, key } = parentOf(path);
    return Array.isArray(parent) ? parent[Number(key)] : isPlainObject(parent) ? parent[key] : undefined;
  };
  const remove = (path: string[]): Json => {
    const { parent, key } = parentOf(path);
    const old = get(path);
    if (old === undefined) throw invalidPatch(`doc is missing path: /${path.join('/')}`);
    if (Array.isArray(parent)) parent.splice(Number(key), 1);
    else if (isPlainObject(parent)) delete parent[key];
    return old;
  };
  const add = (path: string[], value: Json, replace: boolean): void => {
    if (path.length === 0) {
      doc = clone(value);
      return;
    }
    const { parent, key } = parentOf(path);
    if (Array.isArray(parent)) {
      const i = key === '-' ? parent.length : Number(key);
      if (!Number.isInteger(i) || i < 0 || i > parent.length) throw invalidPatch(`index out of range: ${key}`);
      if (replace) parent[i] = clone(value);
      else parent.splice(i, 0, clone(value));
    } else if (isPlainObject(parent)) {
      if (replace && !(key in parent)) throw invalidPatch(`doc is missing key: /${path.join('/')}`);
      parent[key] = clone(value);
    } else {
      throw invalidPatch(`cannot add to a scalar at /${path.join('/')}`);
    }
  };
  for (const op of ops) {
    if (!isPlainObject(op) || typeof op.op !== 'string' || typeof op.path !== 'string') throw invalidPatch('malformed operation');
    const path = parsePointer(op.path);
    switch (op.op) {
      case 'add':
        add(path, op.value ?? null, false);
        break;
      case 'replace':
        add(path, op.value ?? null, true);
        break;
      case 'remove':
        remove(path);
        break;
      case 'move':
        add(path, remove(parsePointer(String(op.from))), false);
        break;
      case 'copy':
        add(path, clone(get(parsePointer(String(op.from))) ?? null), false);
        break;
      case 'test':
        if (!deepEqual(get(path), op.value)) throw invalidPatch(`testing value /${path.join('/')} failed`);
        break;
      default:
        throw invalidPatch(`unknown operation ${op.op}`);
    }
  }
  return doc;
}
