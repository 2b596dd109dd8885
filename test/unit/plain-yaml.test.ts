// The plain YAML reader (src/inventory/plain-yaml.ts) against the yaml library: for every
// document it accepts, the same value and the same position of every key and value; every
// document the library finds an error in, or that is outside the plain subset, it leaves to the
// library. Tables of chosen cases, then generated documents (a seeded grammar with mistakes).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePlainYaml } from '../../src/inventory/plain-yaml.ts';
import { resolvePlain11, YAML11_PATTERNS } from '../../src/inventory/yaml11.ts';
import { spawnSync } from 'node:child_process';
import { YamlSource } from '../../src/inventory/yaml-source.ts';
import { rng } from './rng.ts';

type Path = Array<string | number>;

/** Every path into a value (objects by key, arrays by index), the root included. */
function paths(v: unknown, p: Path = [], out: Path[] = []): Path[] {
  out.push(p);
  if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...p, Array.isArray(v) ? Number(k) : k], out);
  return out;
}

/** Library's answer for `text`: its value and positions, or its error. */
function library(text: string): YamlSource | Error {
  try {
    return YamlSource.parse('t.yaml', text, { reader: 'library' });
  } catch (e) {
    return e as Error;
  }
}

/** Asserts the plain reader agrees with the library on `text`; returns whether it read it itself. */
function agrees(text: string): boolean {
  const plain = parsePlainYaml(text);
  const lib = library(text);
  if (!plain) return false;
  expect(lib, `the library rejects what the plain reader read: ${JSON.stringify(text)}`).not.toBeInstanceOf(Error);
  const libSrc = lib as YamlSource;
  expect(plain.value, JSON.stringify(text)).toStrictEqual(libSrc.value);
  const ours = YamlSource.parse('t.yaml', text);
  for (const p of paths(libSrc.value)) {
    for (const key of [false, true])
      expect(ours.pos(p, key), `${JSON.stringify(text)} at ${JSON.stringify(p)} key=${key}`).toEqual(libSrc.pos(p, key));
    expect(ours.pos([...p, 'no-such-key', 0])).toEqual(libSrc.pos([...p, 'no-such-key', 0]));
  }
  return true;
}

describe('plain YAML reader: documents it reads', () => {
  it.each([
    ['nested block maps', 'all:\n  vars:\n    a: 1\n  hosts:\n    h1:\n      ansible_host: 10.0.0.1\n'],
    ['null values, with and without spaces and comments', 'a: 1\nb:   \nc:\nd:   # note\ne: ~\n'],
    ["a sequence at its key's indent and deeper", 'a:\n- 1\n- two\nb:\n  - x\n  -\n  - y\n'],
    ['sequences of compact maps', 'disks:\n  - device: /dev/sdb\n    name: d1\n    match:\n      KERNEL: sdb\n  - device: /dev/sdc\n'],
    ['a sequence nested under a compact map key', '- a:\n  - 1\n  b: 2\n- c\n'],
    ['compact maps after wider dashes', '-   a: 1\n    b: 2\n-  c: 3\n'],
    ['an item holding a block map', 'a:\n  -\n    x: 1\n    y: 2\n'],
    ['quoted scalars and keys', "a: 'it''s'\nb: \"x: y # z\"\n'k 1': 1\n\"k 2\": '#'\n"],
    [
      'core schema scalars',
      'a: 0o17\nb: 0x1F\nc: -12\nd: +3\ne: 1.5\nf: .5\ng: 1e3\nh: -.inf\ni: .NaN\nj: True\nk: FALSE\nl: NULL\nm: 007\nn: 1.\no: 10.0.0.1\n',
    ],
    [
      'strings that look like other things',
      'a: yes\nb: on\nc: 1_000\nd: 0b101\ne: 2026-11-30\nf: 1:30\ng: -foo\nh: node[01:20]\ni: a#b\nj: x:y\n',
    ],
    ['comments everywhere', '# head\na: # after key\n  # inside\n  b: 1 # after value\n\n# between\nc: 2\n'],
    ['a document start marker', '---\nall:\n  hosts:\n    h1:\n'],
    ['one-line flow collections', 'a: [1, two, "3"]\nb: { x: 1, y: [a, b], z: {} }\nc: []\nd: { }\ne: [ [1], [] ]\n'],
    ['flow maps as sequence items', 'disks:\n  - { device: /dev/sdb, name: d1 }\n  - { device: /dev/sdc, name: d2 } # second\n'],
    ['host range keys and dotted names', 'all:\n  hosts:\n    node[01:20].rack1:\n    10.0.0.5:\n'],
    ['a root sequence', '- a\n- b: 1\n  c: 2\n-\n'],
    ['an indented root map', '  a: 1\n  b:\n    c: 2\n'],
    ['unicode text', 'a: ünïcødé ✓\nb: "日本"\n'],
    [
      'Unicode spaces at the end of a scalar are kept (YAML trims only spaces)',
      'a: b\u00a0\nc: d\u3000 # e\nf: [g\u2009]\nh: {i: j\u202f}\n',
    ],
    ['a key of 1,024 characters', `${'k'.repeat(1024)}: 1\n`],
  ])('%s', (_, text) => {
    expect(agrees(text)).toBe(true);
  });

  it("the repository's inventories", () => {
    const files: string[] = [];
    const walk = (d: string) => {
      for (const f of readdirSync(d)) {
        const p = join(d, f);
        if (statSync(p).isDirectory()) walk(p);
        else if (/\.ya?ml$/.test(f)) files.push(p);
      }
    };
    walk('inventories');
    expect(files.length).toBeGreaterThan(3);
    for (const f of files) expect(agrees(readFileSync(f, 'utf8')), f).toBe(true);
  });
});

