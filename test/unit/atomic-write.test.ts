// Files racksmith writes whole (a plan, a report page, a run record): atomically, and only over a
// regular file or a new name; anything else at the path is exit 3 and stays as it was.
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkOutputFile, writeFileAtomic } from '../../src/util/atomic-write.ts';
import { InputError } from '../../src/util/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-atomic-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomic', () => {
  it('a new file, then a regular file replaced: mode 0600, no temp file left', () => {
    const f = join(dir, 'page.html');
    writeFileAtomic(f, 'one', 0o600, '--html');
    writeFileAtomic(f, 'two', 0o600, '--html');
    expect(readFileSync(f, 'utf8')).toBe('two');
    expect(lstatSync(f).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).filter((n) => n.startsWith('page.html.tmp'))).toEqual([]);
  });

  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const link = join(dir, 'link');
  writeFileSync(join(dir, 'target'), 'kept');
  symlinkSync(join(dir, 'target'), link);
  mkdirSync(join(dir, 'adir'));
  // (a socket, not a device: a device node of this machine is never a test's target)
  const sock = join(dir, 'sock');
  const server = createServer().listen(sock);
  afterAll(() => server.close());
  it.each([
    ['a FIFO', fifo, /--html .*fifo is a FIFO, not a regular file/],
    ['a symbolic link', link, /--html .*link is a symbolic link, not a regular file/],
    ['a directory', join(dir, 'adir'), /--html .*adir is a directory, not a regular file/],
    ['a socket', sock, /--html .*sock is a socket, not a regular file/],
    ['a missing directory', join(dir, 'nosuch', 'x.html'), /--html .*x\.html: its directory does not exist/],
    ['an empty path', '', /--html: an empty path/],
  ])('refuses %s (exit 3), leaving it as it was', async (_, path, err) => {
    if (path === sock && !server.listening) await new Promise((r) => server.once('listening', r));
    const before = path && path !== join(dir, 'nosuch', 'x.html') ? lstatSync(path) : undefined;
    expect(() => writeFileAtomic(path, 'x', 0o600, '--html')).toThrow(err);
    expect(() => checkOutputFile(path, '--html')).toThrow(InputError);
    if (before) {
      const after = lstatSync(path);
      expect([after.ino, after.mode]).toEqual([before.ino, before.mode]);
    }
    expect(readFileSync(join(dir, 'target'), 'utf8')).toBe('kept');
  });
});
