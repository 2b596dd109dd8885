import { accessSync, constants, readdirSync, statSync, type Stats } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { formatPos, InputError, type SourcePos } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import { locateSecrets } from '../util/secret.ts';
import { validateOrThrow } from '../util/validate.ts';
import { InventoryBuilder, type BuiltGroup, type BuiltHost, type VarEntry } from './builder.ts';
import { CONNECTION_VAR_NAMES, hostConnection, templatingError } from './connection.ts';
import { hostNameProblem } from './host-range.ts';
import { codePointOrder } from './list-json.ts';
import { readIni, type IniVar } from './ini-reader.ts';
import { addWarning, type Group, type Host, type Inventory, type InventoryWarning, type Vars } from './model.ts';
import { validateHostsVars, validateVars } from './schema.ts';
import { readScriptJson, isScriptJson } from './script-json.ts';
import { looksLikeJson, parseJson } from './json-text.ts';
import { settle, TEMPLATE } from './values.ts';
import type { VaultKeyring } from './vault.ts';
import { readYamlInventory } from './yaml-reader.ts';
import { readSourceText, unwrapSecrets, YamlSource } from './yaml-source.ts';

export interface LoadOptions {
  /** Passwords for vaulted values and files. */
  vault?: VaultKeyring;
}

/** Group names: what Ansible accepts without a warning, plus `-` and `.` (common in the wild). */
const GROUP_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
/** Entries of a directory source that are not inventories (ansible-core's IGNORED). */
const IGNORED_NAME = /^\.|^host_vars$|^group_vars$|^vars_plugins$/;
const IGNORED_EXTS = ['.pyc', '.pyo', '.swp', '.bak', '~', '.rpm', '.md', '.txt', '.rst', '.orig', '.ini', '.cfg', '.retry'];
const VARS_EXTS = ['.yml', '.yaml', '.json'];

/**
 * Read Ansible inventories exactly as ansible-core 2.14 reads them: every `-i` in order (a file
 * in YAML, INI or JSON, or a directory of them) into one inventory, then the group_vars/ and
 * host_vars/ beside each source, merged per host in Ansible's precedence (model.ts Host.vars).
 */
export function loadInventory(
  sources: string | string[],
  extraVars: Vars = {},
  extraSources: Record<string, SourcePos> = {},
  o: LoadOptions = {},
): Inventory {
  const list = typeof sources === 'string' ? [sources] : sources;
  if (list.length === 0) throw new InputError('no inventory given (-i)');
  const inv = new InventoryBuilder({ file: list[0] });
  const notices: string[] = [];
  for (const s of list) readSource(s, inv, o, true, notices);
  inv.reconcile();
  const out = resolveInventory(inv, list, extraVars, extraSources, o);
  for (const n of notices) addWarning(out, n);
  return out;
}

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function readSource(path: string, inv: InventoryBuilder, o: LoadOptions, given: boolean, notices: string[]): void {
  const st = statOf(path);
  if (!st) {
    if (!given) return;
    // Ansible reads `-i 'web1,web2,'` as a list of hosts; racksmith needs a file
    const hostList = path.includes(',')
      ? ' (a host list such as -i "web1,web2," is not supported: write the hosts in an inventory file)'
      : '';
    throw new InputError(`inventory not found${hostList}`, { file: path });
  }
  if (st.isDirectory()) {
    // sorted as Python sorts os.listdir: by code point ('ｚ' before '😀'; UTF-16 puts it after)
    for (const name of readdirSync(path).sort(codePointOrder)) {
      if (IGNORED_NAME.test(name)) continue;
      if (IGNORED_EXTS.some((e) => name.endsWith(e))) {
        // skipped as Ansible skips it, but an .ini is most likely an inventory the operator meant: said
        const file = join(path, name);
        if (name.endsWith('.ini') && statOf(file)?.isFile())
          notices.push(`${file}: skipped: Ansible's directory sources ignore .ini files; give it with -i ${file}`);
        continue;
      }
      readSource(join(path, name), inv, o, false, notices);
    }
    return;
  }
  readFile(path, inv, o);
}

/** The extensions Ansible's yaml plugin reads (its valid_extensions, compared as they are: `.YML` is not one). */
const YAML_EXTS = ['.yml', '.yaml', '.json'];

