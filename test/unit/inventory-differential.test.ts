// The differential test: racksmith's reading of an inventory against ansible-core 2.14's own,
// `ansible-inventory --list` (its InventoryCLI, run by test/unit/ansible-list.py in one Python
// process for all cases). A seeded generator writes 360 inventories (YAML, INI and the --list
// JSON shape; nested and diamond groups, ansible_group_priority, every vars-file layout, host
// ranges and ports, a host named like a group, YAML 1.1 scalars, INI typing, several -i and
// directory sources), plus the public inventories of ais-k8s and Kubespray as they ship. Every
// case must give the same hosts, groups and merged variables; the only normalisation is the JSON
// of `!unsafe` strings.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.ts';
import { inventoryList, pythonJson } from '../../src/inventory/list-json.ts';
import { parseJson } from '../../src/inventory/json-text.ts';
import { parseExtraVars } from '../../src/inventory/extra-vars.ts';
import { rng } from './rng.ts';

const ROOT = mkdtempSync(join(tmpdir(), 'rs-diff-'));
const FIXTURES = resolve(import.meta.dirname, 'fixtures', 'public-inventories');
afterAll(() => rmSync(ROOT, { recursive: true, force: true }), 120_000);

interface Case {
  name: string;
  dir: string;
  /** -i arguments for racksmith, relative to dir. */
  sources: string[];
  /** -i arguments for Ansible, when they differ (the --list JSON is an executable's output there). */
  ansibleSources?: string[];
  extra?: string[];
}

type R = () => number;
const pick = <T>(r: R, a: readonly T[]): T => a[Math.floor(r() * a.length)];
const chance = (r: R, p: number) => r() < p;

// ------------------------------------------------------------------ an abstract inventory

interface Model {
  groups: string[];
  parents: Map<string, string[]>;
  /** groups written at the top level (not under all.children) */
  top: Set<string>;
  hostsOf: Map<string, string[]>;
  /** hosts written under all.hosts / before any INI section */
  ungrouped: string[];
  groupVars: Map<string, Array<[string, string]>>;
  hostVars: Map<string, Array<[string, string]>>;
  priority: Map<string, number>;
  allVars: Array<[string, string]>;
}

const GROUPS = ['web', 'db', 'gpu', 'rack1', 'rack2', 'k8s_cluster', 'kube-node', 'Zeta', 'alpha', 'b2', 'etcd', 'Z_9'];
const HOSTS = [
  'h1',
  'h2',
  'h3',
  'node01',
  'node02',
  'web1',
  'Db1',
  '10.0.0.5',
  'n-7',
  'gpu[1:3]',
  'r[a:c]',
  'x[:2]',
  'R[A:B]',
  'n[08:10]',
  'web1:2222',
  'h2:2200',
  'rack1', // a host named like a group: Ansible warns and keeps both
];
const VARS = ['v1', 'v2', 'v3', 'v4', 'ansible_port', 'ansible_user'];

