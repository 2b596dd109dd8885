import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writtenAt } from '../../src/util/written-text.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-written-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const f = join(dir, 'vars.yml');
writeFileSync(f, 'a: 0750\nb: [42, 7]\nc: 052 # octal\n');

describe('writtenAt: the scalar as the file wrote it, for a hint', () => {
  it.each<[string, number | undefined, number | undefined, string | undefined]>([
    [f, 1, 4, '0750'],
    [f, 2, 5, '42'],
    [f, 3, 4, '052'],
    [f, 9, 1, undefined],
    [f, undefined, undefined, undefined],
    [join(dir, 'missing.yml'), 1, 1, undefined],
    [dir, 1, 1, undefined],
    ['-e #1', 1, 1, undefined],
  ])('%s:%s:%s', (file, line, col, want) => expect(writtenAt({ file, line, col })).toBe(want));
});
