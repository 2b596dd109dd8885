// Ansible Vault, against the real ansible-vault: values made by `ansible-vault encrypt_string`
// and files made by `ansible-vault encrypt` (format 1.1, and 1.2 with a vault id) decrypt to
// Secrets; no password, a wrong one or a damaged value is exit 3 naming the file:line.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.ts';
import { VaultKeyring, readPasswordFile, vaultPasswords } from '../../src/inventory/vault.ts';
import { isSecret, type Secret } from '../../src/util/secret.ts';
import { InputError } from '../../src/util/errors.ts';

const ROOT = mkdtempSync(join(tmpdir(), 'rs-vault-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));
const REPO = resolve(import.meta.dirname, '..', '..');

const pw = (name: string, text: string) => {
  const f = join(ROOT, name);
  writeFileSync(f, text);
  return f;
};
const PW = pw('pw', 'correct horse battery staple\n');
const PW2 = pw('pw2', '  second-password  \n');
const WRONG = pw('wrong', 'not-it\n');

const ENV = {
  ...process.env,
  ANSIBLE_CONFIG: pw('ansible.cfg', ''),
  ANSIBLE_HOME: join(ROOT, 'home'),
  ANSIBLE_LOCAL_TEMP: join(ROOT, 'tmp'),
};

/** `ansible-vault encrypt_string` output: `name: !vault |` and the indented envelope. */
function encryptString(value: string, name: string, vaultId = `default@${PW}`): string {
  return execFileSync('ansible-vault', ['encrypt_string', '--vault-id', vaultId, '--name', name, value], { env: ENV, encoding: 'utf8' });
}

function files(files: Record<string, string>): string {
  const dir = mkdtempSync(join(ROOT, 'inv-'));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

const keyring = (...files: Array<[string, string]>) => new VaultKeyring(files.map(([id, f]) => readPasswordFile(f, id, [])));
const indent = (s: string, n: number) => s.replace(/^/gm, ' '.repeat(n)).trimEnd();

function provision(args: string[], input?: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [join(REPO, 'bin/provision.js'), ...args], {
    encoding: 'utf8',
    input,
    env: { ...process.env, ...env },
    cwd: REPO,
  });
}

describe('vault', { timeout: 60_000 }, () => {
  const value = 'p@ss w0rd: "quoted" ünïcødé\nsecond line';
  const enc = encryptString(value, 'db_password');
  const enc12 = encryptString('labelled', 'api_token', `prod@${PW2}`);

  it('ansible-vault made what the test expects: 1.1 and 1.2 envelopes', () => {
    expect(enc).toContain('$ANSIBLE_VAULT;1.1;AES256');
    expect(enc12).toContain('$ANSIBLE_VAULT;1.2;AES256;prod');
  });

  const dir = files({
    'hosts.yml': `all:\n  hosts:\n    h1:\n${indent(enc, 6)}\n${indent(enc12, 6)}\n      plain: x\n`,
  });
  const inv = join(dir, 'hosts.yml');

  it('decrypts !vault values (1.1 and 1.2, each with its password) into Secrets', () => {
    const h = loadInventory(inv, {}, {}, { vault: keyring(['default', PW], ['prod', PW2]) }).hosts[0];
    expect(isSecret(h.vars.db_password)).toBe(true);
    expect((h.vars.db_password as Secret).reveal()).toBe(value);
    expect((h.vars.api_token as Secret).reveal()).toBe('labelled');
    expect(h.vars.plain).toBe('x');
    expect(JSON.stringify(h.vars)).not.toContain('p@ss');
  });

  it('tries every password whatever the label (as Ansible does)', () => {
    const h = loadInventory(inv, {}, {}, { vault: keyring(['other', PW2], ['x', PW]) }).hosts[0];
    expect((h.vars.db_password as Secret).reveal()).toBe(value);
  });

  it('no password given: the inventory lists as ansible-inventory lists it (the ciphertext), as do --list-hosts', () => {
    const ours = provision(['inventory', '-i', inv, '--list']);
    expect(ours.status, ours.stderr).toBe(0);
    const theirs = execFileSync('ansible-inventory', ['-i', inv, '--list'], { env: ENV, encoding: 'utf8' });
    expect(JSON.parse(ours.stdout)).toEqual(JSON.parse(theirs));
    const hosts = provision(['-i', inv, '--list-hosts']);
    expect(hosts.status, hosts.stderr).toBe(0);
    expect(hosts.stdout).toContain('h1');
  });

  it('no password given: a run that uses a vaulted value is exit 3 at the value, before any host', () => {
    const d = files({
      'hosts.yml': `all:\n  hosts:\n    h1:\n      ansible_connection: local\n${indent(enc, 6)}\n`,
      'pb.ts': `import { file, playbook } from ${JSON.stringify(join(REPO, 'src/index.ts'))};
export default playbook({ name: 'uses it', hosts: 'all', resources: (h) => [file({ path: '/nonexistent/rs-vault-test', content: h.var('db_password', '') })] });
`,
    });
    const r = provision([join(d, 'pb.ts'), '-i', join(d, 'hosts.yml'), '--check', '--journal', join(d, 'j.ndjson')]);
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`${join(d, 'hosts.yml')}:5:\\d+: a vaulted value is used, but no vault password was given`));
    // a vaulted become password: refused before any host, at the value
    const become = files({
      'hosts.yml': `all:\n  hosts:\n    h1:\n      ansible_host: 127.0.0.1\n      ansible_become: true\n${indent(encryptString('pw', 'ansible_become_password'), 6)}\n`,
    });
    const b = provision(['-i', join(become, 'hosts.yml'), '--check', '--journal', join(d, 'j2.ndjson')]);
    expect(b.status, b.stderr).toBe(3);
    expect(b.stderr).toContain(`${join(become, 'hosts.yml')}:6:`);
    expect(b.stderr).toContain('a vaulted value is used, but no vault password was given');
  });

  it.each([
    ['ansible_user', 'all.hosts.h1.ansible_user'],
    ['ansible_port', 'all.hosts.h1.ansible_port'],
    ['nofile', 'nofile'],
  ])(
    'a vaulted %s (racksmith prints or schema-checks it) is refused as a secret, with or without the password',
    (name, where) => {
      const d = files({
        'hosts.yml': `all:\n  hosts:\n    h1:\n      ansible_connection: local\n${indent(encryptString('2222', name), 6)}\n`,
      });
      for (const pass of [[], ['--vault-password-file', PW]]) {
        const r = provision(['playbooks/network.ts', '-i', join(d, 'hosts.yml'), '--syntax-check', ...pass]);
        expect(r.status, r.stderr).toBe(3);
        expect(r.stderr).toContain(`${join(d, 'hosts.yml')}:5:`);
        expect(r.stderr).toContain(`${where} must be a plain value, not a secret (vaulted or !secret)`);
      }
    },
    30_000,
  );

  it('a wrong password: exit 3 at the value, nothing decrypted', () => {
    const r = provision(['inventory', '-i', inv, '--list', '--vault-password-file', WRONG]);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`${inv}:4:20: .*decryption failed`));
  });

  it('a damaged ciphertext: exit 3', () => {
    const bad = files({ 'hosts.yml': `all:\n  hosts:\n    h1:\n${indent(enc.replace(/([0-9a-f])\n/, 'zz\n'), 6)}\n` });
    expect(() => loadInventory(join(bad, 'hosts.yml'), {}, {}, { vault: keyring(['default', PW]) })).toThrow(InputError);
  });

  it('`provision inventory --list` prints vaulted values as ansible-inventory does: their ciphertext', () => {
    const ours = provision(['inventory', '-i', inv, '--list', '--vault-id', `default@${PW}`, '--vault-id', `prod@${PW2}`]);
    expect(ours.status, ours.stderr).toBe(0);
    const theirs = execFileSync('ansible-inventory', ['-i', inv, '--list', '--vault-id', `default@${PW}`, '--vault-id', `prod@${PW2}`], {
      env: ENV,
      encoding: 'utf8',
    });
    expect(JSON.parse(ours.stdout)).toEqual(JSON.parse(theirs));
    expect(ours.stdout).not.toContain('p@ss');
  });

  it('reads that JSON back ({"__ansible_vault": ...}) as the same secret', () => {
    const listed = provision(['inventory', '-i', inv, '--list', '--vault-password-file', PW, '--vault-password-file', PW2]).stdout;
    const d = files({ 'inv.json': listed });
    const h = loadInventory(join(d, 'inv.json'), {}, {}, { vault: keyring(['default', PW], ['prod', PW2]) }).hosts[0];
    expect((h.vars.db_password as Secret).reveal()).toBe(value);
  });

  it('a vault-encrypted group_vars file (ansible-vault encrypt): every string in it is a Secret', () => {
    const d = files({ 'hosts.yml': 'all:\n  hosts:\n    h1:\n', 'group_vars/all.yml': 'vault_token: t0ken\nvault_list: [a, 1]\n' });
    execFileSync('ansible-vault', ['encrypt', '--vault-password-file', PW, join(d, 'group_vars/all.yml')], { env: ENV });
    expect(readFileSync(join(d, 'group_vars/all.yml'), 'utf8')).toMatch(/^\$ANSIBLE_VAULT;1\.1;AES256/);
    const h = loadInventory(join(d, 'hosts.yml'), {}, {}, { vault: keyring(['default', PW]) }).hosts[0];
    expect((h.vars.vault_token as Secret).reveal()).toBe('t0ken');
    const [a, one] = h.vars.vault_list as unknown[];
    expect((a as Secret).reveal()).toBe('a');
    expect(one).toBe(1);
    expect(() => loadInventory(join(d, 'hosts.yml'))).toThrow(
      /group_vars\/all\.yml:1:1: vars file is vault-encrypted but no vault password was given/,
    );
  });

  it('passwords from ANSIBLE_VAULT_PASSWORD_FILE and from --ask-vault-pass (a pipe: the first line of stdin)', () => {
    const env = provision(['inventory', '-i', inv, '--host', 'h1', '--vault-id', `prod@${PW2}`], undefined, {
      ANSIBLE_VAULT_PASSWORD_FILE: PW,
    });
    expect(env.status, env.stderr).toBe(0);
    const asked = provision(
      ['inventory', '-i', inv, '--host', 'h1', '--ask-vault-pass', '--vault-id', `prod@${PW2}`],
      'correct horse battery staple\n',
    );
    expect(asked.status, asked.stderr).toBe(0);
    expect(asked.stderr).toContain('Vault password: ');
    expect(JSON.parse(asked.stdout).plain).toBe('x');
  });

  it('password files: whitespace stripped, an empty one refused, an executable one (a script to Ansible) refused', async () => {
    expect(readPasswordFile(PW2, 'x', []).password.toString()).toBe('second-password');
    expect(() => readPasswordFile(pw('empty', ' \n'), 'x', [])).toThrow(/is empty/);
    const script = pw('script.sh', '#!/bin/sh\necho pw\n');
    chmodSync(script, 0o755);
    expect(() => readPasswordFile(script, 'x', [])).toThrow(/executable: racksmith does not run vault password scripts/);
    await expect(
      vaultPasswords({ vaultIds: [], passwordFiles: [join(ROOT, 'nope')], askVaultPass: false }, async () => Buffer.from(''), {}),
    ).rejects.toThrow(/not found/);
  });
});