/** Value texts in YAML (typed as PyYAML types them). */
const YAML_VALUES = [
  'yes',
  'No',
  'on',
  'OFF',
  'y',
  'n',
  'true',
  'False',
  '0644',
  '0o17',
  '09',
  '1_000',
  '1e3',
  '1.0e+3',
  '1.5',
  '.5',
  '-.5',
  '0x1F',
  '0xFFFFFFFFFFFFFFFF',
  '1:30',
  '~',
  'null',
  '"quoted 0644"',
  "'single'",
  'plain text',
  '[1, 2, yes]',
  '{a: 1, b: [x, 0x10]}',
  '2001-12-14',
  '2001-12-14 21:59:43.10 -5',
  '.inf',
  '-.Inf',
  '.nan',
  '!!str 123',
  "!unsafe '{{ not templated }}'",
  '"{{ templated }}"',
  '12345678901234567890',
  '-0',
  '+12',
  '"yes"',
  '1.',
  '=x',
  'a: b'.replace(': ', ':'),
];
/** Value texts on an INI host line (after key=). */
const INI_HOST_VALUES = [
  '22',
  '"22"',
  "'x'",
  '[1,2]',
  `"{'a': 1}"`,
  'yes',
  '0644',
  '1e3',
  'True',
  'None',
  '1_000',
  '"a b"',
  '0x1F',
  '-5',
  '1.5',
  '"\'quoted\'"',
  '(1,2)',
  '{k:1}',
  '""',
  '2001-12-14',
  '"[1, \'two\']"',
  '12345678901234567890',
];
/** Value texts in an INI [g:vars] section (after key=). */
const INI_VARS_VALUES = [
  '22',
  '"22"',
  'hello world # c',
  '[1, 2]',
  "{'k': 'v'}",
  'yes',
  'True',
  "'quoted'",
  '0644',
  '1e3',
  '  spaced  ',
  'a=b',
  '-1',
  'None',
  '1 # one',
  "u'unicode'",
  "b'bytes'",
  "'a' 'b'",
  '"esc\\tape"',
  'x#y',
];
const JSON_VALUES = [
  '1',
  '1.5',
  '1e3',
  '"s"',
  'true',
  'null',
  '[1, "a"]',
  '{"k": {"n": 2}}',
  '12345678901234567890',
  '"0644"',
  '-0.0',
  '"yes"',
];
const PRIORITIES = ['1', '2', '5', '10', '-1', '"3"'];

function model(r: R): Model {
  const n = 2 + Math.floor(r() * 6);
  const groups: string[] = [];
  while (groups.length < n) {
    const g = pick(r, GROUPS);
    if (!groups.includes(g)) groups.push(g);
  }
  const parents = new Map<string, string[]>();
  const top = new Set<string>();
  groups.forEach((g, i) => {
    const ps: string[] = [];
    if (i > 0 && chance(r, 0.6)) ps.push(groups[Math.floor(r() * i)]);
    if (i > 1 && chance(r, 0.25)) {
      const p2 = groups[Math.floor(r() * i)];
      if (!ps.includes(p2)) ps.push(p2); // a diamond
    }
    parents.set(g, ps);
    if (ps.length === 0 && chance(r, 0.3)) top.add(g);
  });
  const hostsOf = new Map<string, string[]>(groups.map((g) => [g, []]));
  const ungrouped: string[] = [];
  const hostCount = 1 + Math.floor(r() * 6);
  const used = new Set<string>();
  for (let i = 0; i < hostCount; i++) {
    let h = pick(r, HOSTS);
    if (used.has(h.replace(/:\d+$/, ''))) continue;
    used.add(h.replace(/:\d+$/, ''));
    const k = Math.floor(r() * 4);
    if (k === 0) ungrouped.push(h);
    for (let j = 0; j < k; j++) {
      const g = pick(r, groups);
      if (!hostsOf.get(g)!.includes(h)) hostsOf.get(g)!.push(h);
      // the same host under another name form (no port) in a second group
      if (h.includes(':') && chance(r, 0.5)) h = h.replace(/:\d+$/, '');
    }
  }
  const vars = (count: number, values: readonly string[]): Array<[string, string]> => {
    const out: Array<[string, string]> = [];
    for (let i = 0; i < count; i++) {
      const k = pick(r, VARS);
      if (out.some(([x]) => x === k)) continue;
      let v = pick(r, values);
      if (k === 'ansible_port') v = pick(r, ['22', '2222', '"2201"']);
      if (k === 'ansible_user') v = pick(r, ['root', 'ops', 'admin']);
      out.push([k, v]);
    }
    return out;
  };
  const groupVars = new Map(groups.map((g) => [g, chance(r, 0.6) ? vars(1 + Math.floor(r() * 3), YAML_VALUES) : []]));
  const hostVars = new Map(
    [...new Set([...hostsOf.values()].flat().concat(ungrouped))].map((h) => [
      h,
      chance(r, 0.5) ? vars(1 + Math.floor(r() * 3), YAML_VALUES) : [],
    ]),
  );
  const priority = new Map<string, number>();
  for (const g of groups) if (chance(r, 0.3)) priority.set(g, PRIORITIES.indexOf(pick(r, PRIORITIES)));
  return {
    groups,
    parents,
    top,
    hostsOf,
    ungrouped,
    groupVars,
    hostVars,
    priority,
    allVars: chance(r, 0.7) ? vars(1 + Math.floor(r() * 3), YAML_VALUES) : [],
  };
}

