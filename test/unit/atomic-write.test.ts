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
import type { Report } from '../../src/report/model.ts';
import { writeReport } from '../../src/report/write.ts';
import { cli } from './run-cli.ts';

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

describe('only a file of its own kind is replaced', () => {
  const kind = { name: 'a racksmith plan', head: /^\{\s*"format":\s*"racksmith-plan"/ };
  const at = (name: string, text: string) => {
    const f = join(dir, name);
    writeFileSync(f, text);
    return f;
  };
  it.each([
    ['an earlier plan', at('old.plan', '{\n  "format": "racksmith-plan",\n  "version": 1\n}\n'), true],
    ['an empty file (made by mktemp)', at('empty.plan', ''), true],
    ['an inventory', at('hosts.yml', 'all:\n  hosts:\n    h1: {}\n'), false],
    ['JSON that is no plan', at('other.json', '{"format": "something-else"}'), false],
  ])('%s: replaced %s', (_, file, replaced) => {
    const before = readFileSync(file, 'utf8');
    const write = () => writeFileAtomic(file, '{"format": "racksmith-plan"}', 0o600, '--plan-out', kind);
    if (replaced) {
      write();
      expect(readFileSync(file, 'utf8')).toBe('{"format": "racksmith-plan"}');
    } else {
      expect(write).toThrow(new RegExp(`--plan-out .* exists and is not a racksmith plan: not replaced`));
      expect(readFileSync(file, 'utf8')).toBe(before);
    }
  });

  it('--plan-out naming the inventory (a swapped argument): exit 3 before any host, the inventory kept', async () => {
    const inv = at('inventory.yml', 'all:\n  hosts:\n    h1:\n      ansible_connection: local\n');
    const r = await cli(['test/fixtures/playbooks/demo.ts', '-i', inv, '--check', '--plan-out', inv]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain(`--plan-out ${inv} exists and is not a racksmith plan`);
    expect(readFileSync(inv, 'utf8')).toBe('all:\n  hosts:\n    h1:\n      ansible_connection: local\n');
  });

  it('--html over a plan: refused, the plan kept', () => {
    const plan = at('window.plan', '{\n  "format": "racksmith-plan"\n}\n');
    const report: Report = {
      kind: 'plan',
      title: 'Plan p.plan',
      meta: [],
      warnings: [],
      hosts: [{ name: 'h1', groups: [], status: 'ok' }],
      items: [],
    };
    const out = { stdout: { write: () => true }, stderr: { write: () => true } };
    expect(() => writeReport(report, { json: false, html: plan }, out)).toThrow(/--html .*window\.plan exists and is not an HTML page/);
    expect(readFileSync(plan, 'utf8')).toBe('{\n  "format": "racksmith-plan"\n}\n');
  });
});