function readFile(file: string, inv: InventoryBuilder, o: LoadOptions): void {
  const ext = extname(file);
  if (ext === '.toml') throw new InputError('TOML inventories are not supported (use YAML, INI or JSON)', { file });
  const { text, encrypted } = readSourceText(file, 'inventory', o.vault);
  if (text.startsWith('#!') && isExecutable(file))
    throw new InputError(
      'an executable inventory (dynamic inventory script) is not run by racksmith: save its output (`./inventory --list > inventory.json`) and give that',
      {
        file,
      },
    );
  const yamlish = ext === '' || YAML_EXTS.includes(ext);
  if (yamlish) {
    let src: YamlSource | undefined;
    try {
      src = YamlSource.parse(file, text, { vault: o.vault }, encrypted);
    } catch (e) {
      // no extension: Ansible tries the yaml plugin, then the ini plugin
      if (ext !== '' || !(e instanceof InputError)) throw e;
    }
    const v = src?.value;
    if (src && (ext !== '' || (v !== null && typeof v === 'object' && !Array.isArray(v)))) {
      // the --list shape only in JSON text (a saved script output): a YAML file whose `hosts:` is
      // a list is refused at that line by the YAML reader, as Ansible's yaml plugin refuses it
      if (isScriptJson(v) && looksLikeJson(text) && parseJson(text) !== undefined) readScriptJson(src, inv, yamlHooks);
      else readYamlInventory(src, inv, yamlHooks);
      return;
    }
  }
  if (YAML_EXTS.includes(ext.toLowerCase()) && !yamlish) {
    // `.YML`: INI to Ansible (its INI plugin's error, or hosts), whose directory sources then skip it
    try {
      readIni(file, text, inv, iniHooks(encrypted));
    } catch (e) {
      if (!(e instanceof InputError) || !isYamlMapping(file, text, o)) throw e;
      throw new InputError(
        `${e.detail} (read as INI: Ansible's yaml plugin reads only ${YAML_EXTS.join(', ')} in lower case, not ${ext}, so Ansible reads this file as INI and skips it when that fails; rename it to ${ext.toLowerCase()})`,
        e.pos ?? { file },
      );
    }
    return;
  }
  readIni(file, text, inv, iniHooks(encrypted));
}

