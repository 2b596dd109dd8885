import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InputError, InputErrors, type SourcePos } from '../util/errors.ts';
import { validateOrThrow } from '../util/validate.ts';
import type { Group, Host, Inventory, Vars } from './model.ts';
import { validateInventory, validateVars } from './schema.ts';
import { YamlSource } from './yaml-source.ts';
import { expandHostRange } from './host-range.ts';

interface RawGroup {
  hosts?: Record<string, Vars | null> | null;
  vars?: Vars | null;
  children?: Record<string, RawGroup | null> | null;
}

interface HostEntry {
  vars: Vars;
  varSources: Record<string, SourcePos>;
  pos: SourcePos;
  groups: Set<string>;
}

const VAR_EXTENSIONS = ['', '.yaml', '.yml', '.json'];

/**
 * Names in a group_vars/ or host_vars/ directory, listed once per load: most of a fleet's hosts
 * have no file, and asking the file system for four names per host costs more than the rest.
 */
function listing(dir: string): Set<string> {
  try {
    return new Set(readdirSync(dir));
  } catch {
    return new Set();
  }
}

/** Vars files for `name` under group_vars/ or host_vars/: `name.yml` etc., or every file in `name/`. */
function varsFilesFor(dir: string, name: string, names: Set<string>): string[] {
  const files: string[] = [];
  for (const ext of VAR_EXTENSIONS) {
    // a name with a slash is not in the listing: the file system answers
    if (!names.has(name + ext) && !name.includes('/')) continue;
    const p = join(dir, name + ext);
    if (!existsSync(p)) continue;
    if (statSync(p).isDirectory()) {
      for (const f of readdirSync(p).sort()) if (/\.(ya?ml|json)$/.test(f)) files.push(join(p, f));
    } else if (ext !== '') files.push(p);
  }
  return files;
}

function readVarsFiles(dir: string, name: string, names: Set<string>): { vars: Vars; sources: Record<string, SourcePos> } {
  const vars: Vars = {};
  const sources: Record<string, SourcePos> = {};
  for (const file of varsFilesFor(dir, name, names)) {
    const src = YamlSource.read(file);
    if (src.value === null || src.value === undefined) continue;
    validateOrThrow(validateVars, src.value, src);
    for (const [k, v] of Object.entries(src.value as Vars)) {
      vars[k] = v;
      sources[k] = src.pos([k]);
    }
  }
  return { vars, sources };
}

