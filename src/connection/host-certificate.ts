import { createPublicKey, verify as verifySignature, type KeyObject } from 'node:crypto';

/**
 * OpenSSH host certificates (PROTOCOL.certkeys), checked as ssh(1)'s check_host_cert does: a
 * host certificate, valid now, naming the host among its principals (or naming none), without
 * critical options, signed by the CA with an algorithm OpenSSH's default CASignatureAlgorithms
 * takes (not ssh-rsa's SHA-1). Which CA is trusted and which keys are revoked is known_hosts'
 * business (known-hosts.ts); this module only reads and checks certificates.
 */
export interface HostCertificate {
  /** e.g. ssh-ed25519-cert-v01@openssh.com */
  certType: string;
  /** The certified key, as a plain SSH public key blob (what a plain handshake shows). */
  subjectKey: Buffer;
  serial: bigint;
  /** 1 user, 2 host. */
  kind: number;
  keyId: string;
  principals: string[];
  validAfter: bigint;
  validBefore: bigint;
  criticalOptions: Buffer;
  /** The CA's public key blob. */
  signatureKey: Buffer;
  /** The signature's algorithm name (ssh-ed25519, rsa-sha2-512, ...). */
  signatureAlgorithm: string;
  signatureBytes: Buffer;
  /** Everything the CA signed: the certificate up to its signature field. */
  signedPart: Buffer;
}

const CERT_SUFFIX = '-cert-v01@openssh.com';
const HOST_CERT = 2;

/** The certificate algorithm a plain key type is shown with (rsa-sha2-512 → rsa-sha2-512-cert-v01@openssh.com). */
export function certificateAlgorithm(hostKeyAlgorithm: string): string {
  return hostKeyAlgorithm + CERT_SUFFIX;
}

export function isCertificateType(type: string): boolean {
  return type.endsWith(CERT_SUFFIX);
}

/** Reads the SSH wire format: uint32, uint64 and length-prefixed strings; throws 'truncated' past the end. */
export class WireReader {
  private pos = 0;
  constructor(readonly buf: Buffer) {}
  get offset(): number {
    return this.pos;
  }
  get done(): boolean {
    return this.pos === this.buf.length;
  }
  uint32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  uint64(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64BE(this.pos);
    this.pos += 8;
    return v;
  }
  bytes(): Buffer {
    const len = this.uint32();
    this.need(len);
    const v = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return v;
  }
  /** A string field with its length prefix, as it was on the wire. */
  raw(): Buffer {
    const start = this.pos;
    this.bytes();
    return this.buf.subarray(start, this.pos);
  }
  text(): string {
    return this.bytes().toString('utf8');
  }
  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new Error('truncated');
  }
}

export function sshString(s: string | Buffer): Buffer {
  const body = typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  return Buffer.concat([len, body]);
}

/** The public fields of each certified key type: their count of wire strings (mpints read as strings). */
const KEY_FIELDS: Record<string, number> = {
  'ssh-ed25519': 1,
  'ecdsa-sha2-nistp256': 2,
  'ecdsa-sha2-nistp384': 2,
  'ecdsa-sha2-nistp521': 2,
  'ssh-rsa': 2,
};

/** Parse a certificate blob; throws on a malformed one or a key type OpenSSH no longer takes. */
export function parseHostCertificate(blob: Buffer): HostCertificate {
  const r = new WireReader(blob);
  const certType = r.text();
  if (!isCertificateType(certType)) throw new Error(`not a certificate (${certType})`);
  const keyType = certType.slice(0, -CERT_SUFFIX.length);
  const fields = KEY_FIELDS[keyType];
  if (!fields) throw new Error(`unsupported certificate type ${certType}`);
  r.bytes(); // nonce
  const keyParts = Array.from({ length: fields }, () => r.raw());
  const subjectKey = Buffer.concat([sshString(keyType), ...keyParts]);
  const serial = r.uint64();
  const kind = r.uint32();
  const keyId = r.text();
  const principalList = new WireReader(r.bytes());
  const principals: string[] = [];
  while (!principalList.done) principals.push(principalList.text());
  const validAfter = r.uint64();
  const validBefore = r.uint64();
  const criticalOptions = r.bytes();
  r.bytes(); // extensions
  r.bytes(); // reserved
  const signatureKey = r.bytes();
  const signedPart = blob.subarray(0, r.offset);
  const sig = new WireReader(r.bytes());
  if (!r.done) throw new Error('trailing data after the signature');
  const signatureAlgorithm = sig.text();
  const signatureBytes = sig.bytes();
  return {
    certType,
    subjectKey,
    serial,
    kind,
    keyId,
    principals,
    validAfter,
    validBefore,
    criticalOptions,
    signatureKey,
    signatureAlgorithm,
    signatureBytes,
    signedPart,
  };
}

