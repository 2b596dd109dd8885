// readRegularFile (util/regular-file.ts): a small state file is read only when it is a regular
// file; anything else there is said for what it is, never read (a FIFO would hang the read).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRegularFile, type RegularRead } from '../../src/util/regular-file.ts';

describe('readRegularFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-regular-'));
  it.each<[string, (path: string) => string, RegularRead]>([
    ['a regular file: its text', (p) => (writeFileSync(p, '{"run":"A"}'), p), { kind: 'text', text: '{"run":"A"}' }],
    ['an empty one', (p) => (writeFileSync(p, ''), p), { kind: 'text', text: '' }],
    ['none there', (p) => p, { kind: 'gone' }],
    ['a FIFO: not opened for a writer, not read', (p) => (execFileSync('mkfifo', [p]), p), { kind: 'not-regular', what: 'a FIFO' }],
    ['a directory', (p) => (mkdirSync(p), p), { kind: 'not-regular', what: 'a directory' }],
    ['a device', () => '/dev/zero', { kind: 'not-regular', what: 'a character device' }],
    ['over the limit', (p) => (writeFileSync(p, 'x'.repeat(17)), p), { kind: 'error', code: 'EFBIG' }],
    [
      'a symbolic link (to a regular file): not followed',
      (p) => (writeFileSync(`${p}.t`, 'x'), symlinkSync(`${p}.t`, p), p),
      { kind: 'not-regular', what: 'a symbolic link' },
    ],
    ['in a path through a file', (p) => (writeFileSync(p, ''), join(p, 'x')), { kind: 'error', code: 'ENOTDIR' }],
  ])('%s', (name, make, want) => {
    expect(readRegularFile(make(join(dir, name.replace(/\W+/g, '-'))), 16)).toEqual(want);
  });
});
