// The GPU driver search (resources/jail/gpu-driver.ts) tries a cheap name test before its patterns
// (namePrefilter): real find over a temp tree must find exactly what the patterns alone find.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namePrefilter } from '../../../../src/resources/jail/gpu-driver.ts';
import { DEFAULT_GPU_PATTERNS } from '../../../../src/resources/jail/gpu-files.ts';
import { shq } from '../../../../src/shell/quote.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rs-gpu-find-'));
  const lib = join(dir, 'lib', 'sub');
  mkdirSync(lib, { recursive: true });
  const names = [
    // one file per default pattern (its wildcards filled in), and decoys around them
    ...DEFAULT_GPU_PATTERNS.map((p) => p.replace(/\*/g, '570.86.15').replace(/\?/g, 'x')),
    'libc.so.6',
    'libnvidia.so',
    'libGLU.so.1',
    'nvidia',
    'gsp.txt',
    'libEGL_mesa.so.0',
    'xlibcuda.so.1',
  ];
  for (const [i, n] of names.entries()) writeFileSync(join(i % 2 ? lib : join(dir, 'lib'), n), '');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const find = (patterns: readonly string[], first: string | undefined) => {
  const names = patterns.map((p) => `-name ${shq(p)}`).join(' -o ');
  const script = `find ${shq(join(dir, 'lib'))} -maxdepth 2 -type f ${first ? `\\( ${first} \\) ` : ''}\\( ${names} \\) -printf '%f\\n' | sort`;
  return execFileSync('sh', ['-c', script], { encoding: 'utf8' });
};

describe('the GPU search prefilter', () => {
  it.each<[string, readonly string[]]>([
    ['the default patterns', DEFAULT_GPU_PATTERNS],
    ['short literal beginnings', ['gsp*.bin', 'nv*', 'lib?L.so.*']],
  ])('%s: the same files with it as without it', (_, patterns) => {
    const first = namePrefilter(patterns);
    expect(first).toBeDefined();
    const without = find(patterns, undefined);
    expect(without).not.toBe('');
    expect(find(patterns, first)).toBe(without);
  });

  it('no prefilter when a pattern begins with a wildcard (it would leave out what that one finds)', () => {
    expect(namePrefilter(['libcuda.so.*', '*nvidia*'])).toBeUndefined();
  });

  it('the default patterns come down to a few beginnings', () => {
    expect(namePrefilter(DEFAULT_GPU_PATTERNS)!.split(' -o ').length).toBeLessThan(DEFAULT_GPU_PATTERNS.length / 3);
  });
});