// ------------------------------------------------------------------ renderers

function yamlInventory(m: Model): string {
  const lines: string[] = [];
  const written = new Set<string>();
  const childrenOf = (g: string) => m.groups.filter((c) => m.parents.get(c)!.includes(g));
  const emitVars = (indent: string, vars: Array<[string, string]>, priority?: number) => {
    if (!vars.length && priority === undefined) return;
    lines.push(`${indent}vars:`);
    if (priority !== undefined) lines.push(`${indent}  ansible_group_priority: ${PRIORITIES[priority]}`);
    for (const [k, v] of vars) lines.push(`${indent}  ${k}: ${v}`);
  };
  const emitHosts = (indent: string, hosts: string[], withVars: boolean) => {
    if (!hosts.length) return;
    lines.push(`${indent}hosts:`);
    for (const h of hosts) {
      const hv = withVars ? (m.hostVars.get(h) ?? []) : [];
      if (!hv.length) lines.push(`${indent}  ${JSON.stringify(h)}:`);
      else {
        lines.push(`${indent}  ${JSON.stringify(h)}:`);
        for (const [k, v] of hv) lines.push(`${indent}    ${k}: ${v}`);
      }
    }
  };
  const emitGroup = (g: string, indent: string) => {
    if (written.has(g)) {
      lines.push(`${indent}${g}:`);
      return;
    }
    written.add(g);
    lines.push(`${indent}${g}:`);
    emitHosts(indent + '  ', m.hostsOf.get(g)!, true);
    emitVars(indent + '  ', m.groupVars.get(g)!, m.priority.get(g));
    const kids = childrenOf(g);
    if (kids.length) {
      lines.push(`${indent}  children:`);
      for (const c of kids) emitGroup(c, indent + '    ');
    }
  };
  lines.push('all:');
  emitVars('  ', m.allVars);
  emitHosts('  ', m.ungrouped, true);
  const underAll = m.groups.filter((g) => m.parents.get(g)!.length === 0 && !m.top.has(g));
  if (underAll.length) {
    lines.push('  children:');
    for (const g of underAll) emitGroup(g, '    ');
  }
  for (const g of m.groups) if (m.top.has(g)) emitGroup(g, '');
  return lines.join('\n') + '\n';
}

function iniInventory(m: Model, r: R): string {
  const lines: string[] = [];
  const hostLine = (h: string) => {
    const hv = m.hostVars.get(h) ?? [];
    return (
      [
        h,
        ...hv.map(
          ([k]) => `${k}=${k === 'ansible_port' ? pick(r, ['22', '2222']) : k === 'ansible_user' ? 'ops' : pick(r, INI_HOST_VALUES)}`,
        ),
      ].join(' ') + (chance(r, 0.2) ? '  # a comment' : '')
    );
  };
  for (const h of m.ungrouped) lines.push(hostLine(h));
  const order = chance(r, 0.5) ? m.groups : [...m.groups].reverse(); // declared before or after their use
  for (const g of order) {
    lines.push('', `[${g}]`);
    for (const h of m.hostsOf.get(g)!) lines.push(hostLine(h));
    const kids = m.groups.filter((c) => m.parents.get(c)!.includes(g));
    if (kids.length) lines.push('', `[${g}:children]`, ...kids);
    const gv = m.groupVars.get(g)!;
    if (gv.length || m.priority.has(g)) {
      lines.push('', `[${g}:vars]`);
      if (m.priority.has(g)) lines.push(`ansible_group_priority=${PRIORITIES[m.priority.get(g)!].replace(/"/g, '')}`);
      for (const [k] of gv) lines.push(`${k}=${k === 'ansible_port' ? '2200' : k === 'ansible_user' ? 'admin' : pick(r, INI_VARS_VALUES)}`);
    }
  }
  if (m.allVars.length) {
    lines.push('', '[all:vars]');
    for (const [k] of m.allVars)
      lines.push(`${k} = ${k === 'ansible_port' ? '22' : k === 'ansible_user' ? 'root' : pick(r, INI_VARS_VALUES)}`);
  }
  return lines.join('\n') + '\n';
}