describe('plain YAML reader: documents it leaves to the library', () => {
  it.each([
    ['an anchor and alias', 'a: &x 1\nb: *x\n'],
    ['a tag', 'a: !secret s3cr3t\n'],
    ['a block scalar', 'a: |\n  text\n'],
    ['a multi-line plain scalar', 'a: one\n  two\n'],
    ['a multi-line flow collection', 'a: [1,\n  2]\n'],
    ['a double-quoted escape', 'a: "x\\ty"\n'],
    ['a tab', 'a:\t1\n'],
    ['CRLF line ends', 'a: 1\r\nb: 2\r\n'],
    ['a duplicate key', 'a: 1\na: 2\n'],
    ['a numeric key', '1: a\n'],
    ['a boolean key', 'true: a\n'],
    ['a merge key', 'a: {x: 1}\n<<: {y: 2}\n'],
    ['a complex key', '? a\n: 1\n'],
    ['two documents', 'a: 1\n---\nb: 2\n'],
    ['a directive', '%YAML 1.2\n---\na: 1\n'],
    ['bad indentation', 'a:\n    b: 1\n  c: 2\n'],
    ['a nested mapping on one line', 'a: b: c\n'],
    ['a flow map without spaces', 'a: {x:1}\n'],
    ['a trailing comma', 'a: [1, 2, ]\n'],
    ['an empty document', '# nothing\n'],
    ['a key without a value separator', 'a\nb: 1\n'],
    ['__proto__ as a key', '__proto__: 1\n'],
    ["a key longer than 1,024 characters (the library's error)", `${'k'.repeat(1030)}: 1\n`],
    ['a quoted key longer than 1,024 characters', `'${'k'.repeat(1030)}': 1\n`],
    ['a long key in a compact map', `- ${'k'.repeat(1030)}: 1\n`],
  ])('%s', (_, text) => {
    expect(parsePlainYaml(text)).toBeUndefined();
    // and the source still reads it as the library does (or fails as it does)
    const lib = library(text);
    let ours: YamlSource | Error;
    try {
      ours = YamlSource.parse('t.yaml', text);
    } catch (e) {
      ours = e as Error;
    }
    if (lib instanceof Error) expect((ours as Error).message).toBe(lib.message);
    else expect((ours as YamlSource).value).toStrictEqual(lib.value);
  });
});

/**
 * What Ansible's loader (PyYAML's SafeLoader rules, run here by the real PyYAML) makes of each
 * plain scalar: [type, value as text].
 */
