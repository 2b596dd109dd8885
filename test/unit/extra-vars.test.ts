import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseExtraVars } from '../../src/inventory/extra-vars.ts';
import { InputError } from '../../src/util/errors.ts';
import { isSecret, type Secret } from '../../src/util/secret.ts';

const FIX = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'extra-vars');

describe('parseExtraVars: key=value', () => {
  it.each<[string[], Record<string, unknown>]>([
    [[], {}],
    [['a=1'], { a: '1' }], // values stay strings
    [['a=1 b=two'], { a: '1', b: 'two' }],
    [['  a=1   b=2  '], { a: '1', b: '2' }],
    [['a='], { a: '' }],
    [["a=''"], { a: '' }],
    [['a=b=c'], { a: 'b=c' }],
    [["msg='hello world'"], { msg: 'hello world' }],
    [['msg="hello world" x=y'], { msg: 'hello world', x: 'y' }],
    [[`q="it's"`], { q: "it's" }],
    [[`q='say "hi"'`], { q: 'say "hi"' }],
    [['cmd=$(id);`id`'], { cmd: '$(id);`id`' }], // nothing is evaluated
    [['_x=1 X9=2'], { _x: '1', X9: '2' }],
    [['a=1', 'a=2'], { a: '2' }], // later -e win
    [['a=1 a=3'], { a: '3' }],
    [['a=1', 'b=2'], { a: '1', b: '2' }],
    // a Jinja block stays whole, as in Ansible's split_args (refused later only where it is read)
    [['a={{ x }} b=2'], { a: '{{ x }}', b: '2' }],
    [['a={% if y %}1{% endif %}'], { a: '{% if y %}1{% endif %}' }],
    [[`a="{{ 'q' }}" c={# note #}`], { a: "{{ 'q' }}", c: '{# note #}' }],
  ])('%j -> %j', (args, want) => {
    expect(parseExtraVars(args).vars).toEqual(want);
  });

  it('records which -e set each variable', () => {
    const { sources } = parseExtraVars(['a=1 b=2', 'b=3']);
    expect(sources).toEqual({ a: { file: '-e #1' }, b: { file: '-e #2' } });
  });
});

describe('parseExtraVars: YAML / JSON mappings', () => {
  it.each<[string, Record<string, unknown>]>([
    ['{"n": 5, "l": [1, 2], "s": "x"}', { n: 5, l: [1, 2], s: 'x' }],
    ['{n: 5, b: true, nested: {k: v}}', { n: 5, b: true, nested: { k: 'v' } }],
    ['  {a: 1}  ', { a: 1 }],
    ['{}', {}],
    ['{ansible_port: 2222, ansible_connection: local}', { ansible_port: 2222, ansible_connection: 'local' }],
  ])('%s', (arg, want) => {
    expect(parseExtraVars([arg]).vars).toEqual(want);
  });

  it('a mapping and key=value combine, later wins', () => {
    expect(parseExtraVars(['{a: 1, b: 2}', 'b=x']).vars).toEqual({ a: 1, b: 'x' });
    expect(parseExtraVars(['b=x', '{a: 1, b: 2}']).vars).toEqual({ a: 1, b: 2 });
  });

  it('keeps !secret values secret', () => {
    const v = parseExtraVars(['{pw: !secret hush}']).vars.pw;
    expect(isSecret(v)).toBe(true);
    expect((v as Secret).reveal()).toBe('hush');
    expect(JSON.stringify(v)).not.toContain('hush');
  });
});

describe('parseExtraVars: @file', () => {
  it('reads a YAML file and records file:line for each variable', () => {
    const file = join(FIX, 'good.yml');
    const { vars, sources } = parseExtraVars([`@${file}`]);
    expect(vars.region).toBe('eu-west');
    expect(vars.replicas).toBe(3);
    expect((vars.token as Secret).reveal()).toBe('t0ps3cr3t');
    expect(sources.region).toEqual({ file, line: 2, col: 9 });
    expect(sources.replicas).toEqual({ file, line: 3, col: 11 });
    expect(sources.token).toMatchObject({ file, line: 4 });
  });

  it('a later key=value wins over the file', () => {
    const { vars, sources } = parseExtraVars([`@${join(FIX, 'good.yml')}`, 'region=us-east']);
    expect(vars.region).toBe('us-east');
    expect(sources.region).toEqual({ file: '-e #2' });
  });
});

describe('parseExtraVars: bad input is an InputError', () => {
  const F = (n: string) => join(FIX, n);
  it.each<[string[], string]>([
    [['my-var=1'], `-e #1: 'my-var' is not a variable name (letters, digits and _, not starting with a digit)`],
    [['a=1', 'novalue'], `-e #2: expected key=value, @file.yaml or a mapping, got 'novalue'`],
    [['=1'], `-e #1: '' is not a variable name`],
    [['9a=1'], `'9a' is not a variable name`],
    [['a.b=1'], `'a.b' is not a variable name`],
    [['@'], `-e #1: '@' names no file: give @FILE`],
    [["a='unterminated"], 'unterminated quote'],
    [['{ansible_port: 0}'], '-e #1:1:16: ansible_port must be a port number from 1 to 65535, got 0'],
    [['ansible_port=0'], "-e #1: ansible_port must be a port number from 1 to 65535, got '0'"],
    [['a=1 ansible_timeout=forever'], '-e #1: ansible_timeout must be a number of seconds from 1 to 86400, got a string'],
    [['{ansible_connection: telnet}'], '-e #1:1:22: ansible_connection must be one of: ssh, smart, local, paramiko'],
    [['{bad-name: 1}'], "-e #1:1:2: invalid name 'bad-name' in document"],
    [['{a: 1'], '-e #1'],
    [['{a: 1, a: 2}'], '-e #1:1:8: YAML: Map keys must be unique'],
    [[`@${F('bad-name.yml')}`], `${F('bad-name.yml')}:2:1: invalid name 'bad-name' in document`],
    [[`@${F('bad-port.yml')}`], `${F('bad-port.yml')}:2:15: ansible_port must be a port number from 1 to 65535, got 70000`],
    [[`@${F('list.yml')}`], `${F('list.yml')}:1:1: extra-vars file must hold a mapping of variables`],
    [[`@${F('missing.yml')}`], `${F('missing.yml')}: extra-vars file: not found`],
  ])('%j', (args, msg) => {
    let err: unknown;
    try {
      parseExtraVars(args);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toContain(msg);
  });
});
