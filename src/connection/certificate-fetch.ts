import { createECDH, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { sshString, WireReader } from './host-certificate.ts';

/**
 * The host certificate a server shows, read from the cleartext start of a second handshake.
 *
 * ssh2 (under node-ssh) negotiates only plain host key algorithms, so the main connection sees
 * the host's plain key and proves the host holds it. The certificate for that key is shown in the
 * server's KEX reply, which comes before any encryption: this handshake offers only certificate
 * algorithms, reads that reply and hangs up. Nothing here needs to be trusted: the caller takes
 * the certificate only when it certifies the key the main connection verified.
 */
/**
 * What the second handshake came to: the certificate; `none` shown (the host offers none, or
 * speaks in a way no certificate can come from); or `lost`, the connection timed out or ended
 * before the host said either (a blip, a jump connection that died, sshd's MaxStartups): a
 * failure to connect, not an answer about the host.
 */
export type CertificateFetch = { certificate: Buffer } | { none: string } | { lost: string };

const MSG_DISCONNECT = 1;
const MSG_KEXINIT = 20;
const MSG_KEX_ECDH_INIT = 30;
const MSG_KEX_ECDH_REPLY = 31;
/** Key exchanges OpenSSH has offered since 6.5 (curve25519) and 5.7 (nistp256). */
const KEX = ['curve25519-sha256', 'curve25519-sha256@libssh.org', 'ecdh-sha2-nistp256'];
// never used (the handshake ends before NEWKEYS) but a server refuses a KEXINIT with none in common
const CIPHERS = 'chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr,aes128-gcm@openssh.com,aes256-gcm@openssh.com';
const MACS = 'hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha2-256,hmac-sha2-512,hmac-sha1';
/** A server's banner and first packets are small; anything larger is not an SSH server talking. */
const MAX_BUFFER = 256 * 1024;

function packet(payload: Buffer): Buffer {
  // cleartext packets pad to a multiple of 8 with at least 4 bytes (RFC 4253 6)
  let pad = 8 - ((5 + payload.length) % 8);
  if (pad < 4) pad += 8;
  const head = Buffer.alloc(5);
  head.writeUInt32BE(1 + payload.length + pad);
  head[4] = pad;
  return Buffer.concat([head, payload, randomBytes(pad)]);
}

function kexInit(hostKeyAlgorithms: string[]): Buffer {
  const lists = [KEX.join(','), hostKeyAlgorithms.join(','), CIPHERS, CIPHERS, MACS, MACS, 'none', 'none', '', ''];
  return Buffer.concat([Buffer.from([MSG_KEXINIT]), randomBytes(16), ...lists.map((l) => sshString(l)), Buffer.from([0, 0, 0, 0, 0])]);
}

/** The client's ephemeral public value for the chosen key exchange (its private half is never used). */
function ephemeralPublic(kex: string): Buffer {
  if (kex === 'ecdh-sha2-nistp256') return createECDH('prime256v1').generateKeys();
  const spki = generateKeyPairSync('x25519').publicKey.export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - 32);
}

/** The name-lists of a KEXINIT payload (after its type byte and cookie). */
function nameLists(payload: Buffer): string[][] {
  const r = new WireReader(payload.subarray(17));
  return Array.from({ length: 10 }, () => r.text().split(',').filter(Boolean));
}

/**
 * Run the handshake over `stream` (a fresh TCP connection or a jump host's forward) offering
 * `certAlgorithms` in order of preference; always ends the stream.
 */
export function fetchHostCertificate(stream: Duplex, certAlgorithms: string[], timeoutMs: number): Promise<CertificateFetch> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    let sawBanner = false;
    let settled = false;
    const finish = (r: CertificateFetch) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stream.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ lost: `no answer within ${timeoutMs} ms` }), timeoutMs);

    const onPacket = (payload: Buffer) => {
      const type = payload[0];
      if (type === MSG_DISCONNECT) return finish({ lost: 'the server hung up' });
      if (type === MSG_KEXINIT) {
        const [kexes, hostKeys] = nameLists(payload);
        const kex = KEX.find((k) => kexes.includes(k));
        if (!hostKeys.some((a) => certAlgorithms.includes(a))) return finish({ none: 'the host offers no certificate' });
        if (!kex) return finish({ none: 'no key exchange in common' });
        stream.write(packet(Buffer.concat([Buffer.from([MSG_KEX_ECDH_INIT]), sshString(ephemeralPublic(kex))])));
        return;
      }
      // the reply's first field is the host key: the certificate
      if (type === MSG_KEX_ECDH_REPLY) return finish({ certificate: Buffer.from(new WireReader(payload.subarray(1)).bytes()) });
      // SSH_MSG_IGNORE, DEBUG and the like before the reply: skip
    };

    stream.on('data', (chunk: Buffer) => {
      if (settled) return;
      buf = Buffer.concat([buf, chunk]);
      if (buf.length > MAX_BUFFER) return finish({ none: 'the server sent too much before its key exchange reply' });
      try {
        while (!settled) {
          if (!sawBanner) {
            // lines before the version line are allowed (RFC 4253 4.2)
            const nl = buf.indexOf(10);
            if (nl < 0) return;
            const line = buf.subarray(0, nl).toString('latin1');
            buf = buf.subarray(nl + 1);
            if (line.startsWith('SSH-')) {
              if (!/^SSH-(2\.0|1\.99)-/.test(line)) return finish({ none: 'not an SSH-2 server' });
              sawBanner = true;
              stream.write(packet(kexInit(certAlgorithms)));
            }
            continue;
          }
          if (buf.length < 5) return;
          const length = buf.readUInt32BE(0);
          if (length < 2 || length > MAX_BUFFER) return finish({ none: 'a malformed packet' });
          if (buf.length < 4 + length) return;
          const pad = buf[4];
          if (pad + 1 > length) return finish({ none: 'a malformed packet' });
          const payload = buf.subarray(5, 4 + length - pad);
          buf = buf.subarray(4 + length);
          onPacket(payload);
        }
      } catch (e) {
        finish({ none: (e as Error).message });
      }
    });
    stream.on('error', (e) => finish({ lost: e.message }));
    stream.on('close', () => finish({ lost: 'the connection closed' }));
    stream.write('SSH-2.0-racksmith_cert\r\n');
  });
}
