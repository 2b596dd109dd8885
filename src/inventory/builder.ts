import { InputError, type SourcePos } from '../util/errors.ts';
import { printable } from '../util/printable.ts';

/**
 * The inventory as ansible-core's InventoryData builds it while its plugins read sources: the
 * same operations (add a group, add a host to a group with an optional port, set a variable, add
 * a child group) in the order the readers meet them, then reconcile (every group under `all`,
 * hosts in no group under `ungrouped`). Every reader (YAML, INI, JSON) drives one of these.
 */
export interface VarEntry {
  value: unknown;
  pos: SourcePos;
  /** Where the value holds a template (see values.ts settle), if it does. */
  template?: SourcePos;
}

export interface BuiltGroup {
  name: string;
  /** Direct members, in the order they were added. */
  hosts: BuiltHost[];
  children: BuiltGroup[];
  parents: BuiltGroup[];
  /** Inline variables (not group_vars/ files), in the order set. */
  vars: Map<string, VarEntry>;
  /** ansible_group_priority (default 1): among groups of one depth, higher wins. */
  priority: number;
  pos: SourcePos;
}

export interface BuiltHost {
  name: string;
  /** Groups the host was added to directly. */
  groups: Set<BuiltGroup>;
  /** Inline host variables, in document order across every place the host is listed. */
  vars: Map<string, VarEntry>;
  pos: SourcePos;
}

export class InventoryBuilder {
  readonly groups = new Map<string, BuiltGroup>();
  readonly hosts = new Map<string, BuiltHost>();
  readonly all: BuiltGroup;
  readonly ungrouped: BuiltGroup;

  constructor(pos: SourcePos) {
    this.all = this.addGroup('all', pos);
    this.ungrouped = this.addGroup('ungrouped', pos);
    this.addChild('all', 'ungrouped');
  }

  addGroup(name: string, pos: SourcePos): BuiltGroup {
    let g = this.groups.get(name);
    if (!g) {
      g = { name, hosts: [], children: [], parents: [], vars: new Map(), priority: 1, pos };
      this.groups.set(name, g);
    }
    return g;
  }

  /** add_host: the port applies only when the host is new (as in Ansible: a later `h:2222` is ignored). */
  addHost(name: string, pos: SourcePos, group?: string, port?: VarEntry): BuiltHost {
    let h = this.hosts.get(name);
    if (!h) {
      h = { name, groups: new Set(), vars: new Map(), pos };
      this.hosts.set(name, h);
      if (port) h.vars.set('ansible_port', port);
    }
    if (group !== undefined) {
      const g = this.groups.get(group)!;
      if (!h.groups.has(g)) {
        h.groups.add(g);
        g.hosts.push(h);
      }
    }
    return h;
  }

  /** set_variable looks the name up as a group first: a host named like a group sets the group's variable. */
  setHostVar(host: string, key: string, entry: VarEntry): void {
    if (this.groups.has(host)) return this.setGroupVar(host, key, entry);
    const vars = this.hosts.get(host)!.vars;
    vars.delete(key); // a later setting is the later one in document order
    vars.set(key, entry);
  }

  /** Group.set_variable: `ansible_group_priority` sets the priority (int() of the value), it is no variable. */
  setGroupVar(group: string, key: string, entry: VarEntry): void {
    const g = this.groups.get(group)!;
    if (key === 'ansible_group_priority') {
      const p = pythonInt(entry.value);
      if (p === 'invalid')
        throw new InputError(`ansible_group_priority must be a whole number, got ${printable(String(entry.value))}`, entry.pos);
      if (p !== undefined) g.priority = p;
      return;
    }
    g.vars.delete(key);
    g.vars.set(key, entry);
  }

  /** add_child_group: a loop is an error where the edge is added. */
  addChild(parent: string, child: string, pos?: SourcePos): void {
    const p = this.groups.get(parent)!;
    const c = this.groups.get(child)!;
    if (p.children.includes(c)) return;
    if (p === c || this.isAncestor(c, p))
      throw new InputError(`group '${printable(child)}' is its own ancestor (children loop through '${printable(parent)}')`, pos ?? c.pos);
    p.children.push(c);
    if (!c.parents.some((x) => x.name === p.name)) c.parents.push(p);
  }

  private isAncestor(a: BuiltGroup, of: BuiltGroup): boolean {
    const stack = [...of.parents];
    const seen = new Set<BuiltGroup>();
    while (stack.length) {
      const g = stack.pop()!;
      if (g === a) return true;
      if (seen.has(g)) continue;
      seen.add(g);
      stack.push(...g.parents);
    }
    return false;
  }

  /** reconcile_inventory: groups without a parent go under `all`; hosts in no group into `ungrouped`. */
  reconcile(): void {
    for (const g of this.groups.values()) if (g !== this.all && g.parents.length === 0) this.addChild('all', g.name);
    for (const h of this.hosts.values()) {
      const groups = this.groupsOf(h);
      if (groups.has(this.ungrouped)) {
        if ([...groups].some((g) => g !== this.all && g !== this.ungrouped) && h.groups.has(this.ungrouped)) {
          h.groups.delete(this.ungrouped);
          this.ungrouped.hosts.splice(this.ungrouped.hosts.indexOf(h), 1);
        }
      } else if ([...groups].every((g) => g === this.all)) {
        // add_child('ungrouped', name) looks the name up as a group first: a host named like a
        // group stays out of ungrouped, and that group becomes ungrouped's child (as in Ansible)
        if (this.groups.has(h.name)) this.addChild('ungrouped', h.name);
        else {
          h.groups.add(this.ungrouped);
          this.ungrouped.hosts.push(h);
        }
      }
    }
  }

  /** Every group a host is in: direct ones and their ancestors. */
  groupsOf(h: BuiltHost): Set<BuiltGroup> {
    const out = new Set<BuiltGroup>();
    const stack = [...h.groups];
    while (stack.length) {
      const g = stack.pop()!;
      if (out.has(g)) continue;
      out.add(g);
      stack.push(...g.parents);
    }
    return out;
  }

  /** Group.depth: the longest path from `all` (updated by Ansible as edges are added). */
  depths(): Map<BuiltGroup, number> {
    const depth = new Map<BuiltGroup, number>();
    const visit = (g: BuiltGroup): number => {
      const known = depth.get(g);
      if (known !== undefined) return known;
      let d = 0;
      for (const p of g.parents) d = Math.max(d, visit(p) + 1);
      depth.set(g, d);
      return d;
    };
    for (const g of this.groups.values()) visit(g);
    return depth;
  }
}

/** Python's int() of a value, as Group.set_priority calls it: undefined where it raises TypeError (ignored there). */
function pythonInt(v: unknown): number | undefined | 'invalid' {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) : 'invalid';
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string') {
    const t = v.trim();
    return /^[-+]?[0-9](?:_?[0-9])*$/.test(t) ? Number(t.replace(/_/g, '')) : 'invalid';
  }
  return undefined;
}
