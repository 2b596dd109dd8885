// The host-pattern differential test: racksmith's selection against ansible-core 2.14's own
// (InventoryManager.get_hosts after subset(), run by test/unit/ansible-patterns.py), set and
// order, for play patterns and for -l. A seeded generator writes inventories (nested groups,
// groups listing hosts out of file order, ranges, IPv6 hosts, a host named like a group, empty
// groups, hosts under all) and patterns of every construct (names, globs with classes, regexes,
// subscripts and slices, `&`, `!`, the three separators, `host:port`, `@file` limits, bare `!`).
//
// Ansible's answers are recorded in fixtures/host-patterns-ansible.json, so the suite runs
// without Ansible; in CI (CI=true) they are computed again and must equal the recording.
// RS_RECORD_ANSIBLE=1 writes the recording anew.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.ts';
import { selectHosts, selectLimit } from '../../src/inventory/limit.ts';
import { InputError } from '../../src/util/errors.ts';
import { rng } from './rng.ts';

const ROOT = mkdtempSync(join(tmpdir(), 'rs-patterns-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));
const RECORDING = resolve(import.meta.dirname, 'fixtures', 'host-patterns-ansible.json');

type R = () => number;
const pick = <T>(r: R, a: readonly T[]): T => a[Math.floor(r() * a.length)];
const chance = (r: R, p: number) => r() < p;
const shuffled = <T>(r: R, a: readonly T[]): T[] => {
  const out = [...a];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
};

interface Query {
  pattern: string;
  limit: string | null;
}
interface Case {
  name: string;
  source: string;
  queries: Query[];
}
type Answer = { hosts: string[]; warnings: string[] } | { error: string };

// ------------------------------------------------------------------ inventories

const GROUPS = ['rack1', 'rack2', 'rack3', 'storage', 'gpu', 'web', 'db', 'kube_control_plane', 'n1'];
const HOSTS = ['n1', 'n2', 'n3', 'n10', 'n12', 'node01', 'node02', 'node03', 'web1', 'db1', '10.0.0.5', '2001:db8::1', 'fe80::a'];
const RANGES = ['r[1:3]', 'node[04:05]'];

interface Model {
  groups: string[];
  /** each group's hosts, in the order the group lists them */
  members: Map<string, string[]>;
  children: Map<string, string[]>;
  /** hosts written under all (YAML) or before any section (INI) */
  top: string[];
}

function model(r: R): Model {
  const groups = shuffled(r, GROUPS).slice(0, 3 + Math.floor(r() * 6));
  if (chance(r, 0.5)) groups.push('empty');
  const hosts = shuffled(r, HOSTS).slice(0, 4 + Math.floor(r() * 8));
  if (chance(r, 0.4)) hosts.push(pick(r, RANGES));
  // a host named like a group (Ansible warns and keeps both)
  if (chance(r, 0.3))
    hosts.push(
      pick(
        r,
        groups.filter((g) => g !== 'empty'),
      ),
    );
  const members = new Map<string, string[]>();
  const children = new Map<string, string[]>();
  for (const g of groups) {
    members.set(g, g === 'empty' ? [] : shuffled(r, hosts).slice(0, Math.floor(r() * 5)));
    children.set(g, []);
  }
  // nested groups, no loops: a child comes later in the list than its parent
  for (let i = 0; i < groups.length; i++)
    for (let j = i + 1; j < groups.length; j++) if (chance(r, 0.2)) children.get(groups[i])!.push(groups[j]);
  const listed = new Set([...members.values()].flat());
  const top = hosts.filter((h) => !listed.has(h) || chance(r, 0.1));
  return { groups, members, children, top };
}

const yamlKey = (h: string) => (/[:[]/.test(h) ? JSON.stringify(h) : h);

function yamlInventory(m: Model): string {
  const lines = ['all:'];
  if (m.top.length) lines.push('  hosts:', ...m.top.map((h) => `    ${yamlKey(h)}:`));
  lines.push('  children:');
  // every group at the top level (under all), with its hosts and children named there
  for (const g of m.groups) {
    lines.push(`    ${g}:`);
    if (m.members.get(g)!.length) lines.push('      hosts:', ...m.members.get(g)!.map((h) => `        ${yamlKey(h)}:`));
    if (m.children.get(g)!.length) lines.push('      children:', ...m.children.get(g)!.map((c) => `        ${c}:`));
  }
  return lines.join('\n') + '\n';
}

function iniInventory(m: Model, r: R): string {
  const lines = [...m.top];
  for (const g of shuffled(r, m.groups)) {
    lines.push(`[${g}]`, ...m.members.get(g)!);
    if (m.children.get(g)!.length) lines.push(`[${g}:children]`, ...m.children.get(g)!);
  }
  return lines.join('\n') + '\n';
}

// ------------------------------------------------------------------ patterns

const SUBSCRIPTS = ['[0]', '[1]', '[-1]', '[0:1]', '[1:]', '[9]', '[2:0]', '[-2:]'];
const GLOBS = ['n*', 'n[12]*', 'node0[!1]', 'rack[13]', 'rack[ace]', '[a-c]*', 'r*', '*1', 'n?', '*', 'n[!0-9]*', 'ra[]ck*'];
const REGEXES = ['~^n\\d', '~rack', '~n1$', '~.*e', '~^(web|db)', '~2001'];
const SPECIALS = ['!', '&', 'all:!', 'web,!', '!,rack1', 'rack1:10', 'storage[-2:]', '2001:db8::1', '[2001:db8::1]:22', '~n:rack1'];

function term(r: R, m: Model): string {
  const kind = r();
  let t: string;
  if (kind < 0.35) t = pick(r, m.groups);
  else if (kind < 0.55) t = pick(r, [...HOSTS, 'r1', 'node04']);
  else if (kind < 0.7) t = pick(r, GLOBS);
  else if (kind < 0.8) t = pick(r, REGEXES);
  else if (kind < 0.88) t = pick(r, ['all', 'ungrouped', 'nosuch', 'empty']);
  else t = pick(r, m.groups) + pick(r, SUBSCRIPTS);
  if (t[0] !== '~' && !t.includes('[') && chance(r, 0.15)) t += pick(r, SUBSCRIPTS);
  return t;
}

function pattern(r: R, m: Model): string {
  if (chance(r, 0.06)) return pick(r, SPECIALS);
  const n = 1 + Math.floor(r() * 4);
  const terms: string[] = [];
  for (let i = 0; i < n; i++) terms.push((i === 0 ? pick(r, ['', '', '', '!']) : pick(r, ['', '', '!', '&'])) + term(r, m));
  // `:` cannot separate IPv6 addresses or regexes with `:` (Ansible splits them): commas then
  const sep = terms.some((t) => t.includes('::')) ? ',' : pick(r, [':', ',', ', ', ' ', ':']);
  return terms.join(sep);
}

function generate(): Case[] {
  const r = rng(20261204);
  const cases: Case[] = [];
  for (let i = 0; i < 120; i++) {
    const m = model(r);
    const dir = join(ROOT, `case${i}`);
    mkdirSync(dir, { recursive: true });
    const ini = i % 2 === 0;
    const source = join(dir, ini ? 'hosts.ini' : 'hosts.yml');
    writeFileSync(source, ini ? iniInventory(m, r) : yamlInventory(m));
    const retry = join(dir, 'retry');
    writeFileSync(retry, `${pick(r, m.groups)}\n${pick(r, HOSTS)}\n\n`);
    const queries: Query[] = [];
    for (let q = 0; q < 12; q++) queries.push({ pattern: pattern(r, m), limit: null });
    for (let q = 0; q < 4; q++) queries.push({ pattern: 'all', limit: pattern(r, m) });
    queries.push({ pattern: pattern(r, m), limit: pattern(r, m) });
    queries.push({ pattern: 'all', limit: chance(r, 0.5) ? `@${retry}` : `${pick(r, m.groups)},@${retry}` });
    cases.push({ name: `#${i} ${ini ? 'ini' : 'yaml'}`, source, queries });
  }
  return cases;
}

// ------------------------------------------------------------------ running both

const CASES = generate();
/** What the recording answers: the queries, and the inventories they were asked of. */
const DIGEST = createHash('sha256')
  .update(JSON.stringify(CASES.map((c) => [readFileSync(c.source, 'utf8'), c.queries.map((q) => [q.pattern, q.limit?.replace(ROOT, '')])])))
  .digest('hex');

function askAnsible(): Answer[][] {
  const cfg = join(ROOT, 'ansible.cfg');
  writeFileSync(cfg, '');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ANSIBLE_')));
  Object.assign(env, { ANSIBLE_CONFIG: cfg, ANSIBLE_LOCAL_TEMP: join(ROOT, 'tmp'), ANSIBLE_HOME: join(ROOT, 'home') });
  const res = spawnSync('/usr/bin/python3', [resolve(import.meta.dirname, 'ansible-patterns.py')], {
    input: JSON.stringify(CASES.map((c) => ({ sources: [c.source], queries: c.queries }))),
    encoding: 'utf8',
    env,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (res.status !== 0) throw new Error(`ansible-patterns.py: ${res.stderr}`);
  // paths of the generated files differ from run to run
  return JSON.parse(res.stdout.split(ROOT).join('ROOT')) as Answer[][];
}

const recorded = (existsSync(RECORDING) ? JSON.parse(readFileSync(RECORDING, 'utf8')) : { digest: '', answers: [] }) as {
  digest: string;
  answers: Answer[][];
};
const fresh = process.env.CI === 'true' || process.env.RS_RECORD_ANSIBLE === '1' ? askAnsible() : undefined;
if (fresh && process.env.RS_RECORD_ANSIBLE === '1')
  writeFileSync(RECORDING, JSON.stringify({ digest: DIGEST, answers: fresh }, null, 0).replace(/\],\[/g, '],\n[') + '\n');
const ANSWERS = fresh ?? recorded.answers;

const MISMATCH = 'Could not match supplied host pattern, ignoring: ';

/** racksmith's answer: the play's hosts within the limit, as prepare() selects them. */
function racksmith(c: Case, q: Query): Answer {
  const inv = loadInventory(c.source);
  const warnings: string[] = [];
  const warn = (m: string) => warnings.push(/'([^']*)' matches no host or group, ignored$/.exec(m)?.[1] ?? m);
  try {
    const within = q.limit === null ? null : new Set(selectLimit(inv, q.limit, { warn }));
    const hosts = selectHosts(inv, q.pattern, 'pattern', true, { warn }).filter((h) => !within || within.has(h));
    return { hosts, warnings };
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    return { error: e.message };
  }
}

/** Where racksmith may refuse what Ansible runs: docs/inventory.md "Differences from Ansible". */
const STRICTER = [
  /matches no host in /, // -l selecting nothing (Ansible: the play is skipped)
  /names no host \(Ansible would take it as no limit\)/,
  /that is not part of a \[\.\.\.\] \(Ansible would drop it\)/,
];

describe('host patterns against ansible-core 2.14 (InventoryManager.get_hosts, subset)', () => {
  it('the recording answers these cases (else record again: RS_RECORD_ANSIBLE=1)', () => {
    expect(recorded.digest).toBe(DIGEST);
    expect(ANSWERS.length).toBe(CASES.length);
  });

  it.runIf(fresh)("the recording is ansible-core's answer", () => expect(recorded.answers).toEqual(fresh));

  it('covers every construct: errors, empty selections, warnings and hosts', () => {
    const all = ANSWERS.flat();
    expect(all.filter((a) => 'error' in a).length).toBeGreaterThan(10);
    expect(all.filter((a) => 'hosts' in a && a.hosts.length === 0).length).toBeGreaterThan(50);
    expect(all.filter((a) => 'hosts' in a && a.warnings.length > 0).length).toBeGreaterThan(50);
    expect(all.filter((a) => 'hosts' in a && a.hosts.length > 2).length).toBeGreaterThan(500);
  });

  it.each(CASES.map((c, i) => [c.name, c, i] as const))('%s', (_, c, i) => {
    const bad: string[] = [];
    c.queries.forEach((q, k) => {
      const theirs = ANSWERS[i][k];
      const ours = racksmith(c, q);
      const what = `pattern ${JSON.stringify(q.pattern)} limit ${JSON.stringify(q.limit?.split(ROOT).join('ROOT'))}`;
      if ('error' in theirs) {
        if (!('error' in ours)) bad.push(`${what}: Ansible fails (${theirs.error}), racksmith selects ${JSON.stringify(ours.hosts)}`);
      } else if ('error' in ours) {
        const allowed = STRICTER.some((re) => re.test(ours.error)) && (theirs.hosts.length === 0 || !/matches no host in/.test(ours.error));
        if (!allowed) bad.push(`${what}: Ansible selects ${JSON.stringify(theirs.hosts)}, racksmith refuses: ${ours.error}`);
      } else {
        if (JSON.stringify(ours.hosts) !== JSON.stringify(theirs.hosts))
          bad.push(`${what}: Ansible selects ${JSON.stringify(theirs.hosts)}, racksmith ${JSON.stringify(ours.hosts)}`);
        const warned = theirs.warnings.filter((w) => w.startsWith(MISMATCH)).map((w) => w.slice(MISMATCH.length));
        if (
          JSON.stringify([...new Set(warned)].sort()) !== JSON.stringify([...new Set(ours.warnings.filter((w) => !w.includes(' ')))].sort())
        )
          bad.push(`${what}: Ansible warns about ${JSON.stringify(warned)}, racksmith about ${JSON.stringify(ours.warnings)}`);
      }
    });
    expect(bad).toEqual([]);
  });
});
