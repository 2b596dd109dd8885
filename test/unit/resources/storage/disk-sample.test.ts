// The blank-disk sample (rs_sample in src/resources/storage/blockdev.ts) reads its regions with one perl
// where the host has perl, else with one dd per region: both readers must give the sample the
// same bytes. Real shell, real perl, dd, od, awk and blkid, on sparse image files made here
// (the function reads a path; a regular file reads as a block device does).
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diskHelpers, sampledBytes, sampleRegions, zeroSample } from '../../../../src/resources/storage/blockdev.ts';

const MiB = 1 << 20;
const GiB = 1 << 30;
let dir: string;
/** A PATH with every tool the sample needs but perl (a host without perl). */
let noPerlPath: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rs-sample-'));
  noPerlPath = join(dir, 'bin');
  mkdirSync(noPerlPath);
  for (const tool of ['dd', 'od', 'awk', 'blkid', 'cat', 'cmp']) {
    const where = execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
    symlinkSync(where, join(noPerlPath, tool));
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A sparse image of `size` bytes with `writes` (offset, bytes) in it. */
function image(name: string, size: number, writes: Array<[number, Buffer]>): string {
  const path = join(dir, name);
  const fd = openSync(path, 'w');
  ftruncateSync(fd, size);
  for (const [at, bytes] of writes) writeSync(fd, bytes, 0, bytes.length, at);
  closeSync(fd);
  return path;
}

/** The disk probes' shell functions, as a script defines them. */
const HELPERS = diskHelpers()
  .map((d) => d.define)
  .join('\n');

/** What rs_sample sets $rs_s to, read with perl (the host's PATH) or without. */
function sample(path: string, size: number, perl: boolean): string {
  const script = `${HELPERS}\nrs_sample "$1" "$2"; printf '%s\\n' "$rs_s"`;
  return execFileSync('/bin/sh', ['-c', script, 'sh', path, String(size)], {
    encoding: 'utf8',
    env: { PATH: perl ? (process.env.PATH ?? '/usr/bin:/bin') : noPerlPath, LC_ALL: 'C' },
  });
}

/** Whether the format guard's check (zeroSample) finds every sampled byte there and zero. */
function stillZero(path: string, size: number, perl: boolean): boolean {
  const script = `${HELPERS}\nif ${zeroSample('"$1"', size)}; then echo zero; else echo changed; fi`;
  const out = execFileSync('/bin/sh', ['-c', script, 'sh', path], {
    encoding: 'utf8',
    env: { PATH: perl ? (process.env.PATH ?? '/usr/bin:/bin') : noPerlPath, LC_ALL: 'C' },
  });
  return out.trim() === 'zero';
}

const bytes = (s: string) => Buffer.from(s, 'latin1');
const XFSB = Buffer.from([0x58, 0x46, 0x53, 0x42, 0, 0, 0x10, 0]);
const nonZeroLines = Buffer.alloc(4096, 0xab); // eight identical 512-byte lines: od's "*"

// (each case runs the shell four times: a loaded machine takes its time)
describe('the blank-disk sample reads the same with perl and with dd', { timeout: 30_000 }, () => {
  it('perl is there to take the fast path on this machine', () => {
    expect(execFileSync('sh', ['-c', 'command -v perl'], { encoding: 'utf8' }).trim()).not.toBe('');
  });

  it.each<[string, number, Array<[number, Buffer]>, RegExp[]]>([
    ['a blank 1 GiB disk', GiB, [], [/^sample=3981312 3981312\n$/]],
    ['one byte at 2 MiB', GiB, [[2 * MiB + 5, bytes('\x01')]], [/^data=2097157 01/m]],
    ['data in the last MiB', GiB, [[GiB - 100, bytes('tail')]], [/^data=1073741724 7461696c$/m]],
    ['data between the regions is not read', GiB, [[100 * MiB, bytes('unseen')]], [/^sample=3981312 3981312\n$/]],
    ['an XFS superblock at a sixteenth', GiB, [[(GiB / 16) * 3, XFSB]], [/^xfsb=201326592$/m, /^data=201326592 58465342$/m]],
    ['a tar header', GiB, [[257, bytes('ustar\x0000')]], [/^tar=257$/m, /^data=257 75737461$/m]],
    ['repeated non-zero lines across a region boundary', GiB, [[MiB + 128 * 1024 - 2048, nonZeroLines]], [/^data=1177600 abababab$/m]],
    ['a small disk is read whole', 8 * MiB, [[8 * MiB - 1, bytes('\x7f')]], [/^data=8388607 7f$/m, /^sample=8388608 8388608$/m]],
    ['a file shorter than its size reads short', 64 * MiB, [], [/^sample=2293760 3981312$/m]],
  ])('%s', (name, size, writes, expected) => {
    const path = image(name.replace(/\W+/g, '-'), size, writes);
    // (the last case claims a size twice the file's: its end regions lie past the file)
    const claimed = name.startsWith('a file shorter') ? 2 * size : size;
    const withPerl = sample(path, claimed, true);
    const withDd = sample(path, claimed, false);
    expect(withDd).toBe(withPerl);
    for (const e of expected) expect(withPerl).toMatch(e);
    // The format guard reads the same regions once more: still zero exactly where the sample was blank.
    const blank = withPerl === `sample=${sampledBytes(claimed)} ${sampledBytes(claimed)}\n`;
    expect(stillZero(path, claimed, true)).toBe(blank);
    expect(stillZero(path, claimed, false)).toBe(blank);
  });

  it.each([GiB, 8 * MiB, 32 * MiB, 32 * MiB + 512, 3 * GiB + 4096 * 7 + 512, 14 * 1024 * GiB + 512 * 3])(
    'the guard reads the regions the probe reads (size %d)',
    (size) => {
      const script = `${HELPERS}\nrs_regions() { :; }\nrs_sample /dev/null "$1"; printf '%s' "$rs_segs"`;
      const segs = execFileSync('/bin/sh', ['-c', script, 'sh', String(size)], { encoding: 'utf8' });
      expect(sampleRegions(size).join(' ')).toBe(segs);
    },
  );
});