/** The --list JSON shape (a dynamic inventory's output). Host names are literal there: no patterns. */
function scriptJson(m: Model, r: R): string {
  const out: Record<string, unknown> = {};
  const hostvars: Record<string, unknown> = {};
  const lit = (h: string) => h.replace(/[[\]:]/g, '_').replace(/_+$/, '');
  const jsonVars = (vars: Array<[string, string]>) =>
    Object.fromEntries(
      vars.map(([k]) => [k, JSON.parse(k === 'ansible_port' ? '22' : k === 'ansible_user' ? '"ops"' : pick(r, JSON_VALUES))]),
    );
  for (const g of m.groups) {
    const entry: Record<string, unknown> = {};
    const hosts = m.hostsOf.get(g)!.map(lit);
    if (hosts.length) entry.hosts = hosts;
    const kids = m.groups.filter((c) => m.parents.get(c)!.includes(g));
    if (kids.length) entry.children = kids;
    const gv = m.groupVars.get(g)!;
    if (gv.length) entry.vars = jsonVars(gv);
    out[g] = Object.keys(entry).length ? entry : { hosts: [] };
  }
  out.ungrouped = { hosts: m.ungrouped.map(lit) };
  if (m.allVars.length) out.all = { vars: jsonVars(m.allVars) };
  for (const [h, hv] of m.hostVars) if (hv.length) hostvars[lit(h)] = jsonVars(hv);
  out._meta = { hostvars };
  return JSON.stringify(out, null, chance(r, 0.5) ? 2 : undefined).replace(/"__BIG__"/g, '12345678901234567890');
}

/** group_vars/ or host_vars/ files for `name`, in one of the layouts Ansible reads (and some it ignores). */
function varsFiles(r: R, base: string, name: string, vars: () => string): Record<string, string> {
  const layout = pick(r, ['yml', 'yaml', 'noext', 'json', 'both', 'dir', 'dir', 'none']);
  const f: Record<string, string> = {};
  switch (layout) {
    case 'yml':
      f[`${base}/${name}.yml`] = vars();
      break;
    case 'yaml':
      f[`${base}/${name}.yaml`] = vars();
      break;
    case 'noext':
      f[`${base}/${name}`] = vars();
      if (chance(r, 0.5)) f[`${base}/${name}.yml`] = vars(); // not read: the first that exists wins
      break;
    case 'json':
      f[`${base}/${name}.json`] = `{"v2": ${pick(r, JSON_VALUES)}, "v9": 1e3}`;
      break;
    case 'both':
      f[`${base}/${name}.yml`] = vars();
      f[`${base}/${name}.yaml`] = vars(); // Ansible reads only the .yml
      break;
    case 'dir':
      f[`${base}/${name}/10-a.yml`] = vars();
      f[`${base}/${name}/20-b`] = vars();
      if (chance(r, 0.5)) f[`${base}/${name}/sub/30-c.yaml`] = vars();
      if (chance(r, 0.5)) f[`${base}/${name}/.hidden.yml`] = 'v1: hidden\n';
      if (chance(r, 0.5)) f[`${base}/${name}/old.yml~`] = 'v1: backup\n';
      if (chance(r, 0.5)) f[`${base}/${name}/notes.txt`] = 'v1: ignored\n';
      if (chance(r, 0.3)) f[`${base}/${name}/empty.yml`] = '';
      break;
  }
  return f;
}

