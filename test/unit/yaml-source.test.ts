// YamlSource checks duplicate keys itself (one pass) and indexes map keys for pos(): both must
// answer exactly as the yaml library's own uniqueKeys check and a scan of the map did.
import { LineCounter, parseDocument } from 'yaml';
import { describe, expect, it } from 'vitest';
import { YamlSource } from '../../src/inventory/yaml-source.ts';
import { InputError } from '../../src/util/errors.ts';

/** The first error of the library's own check, as YamlSource reports it (line, col, message). */
function libraryError(text: string): { line: number; col: number; message: string } | undefined {
  const lines = new LineCounter();
  const e = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true }).errors[0];
  return e && { ...lines.linePos(e.pos[0]), message: e.message.split('\n')[0] };
}

function ourError(text: string): { line: number; col: number; message: string } | undefined {
  try {
    YamlSource.parse('t.yaml', text);
    return undefined;
  } catch (e) {
    const pos = (e as InputError).pos as { line: number; col: number };
    return { line: pos.line, col: pos.col, message: (e as InputError).detail };
  }
}

const hosts = (n: number) => Array.from({ length: n }, (_, i) => `    node${i}: { ansible_host: 10.0.${i >> 8}.${i & 255} }`).join('\n');

describe('duplicate keys', () => {
  it.each([
    ['at the end of a 1,000-host map', `all:\n  hosts:\n${hosts(1000)}\n    node3: {}\n`],
    ['in a nested block map', 'all:\n  vars:\n    a: 1\n    b: 2\n    a: 3\n'],
    ['in a flow map', 'all:\n  vars: { a: 1, b: 2, a: 3 }\n'],
    ['two of them: the first is reported', 'a: 1\nb: {x: 1, x: 2}\na: 2\n'],
    ['a syntax error after a duplicate', 'a: 1\na: 2\nb: [1, 2\nc: 3\n'],
    ['a syntax error before a duplicate', 'b: [1, 2\nc: 3\na: 1\na: 2\n'],
  ])('%s: same first error as the library', (_, text) => {
    const lib = libraryError(text)!;
    expect(lib).toBeDefined();
    expect(ourError(text)).toEqual({ line: lib.line, col: lib.col, message: expect.stringContaining(lib.message) });
  });

  it.each([
    ['keys that print the same but differ (1 and "1")', "1: a\n'1': b\n"],
    ['.nan twice (NaN is not equal to itself)', '.nan: a\n.nan: b\n'],
    ['the same key in different maps', 'a: {x: 1}\nb: {x: 2}\n'],
  ])('%s: no error, as with the library', (_, text) => {
    expect(libraryError(text)).toBeUndefined();
    expect(ourError(text)).toBeUndefined();
  });
});

describe('pos()', () => {
  it('finds a host in a 1,000-host map, its key and a variable under it', () => {
    const src = YamlSource.parse('t.yaml', `all:\n  hosts:\n${hosts(1000)}\n`);
    expect(src.pos(['all', 'hosts', 'node777'], true)).toEqual({ file: 't.yaml', line: 780, col: 5 });
    expect(src.pos(['all', 'hosts', 'node777', 'ansible_host'])).toEqual({ file: 't.yaml', line: 780, col: 30 });
    // a missing key: the nearest existing ancestor
    expect(src.pos(['all', 'hosts', 'nope', 'x'])).toEqual({ file: 't.yaml', line: 3, col: 5 });
  });

  it('of keys that print the same, the first one', () => {
    const src = YamlSource.parse('t.yaml', "1: a\n'1': b\n");
    expect(src.pos(['1'])).toEqual({ file: 't.yaml', line: 1, col: 4 });
  });
});
