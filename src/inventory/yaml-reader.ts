import { InputError, type SourcePos } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import type { InventoryBuilder } from './builder.ts';
import { expandHostPattern } from './host-range.ts';
import type { YamlSource } from './yaml-source.ts';

/**
 * A YAML inventory (or JSON in the same shape), read as ansible-core 2.14's yaml plugin reads it:
 * top-level keys are groups; a group has `hosts`, `vars` and `children` (a string stands for a
 * one-entry mapping), walked in document order, children depth-first; a host key is a pattern
 * (`web1:2222`, `node[01:20]`) whose variables are set in document order. Unlike Ansible, an
 * unknown key in a group or a group that is not a mapping is an error, not a warning.
 */
export interface YamlReaderHooks {
  /**
   * Check a mapping of variables (names, connection values) and settle its values; returns where
   * templates are, by name. `checked`: the names and types were checked already (checkHosts).
   */
  vars(vars: Record<string, unknown>, path: string[], src: YamlSource, checked?: boolean): Record<string, SourcePos>;
  /** Check every host's variables of a `hosts:` mapping at once; false when it could not (then vars() checks each). */
  checkHosts(hosts: Record<string, unknown>, path: string[], src: YamlSource): boolean;
  checkGroupName(name: string, pos: SourcePos): void;
  checkHostName(name: string, pos: SourcePos): void;
}

const SECTIONS = ['hosts', 'vars', 'children'];

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

export function readYamlInventory(src: YamlSource, inv: InventoryBuilder, hooks: YamlReaderHooks): void {
  const root = src.value;
  if (!isObj(root) || Object.keys(root).length === 0)
    throw new InputError('an inventory must be a mapping of groups (start with `all:`)', src.pos([]));
  if ('plugin' in root)
    throw new InputError('inventory plugin configuration files (`plugin:`) are not supported', src.pos(['plugin'], true));

  const walk = (name: string, data: unknown, path: string[]): string => {
    const where = path.join('.');
    notStringKey(src, path, 'group');
    hooks.checkGroupName(name, src.pos(path, true));
    if (data !== null && !isObj(data))
      throw new InputError(`group ${printable(where)} must be a mapping (hosts, vars, children) or empty`, src.pos(path));
    inv.addGroup(name, src.pos(path, true));
    if (data === null) return name;
    for (const key of src.keys(path, data)) {
      if (!SECTIONS.includes(key))
        throw new InputError(
          `unknown key '${printable(key)}' in ${printable(where)} (allowed: hosts, vars, children)`,
          src.pos([...path, key], true),
        );
    }
    for (const key of src.keys(path, data)) {
      let section = data[key];
      const at = [...path, key];
      // `hosts: web1` / `children: web` stand for one-entry mappings (as in Ansible); `vars: x` is a mistake
      if (typeof section === 'string' && key !== 'vars') section = { [section]: null };
      if (section === null) continue;
      if (!isObj(section)) throw new InputError(`${printable(at.join('.'))} must be a mapping, got ${kind(section)}`, src.pos(at));
      if (key === 'vars') {
        const t = hooks.vars(section, at, src);
        for (const v of src.keys(at, section)) inv.setGroupVar(name, v, { value: section[v], pos: src.pos([...at, v]), template: t[v] });
      } else if (key === 'children') {
        for (const child of src.keys(at, section)) {
          walk(child, section[child], [...at, child]);
          inv.addChild(name, child, src.pos([...at, child], true));
        }
      } else {
        const checked = hooks.checkHosts(section, at, src);
        for (const pattern of src.keys(at, section)) {
          const hpath = [...at, pattern];
          const keyPos = src.pos(hpath, true);
          notStringKey(src, hpath, 'host');
          let names: string[];
          let port: number | undefined;
          try {
            ({ names, port } = expandHostPattern(pattern));
          } catch (e) {
            throw new InputError(printable((e as Error).message), keyPos);
          }
          const hv = section[pattern] ?? {};
          if (!isObj(hv))
            throw new InputError(`host ${printable(pattern)}: its variables must be a mapping, got ${kind(hv)}`, src.pos(hpath));
          for (const n of names) hooks.checkHostName(n, keyPos);
          const t = hooks.vars(hv, hpath, src, checked);
          const entries = src.keys(hpath, hv).map((k) => [k, { value: hv[k], pos: src.pos([...hpath, k]), template: t[k] }] as const);
          for (const n of names) {
            inv.addHost(n, keyPos, name, port !== undefined ? { value: port, pos: keyPos } : undefined);
            for (const [k, e] of entries) inv.setHostVar(n, k, e);
          }
        }
      }
    }
    return name;
  };
  for (const name of src.keys([], root)) walk(name, root[name], [name]);
}

/**
 * A group or host name YAML reads as no string (`yes:`, `off:`, `123:`, `1.5:`, `2001-01-01:`):
 * Ansible's yaml plugin refuses it ("must be a string"), and the source is skipped; racksmith
 * would otherwise take the text of the value (`yes:` as a group 'true').
 */
function notStringKey(src: YamlSource, path: string[], what: 'group' | 'host'): void {
  const k = src.keyKind(path);
  if (k)
    throw new InputError(
      `${what} name ${printable(k.written)} is ${k.kind} to YAML 1.1 (read as '${printable(path[path.length - 1])}'): quote it, as Ansible refuses it`,
      src.pos(path, true),
    );
}

function kind(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v;
}