/** Read an Ansible YAML inventory plus the group_vars/ and host_vars/ beside it. */
export function loadInventory(file: string, extraVars: Vars = {}, extraSources: Record<string, SourcePos> = {}): Inventory {
  const src = YamlSource.read(file);
  if (src.value === null || typeof src.value !== 'object' || Array.isArray(src.value)) {
    throw new InputError('an inventory must be a mapping of groups (start with `all:`)', src.pos([]));
  }
  validateOrThrow(validateInventory, src.value, src);
  const root = src.value as Record<string, RawGroup | null>;

  const groups = new Map<string, Group>();
  const hosts = new Map<string, HostEntry>();
  const errors: InputError[] = [];

  const group = (name: string, pos: SourcePos): Group => {
    let g = groups.get(name);
    if (!g) {
      g = { name, hosts: [], children: [], parents: [], vars: {}, varSources: {}, pos };
      groups.set(name, g);
    }
    return g;
  };
  group('all', src.pos([]));

  const walk = (name: string, raw: RawGroup | null, path: string[], parent: string | null) => {
    const g = group(name, src.pos(path, true));
    if (parent && parent !== name && !g.parents.includes(parent)) {
      g.parents.push(parent);
      groups.get(parent)!.children.push(name);
    }
    if (!raw) return;
    for (const [k, v] of Object.entries(raw.vars ?? {})) {
      g.vars[k] = v;
      g.varSources[k] = src.pos([...path, 'vars', k]);
    }
    for (const [key, hv] of Object.entries(raw.hosts ?? {})) {
      const keyPos = src.pos([...path, 'hosts', key], true);
      let names: string[];
      try {
        names = expandHostRange(key);
      } catch (e) {
        errors.push(new InputError((e as Error).message, keyPos));
        continue;
      }
      for (const hn of names) {
        let h = hosts.get(hn);
        if (!h) {
          h = { vars: {}, varSources: {}, pos: keyPos, groups: new Set() };
          hosts.set(hn, h);
        }
        // h.groups and g.hosts grow together: a Set lookup, not a scan of the group's hosts
        if (!h.groups.has(name)) {
          h.groups.add(name);
          g.hosts.push(hn);
        }
        for (const [k, v] of Object.entries(hv ?? {})) {
          h.vars[k] = v;
          h.varSources[k] = src.pos([...path, 'hosts', key, k]);
        }
      }
    }
    for (const [child, craw] of Object.entries(raw.children ?? {})) {
      walk(child, craw, [...path, 'children', child], name);
    }
  };
  for (const [name, raw] of Object.entries(root)) walk(name, raw, [name], name === 'all' ? null : 'all');
  if (errors.length) throw errors.length === 1 ? errors[0] : new InputErrors(errors);

  for (const h of hosts.keys()) {
    if (groups.has(h)) throw new InputError(`'${h}' is both a host and a group`, hosts.get(h)!.pos);
  }

  const depth = groupDepths(groups);
  const dir = dirname(file);
  const groupVarsNames = listing(join(dir, 'group_vars'));
  for (const g of groups.values()) {
    const fromFiles = readVarsFiles(join(dir, 'group_vars'), g.name, groupVarsNames);
    Object.assign(g.vars, fromFiles.vars);
    Object.assign(g.varSources, fromFiles.sources);
  }

  const hostVarsDir = join(dir, 'host_vars');
  const hostVarsNames = listing(hostVarsDir);
  // Hosts listed in the same groups (most of a fleet) share their group order and group vars.
  const byGroups = new Map<string, GroupVars>();
  const result: Host[] = [];
  for (const [name, entry] of hosts) {
    const key = [...entry.groups].sort().join('\0');
    let gv = byGroups.get(key);
    if (!gv) byGroups.set(key, (gv = groupVarsOf(entry.groups, groups, depth)));
    const hostFiles = readVarsFiles(hostVarsDir, name, hostVarsNames);
    const vars: Vars = Object.assign({}, gv.vars, entry.vars, hostFiles.vars, extraVars);
    const varSources: Record<string, SourcePos> = Object.assign({}, gv.sources, entry.varSources, hostFiles.sources, extraSources);
    result.push({ name, vars, varSources, groups: gv.ordered, pos: entry.pos });
  }
  return { file, hosts: result, groups };
}

/** The groups a host is in (read-only, shared by the hosts in them) and their vars merged in order. */
interface GroupVars {
  ordered: string[];
  vars: Vars;
  sources: Record<string, SourcePos>;
}

function groupVarsOf(direct: Set<string>, groups: Map<string, Group>, depth: Map<string, number>): GroupVars {
  const memberOf = ancestors(direct, groups);
  memberOf.add('all');
  // Ansible's order: shallower groups first, then by name; deeper (child) groups win.
  const ordered = [...memberOf].sort((a, b) => depth.get(a)! - depth.get(b)! || a.localeCompare(b));
  const vars: Vars = {};
  const sources: Record<string, SourcePos> = {};
  for (const gname of ordered) {
    const g = groups.get(gname)!;
    Object.assign(vars, g.vars);
    Object.assign(sources, g.varSources);
  }
  return { ordered, vars, sources };
}

function ancestors(direct: Set<string>, groups: Map<string, Group>): Set<string> {
  const out = new Set<string>();
  const stack = [...direct];
  while (stack.length) {
    const g = stack.pop()!;
    if (out.has(g)) continue;
    out.add(g);
    stack.push(...(groups.get(g)?.parents ?? []));
  }
  return out;
}

/** Longest distance from `all`; a cycle in `children` is an input error. */
function groupDepths(groups: Map<string, Group>): Map<string, number> {
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const visit = (name: string): number => {
    const known = depth.get(name);
    if (known !== undefined) return known;
    const g = groups.get(name)!;
    if (visiting.has(name)) throw new InputError(`group '${name}' is its own ancestor (children loop)`, g.pos);
    visiting.add(name);
    const d = name === 'all' ? 0 : Math.max(0, ...g.parents.map((p) => visit(p) + 1));
    visiting.delete(name);
    depth.set(name, d);
    return d;
  };
  for (const name of groups.keys()) visit(name);
  return depth;
}
