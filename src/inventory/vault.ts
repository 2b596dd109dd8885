import { createDecipheriv, createHmac, pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { InputError } from '../util/errors.ts';
import { readInputFile } from '../util/input-file.ts';
import { Secret } from '../util/secret.ts';

/**
 * Ansible Vault (format 1.1 and 1.2, cipher AES256), as ansible-core reads it: the envelope
 * `$ANSIBLE_VAULT;1.1;AES256` (1.2 adds `;label`) over the hexlified text of
 * `hex(salt) \n hex(hmac) \n hex(ciphertext)`; keys from PBKDF2-SHA256 (10,000 iterations, 80
 * bytes: AES key, HMAC key, counter IV), HMAC-SHA256 over the ciphertext checked before
 * AES-256-CTR decryption and PKCS#7 unpadding. Every password is tried in order, whatever the
 * label (a label is only a hint in Ansible too: it is not authenticated).
 */
export const VAULT_HEADER = '$ANSIBLE_VAULT';

export interface VaultPassword {
  /** The vault id label (`default` when none was given). */
  id: string;
  password: Buffer;
}

/** Bad vault data or no password that opens it: the caller names where the value was. */
export class VaultError extends Error {}

/** The ciphertext a decrypted value came from: `provision inventory --list` prints it as Ansible does. */
export const vaultTextOf = new WeakMap<Secret, string>();

/**
 * A vaulted value read without a vault password, as Ansible keeps one until it is used:
 * `provision inventory --list`, `--list-hosts` and a run that never uses it need no password; a
 * run that does (a file's content, a become password) is exit 3 at the value's file:line before
 * any host is contacted.
 */
export class SealedVaultValue extends Secret {
  constructor(vaulttext: string) {
    super(''); // no plaintext to mask: it never reaches any output
    vaultTextOf.set(this, vaulttext);
  }
  override reveal(): string {
    throw new InputError(
      'a vaulted value is used, but no vault password was given (--vault-password-file, --vault-id, --ask-vault-pass, or vault_password_file in ansible.cfg)',
      this.origin,
    );
  }
}

export function isVaultText(s: string): boolean {
  return s.startsWith(VAULT_HEADER);
}

export class VaultKeyring {
  constructor(readonly passwords: readonly VaultPassword[]) {}

  /** The plaintext of a vault envelope (UTF-8). */
  decrypt(vaulttext: string): string {
    const { cipher, hex } = parseEnvelope(vaulttext);
    if (cipher !== 'AES256') throw new VaultError(`unknown vault cipher '${cipher}' (only AES256 exists)`);
    const inner = unhexlify(hex, 'vault text').toString('latin1').split('\n');
    if (inner.length < 3) throw new VaultError('vault text is malformed (expected salt, HMAC and ciphertext)');
    const salt = unhexlify(inner[0], 'vault salt');
    const hmac = unhexlify(inner[1], 'vault HMAC');
    const ciphertext = unhexlify(inner.slice(2).join('\n'), 'vault ciphertext');
    for (const p of this.passwords) {
      const key = pbkdf2Sync(p.password, salt, 10_000, 80, 'sha256');
      const mac = createHmac('sha256', key.subarray(32, 64)).update(ciphertext).digest();
      if (mac.length !== hmac.length || !timingSafeEqual(mac, hmac)) continue;
      const d = createDecipheriv('aes-256-ctr', key.subarray(0, 32), key.subarray(64, 80));
      const padded = Buffer.concat([d.update(ciphertext), d.final()]);
      const text = unpad(padded).toString('utf8');
      return text;
    }
    throw new VaultError(
      this.passwords.length ? 'decryption failed: no vault password given opens it (wrong password?)' : 'no vault password given',
    );
  }
}

function parseEnvelope(text: string): { version: string; cipher: string; id?: string; hex: string } {
  // bytes.splitlines(): \n, \r\n and \r
  const lines = text.split(/\r\n|\r|\n/);
  const header = lines[0].trim().split(';');
  if (header[0] !== VAULT_HEADER || header.length < 3) throw new VaultError('not a vault envelope ($ANSIBLE_VAULT;1.1;AES256)');
  const version = header[1].trim();
  if (version !== '1.1' && version !== '1.2') throw new VaultError(`unknown vault format version '${version}'`);
  return { version, cipher: header[2].trim(), id: header[3]?.trim(), hex: lines.slice(1).join('') };
}

function unhexlify(hex: string, what: string): Buffer {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new VaultError(`${what} is not hexadecimal`);
  return Buffer.from(hex, 'hex');
}

function unpad(b: Buffer): Buffer {
  const n = b.length ? b[b.length - 1] : 0;
  if (n < 1 || n > 16 || n > b.length) throw new VaultError('vault plaintext has invalid padding');
  for (let i = b.length - n; i < b.length; i++) if (b[i] !== n) throw new VaultError('vault plaintext has invalid padding');
  return b.subarray(0, b.length - n);
}

/** Vault password files are small; anything bigger is a mistake. */
const MAX_PASSWORD_FILE = 64 * 1024;

/**
 * A password from a file, as Ansible reads one: surrounding whitespace stripped, then CR/LF; the
 * file may itself be vault-encrypted with a password given before it. An executable file is a
 * script to Ansible; racksmith does not run it (exit 3).
 */
export function readPasswordFile(file: string, id: string, before: VaultPassword[]): VaultPassword {
  const what = 'vault password file';
  const raw = readInputFile(file, what, MAX_PASSWORD_FILE);
  let executable = false;
  try {
    accessSync(file, constants.X_OK);
    executable = true;
  } catch {
    // not executable: a plain password file
  }
  if (executable)
    throw new InputError(
      `${what} ${file} is executable: racksmith does not run vault password scripts (give a file holding the password, or --ask-vault-pass)`,
    );
  let bytes = stripBytes(raw, ' \t\n\v\f\r');
  if (bytes.toString('latin1').startsWith(VAULT_HEADER)) {
    try {
      bytes = Buffer.from(new VaultKeyring(before).decrypt(bytes.toString('latin1')), 'utf8');
    } catch (e) {
      if (e instanceof VaultError) throw new InputError(`${what} ${file} is vault-encrypted: ${e.message}`);
      throw e;
    }
  }
  bytes = stripBytes(bytes, '\r\n');
  if (bytes.length === 0) throw new InputError(`${what} ${file} is empty`);
  return { id, password: bytes };
}

function stripBytes(b: Buffer, chars: string): Buffer {
  const set = new Set([...chars].map((c) => c.charCodeAt(0)));
  let s = 0;
  let e = b.length;
  while (s < e && set.has(b[s])) s++;
  while (e > s && set.has(b[e - 1])) e--;
  return b.subarray(s, e);
}

/** `--vault-id [label@]source`: source is `prompt` or a password file. */
export function splitVaultId(slug: string): { id: string; source: string } {
  const at = slug.indexOf('@');
  if (at < 0) return { id: 'default', source: slug };
  return { id: slug.slice(0, at) || 'default', source: slug.slice(at + 1) };
}

export interface VaultOptions {
  vaultIds: string[];
  passwordFiles: string[];
  askVaultPass: boolean;
}

export type PasswordPrompt = (prompt: string) => Promise<Buffer>;

/**
 * The passwords, in Ansible's order: every --vault-id, then every --vault-password-file, then
 * ANSIBLE_VAULT_PASSWORD_FILE, then the --ask-vault-pass prompt.
 */
export async function vaultPasswords(o: VaultOptions, prompt: PasswordPrompt, env = process.env): Promise<VaultPassword[]> {
  const slugs = [
    ...o.vaultIds,
    ...o.passwordFiles.map((f) => `default@${f}`),
    ...(env.ANSIBLE_VAULT_PASSWORD_FILE ? [`default@${env.ANSIBLE_VAULT_PASSWORD_FILE}`] : []),
    ...(o.askVaultPass ? ['default@prompt_ask_vault_pass'] : []),
  ];
  const out: VaultPassword[] = [];
  for (const slug of slugs) {
    const { id, source } = splitVaultId(slug);
    if (source === 'prompt' || source === 'prompt_ask_vault_pass') {
      const password = await prompt(source === 'prompt' ? `Vault password (${id}): ` : 'Vault password: ');
      if (password.length === 0) throw new InputError('an empty vault password was given');
      out.push({ id, password });
    } else {
      if (!source) throw new InputError(`--vault-id ${slug}: no password file or 'prompt' after '@'`);
      out.push(readPasswordFile(source, id, out));
    }
  }
  return out;
}
