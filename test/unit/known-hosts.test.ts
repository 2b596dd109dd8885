// known_hosts matching against OpenSSH itself: for every name, the lines racksmith finds are the
// lines `ssh-keygen -F NAME -f FILE` finds (patterns, `!` negation, hashed names, [host]:port,
// markers); then the verdicts and the host key algorithm order decided from those lines.
import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostMatches, KnownHosts, parseKnownHosts } from '../../src/connection/known-hosts.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-kh-'));
function newKey(type: 'ed25519' | 'ecdsa' | 'rsa'): { line: string; blob: Buffer } {
  const f = join(dir, `k-${Math.random().toString(36).slice(2)}`);
  execFileSync('ssh-keygen', ['-q', '-t', type, ...(type === 'rsa' ? ['-b', '2048'] : []), '-N', '', '-f', f]);
  const [t, b64] = readFileSync(`${f}.pub`, 'utf8').split(' ');
  return { line: `${t} ${b64}`, blob: Buffer.from(b64, 'base64') };
}
const A = newKey('ed25519');
const B = newKey('ed25519');
const E = newKey('ecdsa');
const hashed = (name: string) => {
  const salt = randomBytes(20);
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
};

const LINES = [
  `10.82.0.1*,!10.82.0.12 ${A.line}`,
  `10.82.0.?? ${B.line}`,
  `!10.82.0.13,10.82.0.13 ${A.line}`,
  `[10.82.0.14]:2222 ${A.line}`,
  `[10.82.0.1?]:22* ${B.line}`,
  `Host.Example.COM,other ${A.line}`,
  `*.example.com,!bad.example.com ${E.line}`,
  `@revoked * ${B.line}`,
  `@cert-authority *.ca.example ${A.line}`,
  `@cert-authority !x.ca.example,*.ca.example ${B.line}`,
  `${hashed('10.82.0.15')} ${A.line}`,
  `${hashed('[10.82.0.15]:2200')} ${B.line}`,
  `# a comment 10.82.0.11 ${A.line}`,
  ``,
  `@unknown-marker 10.82.0.11 ${A.line}`,
  `short-line-10.82.0.11`,
  `  10.82.0.16   ${E.line} a comment`,
  `a*b*c ${A.line}`,
  `*,!*.internal ${E.line}`,
];
const NAMES = [
  '10.82.0.11',
  '10.82.0.12',
  '10.82.0.13',
  '10.82.0.14',
  '[10.82.0.14]:2222',
  '[10.82.0.15]:2200',
  '[10.82.0.17]:2222',
  '10.82.0.15',
  '10.82.0.16',
  '10.82.0.100',
  '10.82.0.1',
  'host.example.com',
  'HOST.EXAMPLE.COM',
  'other',
  'a.example.com',
  'bad.example.com',
  'y.ca.example',
  'x.ca.example',
  'aXbYc',
  'db.internal',
  'ac',
];

/** Line numbers (with markers) `ssh-keygen -F` finds for a name. */
function opensshLines(file: string, name: string): string[] {
  let out = '';
  try {
    out = execFileSync('ssh-keygen', ['-F', name, '-f', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if ((e as { status?: number }).status !== 1) throw e; // 1: not found
  }
  return [...out.matchAll(/^# Host .* found: line (\d+) ?(\S*)$/gm)].map((m) => `${m[1]}${m[2] ? ' ' + m[2] : ''}`);
}

function ourLines(file: string, name: string): string[] {
  return parseKnownHosts(readFileSync(file, 'utf8'))
    .filter((l) => hostMatches(l.patterns, name))
    .map((l) => `${l.line}${l.marker === 'revoked' ? ' REVOKED' : l.marker === 'cert-authority' ? ' CA' : ''}`);
}

describe('known_hosts lines for a name: the same as ssh-keygen -F', () => {
  const file = join(dir, 'known_hosts');
  writeFileSync(file, LINES.join('\n') + '\n');
  // the same file with its plain names hashed by OpenSSH itself (ssh-keygen -H)
  const hashedFile = join(dir, 'known_hosts.hashed');
  // (ssh-keygen -H refuses a file with lines it cannot read: only the valid ones)
  writeFileSync(hashedFile, LINES.filter((l) => !/^(@unknown|short)/.test(l)).join('\n') + '\n');
  execFileSync('ssh-keygen', ['-H', '-f', hashedFile], { stdio: 'ignore' });

  it.each(NAMES)('%s', (name) => {
    const want = opensshLines(file, name);
    expect(ourLines(file, name)).toEqual(want);
    expect(ourLines(hashedFile, name)).toEqual(opensshLines(hashedFile, name));
  });

  it('the table covers matches, negations, hashed names and markers', () => {
    const all = NAMES.flatMap((n) => opensshLines(file, n));
    expect(all).toContain('8 REVOKED');
    expect(all).toContain('9 CA');
    expect(all).toContain('11'); // a hashed line
    expect(opensshLines(file, '10.82.0.12')).not.toContain('1'); // excluded by !10.82.0.12
    expect(readFileSync(hashedFile, 'utf8')).toMatch(/^\|1\|/m);
  });
});

describe('verdicts', () => {
  const kh = (lines: string[]) => {
    const f = join(dir, `kh-${Math.random().toString(36).slice(2)}`);
    writeFileSync(f, lines.join('\n') + '\n');
    return new KnownHosts(f);
  };
  const H = '10.82.0.20';
  it.each([
    ['the recorded key', [`${H} ${A.line}`], A, 'match'],
    ['a hashed name', [`${hashed(H)} ${A.line}`], A, 'match'],
    ['another key of the recorded type', [`${H} ${B.line}`], A, 'changed'],
    ['a host a negation excludes', [`10.82.0.*,!${H} ${A.line}`], A, 'unknown'],
    ['a revoked key, also recorded plainly', [`${H} ${A.line}`, `@revoked * ${A.line}`], A, 'revoked'],
    ['only a CA line', [`@cert-authority * ${A.line}`], A, 'certificate-only'],
    ['a CA line and the plain key', [`@cert-authority * ${B.line}`, `${H} ${A.line}`], A, 'match'],
    ['a type not recorded', [`${H} ${E.line}`], A, 'other-type'],
    ['on another port only', [`[${H}]:2222 ${A.line}`], A, 'unknown'],
    ['nothing', [], A, 'unknown'],
  ])('%s: %s', (_, lines, key, status) => {
    expect(kh(lines).verify(H, 22, key.blob).status).toBe(status);
  });

  it('offers the recorded key types first (an ECDSA key alone recorded: ECDSA first), else ssh2’s order', () => {
    expect(kh([`${H} ${E.line}`]).algorithmsFor(H, 22)[0]).toBe('ecdsa-sha2-nistp256');
    expect(
      kh([`${H} ${newKey('rsa').line}`])
        .algorithmsFor(H, 22)
        .slice(0, 3),
    ).toEqual(['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa']);
    expect(kh([]).algorithmsFor(H, 22)[0]).toBe('ssh-ed25519');
    // a negated line records nothing for the host
    expect(kh([`*,!${H} ${E.line}`]).algorithmsFor(H, 22)[0]).toBe('ssh-ed25519');
  });
});
