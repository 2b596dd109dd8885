// The certificate handshake against servers that misbehave: a loopback listener plays the server
// (a test double; the real sshd serving a certificate is test/e2e/known-hosts.test.ts). Every
// case ends with a reason, within the timeout, never a hang or a throw.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchHostCertificate } from '../../src/connection/certificate-fetch.ts';
import { sshString } from '../../src/connection/host-certificate.ts';

const servers: net.Server[] = [];
afterEach(() => servers.splice(0).forEach((s) => s.close()));

/** A server on 127.0.0.1 that runs `onClient` for its first connection; resolves a client socket to it. */
async function serve(onClient: (sock: net.Socket) => void): Promise<net.Socket> {
  const server = net.createServer((s) => {
    s.on('error', () => {}); // the client hangs up on it: a reset, expected
    onClient(s);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return net.connect({ host: '127.0.0.1', port });
}

function packet(payload: Buffer): Buffer {
  const pad = 8 - ((5 + payload.length) % 8) + 8;
  const head = Buffer.alloc(5);
  head.writeUInt32BE(1 + payload.length + pad);
  head[4] = pad;
  return Buffer.concat([head, payload, Buffer.alloc(pad)]);
}
function kexInit(kex: string, hostKeys: string): Buffer {
  const lists = [kex, hostKeys, 'aes128-ctr', 'aes128-ctr', 'hmac-sha2-256', 'hmac-sha2-256', 'none', 'none', '', ''];
  return packet(Buffer.concat([Buffer.from([20]), Buffer.alloc(16), ...lists.map((l) => sshString(l)), Buffer.alloc(5)]));
}
const CERT_ALGS = ['ssh-ed25519-cert-v01@openssh.com'];

describe('fetchHostCertificate', () => {
  it('returns the key blob of the KEX reply, after banner lines and an IGNORE packet', async () => {
    const blob = Buffer.concat([sshString('ssh-ed25519-cert-v01@openssh.com'), sshString('rest')]);
    let clientInit: Buffer | undefined;
    const sock = await serve((s) => {
      s.write('a line before the version\r\nSSH-2.0-fake\r\n');
      s.write(kexInit('curve25519-sha256', 'ssh-ed25519,ssh-ed25519-cert-v01@openssh.com'));
      s.write(packet(Buffer.concat([Buffer.from([2]), sshString('ignored')])));
      s.on('data', (d) => {
        clientInit = d;
        if (d.includes(Buffer.from([30])))
          s.write(packet(Buffer.concat([Buffer.from([31]), sshString(blob), sshString('Q'), sshString('sig')])));
      });
    });
    const r = await fetchHostCertificate(sock, CERT_ALGS, 2000);
    expect(r).toEqual({ certificate: blob });
    expect(clientInit).toBeDefined();
  });

  it.each([
    [
      'a host that offers no certificate',
      (s: net.Socket) => s.write('SSH-2.0-fake\r\n') && s.write(kexInit('curve25519-sha256', 'ssh-ed25519')),
      'none',
      /offers no certificate/,
    ],
    [
      'no key exchange in common',
      (s: net.Socket) => s.write('SSH-2.0-fake\r\n') && s.write(kexInit('diffie-hellman-group14-sha256', CERT_ALGS[0])),
      'none',
      /no key exchange/,
    ],
    ['an SSH-1 server', (s: net.Socket) => s.write('SSH-1.5-old\r\n'), 'none', /not an SSH-2 server/],
    [
      'a packet length beyond any KEXINIT',
      (s: net.Socket) => s.write(Buffer.concat([Buffer.from('SSH-2.0-x\r\n'), Buffer.from([0x7f, 0, 0, 0, 4])])),
      'none',
      /malformed/,
    ],
    [
      'a truncated KEXINIT',
      (s: net.Socket) => s.write(Buffer.concat([Buffer.from('SSH-2.0-x\r\n'), packet(Buffer.from([20, 1, 2]))])),
      'none',
      /truncated/,
    ],
    [
      'a disconnect',
      (s: net.Socket) => s.write(Buffer.concat([Buffer.from('SSH-2.0-x\r\n'), packet(Buffer.from([1, 0, 0, 0, 2]))])),
      'lost',
      /hung up/,
    ],
    ['a server that closes', (s: net.Socket) => s.end(), 'lost', /closed/],
    ['endless banner lines', (s: net.Socket) => s.write(Buffer.alloc(300 * 1024, 'x')), 'none', /too much/],
    ['a server that never answers', () => {}, 'lost', /no answer within 300 ms/],
  ] as const)(
    '%s: ends with a reason (%s: no certificate shown, or the connection lost before an answer)',
    async (_, behave, kind, why) => {
      const sock = await serve(behave);
      const r = await fetchHostCertificate(sock, CERT_ALGS, 300);
      expect(Object.keys(r)).toEqual([kind]);
      expect((r as Record<string, string>)[kind]).toMatch(why);
      expect(sock.destroyed).toBe(true);
    },
  );
});
