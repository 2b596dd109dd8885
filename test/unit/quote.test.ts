import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { shBytes, shJoin, shq } from '../../src/shell/quote.ts';

// Scripts run in a scratch directory holding files that a glob would match.
const cwd = mkdtempSync(join(tmpdir(), 'rs-quote-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));
// Files a glob could expand to, and a canary for command injection.
for (const f of ['a', 'b', 'star*', '-n']) spawnSync('/bin/sh', ['-c', `: > ./${shq(f)}`], { cwd });
const CANARY = join(cwd, 'PWNED');

/** `sh -c SCRIPT`, or with `viaStdin` `sh -s` reading it (how racksmith sends scripts; no argv size limit). */
function sh(script: string, viaStdin = false): Buffer {
  const env = { PATH: process.env.PATH, HOME: '/home/nobody', X: 'expanded' };
  const r = viaStdin
    ? spawnSync('/bin/sh', ['-s'], { cwd, env, input: script, maxBuffer: 16 * 1024 * 1024 })
    : spawnSync('/bin/sh', ['-c', script], { cwd, env });
  if (r.status !== 0) throw new Error(`sh failed (${r.status ?? r.error?.message}): ${r.stderr}`);
  return r.stdout;
}

const HOSTILE: string[] = [
  '',
  ' ',
  'plain',
  'two words',
  '  leading and trailing  ',
  "it's",
  "''",
  "'",
  "a'b'c",
  '"double"',
  '"',
  '$(touch PWNED)',
  '`touch PWNED`',
  '$X ${X} $HOME',
  '; touch PWNED',
  '&& touch PWNED',
  '| touch PWNED',
  '> PWNED',
  '< /etc/passwd',
  'a\nb',
  '\n',
  'trailing newline\n\n',
  '\t tab',
  '\r\ncrlf',
  '*',
  '?',
  '[ab]',
  'star*',
  '~',
  '~root/x',
  '{a,b}',
  '!',
  '!!',
  '#not a comment',
  'a #b',
  '\\',
  '\\n',
  'back\\slash\\',
  '%s %d %%',
  '-n',
  '-e',
  '--',
  '-rf /',
  '--help',
  'ünïcödé ✓ 日本語 🚀',
  '\u00a0nbsp',
  'x=$(touch PWNED)',
  'a=b',
  "'$(touch PWNED)'",
  "'\"'\"'",
  '\x01\x02\x7f',
  '\u001b[31mred',
  "end with quote'",
];

describe('shq', () => {
  it.each(HOSTILE.map((s) => [s]))('printf %%s %j prints it back exactly', (s) => {
    expect(sh(`printf %s ${shq(s)}`).toString('utf8')).toBe(s);
    expect(existsSync(CANARY)).toBe(false);
  });

  it.each(HOSTILE.map((s) => [s]))('%j is exactly one shell word', (s) => {
    const out = sh(`set -- ${shq(s)}; printf %s "$#"`).toString();
    expect(out).toBe('1');
  });

  it.each<[string | number, string]>([
    ['plain', 'plain'],
    ['/etc/x.conf', '/etc/x.conf'],
    ['a=b,c:d@e%f+g', 'a=b,c:d@e%f+g'],
    [42, '42'],
    ['', "''"],
    ['a b', "'a b'"],
    ["it's", "'it'\\''s'"],
  ])('shq(%j) = %s', (v, want) => {
    expect(shq(v)).toBe(want);
  });

  it('refuses a NUL byte (a shell word cannot hold one)', () => {
    expect(() => shq('a\0b')).toThrow(/NUL/);
  });
});

describe('shJoin', () => {
  it('each word arrives as one argument, unchanged', () => {
    const words = HOSTILE.filter((s) => s !== '');
    const out = sh(`printf '%s\\0' ${shJoin(words)}`).toString('utf8');
    expect(out.split('\0').slice(0, -1)).toEqual(words);
    expect(existsSync(CANARY)).toBe(false);
  });

  it('keeps empty words', () => {
    expect(sh(`set -- ${shJoin(['', 'a', ''])}; printf %s "$#"`).toString()).toBe('3');
  });

  it('a whole command line runs literally', () => {
    expect(sh(shJoin(['printf', '%s|%s', '$(id)', 'a b'])).toString()).toBe('$(id)|a b');
    expect(sh(shJoin(['echo', '-n'])).toString()).toBe('');
  });

  it('numbers are words too', () => {
    expect(shJoin(['chmod', 644, '/x'])).toBe('chmod 644 /x');
  });
});

describe('shBytes', () => {
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  it.each<[string, Buffer | string]>([
    ['empty', ''],
    ['text', 'hello\n'],
    ['no trailing newline', 'x'],
    ['hostile text', '$(touch PWNED) `touch PWNED` \'q\' "d"\n; rm -rf /'],
    ['unicode', 'ünïcödé ✓ 🚀\n'],
    ['every byte value', all],
    ['NUL bytes', Buffer.from([0, 0, 1, 0])],
    ['large', Buffer.alloc(200_000, 'ab\n')],
  ])('%s: the snippet writes exactly these bytes', (_, content) => {
    const snippet = shBytes(content);
    expect(sh(snippet, true).equals(Buffer.from(content))).toBe(true);
    if (snippet.length < 100_000) expect(sh(snippet).equals(Buffer.from(content))).toBe(true);
    expect(existsSync(CANARY)).toBe(false);
  });

  it('text is one quoted printf (no process); anything with a NUL byte holds only base64 characters', () => {
    expect(shBytes("$(x) `y` 'z'\n")).toBe(`printf '%s' '$(x) \`y\` '\\''z'\\''\n'`);
    expect(shBytes("$(x) `y` 'z'\n\0")).toMatch(/^printf '%s' '?[A-Za-z0-9+/=]+'? \| base64 -d$/);
    expect(shBytes(Buffer.from([0xff, 0xfe, 0x41]))).toMatch(/\| base64 -d$/); // not UTF-8
  });

  it('an empty content is a no-op command', () => {
    expect(shBytes('')).toBe(':');
  });
});