const b64url = (b: Buffer) => b.toString('base64url');
/** An mpint's magnitude without the sign byte OpenSSH adds before a set high bit. */
const unsigned = (b: Buffer) => (b[0] === 0 ? b.subarray(1) : b);
const CURVES: Record<string, { jwk: string; hash: string; size: number }> = {
  nistp256: { jwk: 'P-256', hash: 'sha256', size: 32 },
  nistp384: { jwk: 'P-384', hash: 'sha384', size: 48 },
  nistp521: { jwk: 'P-521', hash: 'sha512', size: 66 },
};

/** A CA public key blob as a node crypto key, or undefined for a type OpenSSH's CA checks do not take. */
function caKeyObject(blob: Buffer): { type: string; key: KeyObject; curve?: (typeof CURVES)[string] } | undefined {
  const r = new WireReader(blob);
  const type = r.text();
  if (type === 'ssh-ed25519')
    return { type, key: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64url(r.bytes()) }, format: 'jwk' }) };
  if (type === 'ssh-rsa') {
    const e = unsigned(r.bytes());
    const n = unsigned(r.bytes());
    return { type, key: createPublicKey({ key: { kty: 'RSA', n: b64url(n), e: b64url(e) }, format: 'jwk' }) };
  }
  const curve = CURVES[type.replace(/^ecdsa-sha2-/, '')];
  if (type.startsWith('ecdsa-sha2-') && curve) {
    r.bytes(); // curve name
    const q = r.bytes(); // 0x04 || X || Y
    if (q[0] !== 4 || q.length !== 1 + 2 * curve.size) return undefined;
    const x = q.subarray(1, 1 + curve.size);
    const y = q.subarray(1 + curve.size);
    return { type, curve, key: createPublicKey({ key: { kty: 'EC', crv: curve.jwk, x: b64url(x), y: b64url(y) }, format: 'jwk' }) };
  }
  return undefined;
}

/** The signature algorithms of SSH keys, with their hash (ed25519 hashes inside). */
const SIGNATURE_HASH: Record<string, string | null> = {
  'ssh-ed25519': null,
  'ssh-rsa': 'sha1',
  'ecdsa-sha2-nistp256': 'sha256',
  'ecdsa-sha2-nistp384': 'sha384',
  'ecdsa-sha2-nistp521': 'sha512',
  'rsa-sha2-256': 'sha256',
  'rsa-sha2-512': 'sha512',
};
/** OpenSSH's default CASignatureAlgorithms (since 8.2): every one of those but ssh-rsa's SHA-1. */
const CA_SIGNATURE_ALGORITHMS = new Set(Object.keys(SIGNATURE_HASH).filter((a) => a !== 'ssh-rsa'));

/** Does the certificate's signature verify under its own signature key (any algorithm OpenSSH can read)? */
export function signatureVerifies(cert: HostCertificate): boolean {
  const hash = SIGNATURE_HASH[cert.signatureAlgorithm];
  if (hash === undefined) return false;
  try {
    const ca = caKeyObject(cert.signatureKey);
    if (!ca) return false;
    const rsaAlg = cert.signatureAlgorithm === 'ssh-rsa' || cert.signatureAlgorithm.startsWith('rsa-sha2-');
    if (rsaAlg ? ca.type !== 'ssh-rsa' : ca.type !== cert.signatureAlgorithm) return false;
    if (!ca.curve) return verifySignature(hash, cert.signedPart, ca.key, cert.signatureBytes);
    // an ECDSA signature is mpint r, mpint s: node takes them as fixed-size r || s
    const size = ca.curve.size;
    const rs = new WireReader(cert.signatureBytes);
    const fixed = (b: Buffer) => {
      const m = unsigned(b);
      if (m.length > size) throw new Error('bad ecdsa signature');
      return Buffer.concat([Buffer.alloc(size - m.length), m]);
    };
    const sig = Buffer.concat([fixed(rs.bytes()), fixed(rs.bytes())]);
    return verifySignature(hash, cert.signedPart, { key: ca.key, dsaEncoding: 'ieee-p1363' }, sig);
  } catch {
    return false;
  }
}

/**
 * Why ssh(1) would not take this certificate for `name` at `now` (seconds since the epoch),
 * given that its CA is trusted for the host; undefined when it would. The checks of
 * check_host_cert, in its order; the signature itself is checked by signatureVerifies.
 */
export function hostCertificateProblem(cert: HostCertificate, name: string, now: bigint): string | undefined {
  if (cert.kind !== HOST_CERT) return 'it is not a host certificate';
  if (now < cert.validAfter) return 'it is not yet valid';
  if (now >= cert.validBefore) return 'it has expired';
  // ssh compares its lowercased host name with each principal exactly (no wildcards)
  if (cert.principals.length && !cert.principals.includes(name.toLowerCase()))
    return `${name} is not one of its principals (${cert.principals.join(', ')})`;
  if (cert.criticalOptions.length) return 'it has critical options, which host certificates do not take';
  if (!CA_SIGNATURE_ALGORITHMS.has(cert.signatureAlgorithm))
    return `its CA signed it with ${cert.signatureAlgorithm}, which OpenSSH's default CASignatureAlgorithms refuses`;
  return undefined;
}
