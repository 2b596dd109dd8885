import { InputError, type SourcePos } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import type { InventoryBuilder } from './builder.ts';
import type { YamlReaderHooks } from './yaml-reader.ts';
import type { YamlSource } from './yaml-source.ts';

/**
 * The JSON a dynamic inventory prints (`ansible-inventory --list`, or a script's `--list`), read
 * as ansible-core's script plugin reads it: each group has a `hosts` list (names taken as they
 * are: no ports, no ranges), `vars` and a `children` list; `_meta.hostvars` gives each listed
 * host's variables. Ansible reads this only from an executable's output; racksmith reads the
 * saved output as a file.
 */
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The --list shape: `_meta`, or a group given as a list or with a list of hosts or children. */
export function isScriptJson(v: unknown): boolean {
  if (!isObj(v)) return false;
  if ('_meta' in v) return true;
  return Object.values(v).some((g) => Array.isArray(g) || (isObj(g) && (Array.isArray(g.hosts) || Array.isArray(g.children))));
}

export function readScriptJson(src: YamlSource, inv: InventoryBuilder, hooks: YamlReaderHooks): void {
  const root = src.value as Obj;
  let hostvars: Obj | undefined;
  const listed: Array<{ name: string; pos: SourcePos }> = [];
  for (const name of src.keys([], root)) {
    const data = root[name];
    const path = [name];
    if (name === '_meta') {
      if (!isObj(data)) throw new InputError('_meta must be a mapping', src.pos(path));
      if ('hostvars' in data) {
        if (!isObj(data.hostvars)) throw new InputError('_meta.hostvars must be a mapping of hosts', src.pos([...path, 'hostvars']));
        hostvars = data.hostvars;
      }
      continue;
    }
    hooks.checkGroupName(name, src.pos(path, true));
    inv.addGroup(name, src.pos(path, true));
    let g: Obj;
    let base = path;
    if (!isObj(data)) {
      g = { hosts: data };
    } else if (!('hosts' in data || 'vars' in data || 'children' in data)) {
      g = { hosts: [name], vars: data }; // the old "group: {vars}" shorthand
      base = [];
    } else g = data;
    if ('hosts' in g) {
      if (!Array.isArray(g.hosts)) throw new InputError(`group ${printable(name)}: hosts must be a list`, src.pos([...path, 'hosts']));
      g.hosts.forEach((h, i) => {
        const pos = src.pos(isObj(data) ? [...path, 'hosts', i] : [...path, i]);
        if (typeof h !== 'string') throw new InputError(`group ${printable(name)}: a host name must be a string`, pos);
        hooks.checkHostName(h, pos);
        inv.addHost(h, pos, name);
        listed.push({ name: h, pos });
      });
    }
    if ('vars' in g) {
      const vpath = base.length ? [...path, 'vars'] : path;
      if (!isObj(g.vars)) throw new InputError(`group ${printable(name)}: vars must be a mapping`, src.pos(vpath));
      const vars = g.vars;
      const t = hooks.vars(vars, vpath, src);
      for (const k of src.keys(vpath, vars)) inv.setGroupVar(name, k, { value: vars[k], pos: src.pos([...vpath, k]), template: t[k] });
    }
    if ('children' in g && g.children !== null) {
      const children = Array.isArray(g.children) ? g.children : isObj(g.children) ? Object.keys(g.children) : undefined;
      if (!children) throw new InputError(`group ${printable(name)}: children must be a list`, src.pos([...path, 'children']));
      children.forEach((c, i) => {
        const pos = src.pos([...path, 'children', i]);
        if (typeof c !== 'string') throw new InputError(`group ${printable(name)}: a child group name must be a string`, pos);
        hooks.checkGroupName(c, pos);
        inv.addGroup(c, pos);
        inv.addChild(name, c, pos);
      });
    }
  }
  const seen = new Set<string>();
  for (const { name } of listed) {
    if (seen.has(name)) continue;
    seen.add(name);
    const hv = hostvars?.[name] ?? {};
    const hpath = ['_meta', 'hostvars', name];
    if (!isObj(hv)) throw new InputError(`_meta.hostvars.${printable(name)} must be a mapping`, src.pos(hpath));
    const t = hooks.vars(hv, hpath, src);
    for (const k of src.keys(hpath, hv)) inv.setHostVar(name, k, { value: hv[k], pos: src.pos([...hpath, k]), template: t[k] });
  }
}
