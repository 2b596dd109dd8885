import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command, directory, file, ioUdevRules, mount } from '../../src/index.ts';
import { InputError } from '../../src/util/errors.ts';
import { checkShellText, checkToken, shown } from '../../src/util/input-value.ts';
import { validText } from '../../src/util/validate.ts';
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
      /inv-\w+\.yml:7:\d+: host h1, play 'foundation fixture', command\(\) at test\/fixtures\/playbooks\/foundation\.ts:\d+:\d+: .*must not contain NUL/,
    ],
    ['ESC in a path (fx_dir)', '    fx_dir: "/srv/a\\eb"\n', /inv-\w+\.yml:7:\d+: .*control characters \('\\x1b'\)/],
    [
      'a relative path (fx_dir): the variable, and the call that refused it',
      '    fx_dir: srv/rel\n',
      /inv-\w+\.yml:7:\d+: host h1, play 'foundation fixture', \w+\(\) at test\/fixtures\/playbooks\/foundation\.ts:\d+:\d+: .*must be an absolute path, got 'srv\/rel' \(from variable fx_dir\)/,
    ],
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

  it.each<[string, string, string[], string]>([
    [
      'nofile too low says the valid range and forms',
      '    nofile: 5\n',
      [],
      'nofile must be a whole number from 1024 to 1073741816 (soft and hard) or a mapping { soft: N, hard: N } of such numbers, got 5',
    ],
    ['nofile quoted in YAML', '    nofile: "65536"\n', [], "got the string '65536' (a number is written unquoted)"],
    [
      '-e nofile=65536 (key=value gives a string)',
      '',
      ['-e', 'nofile=65536'],
      `got the string '65536' (-e key=value gives strings: give a number as -e '{"nofile": 65536}')`,
    ],
    ['ansible_port out of range', '    ansible_port: 70000\n', [], 'ansible_port must be a port number from 1 to 65535, got 70000'],
    ['-e ansible_port=0', '', ['-e', 'ansible_port=0'], "-e #1: ansible_port must be a port number from 1 to 65535, got '0'"],
  ])('a bad value says what is valid: %s', async (_, vars, args, message) => {
    const r = await cli(['playbooks/network.ts', '-i', inventory(vars), ...args, '--syntax-check']);
    expect(r.stderr).toContain(message);
    expect(r.code).toBe(3);
    expect(connections).toBe(0);
  });

  it('-e with a JSON number is taken (the form the key=value error points to)', async () => {
    const r = await cli(['playbooks/network.ts', '-i', inventory(''), '-e', '{"nofile": 65536}', '--syntax-check']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it.each<[string, string, string]>([
    [
      'an unquoted 0750 (YAML 1.1: the octal number 488)',
      '0750',
      "storage_mount_mode must be string: YAML 1.1 read 0750 as 488: quote it ('0750')",
    ],
    ['an unquoted 750 (the number 750)', '750', "storage_mount_mode must be string: quote it ('750')"],
    // 42 is 052 in octal, which the pattern takes: the file says 42 was written, not 052
    ['an unquoted 42: no octal reading the file does not show', '42', "storage_mount_mode must be string: quote it ('42')"],
    [
      'an unquoted 052 (YAML 1.1: the octal number 42)',
      '052',
      "storage_mount_mode must be string: YAML 1.1 read 052 as 42: quote it ('052')",
    ],
    ['a comment after it', '0644 # the mode', "storage_mount_mode must be string: YAML 1.1 read 0644 as 420: quote it ('0644')"],
  ])('a mode given as a number says how to write it: %s', async (_, mode, message) => {
    const vars = `    storage_disks: [{ device: /dev/loop0 }]\n    storage_mount_mode: ${mode}\n`;
    const r = await cli(['playbooks/storage.ts', '-i', inventory(vars), '-e', '{"racksmith_play_hosts": {"storage": "all"}}']);
    expect(r.stderr).toMatch(/inv-\w+\.yml:8:25: /);
    expect(r.stderr).toContain(message);
    expect(r.code).toBe(3);
    expect(connections).toBe(0);
  });
});

describe('validText: what a schema accepts, in words, for the errors of its alternatives', () => {
  it.each<[string, object, string | undefined]>([
    ['its description first', { description: 'a port', anyOf: [{ type: 'integer' }] }, 'a port'],
    ['a range', { type: 'integer', minimum: 1, maximum: 9 }, 'a whole number from 1 to 9'],
    ['a lower bound', { type: 'number', minimum: 0.5 }, 'a number >= 0.5'],
    [
      'alternatives, a constant, a mapping with optional keys',
      { anyOf: [{ type: 'boolean' }, { type: 'object', properties: { n: { anyOf: [{ const: 'unlimited' }, { type: 'integer' }] } } }] },
      'true or false or a mapping { n: "unlimited" or a whole number (optional) }',
    ],
    ['an enum', { enum: ['a', 'b'] }, 'one of "a", "b"'],
    ['a pattern cannot be said shortly', { anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^x$' }] }, undefined],
  ])('%s', (_, schema, want) => expect(validText(schema)).toBe(want));
});