/** Whether the text is a YAML mapping (what a `.YML` holding YAML gets wrong), whatever its name. */
function isYamlMapping(file: string, text: string, o: LoadOptions): boolean {
  try {
    const v = YamlSource.parse(file, text, { vault: o.vault }, false).value;
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function checkGroupName(name: string, pos: SourcePos): void {
  if (!GROUP_NAME.test(name)) throw new InputError(`invalid group name '${printable(name)}' (letters, digits, _ . -)`, pos);
}

function checkHostName(name: string, pos: SourcePos): void {
  const problem = hostNameProblem(name);
  if (problem) throw new InputError(printable(problem), pos);
}

/** Connection variables holding a template are refused where they are written. */
function checkTemplatedConnectionVars(vars: Record<string, unknown>, pos: (k: string) => SourcePos): void {
  for (const k of Object.keys(vars)) {
    const v = vars[k];
    if (CONNECTION_VAR_NAMES.has(k) && typeof v === 'string' && TEMPLATE.test(v)) throw templatingError('inventory', k, pos(k));
  }
}

const yamlHooks = {
  vars(vars: Record<string, unknown>, path: string[], src: YamlSource, checked = false): Record<string, SourcePos> {
    if (!checked) {
      checkTemplatedConnectionVars(vars, (k) => src.pos([...path, k]));
      validateOrThrow(validateVars, vars, src, path);
    }
    const templates: Record<string, SourcePos> = {};
    for (const k of Object.keys(vars)) {
      const s = settle(vars[k], [...path, k], (p) => src.pos(p), src);
      vars[k] = s.value;
      if (s.template) templates[k] = s.template;
    }
    return templates;
  },
  checkHosts(hosts: Record<string, unknown>, path: string[], src: YamlSource): boolean {
    const all = Object.values(hosts);
    if (!all.every((v) => v === null || (typeof v === 'object' && !Array.isArray(v)))) return false;
    for (const [h, v] of Object.entries(hosts))
      if (v) checkTemplatedConnectionVars(v as Record<string, unknown>, (k) => src.pos([...path, h, k]));
    validateOrThrow(validateHostsVars, hosts, src, path);
    return true;
  },
  checkGroupName,
  checkHostName,
};

function iniHooks(encrypted: boolean) {
  return {
    vars(vars: IniVar[]): void {
      for (const v of vars) {
        const obj = unwrapSecrets({ [v.key]: v.value }, [], () => v.pos) as Record<string, unknown>;
        checkTemplatedConnectionVars(obj, () => v.pos);
        validateOrThrow(validateVars, obj, { pos: () => v.pos });
        const s = settle(obj[v.key], [], () => v.pos, { mayTemplate: true, mayUnsafe: false, encrypted });
        v.value = s.value;
        v.template = s.template;
      }
    },
    checkGroupName,
    checkHostName,
  };
}

// ---------------------------------------------------------------- vars files and precedence

/** group_vars/ or host_vars/ of one source directory, read once per load. */
class VarsDir {
  private readonly names: Set<string>;
  private readonly cache = new Map<string, Map<string, VarEntry>>();
  constructor(
    private readonly dir: string,
    private readonly o: LoadOptions,
  ) {
    let names: string[] = [];
    try {
      if (statSync(dir).isDirectory()) names = readdirSync(dir);
    } catch {
      // no such directory: nothing to read
    }
    this.names = new Set(names);
  }

  /** find_vars_files: `name` (a file or a directory), else name.yml, name.yaml, name.json: the first that exists. */
  vars(name: string): Map<string, VarEntry> {
    let v = this.cache.get(name);
    if (v) return v;
    v = new Map();
    if (this.names.size && !name.startsWith('/')) {
      for (const ext of ['', ...VARS_EXTS]) {
        if (!this.names.has(name + ext)) continue;
        const p = join(this.dir, name + ext);
        const st = statOf(p);
        if (!st) continue;
        const files = st.isDirectory() ? dirVarsFiles(p) : [p];
        for (const f of files) readVarsFile(f, v, this.o);
        break;
      }
    }
    this.cache.set(name, v);
    return v;
  }
}

/** _get_dir_vars_files: sorted, hidden and backup files skipped, subdirectories (without a dot) recursed. */
function dirVarsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort(codePointOrder)) {
    if (name.startsWith('.') || name.endsWith('~')) continue;
    const full = join(dir, name);
    const ext = pyExt(name);
    const st = statOf(full);
    if (!st) continue;
    if (st.isDirectory() && !ext) out.push(...dirVarsFiles(full));
    else if ((st.isFile() || full === '/dev/null') && (!ext || VARS_EXTS.includes(ext))) out.push(full);
    else if (!st.isDirectory() && (!ext || VARS_EXTS.includes(ext))) out.push(full); // a FIFO or device: refused when read
  }
  return out;
}

/** os.path.splitext's extension (leading dots of a name are not one). */
function pyExt(name: string): string {
  const stripped = name.replace(/^\.+/, '');
  const dot = stripped.lastIndexOf('.');
  return dot < 0 ? '' : stripped.slice(dot);
}

function readVarsFile(file: string, into: Map<string, VarEntry>, o: LoadOptions): void {
  const src = YamlSource.read(file, 'vars file', { vault: o.vault });
  const value = src.value;
  if (value === null || value === undefined) return;
  if (typeof value !== 'object' || Array.isArray(value) || value instanceof Object === false)
    throw new InputError('a vars file must hold a mapping of variables', src.pos([]));
  const vars = value as Record<string, unknown>;
  checkTemplatedConnectionVars(vars, (k) => src.pos([k]));
  validateOrThrow(validateVars, vars, src);
  for (const k of src.keys([], vars)) {
    const s = settle(vars[k], [k], (p) => src.pos(p), src);
    into.delete(k);
    into.set(k, { value: s.value, pos: src.pos([k]), template: s.template });
  }
}

