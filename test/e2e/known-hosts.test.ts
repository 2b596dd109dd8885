// Issue 19, trust: racksmith accepts or refuses a bed host exactly as the real OpenSSH client
// does with StrictHostKeyChecking=yes on the same known_hosts file: patterns and `!` negation,
// hashed names, [host]:port, @revoked, @cert-authority with and without a host certificate served
// by sshd (HostCertificate), and a host serving ed25519 + ECDSA whose ECDSA key alone is recorded.
import { execFile, execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory } from './helpers.ts';

const HOST = 'tb10';
const OTHER = 'tb8';
const PB = 'test/fixtures/playbooks/secrets.ts'; // only connecting matters here
const tmp = () => mkdtempSync(join(tmpdir(), 'rs-kh-'));

/** The real OpenSSH client's answer for this known_hosts file: does it connect? */
function opensshAccepts(kh: string, ip: string): Promise<boolean> {
  const args = tb.sshArgs().map((a) => (a.startsWith('UserKnownHostsFile=') ? `UserKnownHostsFile=${kh}` : a));
  return new Promise((res) => execFile('ssh', [...args, '-o', 'CheckHostIP=no', `root@${ip}`, 'true'], (err) => res(!err)));
}

async function racksmithAccepts(kh: string): Promise<{ accepted: boolean; error?: string }> {
  const inv = writeInventory({ hosts: [HOST], vars: { racksmith_known_hosts: kh } });
  const r = await provision([PB, '-i', inv, '--check', '--json', '--journal', join(tmp(), 'j')]);
  const recap = recaps(r)[HOST];
  expect(recap, r.stderr).toBeDefined();
  return { accepted: !recap.unreachable, error: recap.error };
}

/** The real ssh client decides first, then racksmith must decide the same on the same file (and say why). */
async function bothDecide(lines: string[], accepted: boolean, why?: RegExp): Promise<void> {
  const kh = join(tmp(), 'known_hosts');
  const text = lines.join('\n') + '\n';
  writeFileSync(kh, text);
  expect(await opensshAccepts(kh, ip)).toBe(accepted);
  const ours = await racksmithAccepts(kh);
  expect(ours.accepted, ours.error).toBe(accepted);
  if (why) expect(ours.error).toMatch(why);
  // neither client wrote to the file (strict checking)
  expect(readFileSync(kh, 'utf8')).toBe(text);
}

