// A host certificate's fetch (a second handshake) still under way when the main handshake ends:
// timed out, or Ctrl-C. Its late answer must reach neither ssh2 (whose done() throws once the
// connection is torn down: an unhandled rejection ends a run) nor known_hosts. A real ssh2 server
// on loopback answers the main handshake; the second connection is accepted and never answered
// (a tarpit, an overloaded sshd).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import ssh2 from 'ssh2';
import { SshConnection } from '../../src/connection/ssh.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-cert-end-'));
const servers: net.Server[] = [];
afterAll(() => {
  servers.forEach((s) => s.close());
  rmSync(dir, { recursive: true, force: true });
});

/** A loopback sshd stand-in: the first connection an ssh2 server, every later one silent. */
async function serverWithSilentSecond(): Promise<number> {
  const hostKey = ssh2.utils.generateKeyPairSync('ed25519').private;
  const srv = new ssh2.Server({ hostKeys: [hostKey] }, (c) => c.on('error', () => undefined));
  let n = 0;
  const tcp = net.createServer((s) => {
    s.on('error', () => undefined);
    if (++n === 1) srv.injectSocket(s);
  });
  servers.push(tcp);
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  return (tcp.address() as net.AddressInfo).port;
}

/** known_hosts that asks every host for a certificate of a CA. */
function caKnownHosts(): string {
  const own = mkdtempSync(join(dir, 'case-'));
  const ca = join(own, 'ca');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', ca]);
  const kh = join(own, 'known_hosts');
  writeFileSync(kh, `@cert-authority * ${readFileSync(`${ca}.pub`, 'utf8')}`);
  return kh;
}

describe('a certificate fetch outlived by its handshake', () => {
  it.for([
    ['the handshake timed out first', false],
    ['Ctrl-C during the handshake', true],
  ] as const)('%s: the connection fails, nothing unhandled after, known_hosts untouched', async ([, ctrlC]) => {
    const port = await serverWithSilentSecond();
    const kh = caKnownHosts();
    const before = readFileSync(kh, 'utf8');
    const unhandled: unknown[] = [];
    const seen = (r: unknown) => unhandled.push(r);
    process.on('unhandledRejection', seen);
    try {
      const stop = new AbortController();
      if (ctrlC) setTimeout(() => stop.abort(), 200);
      const opening = SshConnection.open({
        name: 'h',
        address: '127.0.0.1',
        port,
        user: 'x',
        connectTimeoutMs: ctrlC ? 1500 : 400,
        knownHostsFile: kh,
        acceptNewHostKeys: true,
        agent: '',
        signal: stop.signal,
      });
      await expect(opening).rejects.toThrow(ctrlC ? /interrupted/ : /Timed out while waiting for handshake/);
      // past the fetch's own timeouts (its channel, then its answer): its end has come and gone
      await new Promise((r) => setTimeout(r, (ctrlC ? 1500 : 400) * 2 + 300));
      expect(unhandled).toEqual([]);
      expect(readFileSync(kh, 'utf8')).toBe(before);
    } finally {
      process.off('unhandledRejection', seen);
    }
  });
});
