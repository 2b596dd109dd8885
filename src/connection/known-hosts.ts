import { createHmac } from 'node:crypto';
import { sha256 } from '../util/sha256.ts';
import { appendFileSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { INPUT_LIMITS, readInputFile } from '../util/input-file.ts';
import { hostCertificateProblem, signatureVerifies, type HostCertificate } from './host-certificate.ts';

/**
 * One line of an OpenSSH known_hosts file (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"): an optional
 * marker, host patterns (a comma list with `*`/`?` wildcards and `!` negation, or one hashed
 * name `|1|salt|hash`), the key type and the key.
 */
export interface KnownHostsLine {
  line: number;
  marker?: 'revoked' | 'cert-authority';
  patterns: string;
  keyType: string;
  keyB64: string;
}

/** `certificate`: why the host's certificate did not decide (the plain key did, as in OpenSSH). */
export type HostKeyVerdict =
  | { status: 'match'; by?: 'certificate' }
  | { status: 'unknown'; fingerprint: string; keyType: string; certificate?: string }
  | { status: 'changed'; fingerprint: string; keyType: string; certificate?: string }
  /** The key, or the CA that signed its certificate (`ca`), is @revoked. */
  | { status: 'revoked'; fingerprint: string; keyType: string; ca?: boolean }
  /** Keys of other types are recorded, none of this type (the host no longer serves them). */
  | { status: 'other-type'; fingerprint: string; keyType: string; recorded: string[]; certificate?: string }
  /** A trusted CA's certificate whose signature does not verify: refused outright, as OpenSSH's key exchange fails. */
  | { status: 'bad-certificate'; fingerprint: string; keyType: string };

/** The name OpenSSH looks a host up by: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** The SHA256 fingerprint as `ssh-keygen -l` prints it. */
export function fingerprint(keyBlob: Buffer): string {
  return 'SHA256:' + sha256(keyBlob, 'base64').replace(/=+$/, '');
}

/** The key type is the first string inside the SSH wire-format key blob. */
export function keyTypeOf(keyBlob: Buffer): string {
  const len = keyBlob.readUInt32BE(0);
  return keyBlob.subarray(4, 4 + len).toString('latin1');
}

/** The lines of a known_hosts text OpenSSH would read (comments, blank and short lines skipped). */
export function parseKnownHosts(text: string): KnownHostsLine[] {
  const out: KnownHostsLine[] = [];
  text.split('\n').forEach((raw, i) => {
    const fields = raw.trim().split(/[ \t]+/);
    if (!fields[0] || fields[0].startsWith('#')) return;
    let marker: KnownHostsLine['marker'];
    if (fields[0] === '@revoked' || fields[0] === '@cert-authority') {
      marker = fields[0] === '@revoked' ? 'revoked' : 'cert-authority';
      fields.shift();
    } else if (fields[0].startsWith('@')) return; // an unknown marker: OpenSSH skips the line
    if (fields.length < 3) return;
    out.push({ line: i + 1, marker, patterns: fields[0], keyType: fields[1], keyB64: fields[2] });
  });
  return out;
}

/** OpenSSH's match_pattern: `*` any run, `?` one character, the rest literal (case already folded). */
function wildcard(pattern: string, s: string): boolean {
  // iterative glob with backtracking to the last `*`: linear-ish, no regex built from input
  let p = 0;
  let i = 0;
  let star = -1;
  let mark = 0;
  while (i < s.length) {
    if (p < pattern.length && (pattern[p] === '?' || pattern[p] === s[i])) {
      p++;
      i++;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      mark = i;
    } else if (star >= 0) {
      p = star + 1;
      i = ++mark;
    } else return false;
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

/**
 * Does a line's host field name `name`? As OpenSSH's hostfile.c: a hashed name is
 * HMAC-SHA1(salt, name); else match_hostname: a negated pattern that matches excludes the host
 * whatever else matches, else any positive pattern that matches includes it (case-insensitive).
 */
export function hostMatches(patterns: string, name: string): boolean {
  if (patterns.startsWith('|1|')) {
    const [, , salt, hash] = patterns.split('|');
    if (!salt || !hash) return false;
    return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
  }
  const host = name.toLowerCase();
  let positive = false;
  for (const raw of patterns.split(',')) {
    const negated = raw.startsWith('!');
    const p = (negated ? raw.slice(1) : raw).toLowerCase();
    if (!wildcard(p, host)) continue;
    if (negated) return false;
    positive = true;
  }
  return positive;
}

/** The algorithms ssh2 negotiates for a key type recorded in known_hosts. */
const ALGORITHMS_OF: Record<string, string[]> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
};
/** ssh2's default host key algorithms, in its order of preference. */
const DEFAULT_ALGORITHMS = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];

/**
 * A known_hosts file's lines, indexed by the names they list outright: every connection of a run
 * looks its host up, and matching each host against every line was hosts x lines pattern matches
 * (2,000,000 at 1,000 hosts with a line per IP and per name). Lines with wildcards, negations or a
 * hashed name are matched against each name as before.
 */
export class KnownHostsIndex {
  private readonly byName = new Map<string, KnownHostsLine[]>();
  private readonly matched: KnownHostsLine[] = [];
  private readonly found = new Map<string, KnownHostsLine[]>();

  constructor(readonly lines: readonly KnownHostsLine[]) {
    for (const l of lines) {
      if (l.patterns.startsWith('|1|') || /[*?!]/.test(l.patterns)) {
        this.matched.push(l);
        continue;
      }
      for (const name of new Set(l.patterns.toLowerCase().split(','))) {
        const at = this.byName.get(name);
        if (at) at.push(l);
        else this.byName.set(name, [l]);
      }
    }
  }

  /** The lines that name `name` (a knownHostsName), in file order. */
  linesFor(name: string): KnownHostsLine[] {
    let out = this.found.get(name);
    if (!out) {
      const listed = this.byName.get(name.toLowerCase()) ?? [];
      const matching = this.matched.filter((l) => hostMatches(l.patterns, name));
      out = matching.length ? [...listed, ...matching].sort((a, b) => a.line - b.line) : listed;
      this.found.set(name, out);
    }
    return out;
  }
}

/** Each known_hosts file's index as last parsed, with the file's identity, size and mtime then. */
const PARSED = new Map<string, { version: string; index: KnownHostsIndex }>();
const EMPTY = new KnownHostsIndex([]);

/** Known-hosts checking as OpenSSH does it with StrictHostKeyChecking=yes (or accept-new). */
export class KnownHosts {
  constructor(readonly file: string) {}

  /** The lines that name this host (what `ssh-keygen -F` finds). */
  linesFor(host: string, port: number): KnownHostsLine[] {
    return this.index().linesFor(knownHostsName(host, port));
  }

  /** The file's lines: read and parsed again only when it changed (every connection of a run asks). */
  private index(): KnownHostsIndex {
    const st = statSync(this.file, { throwIfNoEntry: false });
    if (!st) return EMPTY;
    const version = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
    const known = PARSED.get(this.file);
    if (known?.version === version) return known.index;
    const index = new KnownHostsIndex(
      parseKnownHosts(readInputFile(this.file, 'known_hosts file', INPUT_LIMITS.sshConfig).toString('utf8')),
    );
    PARSED.set(this.file, { version, index });
    return index;
  }

  /**
   * The host key algorithms to offer, the types recorded for the host first (as OpenSSH orders
   * them): a host serving ed25519 and ECDSA whose ECDSA key alone is recorded shows that key.
   */
  algorithmsFor(host: string, port: number): string[] {
    const recorded = new Set(
      this.linesFor(host, port)
        .filter((l) => !l.marker)
        .flatMap((l) => ALGORITHMS_OF[l.keyType] ?? []),
    );
    const first = DEFAULT_ALGORITHMS.filter((a) => recorded.has(a));
    return [...first, ...DEFAULT_ALGORITHMS.filter((a) => !recorded.has(a))];
  }

  /**
   * Marker lines name the host: its certificate, if it shows one, decides before its plain key
   * (OpenSSH prefers certificate algorithms), so the caller fetches it and passes it to verify.
   */
  wantsCertificate(host: string, port: number): boolean {
    return this.linesFor(host, port).some((l) => l.marker);
  }

  /**
   * The verdict for the plain key `keyBlob` the host proved it holds, as ssh(1)'s check_host_key
   * with StrictHostKeyChecking=yes. `shown` is the certificate the host showed for its key, or
   * why there is none: a certificate counts when a @cert-authority line for the host names its
   * CA and it checks out; when it does not count OpenSSH retries with the plain key, as here.
   */
  verify(
    host: string,
    port: number,
    keyBlob: Buffer,
    shown?: HostCertificate | string,
    now = BigInt(Math.floor(Date.now() / 1000)),
  ): HostKeyVerdict {
    const lines = this.linesFor(host, port);
    const type = keyTypeOf(keyBlob);
    const b64 = keyBlob.toString('base64');
    const fp = fingerprint(keyBlob);
    const revoked = new Set(lines.filter((l) => l.marker === 'revoked').map((l) => l.keyB64));
    if (revoked.has(b64)) return { status: 'revoked', fingerprint: fp, keyType: type };
    let certificate = typeof shown === 'string' ? shown : undefined;
    if (shown && typeof shown !== 'string') {
      const ca = shown.signatureKey.toString('base64');
      const caPrint = `${keyTypeOf(shown.signatureKey)} ${fingerprint(shown.signatureKey)}`;
      if (!shown.subjectKey.equals(keyBlob)) certificate = 'the certificate it shows is for another of its keys';
      else if (revoked.has(ca))
        return { status: 'revoked', fingerprint: fingerprint(shown.signatureKey), keyType: keyTypeOf(shown.signatureKey), ca: true };
      else if (!lines.some((l) => l.marker === 'cert-authority' && l.keyB64 === ca))
        certificate = `no @cert-authority line for it names the CA of its certificate (${caPrint})`;
      else if (!signatureVerifies(shown)) return { status: 'bad-certificate', fingerprint: fp, keyType: type };
      else {
        const problem = hostCertificateProblem(shown, host, now);
        if (!problem) return { status: 'match', by: 'certificate' };
        certificate = `its certificate (id "${shown.keyId}", CA ${caPrint}) is not valid: ${problem}`;
      }
    }
    const plain = lines.filter((l) => !l.marker);
    if (plain.some((l) => l.keyB64 === b64 && l.keyType === type)) return { status: 'match' };
    if (plain.some((l) => l.keyType === type)) return { status: 'changed', fingerprint: fp, keyType: type, certificate };
    if (plain.length)
      return { status: 'other-type', fingerprint: fp, keyType: type, recorded: [...new Set(plain.map((l) => l.keyType))], certificate };
    return { status: 'unknown', fingerprint: fp, keyType: type, certificate };
  }

  /** Record a newly accepted key (--ssh-accept-new), as `ssh -o StrictHostKeyChecking=accept-new` would. */
  add(host: string, port: number, keyBlob: Buffer): void {
    mkdirSync(dirname(this.file), { recursive: true });
    appendFileSync(this.file, `${knownHostsName(host, port)} ${keyTypeOf(keyBlob)} ${keyBlob.toString('base64')}\n`);
  }
}