function pyyaml(shapes: string[]): Array<[string, string]> {
  const script = `
import json, sys, yaml, datetime, math
out = []
for s in json.load(sys.stdin):
    try:
        v = yaml.safe_load('v: ' + s + '\\n')['v']
    except Exception as e:
        out.append(['error', type(e).__name__]); continue
    if isinstance(v, bool): out.append(['bool', str(v).lower()])
    elif v is None: out.append(['null', ''])
    elif isinstance(v, int): out.append(['int', str(v)])
    elif isinstance(v, float): out.append(['float', 'nan' if math.isnan(v) else repr(v)])
    elif isinstance(v, (datetime.date, datetime.datetime)): out.append(['str', v.isoformat()])
    else: out.append(['str', v])
print(json.dumps(out))
`;
  const r = spawnSync('/usr/bin/python3', ['-c', script], { input: JSON.stringify(shapes), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}

function ours(s: string): [string, string] {
  let v: unknown;
  try {
    v = resolvePlain11(s);
  } catch {
    return ['error', ''];
  }
  if (typeof v === 'boolean') return ['bool', String(v)];
  if (v === null) return ['null', ''];
  if (typeof v === 'bigint') return ['int', v.toString()];
  if (typeof v === 'number') return !YAML11_PATTERNS.FLOAT.test(s) ? ['int', String(v)] : ['float', Number.isNaN(v) ? 'nan' : pyRepr(v)];
  return ['str', String(v)];
}

/** Python's float repr for the values here. */
function pyRepr(v: number): string {
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  if (Number.isInteger(v) && Math.abs(v) < 1e16) return `${v}.0`;
  return String(v).replace(/e\+?/, 'e+').replace('e+-', 'e-');
}

describe('YAML 1.1 scalars: resolvePlain11 against PyYAML', () => {
  it('types every shape as PyYAML does', () => {
    const shapes = [
      '~',
      'null',
      'Null',
      'NULL',
      'nULL',
      'true',
      'True',
      'TRUE',
      'tRUE',
      'false',
      'no',
      'No',
      'NO',
      'yes',
      'Yes',
      'on',
      'On',
      'ON',
      'off',
      'Off',
      'OFF',
      'y',
      'Y',
      'n',
      'N',
      'oN',
      '0',
      '-0',
      '+1',
      '007',
      '0644',
      '09',
      '0o17',
      '0o8',
      '0x1f',
      '0X1F',
      '0xFFFFFFFFFFFFFFFF',
      '-0x10',
      '0b101',
      '0B1',
      '1.5',
      '1.',
      '.5',
      '-.5',
      '+1.5',
      '1e3',
      '1E-3',
      '1.0e+3',
      '1.0e3',
      '1.5E-2',
      '.inf',
      '-.Inf',
      '+.INF',
      '.nan',
      '.NaN',
      '1_0',
      '1_000',
      '1_0.5',
      '1:30',
      '-1:30',
      '1:30.5',
      '190:20:30',
      '10.0.0.1',
      'nan',
      'inf',
      '.',
      '+',
      '2001-12-14',
      '2001-12-14t21:59:43.10-05:00',
      '2001-12-14 21:59:43.10',
      '2001-12-14T21:59:43Z',
      '2002-1-1 1:00:00',
      '2001-12-14 21:59:43.1234567 +05:30',
      '2001-1-14',
      '12345678901234567890',
      '-9007199254740993',
      '9007199254740991',
      '0_',
      '00',
      '0.0',
      'web1',
      'node01',
      'Off-line',
      'yes!',
    ];
    const want = pyyaml(shapes);
    shapes.forEach((s, i) => expect(ours(s), s).toEqual(want[i][0] === 'error' ? ['error', ''] : want[i]));
  });
});

// Mostly what inventories hold; one pick in ten from the odd pools (other YAML, mistakes).
const KEYS = [
  'all',
  'hosts',
  'vars',
  'children',
  'node01',
  'ansible_host',
  'a b',
  'x:y',
  'node[1:3]',
  '10.0.0.1',
  'k-',
  'ü',
  "'q'",
  '"d d"',
  "'it''s'",
  '"#"',
  'a#b',
  'Name',
];
const ODD_KEYS = ['-k', 'true', '1', 'null', '~', '.5', 'k?', 'k]', '&a', '*a', '!t', '__proto__', '<<', 'k:', '? k', '"e\\n"', 'k #c'];
const SCALARS = [
  '1',
  '-1',
  '+2',
  '0o7',
  '0x1A',
  '1.5',
  '.5',
  '1e3',
  '.inf',
  '-.inf',
  '.nan',
  'true',
  'False',
  'NULL',
  '~',
  'yes',
  'on',
  '007',
  '1_000',
  '10.0.0.1',
  '/dev/sdb',
  'a b',
  'a  b',
  'x:y',
  'a#c',
  '-x',
  "'q'",
  "'it''s'",
  '"d"',
  '"a: b"',
  '"#"',
  '[]',
  '{}',
  '[ ]',
  '[1, 2]',
  '[a, [b, c]]',
  '{ a: 1 }',
  '{ a: [1], b: {} }',
  'ünï',
  '"ok" # c',
  'v # comment',
  'v #: x',
  'node[01:20]',
];
const ODD_SCALARS = [
  'x: y',
  'trailing:',
  '-',
  '- x',
  '?',
  ':x',
  "'unterminated",
  '"esc\\n"',
  '{a:1}',
  '[1, 2, ]',
  '[1,, 2]',
  '{ a: 1, a: 2 }',
  '{ 1: a }',
  '[x: 1]',
  '&anc v',
  '*anc',
  '!secret s',
  '|',
  '>',
  '%x',
  '@x',
  '`x',
  'é: x',
  'a\tb',
  "'ok'#c",
  '[a',
  '{ a: }',
  'a: b: c',
];

/** A random document in the shape of an inventory, with some mistakes and unusual constructs. */
function generate(r: () => number): string {
  const pick = <T>(a: T[]) => a[Math.floor(r() * a.length)];
  const key = () => (r() < 0.1 ? pick(ODD_KEYS) : pick(KEYS));
  const scalar = () => (r() < 0.1 ? pick(ODD_SCALARS) : pick(SCALARS));
  const lines: string[] = [];
  const pad = (n: number) => ' '.repeat(Math.max(0, n));
  const jitter = () => (r() < 0.03 ? pick([-1, 1, 2]) : 0);
  const comment = () => (r() < 0.1 ? pick([' # c', '  #c', ' #']) : '');
  const block = (indent: number, depth: number, kind: 'map' | 'seq') => {
    const n = 1 + Math.floor(r() * 4);
    const used: string[] = [];
    for (let i = 0; i < n; i++) {
      if (r() < 0.05) lines.push(pick(['', '# note', `${pad(indent)}# indented note`, '   ']));
      const ind = indent + jitter();
      const nested = depth < 4 && r() < 0.35;
      if (kind === 'map') {
        let k = key();
        if (r() < 0.9 && used.includes(k)) k = `${k}${i}`;
        used.push(k);
        if (nested) {
          lines.push(`${pad(ind)}${k}:${comment()}`);
          const seq = r() < 0.35;
          block(seq && r() < 0.4 ? ind : ind + pick([2, 2, 4]), depth + 1, seq ? 'seq' : 'map');
        } else if (r() < 0.15) {
          lines.push(`${pad(ind)}${k}:${pick(['', ' ', '   '])}${comment()}`);
        } else {
          lines.push(`${pad(ind)}${k}: ${scalar()}${comment()}`);
        }
      } else if (nested && r() < 0.5) {
        // `- key: value` and more keys of that map
        const m = 1 + Math.floor(r() * 3);
        const gap = pick([1, 1, 3]);
        for (let j = 0; j < m; j++)
          lines.push(
            `${pad(j === 0 ? ind : ind + 1 + gap + jitter())}${j === 0 ? `-${pad(gap)}` : ''}${key()}${j}: ${scalar()}${comment()}`,
          );
      } else if (nested) {
        lines.push(`${pad(ind)}-${comment()}`);
        block(ind + pick([2, 4]), depth + 1, r() < 0.5 ? 'map' : 'seq');
      } else {
        lines.push(`${pad(ind)}- ${scalar()}${comment()}`);
      }
    }
  };
  if (r() < 0.1) lines.push('---');
  block(0, 0, r() < 0.85 ? 'map' : 'seq');
  if (r() < 0.02) lines.push(pick(['---', '...', 'x: |', '  y']));
  return lines.join('\n') + (r() < 0.9 ? '\n' : '');
}

describe('plain YAML reader: generated documents', () => {
  it('agrees with the library on 3,000 documents, and reads many of them itself', () => {
    const r = rng(20261130);
    let read = 0;
    let libraryErrors = 0;
    for (let i = 0; i < 3000; i++) {
      const text = generate(r);
      if (library(text) instanceof Error) libraryErrors++;
      try {
        if (agrees(text)) read++;
      } catch (e) {
        throw new Error(`document ${i}: ${JSON.stringify(text)}\n${(e as Error).message}`, { cause: e });
      }
    }
    // Both sides are exercised: documents read by the plain reader, and documents with errors.
    expect(read).toBeGreaterThan(900);
    expect(libraryErrors).toBeGreaterThan(900);
    // (~2 s on a quiet machine; a busy one takes several times that)
  }, 60_000);
});
