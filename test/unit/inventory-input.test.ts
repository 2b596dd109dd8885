// What the inventory readers refuse (exit 3 at file:line), and the values racksmith will not use
// as they are: templates, unknown YAML tags, deep nesting, special files, control characters.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.ts';
import { parseExtraVars } from '../../src/inventory/extra-vars.ts';
import { HostContext, varsSchema } from '../../src/contract/playbook.ts';
import { isSecret } from '../../src/util/secret.ts';
import { cli } from './run-cli.ts';
import { inputErrorOf } from './thrown.ts';

const ROOT = mkdtempSync(join(tmpdir(), 'rs-invin-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));
let n = 0;
function write(files: Record<string, string>, main = Object.keys(files)[0]): string {
  const dir = join(ROOT, `c${n++}`);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return join(dir, main);
}
const error = inputErrorOf;

describe('templates: racksmith does not template', () => {
  const f = write({
    'hosts.yml':
      'all:\n  hosts:\n    h1:\n      ansible_connection: local\n      read_me: "{{ x }}/jail"\n      unread: "{% if a %}b{% endif %}"\n      literal: !unsafe "{{ not a template }}"\n      nested: [a, {b: "{# c #}"}]\n',
  });
  const h = loadInventory(f).hosts[0];
  const ctx = new HostContext(h, [h]);

  it('a variable racksmith reads that holds {{ }} is exit 3 at its file:line', () => {
    const e = error(() => ctx.var('read_me', ''));
    expect(e.message).toBe(`${f}:5:16: h1: read_me: templating is not supported: give the literal value`);
    expect(error(() => ctx.var('nested', [])).message).toContain(`${f}:8:23: h1: nested: templating is not supported`);
  });

  it('validate() refuses a templated variable its schema names, and only those', () => {
    expect(error(() => ctx.validate(varsSchema({ properties: { unread: { type: 'string' } } }))).message).toContain(
      'unread: templating is not supported',
    );
    expect(() => ctx.validate(varsSchema({ properties: { literal: { type: 'string' } } }))).not.toThrow();
  });

  it('variables it does not read may hold anything; !unsafe is a literal string', () => {
    expect(ctx.var('literal', '')).toBe('{{ not a template }}');
    expect(h.vars.unread).toBe('{% if a %}b{% endif %}');
  });

  it.each([
    ['YAML', { 'hosts.yml': 'all:\n  hosts:\n    h1:\n      ansible_host: "{{ inventory_hostname }}.dc1"\n' }, 'hosts.yml:4:21'],
    ['INI host line', { 'hosts.ini': 'h1 ansible_host="{{ x }}"\n' }, 'hosts.ini:1:4'],
    ['INI vars', { 'hosts.ini': 'h1\n[all:vars]\nansible_user={{ u }}\n' }, 'hosts.ini:3:1'],
    [
      'group_vars',
      { 'hosts.yml': 'all:\n  hosts:\n    h1:\n', 'group_vars/all.yml': 'ansible_port: "{{ p }}"\n' },
      'group_vars/all.yml:1:15',
    ],
  ])('a templated connection variable (%s) is exit 3 where it is written', (_, files, at) => {
    const file = write(files);
    expect(error(() => loadInventory(file)).message).toMatch(new RegExp(`${at}: .*templating is not supported`));
  });

  it('-e values are checked too when read', () => {
    const e = parseExtraVars(['x={{y}}']);
    expect(e.vars.x).toBe('{{y}}');
    const f = write({ 'hosts.yml': 'all:\n  hosts:\n    h1:\n' });
    const h = loadInventory(f, e.vars, e.sources).hosts[0];
    expect(error(() => new HostContext(h).var('x', '')).message).toBe('-e #1: h1: x: templating is not supported: give the literal value');
  });
});

describe('YAML tags', () => {
  it.each([
    '!Secret',
    '!secrets',
    '!!python/object:os.system',
    '!!python/object/apply:os.system',
    '!!js/function',
    '!exec',
    '!!binary',
    '!!set',
    '!include',
  ])('%s is exit 3 at its position', (tag) => {
    const f = write({ 'hosts.yml': `all:\n  hosts:\n    h1:\n      x: ${tag} abc\n` });
    const e = error(() => loadInventory(f));
    expect(e.message).toMatch(new RegExp(`^${f}:4:10: YAML: Unresolved tag`));
  });

  it('known tags: !vault (needs a password), !unsafe, !secret, !!str, !!int, !!float', () => {
    const f = write({
      'hosts.yml':
        'all:\n  hosts:\n    h1:\n      a: !unsafe x\n      b: !secret s3\n      c: !!str 0644\n      d: !!int "0x10"\n      e: !!float 1\n',
    });
    const v = loadInventory(f).hosts[0].vars;
    expect([v.a, isSecret(v.b), v.c, v.d, v.e]).toEqual(['x', true, '0644', 16, 1]);
  });

  it('a YAML error never quotes the line (it may hold a secret)', () => {
    const f = write({ 'hosts.yml': 'all:\n  hosts:\n    h1:\n      password: !secret hunter2 : : [\n' });
    const e = error(() => loadInventory(f));
    expect(e.message).not.toContain('hunter2');
    expect(e.message).toMatch(new RegExp(`^${f}:4:`));
  });
});

describe('nesting, special files, control characters', () => {
  it('a byte-order mark further in is shown escaped in the message, not invisible', () => {
    const f = write({ 'hosts.ini': '[web]\nweb1\n\ufeff[db]\n' });
    expect(error(() => loadInventory(f)).message).toMatch(/^\S+:3:\d+: .*'\\ufeff\[db\]'/);
  });
  it.each(['hosts', 'hosts.ini'])('a byte-order mark at the start of an INI inventory (%s) is named, at 1:1', (name) => {
    const f = write({ [name]: '\ufeff[gpu]\ngpu1\n' });
    expect(error(() => loadInventory(f)).message).toBe(
      `${f}:1:1: a byte-order mark (U+FEFF) starts this INI inventory, which Ansible does not take off either: save the file without it`,
    );
  });

  it.each([
    ['flow YAML 10,000 deep', `all:\n  vars:\n    x: ${'['.repeat(10000)}${']'.repeat(10000)}\n`],
    ['flow mappings 10,000 deep', `all:\n  vars:\n    x: ${'{a: '.repeat(10000)}1${'}'.repeat(10000)}\n`],
    ['block sequences 5,000 deep', `all:\n  vars:\n    x:\n      ${'- '.repeat(5000)}x\n`],
    ['200 levels (over the bound of 100)', `all:\n  vars:\n    x: ${'['.repeat(200)}${']'.repeat(200)}\n`],
    ['JSON 10,000 deep', `{"all": {"vars": {"x": ${'['.repeat(10000)}${']'.repeat(10000)}}}}`],
  ])('%s: exit 3 with a position, not a stack overflow', (_, text) => {
    const f = write({ 'hosts.yml': text });
    const e = error(() => loadInventory(f));
    expect(e.message).toMatch(new RegExp(`^${f}:\\d+:\\d+: `));
    expect(e.message).toMatch(/deep|Maximum call stack|nested/);
  });

  it.each([
    ['a directory', (d: string) => mkdirSync(join(d, 'hosts.yml'))],
    ['/dev/zero', (d: string) => symlinkSync('/dev/zero', join(d, 'hosts.yml'))],
    ['a FIFO', (d: string) => execFileSync('mkfifo', [join(d, 'hosts.yml')])],
  ])('an inventory that is %s: exit 3, no hang', (_, make) => {
    const d = join(ROOT, `special${n++}`);
    mkdirSync(d);
    make(d);
    // a directory is a directory source (with nothing in it); the others are refused as files
    const f = join(d, 'hosts.yml');
    if (_ === 'a directory') expect(() => loadInventory(f)).not.toThrow();
    else expect(error(() => loadInventory(f)).message).toMatch(/not a regular file/);
  });

  it.each([
    ['group_vars', 'group_vars/all.yml'],
    ['host_vars', 'host_vars/h1.yml'],
  ])('a %s file that is /dev/zero or a FIFO: exit 3 naming it', (_, rel) => {
    const f = write({ 'hosts.yml': 'all:\n  hosts:\n    h1:\n' });
    mkdirSync(join(dirname(f), dirname(rel)), { recursive: true });
    symlinkSync('/dev/zero', join(dirname(f), rel));
    expect(error(() => loadInventory(f)).message).toContain(
      `${join(dirname(f), rel)}: vars file is a character device, not a regular file`,
    );
  });

  it('-e @/dev/zero and a vault password file that is a FIFO: exit 3', async () => {
    expect(error(() => parseExtraVars(['@/dev/zero'])).message).toContain('not a regular file');
    const fifo = join(ROOT, 'pw.fifo');
    execFileSync('mkfifo', [fifo]);
    const f = write({ 'hosts.yml': 'all:\n  hosts:\n    h1: {ansible_connection: local}\n' });
    const r = await cli(['inventory', '-i', f, '--list', '--vault-password-file', fifo]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('is a FIFO, not a regular file');
  });

  it('control characters from the inventory are escaped in messages', () => {
    const f = write({ 'hosts.yml': 'all:\n  hosts:\n    "evil\\e[31mred\\u202e":\n' });
    const e = error(() => loadInventory(f));
    expect(e.message).toContain('evil\\x1b[31mred\\u202e');
    // eslint-disable-next-line no-control-regex -- the raw escape must be gone
    expect(e.message).not.toMatch(/\x1b|\u202e/);
  });
});

describe('sources: directories, several -i, formats', () => {
  it('a directory source reads every inventory file in it (not *.ini, not hidden ones) and its group_vars', () => {
    const d = dirname(
      write({
        'a.yml': 'all:\n  hosts:\n    h1:\n',
        b: '[web]\nh2\n',
        'c.ini': '[ignored]\nh3\n',
        '.hidden.yml': 'all:\n  hosts:\n    h4:\n',
        'group_vars/web.yml': 'role: web\n',
      }),
    );
    const inv = loadInventory(d);
    expect(inv.hosts.map((h) => h.name)).toEqual(['h1', 'h2']);
    expect(inv.hosts[1].vars.role).toBe('web');
  });

  it('several -i: merged in order, each with the group_vars beside it', () => {
    const a = write({ 'a/hosts.yml': 'all:\n  hosts:\n    h1: {x: a}\n', 'a/group_vars/all.yml': 'y: a\n' });
    const b = write({ 'b/hosts.ini': 'h1 x=b\nh2\n', 'b/group_vars/all.yml': 'y: b\n' });
    const inv = loadInventory([a, b]);
    expect(inv.hosts.map((h) => [h.name, h.vars.x, h.vars.y])).toEqual([
      ['h1', 'b', 'b'],
      ['h2', undefined, 'b'],
    ]);
  });

  it.each([
    ['a dynamic inventory script', { 'inv.py': '#!/usr/bin/env python3\nprint("{}")\n' }, /executable inventory/],
    ['TOML', { 'inv.toml': '[all]\n' }, /TOML inventories are not supported/],
    ['a plugin configuration', { 'inv.yml': 'plugin: aws_ec2\n' }, /inventory plugin configuration files/],
  ])('%s is refused', (_, files, re) => {
    const f = write(files);
    if (f.endsWith('.py')) execFileSync('chmod', ['+x', f]);
    expect(error(() => loadInventory(f)).message).toMatch(re);
  });
});
