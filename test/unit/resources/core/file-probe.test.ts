// FILE_FACTS run by the local sh over files made here (a temp dir): what each path's resource
// gets, for the kinds of path a host holds, names with blanks and glob characters included.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { shq } from '../../../../src/shell/quote.ts';
import { fileFacts, fileFactsBatch, MAX_PROBED_BYTES } from '../../../../src/resources/core/file-common.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-file-probe-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const at = (name: string) => join(dir, name);

const small = Buffer.from('key = value\n\u00e9\x00\xff\n', 'latin1');
const large = Buffer.alloc(MAX_PROBED_BYTES + 1, 'x');
writeFileSync(at('small.conf'), small);
writeFileSync(at('with  two blanks and * [glob] ?.conf'), 'spaced\n');
writeFileSync(at('trailing blank '), 'kept\n');
writeFileSync(at('empty'), '');
writeFileSync(at('large'), large);
mkdirSync(at('a dir'));
symlinkSync(at('small.conf'), at('link'));

/** Each path's facts, as a resource of a script with all of them gets them. */
function probe(paths: string[]) {
  // (no record of sensitive files: a list under the temp dir that does not exist)
  const batch = fileFactsBatch({ system: shq(at('no-system-list')), user: shq(at('no-user-list')) });
  const out = spawnSync('/bin/sh', ['-c', batch.script(paths)], { encoding: 'latin1', cwd: dir });
  return batch.split(out.stdout, paths).map((a) => fileFacts(a));
}

describe('file facts of a script, one find and one od for all its paths', () => {
  const paths = ['small.conf', 'with  two blanks and * [glob] ?.conf', 'trailing blank ', 'empty', 'large', 'a dir', 'link', 'absent'];
  const facts = probe(paths.map(at));
  const by = Object.fromEntries(paths.map((p, i) => [p, facts[i]]));

  it.each<[string, Buffer]>([
    ['small.conf', small],
    ['with  two blanks and * [glob] ?.conf', Buffer.from('spaced\n')],
    ['trailing blank ', Buffer.from('kept\n')],
    ['empty', Buffer.alloc(0)],
  ])('a small regular file comes with its content: %j', (name, want) => {
    expect(by[name]).toMatchObject({ type: 'file', size: want.length });
    expect(by[name].content?.equals(want)).toBe(true);
  });

  it('a file past the limit is hashed on the host, its content not sent', () => {
    expect(by.large).toMatchObject({ type: 'file', size: large.length, sha256: createHash('sha256').update(large).digest('hex') });
    expect(by.large.content).toBeUndefined();
  });

  it('a directory, a link and a missing path are what they are', () => {
    expect(by['a dir'].type).toBe('dir');
    expect(by.link.type).toBe('link');
    expect(by.absent.type).toBe('absent');
  });
});
