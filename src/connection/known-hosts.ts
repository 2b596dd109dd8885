import { createHash, createHmac } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** One usable line of an OpenSSH known_hosts file. */
interface KnownKey {
  patterns: string[]; // plain names or |1|salt|hash entries
  keyType: string;
  keyB64: string;
  revoked: boolean;
}

export type HostKeyVerdict =
  | { status: 'match' }
  | { status: 'unknown'; fingerprint: string; keyType: string }
  | { status: 'changed'; fingerprint: string; keyType: string };

/** The name OpenSSH uses for a host in known_hosts: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** The SHA256 fingerprint as `ssh-keygen -l` prints it. */
export function fingerprint(keyBlob: Buffer): string {
  return 'SHA256:' + createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '');
}

/** The key type is the first string inside the SSH wire-format key blob. */
export function keyTypeOf(keyBlob: Buffer): string {
  const len = keyBlob.readUInt32BE(0);
  return keyBlob.subarray(4, 4 + len).toString('latin1');
}

function parse(text: string): KnownKey[] {
  const keys: KnownKey[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    let revoked = false;
    if (fields[0] === '@revoked') {
      revoked = true;
      fields.shift();
    } else if (fields[0]?.startsWith('@')) {
      continue; // @cert-authority: not supported, ignore rather than misread
    }
    if (fields.length < 3) continue;
    keys.push({ patterns: fields[0].split(','), keyType: fields[1], keyB64: fields[2], revoked });
  }
  return keys;
}

function patternMatches(pattern: string, name: string): boolean {
  if (pattern.startsWith('|1|')) {
    const [, , salt, hash] = pattern.split('|');
    if (!salt || !hash) return false;
    return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
  }
  if (pattern.startsWith('!')) return false;
  if (!/[*?]/.test(pattern)) return pattern === name;
  const re = new RegExp(
    '^' +
      pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.') +
      '$',
  );
  return re.test(name);
}

/** Known-hosts checking as OpenSSH does it with StrictHostKeyChecking=yes (or accept-new). */
export class KnownHosts {
  constructor(readonly file: string) {}

  verify(host: string, port: number, keyBlob: Buffer): HostKeyVerdict {
    const name = knownHostsName(host, port);
    const type = keyTypeOf(keyBlob);
    const b64 = keyBlob.toString('base64');
    const text = existsSync(this.file) ? readFileSync(this.file, 'utf8') : '';
    const forHost = parse(text).filter((k) => k.patterns.some((p) => patternMatches(p, name)));
    const fp = fingerprint(keyBlob);
    if (forHost.some((k) => k.revoked && k.keyB64 === b64)) return { status: 'changed', fingerprint: fp, keyType: type };
    if (forHost.some((k) => !k.revoked && k.keyB64 === b64)) return { status: 'match' };
    // A host with any recorded key that is not this one has a changed key (OpenSSH refuses it too).
    if (forHost.some((k) => !k.revoked)) return { status: 'changed', fingerprint: fp, keyType: type };
    return { status: 'unknown', fingerprint: fp, keyType: type };
  }

  /** Record a newly accepted key (--ssh-accept-new), as `ssh -o StrictHostKeyChecking=accept-new` would. */
  add(host: string, port: number, keyBlob: Buffer): void {
    mkdirSync(dirname(this.file), { recursive: true });
    appendFileSync(this.file, `${knownHostsName(host, port)} ${keyTypeOf(keyBlob)} ${keyBlob.toString('base64')}\n`);
  }
}
