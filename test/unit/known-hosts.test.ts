// known_hosts matching against OpenSSH itself: for every name, the lines racksmith finds are the
// lines `ssh-keygen -F NAME -f FILE` finds (patterns, `!` negation, hashed names, [host]:port,
// markers); then the verdicts and the host key algorithm order decided from those lines.
import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostMatches, KnownHosts, parseKnownHosts } from '../../src/connection/known-hosts.ts';
import { parseHostCertificate } from '../../src/connection/host-certificate.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-kh-'));
function newKey(type: 'ed25519' | 'ecdsa' | 'rsa', bits?: number): { line: string; blob: Buffer; file: string } {
  const f = join(dir, `k-${Math.random().toString(36).slice(2)}`);
  const size = bits ?? (type === 'rsa' ? 2048 : undefined);
  execFileSync('ssh-keygen', ['-q', '-t', type, ...(size ? ['-b', String(size)] : []), '-N', '', '-f', f]);
  const [t, b64] = readFileSync(`${f}.pub`, 'utf8').split(' ');
  return { line: `${t} ${b64}`, blob: Buffer.from(b64, 'base64'), file: f };
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
    ['only a CA line, no certificate shown', [`@cert-authority * ${A.line}`], A, 'unknown'],
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

// Host certificates made by ssh-keygen itself; the verdicts are those of ssh(1)'s check_host_key
// (certificate first, then the plain key), which test/e2e/known-hosts.test.ts checks against the
// real client on a bed host.
describe('a known_hosts file read by many connections', () => {
  it('is read again once it changed: a key replaced in place (same size) or a line appended', () => {
    const f = join(dir, 'kh-changing');
    const H = '10.82.0.21';
    writeFileSync(f, `${H} ${A.line}\n`);
    const kh = new KnownHosts(f);
    expect(kh.verify(H, 22, A.blob).status).toBe('match');
    // the same length, another key: only the mtime tells (set apart, as a second edit would be)
    writeFileSync(f, `${H} ${B.line}\n`);
    utimesSync(f, new Date(), new Date(Date.now() + 5000));
    expect(new KnownHosts(f).verify(H, 22, A.blob).status).toBe('changed');
    expect(new KnownHosts(f).verify(H, 22, B.blob).status).toBe('match');
    appendFileSync(f, `@revoked * ${B.line}\n`);
    expect(kh.verify(H, 22, B.blob).status).toBe('revoked');
  });

  it('a file that went away names no host', () => {
    const f = join(dir, 'kh-going');
    writeFileSync(f, `10.82.0.22 ${A.line}\n`);
    expect(new KnownHosts(f).verify('10.82.0.22', 22, A.blob).status).toBe('match');
    rmSync(f);
    expect(new KnownHosts(f).verify('10.82.0.22', 22, A.blob).status).toBe('unknown');
  });
});

describe('verdicts with a host certificate', () => {
  const H = '10.82.0.30';
  const kh = (lines: string[]) => {
    const f = join(dir, `kh-${Math.random().toString(36).slice(2)}`);
    writeFileSync(f, lines.join('\n') + '\n');
    return new KnownHosts(f);
  };
  /** ssh-keygen -s CA -h (unless user) ... over the host key's .pub: the certificate blob. */
  function sign(ca: { file: string }, key: { file: string }, args: string[], host = true): Buffer {
    execFileSync('ssh-keygen', ['-q', '-s', ca.file, '-I', 'rack12-node', ...(host ? ['-h'] : []), ...args, `${key.file}.pub`]);
    return Buffer.from(readFileSync(`${key.file}-cert.pub`, 'utf8').split(' ')[1], 'base64');
  }
  const CA = newKey('ed25519');
  const CA2 = newKey('ecdsa');
  const CA_RSA = newKey('rsa');
  const CA_P384 = newKey('ecdsa', 384);
  const HOSTKEY = newKey('ed25519');
  const now = BigInt(Math.floor(Date.now() / 1000));
  const trust = [
    `@cert-authority 10.82.0.* ${CA.line}`,
    `@cert-authority 10.82.0.* ${CA2.line}`,
    `@cert-authority * ${CA_RSA.line}`,
    `@cert-authority * ${CA_P384.line}`,
  ];

  const cases: Array<[string, () => Buffer, string[], string, RegExp?]> = [
    ['valid, naming the host', () => sign(CA, HOSTKEY, ['-n', H]), trust, 'match'],
    ['valid, ECDSA CA', () => sign(CA2, HOSTKEY, ['-n', `other,${H}`]), trust, 'match'],
    ['valid, RSA CA (rsa-sha2-512)', () => sign(CA_RSA, HOSTKEY, ['-n', H]), trust, 'match'],
    ['valid, ECDSA P-384 CA', () => sign(CA_P384, HOSTKEY, ['-n', H]), trust, 'match'],
    ['no principals (any host)', () => sign(CA, HOSTKEY, []), trust, 'match'],
    ['valid for a while yet', () => sign(CA, HOSTKEY, ['-n', H, '-V', '-1h:+1h']), trust, 'match'],
    ['expired', () => sign(CA, HOSTKEY, ['-n', H, '-V', '-2h:-1h']), trust, 'unknown', /has expired/],
    ['not yet valid', () => sign(CA, HOSTKEY, ['-n', H, '-V', '+1h:+2h']), trust, 'unknown', /not yet valid/],
    ['another principal', () => sign(CA, HOSTKEY, ['-n', '10.82.0.31']), trust, 'unknown', /not one of its principals/],
    [
      'a wildcard principal (ssh matches exactly)',
      () => sign(CA, HOSTKEY, ['-n', '10.82.0.*']),
      trust,
      'unknown',
      /not one of its principals/,
    ],
    ['a user certificate', () => sign(CA, HOSTKEY, ['-n', H], false), trust, 'unknown', /not a host certificate/],
    ['an untrusted CA', () => sign(newKey('ed25519'), HOSTKEY, ['-n', H]), trust, 'unknown', /names the CA/],
    [
      'a CA trusted for other hosts only',
      () => sign(CA, HOSTKEY, ['-n', H]),
      [`@cert-authority 10.9.0.* ${CA.line}`],
      'unknown',
      /names the CA/,
    ],
    ['a CA line negating the host', () => sign(CA, HOSTKEY, ['-n', H]), [`@cert-authority 10.82.0.*,!${H} ${CA.line}`], 'unknown'],
    ['a revoked CA', () => sign(CA, HOSTKEY, ['-n', H]), [...trust, `@revoked * ${CA.line}`], 'revoked'],
    [
      'a revoked CA, the plain key recorded too',
      () => sign(CA, HOSTKEY, ['-n', H]),
      [`${H} ${HOSTKEY.line}`, `@revoked * ${CA.line}`],
      'revoked',
    ],
    ['a revoked host key', () => sign(CA, HOSTKEY, ['-n', H]), [...trust, `@revoked * ${HOSTKEY.line}`], 'revoked'],
    [
      'an expired one, the plain key recorded',
      () => sign(CA, HOSTKEY, ['-n', H, '-V', '-2h:-1h']),
      [...trust, `${H} ${HOSTKEY.line}`],
      'match',
    ],
    [
      'an expired one, another key recorded',
      () => sign(CA, HOSTKEY, ['-n', H, '-V', '-2h:-1h']),
      [...trust, `${H} ${A.line}`],
      'changed',
      /has expired/,
    ],
    ['one for another key of the host', () => sign(CA, newKey('ed25519'), ['-n', H]), trust, 'unknown', /for another of its keys/],
    ['signed with ssh-rsa (SHA-1)', () => sign(CA_RSA, HOSTKEY, ['-n', H, '-t', 'ssh-rsa']), trust, 'unknown', /CASignatureAlgorithms/],
    [
      'a forged one (principals edited after signing)',
      () => {
        const good = sign(CA, HOSTKEY, ['-n', '10.82.0.39']);
        const i = good.indexOf(Buffer.from('10.82.0.39'));
        return Buffer.concat([good.subarray(0, i), Buffer.from(H), good.subarray(i + H.length)]);
      },
      trust,
      'bad-certificate',
    ],
  ];
  it.each(cases)('%s', (_, cert, lines, status, why) => {
    const v = kh(lines).verify(H, 22, HOSTKEY.blob, parseHostCertificate(cert()), now);
    expect(v.status).toBe(status);
    if (why) expect((v as { certificate?: string }).certificate).toMatch(why);
  });

  it('a certificate that is not shown or cannot be read: the plain key decides, with the reason kept', () => {
    const v = kh(trust).verify(H, 22, HOSTKEY.blob, 'it shows no host certificate (the host offers no certificate)');
    expect(v).toMatchObject({ status: 'unknown', certificate: /offers no certificate/ });
    expect(kh([...trust, `${H} ${HOSTKEY.line}`]).verify(H, 22, HOSTKEY.blob, 'none').status).toBe('match');
  });

  it('reads what ssh-keygen -L shows', () => {
    const c = parseHostCertificate(sign(CA2, HOSTKEY, ['-n', `a,${H}`, '-z', '42', '-V', '20300101:20310101']));
    expect(c).toMatchObject({
      certType: 'ssh-ed25519-cert-v01@openssh.com',
      kind: 2,
      keyId: 'rack12-node',
      serial: 42n,
      principals: ['a', H],
    });
    expect(c.subjectKey.equals(HOSTKEY.blob)).toBe(true);
    expect(c.signatureKey.equals(CA2.blob)).toBe(true);
    expect(c.signatureAlgorithm).toBe('ecdsa-sha2-nistp256');
    expect(new Date(Number(c.validAfter) * 1000).getUTCFullYear()).toBe(2030);
    expect(() => parseHostCertificate(HOSTKEY.blob)).toThrow(/not a certificate/);
    expect(() => parseHostCertificate(sign(CA, HOSTKEY, []).subarray(0, 100))).toThrow(/truncated/);
  });

  it('certifies ECDSA and RSA host keys too', () => {
    for (const key of [newKey('ecdsa'), newKey('rsa')]) {
      const c = parseHostCertificate(sign(CA, key, ['-n', H]));
      expect(c.subjectKey.equals(key.blob)).toBe(true);
      expect(kh(trust).verify(H, 22, key.blob, c, now).status).toBe('match');
    }
  });
});

describe('known_hosts of a fleet', () => {
  it('1,000 hosts with a line per IP and per name: each host finds its own two lines, and the wildcard line after them', () => {
    const file = join(dir, 'known_hosts.fleet');
    const lines: string[] = [];
    for (let i = 0; i < 1000; i++) lines.push(`10.9.${i >> 8}.${i & 255} ${A.line}`, `Node${i} ${B.line}`);
    lines.push(`10.9.* ${B.line}`);
    writeFileSync(file, lines.join('\n') + '\n');
    const kh = new KnownHosts(file);
    for (const i of [0, 1, 517, 999]) {
      expect(kh.linesFor(`10.9.${i >> 8}.${i & 255}`, 22).map((l) => l.line)).toEqual([2 * i + 1, 2001]);
      expect(kh.linesFor(`node${i}`, 22).map((l) => l.line)).toEqual([2 * i + 2]);
    }
    expect(kh.linesFor('node1000', 22)).toEqual([]);
  });
});