function fileVars(r: R): string {
  const lines: string[] = [];
  const n = 1 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) {
    const k = pick(r, ['v1', 'v2', 'v3', 'v5', 'ansible_group_priority']);
    if (lines.some((l) => l.startsWith(k + ':'))) continue;
    lines.push(`${k}: ${k === 'ansible_group_priority' ? '7' : pick(r, YAML_VALUES)}`);
  }
  if (chance(r, 0.15)) lines.unshift('defaults: &d {m1: 1, m2: two}', 'merged:', '  <<: *d', '  m2: own');
  return lines.join('\n') + '\n';
}

function write(dir: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    const p = join(dir, rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  }
}

function generate(): Case[] {
  const r = rng(20261201);
  const cases: Case[] = [];
  for (let i = 0; i < 360; i++) {
    const m = model(r);
    const dir = join(ROOT, `case${i}`);
    const format = i % 3 === 0 ? 'ini' : i % 3 === 1 ? 'yaml' : pick(r, ['yaml', 'json', 'script']);
    const files: Record<string, string> = {};
    const hostNames = [...new Set([...m.hostsOf.values()].flat().concat(m.ungrouped))];
    const done = new Set<string>();
    const vf = (base: string, names: string[]) => {
      for (const n of names) {
        if (done.has(`${base}/${n}`) || !chance(r, 0.4)) continue;
        done.add(`${base}/${n}`);
        Object.assign(
          files,
          varsFiles(r, base, n, () => fileVars(r)),
        );
      }
    };
    let sources: string[];
    let ansibleSources: string[] | undefined;
    if (format === 'ini') {
      files['hosts.ini'] = iniInventory(m, r);
      sources = ['hosts.ini'];
    } else if (format === 'yaml') {
      files['hosts.yml'] = yamlInventory(m);
      sources = ['hosts.yml'];
    } else if (format === 'json') {
      files['hosts.json'] = JSON.stringify(parseJson(JSON.stringify(jsonOfYaml(m)))!.value);
      sources = ['hosts.json'];
    } else {
      files['list.json'] = scriptJson(m, r);
      files['list.sh'] = `#!/bin/sh\ncat "$(dirname "$0")/list.json"\n`;
      sources = ['list.json'];
      ansibleSources = ['list.sh'];
    }
    const names = format === 'script' ? [] : hostNames.flatMap(expandForFiles);
    vf('group_vars', ['all', ...m.groups]);
    vf('host_vars', names);
    // a second source in another directory, with its own group_vars (precedence across sources)
    if (format !== 'script' && chance(r, 0.2)) {
      const m2 = renamed(model(r), (g) => `s_${g}`); // its own groups: no loop across the two sources
      files['more/inv.yml'] = yamlInventory(m2);
      vf('more/group_vars', ['all', ...m2.groups, ...m.groups]);
      sources.push('more/inv.yml');
    }
    // the whole directory as the source (an INI file in it is ignored there, as in Ansible)
    if (format === 'yaml' && chance(r, 0.15)) {
      files['extra.ini'] = '[ignored]\nignored-host\n';
      sources = ['.'];
    }
    write(dir, files);
    if (format === 'script') chmodSync(join(dir, 'list.sh'), 0o755);
    const extra = chance(r, 0.1) ? ['v1=from-e', '{"v3": [1, 2]}'] : undefined;
    cases.push({ name: `#${i} ${format}${sources.length > 1 ? ' +source' : ''}`, dir, sources, ansibleSources, extra });
  }
  return cases;
}

function renamed(m: Model, f: (g: string) => string): Model {
  const map = <V>(x: Map<string, V>) => new Map([...x].map(([k, v]) => [f(k), v]));
  return {
    ...m,
    groups: m.groups.map(f),
    parents: new Map([...m.parents].map(([k, v]) => [f(k), v.map(f)])),
    top: new Set([...m.top].map(f)),
    hostsOf: map(m.hostsOf),
    groupVars: map(m.groupVars),
    priority: map(m.priority),
  };
}

