import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command, directory, file, ioUdevRules, mount } from '../../src/index.ts';
import { InputError } from '../../src/util/errors.ts';
import { checkShellText, checkToken, shown } from '../../src/util/input-value.ts';
import { printable, printableLines } from '../../src/util/printable.ts';
import { cli } from './run-cli.ts';

const MB_PATH = '/' + 'a/'.repeat(512 * 1024) + 'x';

describe('values refused when a resource is built (exit 3 before any host)', () => {
  it.each<[string, () => unknown, RegExp]>([
    ['NUL in a command argv word', () => command({ name: 'c', run: ['echo', 'a\0b'], unguarded: true }), /run\[1\] must not contain NUL/],
    ['NUL in a command script', () => command({ name: 'c', run: 'echo a\0b', unguarded: true }), /run must not contain NUL/],
    ['NUL in unless', () => command({ name: 'c', run: 'true', unless: ['test', '-e', '/x\0'] }), /unless\[2\] must not contain NUL/],
    ['ESC in unless (a script)', () => command({ name: 'c', run: 'true', unless: 'test \x1b' }), /unless must not contain NUL or control/],
    [
      'a control character in a command name',
      () => command({ name: 'c\x07', run: 'true', unguarded: true }),
      /command name must not contain control/,
    ],
    ['a newline in a command name', () => command({ name: 'a\nb', run: 'true', unguarded: true }), /control characters/],
    [
      'an argv word over 128 KiB',
      () => command({ name: 'c', run: ['echo', 'x'.repeat(200_000)], unguarded: true }),
      /over the limit of 131072/,
    ],
    [
      'a control character in a mount path',
      () => mount({ path: '/mnt/a\x01b', source: 'tmpfs', fstype: 'tmpfs' }),
      /mount path must not contain control/,
    ],
    ['C1 control (U+0085) in a mount path', () => mount({ path: '/mnt/a\u0085b', source: 'tmpfs', fstype: 'tmpfs' }), /control/],
    [
      'NUL in a mount source',
      () => mount({ path: '/mnt/a', source: '/srv/x\0', fstype: 'none', options: ['bind'] }),
      /source must not contain/,
    ],
    ['a control character in an fstype', () => mount({ path: '/mnt/a', source: 'x', fstype: 'nf\ts' }), /fstype/],
    ['a 1 MB path', () => directory({ path: MB_PATH }), /over the limit of 4096/],
    ['a path component over NAME_MAX', () => file({ path: `/tmp/${'n'.repeat(256)}`, content: '' }), /component of 256 bytes/],
    ['DEL in a file path', () => file({ path: '/tmp/a\x7f', content: '' }), /control/],
    [
      'a udev match with a quote',
      () => ioUdevRules({ disks: [{ name: 'd1', spec: { device: '/dev/loop0' }, match: { KERNEL: 'loop"0' } }] }),
      /not a udev glob: a quote/,
    ],
    [
      'a udev match glob that does not compile',
      () => ioUdevRules({ disks: [{ name: 'd1', spec: { device: '/dev/loop0' }, match: { KERNEL: 'loop[0' } }] }),
      /without a closing \]/,
    ],
    [
      'an unknown udev match key',
      () => ioUdevRules({ disks: [{ name: 'd1', spec: { device: '/dev/loop0' }, match: { 'RUN{x}': 'a' } }] }),
      /match key/,
    ],
  ])('%s', (_, build, message) => {
    expect(build).toThrow(InputError);
    expect(build).toThrow(message);
  });

  it.each([
    ['a non-breaking space in a path', () => mount({ path: '/mnt/a\u00a0b', source: 'tmpfs', fstype: 'tmpfs' })],
    ['a multi-line script with tabs', () => command({ name: 'c', run: 'if true; then\n\techo x\nfi', unguarded: true })],
    ['UTF-8 in an argv word', () => command({ name: 'c', run: ['echo', 'héllo €'], unguarded: true })],
  ])('accepted: %s', (_, build) => expect(build).not.toThrow());

  it('messages show bad values escaped and cut short', () => {
    expect(shown('a\x1b[31mb')).toBe("'a\\x1b[31mb'");
    expect(shown('x'.repeat(1000))).toMatch(/^'x{60}… \(1000 characters\)'$/);
    expect(() => checkToken('a\u202eb', 'v')).not.toThrow(); // bidi overrides are escaped when shown, not refused
    expect(printable('a\u202eb')).toBe('a\\u202eb');
    expect(printableLines('one\x1b\ntwo\r')).toBe('one\\x1b\ntwo\\r');
    expect(() => checkShellText(42, 'w')).toThrow(/must be a string/);
  });
});

describe('through the CLI: exit 3 at the variable that set the value, no host contacted', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-values-'));
  let port = 0;
  let connections = 0;
  const srv = createServer((s) => {
    connections++;
    s.destroy();
  });
  beforeAll(async () => {
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    port = (srv.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((r) => srv.close(r));
    rmSync(dir, { recursive: true, force: true });
  });
  const inventory = (vars: string) => {
    const f = join(dir, `inv-${Math.random().toString(36).slice(2)}.yml`);
    writeFileSync(f, `all:\n  hosts:\n    h1:\n      ansible_host: 127.0.0.1\n      ansible_port: ${port}\n  vars:\n${vars}`);
    return f;
  };
  it.each<[string, string, RegExp]>([
    [
      'NUL in a command argv word (fx_text)',
      '    fx_text: "a\\0b"\n',
      /inv-\w+\.yml:7:\d+: host h1, play 'foundation fixture': .*must not contain NUL/,
    ],
    ['ESC in a path (fx_dir)', '    fx_dir: "/srv/a\\eb"\n', /inv-\w+\.yml:7:\d+: .*control characters \('\\x1b'\)/],
    ['a 1 MB path (fx_dir)', `    fx_dir: ${MB_PATH}\n`, /inv-\w+\.yml:7:\d+: .*over the limit of 4096/],
    [
      'a missing private key file',
      '    ansible_ssh_private_key_file: /nonexistent/key\n',
      /inv-\w+\.yml:7:\d+: h1: private key file \/nonexistent\/key: not found/,
    ],
    [
      'a key file that is a FIFO-like device',
      '    ansible_ssh_private_key_file: /dev/zero\n',
      /private key file \/dev\/zero is a character device/,
    ],
    [
      'a control character in a key file path',
      '    ansible_ssh_private_key_file: "/k\\x01"\n',
      /inv-\w+\.yml:7:\d+: .*ansible_ssh_private_key_file/,
    ],
    ['a bad jump host', '    racksmith_ssh_jump: "a b"\n', /racksmith_ssh_jump.*must be \[user@\]host\[:port\]/],
    [
      'a known_hosts file that never ends',
      '    racksmith_known_hosts: /dev/zero\n',
      /inv-\w+\.yml:7:\d+: h1: known_hosts file \/dev\/zero is a character device, not a regular file/,
    ],
    [
      'a known_hosts file that is a directory',
      '    racksmith_known_hosts: /\n',
      /h1: known_hosts file \/ is a directory, not a regular file/,
    ],
  ])('%s', async (_, vars, message) => {
    const r = await cli(['test/fixtures/playbooks/foundation.ts', '-i', inventory(vars)]);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(3);
    expect(connections).toBe(0);
  });
});