function resolveInventory(
  inv: InventoryBuilder,
  sources: string[],
  extraVars: Vars,
  extraSources: Record<string, SourcePos>,
  o: LoadOptions,
): Inventory {
  const warnings: InventoryWarning[] = [];
  // As Ansible: a warning, and in a host pattern the name is the host (`!name`, `&name` the group)
  for (const h of inv.hosts.values())
    if (inv.groups.has(h.name))
      warnings.push({
        message: `${formatPos(h.pos)}: '${printable(h.name)}' is both a host and a group: as in Ansible, variables set on the host where the group exists go to the group, and in a host pattern '${printable(h.name)}' is the host, '!${printable(h.name)}' and '&${printable(h.name)}' the group`,
        at: h.pos,
      });
  const depth = inv.depths();
  const order = (a: BuiltGroup, b: BuiltGroup) =>
    depth.get(a)! - depth.get(b)! || a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  // vars_plugins look beside each source: the directory itself, or the file's directory
  const dirs = sources.map((s) => (statOf(s)?.isDirectory() ? resolve(s) : dirname(resolve(s))));
  const groupDirs = dirs.map((d) => new VarsDir(join(d, 'group_vars'), o));
  const hostDirs = dirs.map((d) => new VarsDir(join(d, 'host_vars'), o));

  const extraTemplates: Record<string, SourcePos> = {};
  for (const [k, v] of Object.entries(extraVars)) if (hasTemplate(v)) extraTemplates[k] = extraSources[k] ?? { file: '-e' };

  // Hosts in the same groups (most of a fleet) share their group order and group-level vars.
  const byGroups = new Map<string, { ordered: BuiltGroup[]; vars: Map<string, VarEntry> }>();
  const hosts: Host[] = [];
  for (const h of inv.hosts.values()) {
    const member = [...inv.groupsOf(h)].filter((g) => g !== inv.all).sort(order);
    const key = member.map((g) => g.name).join('\0');
    let gv = byGroups.get(key);
    if (!gv) {
      const vars = new Map<string, VarEntry>();
      apply(vars, inv.all.vars);
      for (const g of member) apply(vars, g.vars);
      for (const d of groupDirs) apply(vars, d.vars('all'));
      for (const d of groupDirs) for (const g of member) apply(vars, d.vars(g.name));
      byGroups.set(key, (gv = { ordered: member, vars }));
    }
    const merged = new Map(gv.vars);
    apply(merged, h.vars);
    for (const d of hostDirs) apply(merged, d.vars(h.name));
    hosts.push(finishHost(h, gv.ordered, merged, extraVars, extraSources, extraTemplates));
  }

  const groups = new Map<string, Group>();
  for (const g of inv.groups.values()) {
    const vars: Vars = {};
    const varSources: Record<string, SourcePos> = {};
    for (const [k, e] of g.vars) {
      vars[k] = e.value;
      varSources[k] = e.pos;
    }
    groups.set(g.name, {
      name: g.name,
      hosts: g.hosts.map((x) => x.name),
      children: g.children.map((x) => x.name),
      parents: g.parents.map((x) => x.name),
      vars,
      varSources,
      depth: depth.get(g)!,
      priority: g.priority,
      pos: g.pos,
    });
  }
  return { file: sources.join(', '), sources, hosts, groups, warnings };
}

function apply(into: Map<string, VarEntry>, from: Map<string, VarEntry>): void {
  for (const [k, e] of from) into.set(k, e);
}

function hasTemplate(v: unknown): boolean {
  if (typeof v === 'string') return TEMPLATE.test(v);
  if (v === null || typeof v !== 'object') return false;
  return Object.values(v).some(hasTemplate);
}

function finishHost(
  h: BuiltHost,
  ordered: BuiltGroup[],
  merged: Map<string, VarEntry>,
  extraVars: Vars,
  extraSources: Record<string, SourcePos>,
  extraTemplates: Record<string, SourcePos>,
): Host {
  const vars: Vars = {};
  const varSources: Record<string, SourcePos> = {};
  const templated: Record<string, SourcePos> = {};
  for (const [k, e] of merged) {
    vars[k] = e.value;
    varSources[k] = e.pos;
    if (e.template) templated[k] = e.template;
  }
  for (const [k, v] of Object.entries(extraVars)) {
    vars[k] = v;
    varSources[k] = extraSources[k] ?? { file: '-e' };
    if (extraTemplates[k]) templated[k] = extraTemplates[k];
    else delete templated[k];
  }
  for (const k in vars) locateSecrets(vars[k], varSources[k]);
  const groups = ['all', ...ordered.map((g) => g.name)];
  return { name: h.name, vars, varSources, templated, groups, connection: hostConnection(h.name, vars, varSources, templated), pos: h.pos };
}
