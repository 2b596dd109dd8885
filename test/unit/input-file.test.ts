import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readInputText } from '../../src/util/input-file.ts';
import { InputError } from '../../src/util/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-input-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('readInputText: only regular files, only up to the limit', () => {
  it('reads a regular file', () => {
    expect(readInputText(file('a.yml', 'all: {}\n'), 'inventory', 100)).toBe('all: {}\n');
    expect(readInputText(file('empty.yml', ''), 'inventory', 100)).toBe('');
  });

  it.each([
    ['/dev/zero', /inventory \/dev\/zero is a character device, not a regular file/],
    ['/dev/null', /is a character device/],
    [dir, /is a directory, not a regular file/],
    [join(dir, 'missing.yml'), /inventory .*missing\.yml: not found/],
  ])('%s is bad input', (path, want) => {
    expect(() => readInputText(path, 'inventory', 100)).toThrow(InputError);
    expect(() => readInputText(path, 'inventory', 100)).toThrow(want);
  });

  it('a FIFO is refused at once (no writer: opening it would wait for ever)', () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(() => readInputText(fifo, 'vars file', 100)).toThrow(/vars file .*fifo is a FIFO, not a regular file/);
  });

  it('a file over the limit is refused before it is read', () => {
    const big = file('big.yml', 'x'.repeat(101));
    expect(() => readInputText(big, 'inventory', 100)).toThrow(/is 101 bytes, over the limit of 100/);
    expect(readInputText(big, 'inventory', 101)).toHaveLength(101);
  });
});
