import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { expandHostPattern, hostNameProblem } from '../../src/inventory/host-range.ts';
import { loadInventory } from '../../src/inventory/load.ts';
import type { Host, Inventory } from '../../src/inventory/model.ts';
import { InputError } from '../../src/util/errors.ts';
import { Secret, isSecret, maskSecret } from '../../src/util/secret.ts';
import { parseExtraVars } from '../../src/inventory/extra-vars.ts';

const DIR = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'inventory');
const FILE = join(DIR, 'hosts.yml');
const at = (rel: string) => join(DIR, rel);

function host(inv: Inventory, name: string): Host {
  const h = inv.hosts.find((x) => x.name === name);
  if (!h) throw new Error(`no host ${name} in ${inv.hosts.map((x) => x.name).join(',')}`);
  return h;
}

const tmp = mkdtempSync(join(tmpdir(), 'rs-inv-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
/** Write an inventory (and optional files beside it) into a fresh directory; returns its path. */
function inventory(text: string, files: Record<string, string> = {}): string {
  const dir = join(tmp, `inv${n++}`);
  for (const [rel, content] of Object.entries({ 'hosts.yml': text, ...files })) {
    const p = join(dir, rel);
    mkdirp(dirname(p));
    writeFileSync(p, content);
  }
  return join(dir, 'hosts.yml');
}
const mkdirp = (d: string) => mkdirSync(d, { recursive: true });

describe('loadInventory: the fixture inventory', () => {
  const inv = loadInventory(FILE);

  it('lists every host once, in the order the inventory first names it, ranges expanded', () => {
    expect(inv.hosts.map((h) => h.name)).toEqual(['ctl', 'node01', 'node02', 'node03', 'shared', 'sta', 'stb']);
  });

  it('records nested groups (children of children) with parents and children', () => {
    expect([...inv.groups.keys()].sort()).toEqual(['all', 'db', 'gpu', 'rack1', 'storage', 'ungrouped']);
    expect(inv.groups.get('all')!.children.sort()).toEqual(['db', 'rack1', 'ungrouped']);
    expect(inv.groups.get('rack1')!.children).toEqual(['gpu', 'storage']);
    expect(inv.groups.get('rack1')!.parents).toEqual(['all']);
    expect(inv.groups.get('gpu')!.parents).toEqual(['rack1']);
    expect(inv.groups.get('gpu')!.hosts).toEqual(['node01', 'node02', 'node03', 'shared']);
    expect(inv.groups.get('storage')!.hosts).toEqual(['shared', 'sta', 'stb']);
    expect(inv.groups.get('db')!.hosts).toEqual(['shared']);
  });

  it('gives each host its groups with ancestors, shallow first, `all` first', () => {
    expect(host(inv, 'ctl').groups).toEqual(['all', 'ungrouped']); // in no group: ungrouped, as in Ansible
    expect(host(inv, 'node01').groups).toEqual(['all', 'rack1', 'gpu']);
    expect(host(inv, 'sta').groups).toEqual(['all', 'rack1', 'storage']);
    // In several groups: every group and every ancestor, ordered by depth then name.
    expect(host(inv, 'shared').groups).toEqual(['all', 'db', 'rack1', 'gpu', 'storage']);
  });

  it.each([
    // host, variable, value: all < parent group < child group < host
    ['ctl', 'level', 'host-ctl'], // host beats all
    ['node01', 'level', 'gpu'], // child group beats parent group beats all
    ['node03', 'only_all', 'from-all'],
    ['node03', 'only_rack1', 'from-rack1'], // inherited through a child group
    ['sta', 'level', 'storage'],
    ['sta', 'only_rack1', 'from-rack1'],
    ['shared', 'level', 'storage'], // same depth: the later group by name (storage > gpu) wins over db, rack1
    ['shared', 'ansible_port', 2222],
    ['node01', 'role', 'compute'],
    ['ctl', 'ansible_connection', 'local'],
    ['node01', 'ansible_user', 'ops'],
  ])('inline vars precedence: %s.%s = %j', (h, k, v) => {
    expect(host(inv, h).vars[k]).toEqual(v);
  });

  it('ansible_connection: local stays on the host that set it only', () => {
    expect(host(inv, 'ctl').vars.ansible_connection).toBe('local');
    expect(host(inv, 'node01').vars).not.toHaveProperty('ansible_connection');
  });

  it.each([
    ['ctl', 'ntp_server', 'ntp.all.example'], // group_vars/all.yml
    ['ctl', 'dns', '10.0.0.53'],
    ['node01', 'ntp_server', 'ntp.rack1.example'], // group_vars/rack1.yaml beats group_vars/all.yml
    ['node01', 'gpu_driver', '535'], // group_vars/gpu/ directory
    ['node01', 'mtu', 9000], // later file of the directory wins; group_vars beat inline group vars (1400)
    ['shared', 'mtu', 9000],
    ['node02', 'role', 'storage-compute'], // host_vars/node02.yml beats the inline host var
    ['node02', 'level', 'host-node02'],
    ['node03', 'role', 'compute'],
    ['shared', 'disk', 'sda'], // host_vars/shared/ directory beats the inline host var
    ['shared', 'rack_unit', 12], // .json files in the directory are read too
  ])('group_vars/ and host_vars/: %s.%s = %j', (h, k, v) => {
    expect(host(inv, h).vars[k]).toEqual(v);
  });

  it('ignores non-YAML files in a vars directory and vars files of unknown groups', () => {
    for (const h of inv.hosts) {
      expect(h.vars).not.toHaveProperty('not_a_var');
      expect(h.vars.level).not.toBe('unused');
    }
  });

  it('does not leak group vars to hosts outside the group', () => {
    expect(host(inv, 'ctl').vars).not.toHaveProperty('mtu');
    expect(host(inv, 'ctl').vars).not.toHaveProperty('only_rack1');
    expect(host(inv, 'sta').vars).not.toHaveProperty('gpu_driver');
    expect(host(inv, 'node01').vars).not.toHaveProperty('db_password');
  });

  it('keeps a !secret value as a Secret: revealed on demand, masked in JSON and strings', () => {
    const v = host(inv, 'shared').vars.db_password;
    expect(isSecret(v)).toBe(true);
    expect(v).toBeInstanceOf(Secret);
    const s = v as Secret;
    expect(s.reveal()).toBe('hunter2');
    const mask = maskSecret('hunter2');
    expect(mask).toMatch(/^<secret hmac:[0-9a-f]{16}…>$/);
    expect(JSON.stringify({ p: s })).toBe(`{"p":"${mask}"}`);
    expect(String(s)).toBe(mask);
    expect(s.masked).toBe(mask);
    const dump = JSON.stringify(inv.hosts);
    expect(dump).not.toContain('hunter2');
    expect(dump).toContain(mask);
  });

  it.each([
    // host, variable, file, line, col
    ['node01', 'level', 'hosts.yml', 19, 20],
    ['node01', 'role', 'hosts.yml', 23, 21],
    ['node02', 'role', 'host_vars/node02.yml', 1, 7],
    ['node01', 'mtu', 'group_vars/gpu/20-tuning.yml', 2, 6],
    ['node01', 'gpu_driver', 'group_vars/gpu/10-base.yml', 1, 13],
    ['node01', 'ntp_server', 'group_vars/rack1.yaml', 2, 13],
    ['ctl', 'ntp_server', 'group_vars/all.yml', 1, 13],
    ['ctl', 'ansible_connection', 'hosts.yml', 9, 27],
    ['ctl', 'only_all', 'hosts.yml', 5, 15],
    ['sta', 'only_rack1', 'hosts.yml', 15, 21],
    ['shared', 'level', 'hosts.yml', 27, 20],
    ['shared', 'disk', 'host_vars/shared/a.yml', 1, 7],
    ['shared', 'rack_unit', 'host_vars/shared/b.json', 2, 16],
    ['shared', 'ansible_port', 'hosts.yml', 38, 25],
  ])('varSources: %s.%s was set at %s:%i:%i', (h, k, file, line, col) => {
    expect(host(inv, h).varSources[k]).toEqual({ file: at(file), line, col });
  });

  it('varSources of a !secret points at its line', () => {
    const p = host(inv, 'shared').varSources.db_password;
    expect(p.file).toBe(FILE);
    expect(p.line).toBe(37);
  });

  it('has a source for every merged variable', () => {
    for (const h of inv.hosts) expect(Object.keys(h.varSources).sort()).toEqual(Object.keys(h.vars).sort());
  });

  it('positions hosts at their key (range hosts share the range key)', () => {
    expect(host(inv, 'ctl').pos).toEqual({ file: FILE, line: 8, col: 5 });
    expect(host(inv, 'node02').pos).toEqual({ file: FILE, line: 22, col: 13 });
    expect(host(inv, 'shared').pos).toEqual({ file: FILE, line: 24, col: 13 });
    expect(host(inv, 'stb').pos).toEqual({ file: FILE, line: 31, col: 13 });
    expect(inv.groups.get('gpu')!.pos).toEqual({ file: FILE, line: 17, col: 9 });
  });
});

describe('loadInventory: extra vars win over everything', () => {
  const inv = loadInventory(
    FILE,
    { level: 'extra', role: 'x', new_var: [1, 2] },
    { level: { file: '-e #1' }, role: { file: '-e #2' }, new_var: { file: '-e #2' } },
  );

  it.each(['ctl', 'node01', 'node02', 'shared', 'sta'])('%s gets the -e values and their sources', (h) => {
    const v = host(inv, h);
    expect(v.vars.level).toBe('extra'); // beats host_vars/node02.yml and inline host vars
    expect(v.vars.role).toBe('x');
    expect(v.vars.new_var).toEqual([1, 2]);
    expect(v.varSources.level).toEqual({ file: '-e #1' });
    expect(v.varSources.role).toEqual({ file: '-e #2' });
  });

  it('leaves other variables alone', () => {
    expect(host(inv, 'node01').vars.mtu).toBe(9000);
    expect(host(inv, 'shared').vars.disk).toBe('sda');
  });
});

describe('loadInventory: smaller inventories', () => {
  it('merges a host listed in several groups, later listing of the same variable wins', () => {
    const f = inventory(`all:
  children:
    a:
      hosts:
        h1:
          x: 1
          only_a: true
    b:
      hosts:
        h1:
          x: 2
`);
    const inv = loadInventory(f);
    expect(inv.hosts.map((h) => h.name)).toEqual(['h1']);
    expect(inv.hosts[0].vars).toEqual({ x: 2, only_a: true });
    expect(inv.hosts[0].groups).toEqual(['all', 'a', 'b']);
    expect(inv.hosts[0].varSources.x).toEqual({ file: f, line: 11, col: 14 });
  });

  it('a deeper group wins over a shallower one whatever the names (depth before name)', () => {
    const f = inventory(`all:
  children:
    zz_parent:
      vars: { v: parent }
      children:
        aa_child:
          vars: { v: child }
          hosts: { h: }
`);
    expect(loadInventory(f).hosts[0].vars.v).toBe('child');
  });

  it('a group declared twice (under two parents) gets the depth of its deepest path and both parents', () => {
    const f = inventory(`all:
  vars: { v: all }
  children:
    top:
      vars: { v: top }
      children:
        mid:
          vars: { v: mid }
          children:
            leaf:
              hosts: { h: }
    leaf:
      vars: { v: leaf }
    other:
      vars: { v: other }
      hosts: { h: }
`);
    const inv = loadInventory(f);
    expect(inv.groups.get('leaf')!.parents.sort()).toEqual(['all', 'mid']);
    // leaf is at depth 3, deeper than other (1), top (1), mid (2).
    expect(inv.hosts[0].groups).toEqual(['all', 'other', 'top', 'mid', 'leaf']);
    expect(inv.hosts[0].vars.v).toBe('leaf');
  });

  it('a top-level group besides `all` is a child of all', () => {
    const f = inventory(`all:
  vars: { v: 1 }
web:
  hosts:
    w1:
`);
    const inv = loadInventory(f);
    expect(inv.groups.get('web')!.parents).toEqual(['all']);
    expect(inv.hosts[0]).toMatchObject({ name: 'w1', groups: ['all', 'web'], vars: { v: 1 } });
  });

  it('accepts empty groups and hosts without vars', () => {
    const f = inventory(`all:
  hosts:
    h1:
  children:
    empty:
    nohosts:
      hosts:
`);
    const inv = loadInventory(f);
    expect(inv.hosts.map((h) => h.name)).toEqual(['h1']);
    expect(inv.groups.has('empty')).toBe(true);
    expect(inv.hosts[0].vars).toEqual({});
  });

  it('a `!secret` inside group_vars is a Secret too', () => {
    const f = inventory(`all:\n  hosts:\n    h1:\n`, { 'group_vars/all.yml': 'token: !secret s3cr3t\n' });
    const v = loadInventory(f).hosts[0].vars.token;
    expect(isSecret(v)).toBe(true);
    expect((v as Secret).reveal()).toBe('s3cr3t');
    expect(JSON.stringify(v)).not.toContain('s3cr3t');
  });

  describe('a `{secret: ...}` wrapper (for files that cannot carry a tag: JSON, -e)', () => {
    const reveal = (v: unknown) => (isSecret(v) ? v.reveal() : v);
    it('in a JSON vars file, in YAML block or flow style, nested in lists and mappings', () => {
      const f = inventory(`all:\n  hosts:\n    h1:\n      a:\n        secret: from-block\n      b: {secret: from-flow}\n`, {
        'group_vars/all.json': '{"token": {"secret": "from-json"}, "users": [{"name": "u", "password": {"secret": "pw"}}]}',
      });
      const v = loadInventory(f).hosts[0].vars;
      expect([v.a, v.b, v.token].map(isSecret)).toEqual([true, true, true]);
      expect([v.a, v.b, v.token].map(reveal)).toEqual(['from-block', 'from-flow', 'from-json']);
      const [user] = v.users as Array<Record<string, unknown>>;
      expect(user.name).toBe('u');
      expect(reveal(user.password)).toBe('pw');
      expect(JSON.stringify(v)).not.toMatch(/from-|"pw"/);
    });
    it('in -e JSON', () => {
      const { vars } = parseExtraVars(['{"token": {"secret": "from-e"}}']);
      expect(isSecret(vars.token) && vars.token.reveal()).toBe('from-e');
    });
    it('only a mapping whose single key is secret; a non-string secret is refused at its line', () => {
      const f = inventory(`all:\n  vars:\n    m:\n      secret: x\n      other: y\n  hosts:\n    h1:\n`);
      expect(loadInventory(f).hosts[0].vars.m).toEqual({ secret: 'x', other: 'y' });
      const bad = inventory(`all:\n  hosts:\n    h1:\n      pin:\n        secret: 0123\n`);
      expect(() => loadInventory(bad)).toThrow(/hosts\.yml:5:\d+: .*a secret must be a string \(quote it\): got number/);
    });
  });

  it('reads a group_vars file without extension first, and then no other file for that group (Ansible)', () => {
    const f = inventory(`all:\n  hosts:\n    h1:\n`, { 'group_vars/all': 'x: 1\n', 'group_vars/all.json': '{"y": 2}' });
    expect(loadInventory(f).hosts[0].vars).toEqual({ x: 1 });
  });

  // Python sorts os.listdir by code point; JS's sort() by UTF-16 unit puts U+FF5A ('ｚ') after an
  // emoji (a surrogate pair): the later file wins, so the order decides the value
  it.each([
    ['group_vars/web/ directory', 'hosts.yml', { 'group_vars/web/ｚ.yml': 'v: fullwidth\n', 'group_vars/web/😀.yml': 'v: emoji\n' }],
    ['host_vars/h1/ directory', 'hosts.yml', { 'host_vars/h1/ｚ.yml': 'v: fullwidth\n', 'host_vars/h1/😀.yml': 'v: emoji\n' }],
    ['directory source', '.', { 'ｚ.yml': 'web:\n  hosts:\n    h1: {v: fullwidth}\n', '😀.yml': 'web:\n  hosts:\n    h1: {v: emoji}\n' }],
  ] as const)('reads the files of a %s in code-point order, as Ansible', (_, source, files) => {
    const f = inventory(`web:\n  hosts:\n    h1:\n`, files);
    const src = source === '.' ? dirname(f) : f;
    if (source === '.') rmSync(f);
    expect(loadInventory(src).hosts[0].vars.v).toBe('emoji');
  });

  it('reports a children loop as an InputError at the group', () => {
    const f = inventory(`all:
  children:
    a:
      children:
        b:
          children:
            a:
`);
    const e = catchErr(() => loadInventory(f));
    expect(e).toBeInstanceOf(InputError);
    expect(e.message).toMatch(/children loop/);
    expect((e as InputError).pos).toMatchObject({ file: f, line: 5 }); // where the edge that closes the loop is
  });

  it('reports a bad host range at its key', () => {
    const f = inventory(`all:
  hosts:
    n[3:1]:
    m[a:09]:
`);
    const e = catchErr(() => loadInventory(f));
    expect(e).toBeInstanceOf(InputError);
    expect(e.message).toBe(`${f}:3:5: host range 'n[3:1]' ends before it starts`);
  });

  it('warns about a host that is also a group, and keeps both (as Ansible does)', () => {
    const f = inventory(`all:
  children:
    web:
      hosts:
        w1:
    other:
      hosts:
        web:
`);
    const inv = loadInventory(f);
    expect(inv.hosts.map((h) => h.name)).toEqual(['w1', 'web']);
    expect(inv.groups.get('web')!.hosts).toEqual(['w1']);
    expect(inv.warnings).toEqual([
      {
        message: `${f}:8:9: 'web' is both a host and a group: as in Ansible, variables set on the host where the group exists go to the group, and in a host pattern 'web' is the host, '!web' and '&web' the group`,
        at: { file: f, line: 8, col: 9 },
      },
    ]);
  });

  it('reports a missing inventory file as an InputError naming it', () => {
    const f = join(tmp, 'nope.yml');
    const e = catchErr(() => loadInventory(f));
    expect(e).toBeInstanceOf(InputError);
    expect(e.message).toBe(`${f}: inventory not found`);
  });
});

describe('host patterns (parse_address, expand_hostname_range of ansible-core 2.14)', () => {
  it.each([
    ['node1', ['node1'], undefined],
    ['web1:2222', ['web1'], 2222],
    ['[::1]:22', ['::1'], 22],
    ['10.0.0.1:2200', ['10.0.0.1'], 2200],
    ['node[01:03]', ['node01', 'node02', 'node03'], undefined],
    ['node[1:3]', ['node1', 'node2', 'node3'], undefined],
    ['node[8:11]', ['node8', 'node9', 'node10', 'node11'], undefined],
    ['node[:2]', ['node0', 'node1', 'node2'], undefined],
    ['rack[A:C]', ['rackA', 'rackB', 'rackC'], undefined],
    ['r[y:B]', ['ry', 'rz', 'rA', 'rB'], undefined],
    ['n[001:002].rack1', ['n001.rack1', 'n002.rack1'], undefined],
    ['db-[a:c]', ['db-a', 'db-b', 'db-c'], undefined],
    ['n[0:10:5]', ['n0', 'n5', 'n10'], undefined],
    ['r[1:2]n[1:2]:22', ['r1n1', 'r1n2', 'r2n1', 'r2n2'], 22],
    ['10.0.0.[1:2]', ['10.0.0.1', '10.0.0.2'], undefined],
  ])('%s -> %j port %j', (key, names, port) => {
    expect(expandHostPattern(key)).toEqual({ names, port });
  });

  it.each([
    ['n[3:1]', /ends before it starts/],
    ['n[a:09]', /invalid number 'a'/],
    ['n[01:3]', /equal length/],
    ['n[1:3:0]', /step must be positive/],
    ['n[1:20000]', /more than 10000/],
  ])('%j is refused', (key, re) => {
    expect(() => expandHostPattern(key)).toThrow(re);
  });

  it.each(['h;rm', '-oProxyCommand', 'host.', '', 'n1$(id)', 'web1:2222x', 'ünïcødé', 'a b'])('host name %j is refused', (name) => {
    expect(hostNameProblem(name)).toMatch(/invalid host name/);
  });

  it.each(['node1', 'a.b-c_d.example', '10.0.0.1', '::1', 'fe80::1', '2001:db8::8:800:200c:417a', '::ffff:10.0.0.1'])(
    'host name %j is accepted',
    (name) => {
      expect(hostNameProblem(name)).toBeUndefined();
    },
  );
});

function catchErr(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}
