// FILE_FACTS run by the local sh over files made here (a temp dir): what each path's resource
// gets, for the kinds of path a host holds, names with blanks and glob characters included.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { shq } from '../../../../src/shell/quote.ts';
import { fileFacts, fileFactsBatch, MAX_PROBED_BYTES, ownerLookups } from '../../../../src/resources/core/file-common.ts';

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

describe('the wanted owner and group names, looked up with the files', () => {
  // (a getent ahead of the real one in PATH: it logs each lookup, then makes it)
  const bin = at('bin');
  mkdirSync(bin);
  const log = at('getent.log');
  writeFileSync(join(bin, 'getent'), `#!/bin/sh\necho "$*" >> ${shq(log)}\nPATH=${shq(process.env.PATH ?? '')} exec getent "$@"\n`);
  chmodSync(join(bin, 'getent'), 0o755);
  const me = spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();
  const myGroup = spawnSync('id', ['-gn'], { encoding: 'utf8' }).stdout.trim();
  const hasGetent = spawnSync('sh', ['-c', 'command -v getent'], { encoding: 'utf8' }).status === 0;

  function lookups(paths: string[], owners: Array<[string | number | undefined, string | number | undefined]>) {
    const batch = fileFactsBatch({ system: shq(at('no-system-list')), user: shq(at('no-user-list')) });
    const names = owners.map(([u, g]) => ownerLookups(u, g)).flatMap((o) => [o.user, o.group].filter((p) => p !== undefined));
    const args = [...paths, ...new Set(names.map((p) => p.arg))];
    rmSync(log, { force: true });
    const out = spawnSync('/bin/sh', ['-c', batch.script(args)], {
      encoding: 'latin1',
      cwd: dir,
      env: { PATH: `${bin}:${process.env.PATH}` },
    });
    const answers = batch.split(out.stdout, args);
    return {
      facts: answers.slice(0, paths.length).map((a) => fileFacts(a)),
      names: Object.fromEntries(args.slice(paths.length).map((a, i) => [a, answers[paths.length + i]])),
      asked: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [],
    };
  }

  it('a name that owns a probed file is known without a process (a converged host starts none)', () => {
    const r = lookups([at('small.conf'), at('empty')], [[me, myGroup]]);
    expect(r.names).toEqual({ [`user:${me}`]: 'known', [`group:${myGroup}`]: 'known' });
    expect(r.asked).toEqual([]);
    expect(r.facts.map((f) => f.type)).toEqual(['file', 'file']);
  });

  it.runIf(hasGetent)('another name is asked of getent, once however many resources want it: unknown when it finds none', () => {
    const r = lookups(
      [at('small.conf'), at('absent')],
      [
        ['rs-no-such-user', 'rs-no-such-group'],
        ['rs-no-such-user', undefined],
        [me, myGroup],
      ],
    );
    expect(r.names).toEqual({
      'user:rs-no-such-user': 'unknown',
      'group:rs-no-such-group': 'unknown',
      [`user:${me}`]: 'known',
      [`group:${myGroup}`]: 'known',
    });
    expect(r.asked).toEqual(['passwd rs-no-such-user', 'group rs-no-such-group']);
    // (the file facts come as they did without the lookups)
    expect(r.facts[0].content?.equals(small)).toBe(true);
    expect(r.facts[1].type).toBe('absent');
  });

  it.runIf(hasGetent)('a name no probed file is owned by is asked even when it exists (root: known)', () => {
    const r = lookups([at('absent')], [['root', 'root']]);
    expect(r.names).toEqual({ 'user:root': 'known', 'group:root': 'known' });
    expect(r.asked).toEqual(['passwd root', 'group root']);
  });

  it('a host without getent: untold (the diff shows the change as before; chown decides)', () => {
    writeFileSync(join(bin, 'getent'), '#!/bin/sh\nexit 127\n');
    const r = lookups([at('absent')], [['rs-no-such-user', undefined]]);
    expect(r.names).toEqual({ 'user:rs-no-such-user': 'untold' });
  });
});