const keyLineOf = (file: string, ip: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${ip} `))!
    .split(' ')
    .slice(1)
    .join(' ');
const hashed = (name: string) => {
  const salt = randomBytes(20);
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
};

let ip: string;
let own: string; // HOST's ed25519 key: "ssh-ed25519 AAAA..."
let other: string; // another host's ed25519 key
let ecdsa: string; // HOST's ECDSA key, served beside its ed25519 one

beforeAll(async () => {
  await tb.reset([HOST]);
  ip = tb.host(HOST).ip;
  own = keyLineOf(tb.knownHostsPath, ip);
  other = keyLineOf(tb.knownHostsPath, tb.host(OTHER).ip);
  // the host serves an ECDSA key too (sshd offers both; a reset takes it away again)
  const r = await tb.hostExec(
    HOST,
    "rm -f /etc/ssh/ssh_host_ecdsa_key*; ssh-keygen -q -t ecdsa -N '' -f /etc/ssh/ssh_host_ecdsa_key && " +
      "printf 'HostKey /etc/ssh/ssh_host_ed25519_key\\nHostKey /etc/ssh/ssh_host_ecdsa_key\\n' > /etc/ssh/sshd_config.d/05-hostkeys.conf && " +
      'cut -d" " -f1,2 /etc/ssh/ssh_host_ecdsa_key.pub',
  );
  expect(r.code, r.stderr).toBe(0);
  ecdsa = r.stdout.trim();
  await tb.stopSshd(HOST);
  await tb.startSshd(HOST);
});

describe('known_hosts: racksmith decides as OpenSSH does', () => {
  const cases: Array<[string, () => string[], boolean, RegExp?]> = [
    ['the host’s own key', () => [`${ip} ${own}`], true],
    ['a wildcard that covers it', () => [`10.82.0.*,10.77.0.* ${own}`.replace('10.82.0.*', ip.replace(/\d+$/, '*'))], true],
    ['a negation that excludes it', () => [`${ip.replace(/\d+$/, '*')},!${ip} ${own}`], false, /is unknown/],
    ['a negation of another host', () => [`${ip.replace(/\d+$/, '*')},!${tb.host(OTHER).ip} ${own}`], true],
    ['a hashed name', () => [`${hashed(ip)} ${own}`], true],
    ['a hashed name of another host', () => [`${hashed(tb.host(OTHER).ip)} ${own}`], false, /is unknown/],
    ['[host]:22 (OpenSSH looks up port 22 by the bare name)', () => [`[${ip}]:22 ${own}`], false, /is unknown/],
    ['another host’s key', () => [`${ip} ${other}`], false, /has CHANGED/],
    ['its key @revoked (and recorded)', () => [`${ip} ${own}`, `@revoked * ${own}`], false, /REVOKED/],
    ['only a @cert-authority line (it serves no certificate)', () => [`@cert-authority * ${own}`], false, /shows no host certificate/],
    ['its ECDSA key alone (it serves ed25519 and ECDSA)', () => [`${ip} ${ecdsa}`], true],
    ['its ECDSA key, hashed and with a comment', () => [`${hashed(ip)} ${ecdsa} ecdsa key`], true],
  ];
  it.each(cases)('%s', (_, lines, accepted, why) => bothDecide(lines(), accepted, why));
});

// The host serves a certificate for its ed25519 key, signed here with ssh-keygen by one of two CAs:
// each case signs and installs one (or none), restarts sshd, then asks both clients.
describe('host certificates: racksmith decides as OpenSSH does', () => {
  const dir = tmp();
  const newCa = (name: string) => {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', join(dir, name)]);
    return readFileSync(join(dir, `${name}.pub`), 'utf8')
      .split(' ')
      .slice(0, 2)
      .join(' ');
  };
  let ca: string; // trusted in the cases' known_hosts; other-ca never is
  beforeAll(() => {
    ca = newCa('ca');
    newCa('other-ca');
  });
  afterAll(async () => {
    await tb.hostExec(HOST, 'rm -f /etc/ssh/sshd_config.d/06-cert.conf /etc/ssh/ssh_host_ed25519_key-cert.pub');
    await tb.stopSshd(HOST);
    await tb.startSshd(HOST);
  });

  /** Sign the host's ed25519 key (ssh-keygen -s) and have its sshd serve the certificate; null: serve none. */
  async function serve(cert: { by: 'ca' | 'other-ca'; args: string[]; user?: boolean } | null): Promise<void> {
    let script = 'rm -f /etc/ssh/sshd_config.d/06-cert.conf /etc/ssh/ssh_host_ed25519_key-cert.pub';
    let input: string | undefined;
    if (cert) {
      const pub = join(dir, 'host.pub');
      writeFileSync(pub, own + '\n');
      execFileSync('ssh-keygen', ['-q', '-s', join(dir, cert.by), '-I', `${HOST}-cert`, ...(cert.user ? [] : ['-h']), ...cert.args, pub]);
      input = readFileSync(join(dir, 'host-cert.pub'), 'utf8');
      script =
        'cat > /etc/ssh/ssh_host_ed25519_key-cert.pub && ' +
        "printf 'HostCertificate /etc/ssh/ssh_host_ed25519_key-cert.pub\\n' > /etc/ssh/sshd_config.d/06-cert.conf";
    }
    const r = await tb.hostExec(HOST, script, { input });
    expect(r.code, r.stderr).toBe(0);
    await tb.stopSshd(HOST);
    await tb.startSshd(HOST);
  }

  const cases: Array<[string, { by: 'ca' | 'other-ca'; args: string[]; user?: boolean } | null, () => string[], boolean, RegExp?]> = [
    ['a certificate of the trusted CA naming the host', { by: 'ca', args: ['-n', 'IP'] }, () => [`@cert-authority 10.* ${ca}`], true],
    ['one with no principals', { by: 'ca', args: [] }, () => [`@cert-authority * ${ca}`], true],
    ['one of another CA', { by: 'other-ca', args: ['-n', 'IP'] }, () => [`@cert-authority * ${ca}`], false, /names the CA/],
    ['an expired one', { by: 'ca', args: ['-n', 'IP', '-V', '-2h:-1h'] }, () => [`@cert-authority * ${ca}`], false, /has expired/],
    ['one not yet valid', { by: 'ca', args: ['-n', 'IP', '-V', '+1h:+2h'] }, () => [`@cert-authority * ${ca}`], false, /not yet valid/],
    ['one naming another host', { by: 'ca', args: ['-n', 'tb99,10.77.0.250'] }, () => [`@cert-authority * ${ca}`], false, /principals/],
    ['one with a wildcard principal', { by: 'ca', args: ['-n', '10.*'] }, () => [`@cert-authority * ${ca}`], false, /principals/],
    [
      'a user certificate',
      { by: 'ca', args: ['-n', 'IP'], user: true },
      () => [`@cert-authority * ${ca}`],
      false,
      /not a host certificate/,
    ],
    ['one of a revoked CA', { by: 'ca', args: ['-n', 'IP'] }, () => [`@cert-authority * ${ca}`, `@revoked * ${ca}`], false, /REVOKED/],
    [
      'one of a revoked CA, its plain key recorded',
      { by: 'ca', args: ['-n', 'IP'] },
      () => [`${ip} ${own}`, `@revoked * ${ca}`],
      false,
      /REVOKED/,
    ],
    [
      'an expired one, its plain key recorded',
      { by: 'ca', args: ['-n', 'IP', '-V', '-2h:-1h'] },
      () => [`@cert-authority * ${ca}`, `${ip} ${own}`],
      true,
    ],
    ['a CA line that negates the host', { by: 'ca', args: ['-n', 'IP'] }, () => [`@cert-authority *,!${ip} ${ca}`], false, /is unknown/],
    ['no certificate served', null, () => [`@cert-authority * ${ca}`], false, /shows no host certificate/],
  ];
  it.each(cases)('%s', async (_, cert, lines, accepted, why) => {
    await serve(cert && { ...cert, args: cert.args.map((a) => a.replace('IP', ip)) });
    await bothDecide(lines(), accepted, why);
  });

  it('the certificate’s connection dropped by the host’s sshd (MaxStartups 1): a failure to connect, tried again, never a verdict on its key', async () => {
    await serve({ by: 'ca', args: ['-n', ip] });
    try {
      // (read after 10-testbed.conf: sshd keeps the last MaxStartups it reads, and the first LogLevel, set nowhere before)
      const conf = 'printf "MaxStartups 1\\nLogLevel VERBOSE\\n" > /etc/ssh/sshd_config.d/99-startups.conf && : > /var/log/sshd.log';
      expect((await tb.hostExec(HOST, conf)).code).toBe(0);
      const t = await tb.hostExec(HOST, '/usr/sbin/sshd -T -C user=root,host=x,addr=127.0.0.1');
      expect(t.stdout.match(/^(maxstartups|loglevel) .*$/gm)?.sort()).toEqual(['loglevel VERBOSE', 'maxstartups 1:30:1']);
      await tb.stopSshd(HOST);
      await tb.startSshd(HOST);
      const kh = join(tmp(), 'known_hosts');
      writeFileSync(kh, `@cert-authority * ${ca}\n`);
      const inv = writeInventory({ hosts: [HOST], vars: { racksmith_known_hosts: kh } });
      const r = await provision([PB, '-i', inv, '--check', '--json', '--journal', join(tmp(), 'j')]);
      const recap = recaps(r)[HOST];
      expect(recap, r.stderr).toMatchObject({
        unreachable: true,
        // (a try made before the last one's sshd child had gone may lose its main connection instead: a failure to connect too)
        error: expect.stringMatching(/its host certificate could not be fetched: |before handshake|ECONNRESET/),
      });
      expect(recap.error).not.toMatch(/shows no host certificate/);
      // (tried again: a connection failure, not a refusal of the host: each try's second connection dropped)
      const dropped = await tb.droppedPastMaxStartups(HOST);
      expect(dropped.length, (await tb.hostExec(HOST, 'cat /var/log/sshd.log')).stdout).toBeGreaterThan(1);
    } finally {
      await tb.hostExec(HOST, 'rm -f /etc/ssh/sshd_config.d/99-startups.conf');
      await tb.stopSshd(HOST);
      await tb.startSshd(HOST);
    }
  });

  it('through a jump host: the certificate is read over the jump host’s forward', async () => {
    await serve({ by: 'ca', args: ['-n', ip] });
    const kh = join(tmp(), 'known_hosts');
    // the jump host serves no certificate: its plain key decides for it
    writeFileSync(kh, `@cert-authority * ${ca}\n${tb.host(OTHER).ip} ${other}\n`);
    const inv = writeInventory({ hosts: [HOST], vars: { racksmith_known_hosts: kh, racksmith_ssh_jump: `root@${tb.host(OTHER).ip}` } });
    const r = await provision([PB, '-i', inv, '--check', '--json', '--journal', join(tmp(), 'j')]);
    expect(recaps(r)[HOST], r.stderr).toMatchObject({ unreachable: false });
    // and a certificate of another CA is refused through it as well
    await serve({ by: 'other-ca', args: ['-n', ip] });
    const refused = await provision([PB, '-i', inv, '--check', '--json', '--journal', join(tmp(), 'j')]);
    expect(recaps(refused)[HOST]).toMatchObject({ unreachable: true, error: expect.stringMatching(/names the CA/) });
  });
});
