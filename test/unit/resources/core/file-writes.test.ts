// atomicWriteScript (resources/core/file-common.ts), the one way racksmith replaces a file, run by the
// real /bin/sh and coreutils in a temp directory; and two snippets of the mount family: the fstab
// syntax check its writes run, and its probe's physical path of a target.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { atomicWriteScript, type WriteSpec } from '../../../../src/resources/core/file-common.ts';
import { FSTAB_SYNTAX_CHECK, PHYSICAL_PATH } from '../../../../src/resources/core/mount.ts';
import { shq } from '../../../../src/shell/quote.ts';

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'rs-write-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const run = (script: string) => spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
const write = (w: WriteSpec) => run(`set -e\n${atomicWriteScript(w)}`);
const leftovers = (d: string) => readdirSync(d).filter((n) => n.includes('racksmith-tmp'));
const root = process.getuid?.() === 0;

describe('atomicWriteScript', () => {
  it.each<[string, string | Buffer]>([
    ['text', 'a = 1\n'],
    ['text with quotes and $(commands)', "x='$(touch PWNED)' `y`\n"],
    ['bytes with NUL', Buffer.from([0, 1, 2, 0, 255])],
  ])('a new file (%s): exactly these bytes, mode 644, no temp file left', (_, content) => {
    const path = join(dir, 'sub', 'f.conf');
    const r = write({ path, content: Buffer.from(content) });
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(path).equals(Buffer.from(content))).toBe(true);
    expect((statSync(path).mode & 0o7777).toString(8)).toBe('644');
    expect(leftovers(join(dir, 'sub'))).toEqual([]);
    expect(existsSync(join(process.cwd(), 'PWNED'))).toBe(false);
  });

  it('a given mode is the file’s, new or replaced', () => {
    const path = join(dir, 'f');
    expect(write({ path, content: Buffer.from('1'), mode: '600' }).status).toBe(0);
    expect((statSync(path).mode & 0o7777).toString(8)).toBe('600');
    chmodSync(path, 0o644);
    expect(write({ path, content: Buffer.from('2'), mode: '640' }).status).toBe(0);
    expect((statSync(path).mode & 0o7777).toString(8)).toBe('640');
  });

  it.runIf(root)('a replaced file keeps its owner, group and mode, setuid included (the mode is set after the chown)', () => {
    const path = join(dir, 'tool');
    writeFileSync(path, 'old');
    chownSync(path, 1234, 2345);
    chmodSync(path, 0o4755);
    const r = write({ path, content: Buffer.from('new') });
    expect(r.status, r.stderr).toBe(0);
    const st = statSync(path);
    expect([st.uid, st.gid, (st.mode & 0o7777).toString(8)]).toEqual([1234, 2345, '4755']);
    expect(readFileSync(path, 'utf8')).toBe('new');
  });

  it.runIf(root)('a given owner: set, and the old mode with its setuid bit kept', () => {
    const path = join(dir, 'tool');
    writeFileSync(path, 'old');
    chmodSync(path, 0o4750);
    const r = write({ path, content: Buffer.from('new'), owner: 1234, group: 2345 });
    expect(r.status, r.stderr).toBe(0);
    const st = statSync(path);
    expect([st.uid, st.gid, (st.mode & 0o7777).toString(8)]).toEqual([1234, 2345, '4750']);
  });

  it('backups: every write keeps its own copy, even two in the same second; the first holds the original', () => {
    const path = join(dir, 'fstab');
    writeFileSync(path, 'original\n');
    const twice = `set -e\n${atomicWriteScript({ path, content: Buffer.from('first\n'), backup: true })}\n${atomicWriteScript({ path, content: Buffer.from('second\n'), backup: true })}`;
    const r = run(twice);
    expect(r.status, r.stderr).toBe(0);
    const backups = readdirSync(dir).filter((n) => n.endsWith('.bak'));
    expect(backups).toHaveLength(2);
    for (const b of backups) expect(b).toMatch(/^fstab\.racksmith-\d{8}T\d{6}(\.\d+)?\.bak$/);
    expect(backups.map((b) => readFileSync(join(dir, b), 'utf8')).sort()).toEqual(['first\n', 'original\n']);
    expect(readFileSync(path, 'utf8')).toBe('second\n');
  });

  it('compare-and-swap: a file that changed since it was probed is left alone (exit 3)', () => {
    const path = join(dir, 'f');
    writeFileSync(path, 'probed');
    const expectSha256 = createHash('sha256').update('probed').digest('hex');
    writeFileSync(path, 'someone else');
    const r = write({ path, content: Buffer.from('mine'), expectSha256 });
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/changed since it was probed/);
    expect(readFileSync(path, 'utf8')).toBe('someone else');
    expect(leftovers(dir)).toEqual([]);
  });

  it('a failing check leaves the file as it was', () => {
    const path = join(dir, 'f');
    writeFileSync(path, 'old');
    const r = write({ path, content: Buffer.from('new'), check: 'exit 9' });
    expect(r.status).toBe(9);
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(leftovers(dir)).toEqual([]);
  });
});

describe('the fstab syntax check', () => {
  const check = (content: string) => {
    const t = join(dir, 'fstab.new');
    writeFileSync(t, content);
    return spawnSync('/bin/sh', ['-c', `t=${t}\n${FSTAB_SYNTAX_CHECK}`], { encoding: 'utf8' });
  };
  it.each<[string, string, number]>([
    ['entries whose sources are not there yet', 'UUID=00000000-0000-0000-0000-000000000000 /ais/d1 xfs noatime,nofail 0 0\n', 0],
    ['comments and an empty file', '# nothing\n\n', 0],
    ['a line of one field', '/dev/sdb1\n', 4],
  ])('%s: exit %i', (_, content, code) => {
    const r = check(content);
    expect(r.status).toBe(code);
    if (code) expect(r.stderr).toMatch(/parse error at line 1/);
  });

  it('findmnt is there to check', () => {
    expect(execFileSync('sh', ['-c', 'command -v findmnt'], { encoding: 'utf8' }).trim()).not.toBe('');
  });
});

describe("a mount target's physical path (PHYSICAL_PATH), as realpath -m gives it", () => {
  it.each<[string, string]>([
    ['a directory', 'd'],
    ['a file in a directory', 'd/file'],
    ['missing, its parent there', 'd/new'],
    ['missing, two levels down', 'd/new/deeper'],
    ['through a symlink to a directory', 'dirlink/new/deeper'],
    ['a symlink to a file', 'filelink'],
    ['a dangling symlink', 'dangling/x'],
    ['missing from the top', 'nothere/at/all'],
  ])('%s', (_, rel) => {
    mkdirSync(join(dir, 'd'), { recursive: true });
    writeFileSync(join(dir, 'd', 'file'), '');
    symlinkSync(join(dir, 'd'), join(dir, 'dirlink'));
    symlinkSync(join(dir, 'd', 'file'), join(dir, 'filelink'));
    symlinkSync(join(dir, 'gone'), join(dir, 'dangling'));
    const t = join(realpathSync(dir), rel);
    const got = execFileSync('/bin/sh', ['-c', `t=${shq(t)}\n${PHYSICAL_PATH}`], { encoding: 'utf8' });
    const want = execFileSync('realpath', ['-m', '--', t], { encoding: 'utf8' });
    expect(got).toBe(`real=${want}`);
  });

  it('a path under / that is not there at all', () => {
    const got = execFileSync('/bin/sh', ['-c', `t=/rs-not-there/x\n${PHYSICAL_PATH}`], { encoding: 'utf8' });
    expect(got).toBe('real=/rs-not-there/x\n');
  });
});