/** The same model as the YAML-shaped JSON the yaml plugin reads from a .json file. */
function jsonOfYaml(m: Model): unknown {
  const conv = (vars: Array<[string, string]>) =>
    Object.fromEntries(
      vars.map(([k], i) => [
        k,
        k === 'ansible_port' ? 2222 : k === 'ansible_user' ? 'ops' : [1, 'two', true, null, 1.5, { x: [1] }][i % 6],
      ]),
    );
  const group = (g: string): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    if (m.hostsOf.get(g)!.length)
      o.hosts = Object.fromEntries(m.hostsOf.get(g)!.map((h) => [h, m.hostVars.get(h)?.length ? conv(m.hostVars.get(h)!) : null]));
    if (m.groupVars.get(g)!.length) o.vars = conv(m.groupVars.get(g)!);
    const kids = m.groups.filter((c) => m.parents.get(c)!.includes(g));
    if (kids.length) o.children = Object.fromEntries(kids.map((c) => [c, group(c)]));
    return o;
  };
  const all: Record<string, unknown> = {
    children: Object.fromEntries(m.groups.filter((g) => !m.parents.get(g)!.length).map((g) => [g, group(g)])),
  };
  if (m.ungrouped.length) all.hosts = Object.fromEntries(m.ungrouped.map((h) => [h, null]));
  if (m.allVars.length) all.vars = conv(m.allVars);
  return { all };
}

/** Host names a pattern gives (for host_vars files). */
function expandForFiles(h: string): string[] {
  const p = h.replace(/:\d+$/, '');
  const m = /^(.*)\[(.*):(.*)\](.*)$/.exec(p);
  if (!m) return [p];
  const [, head, a, b, tail] = m;
  if (/^[a-zA-Z]$/.test(a)) {
    const L = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
    return L.slice(L.indexOf(a), L.indexOf(b) + 1)
      .split('')
      .map((c) => head + c + tail);
  }
  const out: string[] = [];
  for (let i = Number(a || 0); i <= Number(b); i++)
    out.push(head + (a.length > 1 && a[0] === '0' ? String(i).padStart(a.length, '0') : String(i)) + tail);
  return out;
}

// ------------------------------------------------------------------ the public inventories

function publicCases(): Case[] {
  const out: Case[] = [];
  const ais = join(ROOT, 'ais-k8s');
  cpSync(join(FIXTURES, 'ais-k8s'), ais, { recursive: true });
  out.push({ name: 'ais-k8s playbooks/hosts-example.ini', dir: ais, sources: ['hosts-example.ini'] });
  const ks = join(ROOT, 'kubespray');
  cpSync(join(FIXTURES, 'kubespray'), ks, { recursive: true });
  out.push({ name: 'kubespray inventory/sample/inventory.ini', dir: ks, sources: ['inventory.ini'] });
  // with hosts added by a second source, so the sample group_vars reach hosts
  writeFileSync(
    join(ks, 'hosts.ini'),
    '[kube_control_plane]\nnode1 ansible_host=95.54.0.12 ip=10.3.0.1 etcd_member_name=etcd1\n\n[kube_node]\nnode4 ansible_host=95.54.0.15 ip=10.3.0.4\n',
  );
  out.push({ name: 'kubespray sample + hosts', dir: ks, sources: ['inventory.ini', 'hosts.ini'] });
  // an upper-case YAML extension is no YAML to Ansible's yaml plugin: the ini plugin reads it
  const upper = join(ROOT, 'upper-ext');
  mkdirSync(upper);
  writeFileSync(join(upper, 'hosts.YML'), '[gpu]\ngpu1 mtu=9000\n[gpu:vars]\nx=[1, 2]\n');
  out.push({ name: 'INI text in hosts.YML', dir: upper, sources: ['hosts.YML'] });
  writeFileSync(join(upper, 'hosts.TOML'), '[web]\nweb1\n');
  out.push({ name: 'INI text in hosts.TOML', dir: upper, sources: ['hosts.TOML'] });
  // only a plain << merges: a quoted '<<' is a key like any other
  const quoted = join(ROOT, 'quoted-merge-key');
  mkdirSync(join(quoted, 'group_vars'), { recursive: true });
  writeFileSync(join(quoted, 'hosts.yml'), 'gpu:\n  hosts:\n    gpu1:\n');
  writeFileSync(join(quoted, 'group_vars/gpu.yml'), '_a: &a {mtu: 1500, x: 1}\nnic:\n  <<: *a\n  "<<": literal\n');
  out.push({ name: "a quoted '<<' key beside a merge", dir: quoted, sources: ['hosts.yml'] });
  return out;
}

// ------------------------------------------------------------------ running both

const CASES = generate();
const PUBLIC = publicCases();
const ansible = new Map<Case, string>();
const failures: string[] = [];

beforeAll(() => {
  const all = [...CASES, ...PUBLIC];
  const jobs = all.map((c, i) => ({
    args: [...(c.ansibleSources ?? c.sources).flatMap((s) => ['-i', join(c.dir, s)]), ...(c.extra ?? []).flatMap((e) => ['-e', e])],
    out: join(ROOT, `ansible-${i}.json`),
  }));
  // Ansible's defaults: an empty configuration file, no ANSIBLE_* settings from the environment
  const cfg = join(ROOT, 'ansible.cfg');
  writeFileSync(cfg, '');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ANSIBLE_')));
  Object.assign(env, { ANSIBLE_CONFIG: cfg, ANSIBLE_LOCAL_TEMP: join(ROOT, 'tmp'), ANSIBLE_HOME: join(ROOT, 'home') });
  const res = spawnSync('/usr/bin/python3', [resolve(import.meta.dirname, 'ansible-list.py')], {
    input: JSON.stringify(jobs),
    encoding: 'utf8',
    env,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (res.status !== 0) throw new Error(`ansible-list.py: ${res.stderr}`);
  const results = JSON.parse(res.stdout) as string[];
  all.forEach((c, i) => {
    // warnings that change nothing (group names with '-', a merged key given again) are fine
    if (!results[i].startsWith('ok') || /Failed to parse|Unable to parse|Skipping/.test(results[i]))
      failures.push(`${c.name}: ${results[i]}`);
    else ansible.set(c, readFileSync(jobs[i].out, 'utf8'));
  });
}, 300_000);

/** ansible-inventory prints `!unsafe` strings as {"__ansible_unsafe": s}: racksmith prints s. */
function normalize(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (!Array.isArray(v)) {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '__ansible_unsafe') return (v as Record<string, unknown>).__ansible_unsafe;
  }
  for (const k of Object.keys(v)) (v as Record<string, unknown>)[k] = normalize((v as Record<string, unknown>)[k]);
  return v;
}

function racksmith(c: Case): string {
  const extra = parseExtraVars(c.extra ?? []);
  return pythonJson(
    inventoryList(
      loadInventory(
        c.sources.map((s) => join(c.dir, s)),
        extra.vars,
        extra.sources,
      ),
    ),
  );
}

describe('inventories against ansible-inventory --list (ansible-core 2.14)', () => {
  it('generates at least 300 inventories, in every format', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(300);
    for (const f of ['ini', 'yaml', 'json', 'script']) expect(CASES.some((c) => c.name.includes(` ${f}`))).toBe(true);
  });

  it('ansible-inventory parses every case', () => expect(failures).toEqual([]));

  it.each([...PUBLIC, ...CASES].map((c) => [c.name, c] as const))('%s', (_, c) => {
    const theirs = normalize(parseJson(ansible.get(c)!, true)!.value);
    const ours = parseJson(racksmith(c), true)!.value;
    expect(ours).toEqual(theirs);
  });

  it('the ais-k8s inventory is byte-identical to ansible-inventory --list', () => {
    const c = PUBLIC[0];
    expect(racksmith(c)).toBe(ansible.get(c));
  });
});
