// SSH hosts whose handshake hangs: real TCP listeners on loopback that accept and never speak
// (connect-interrupt.test.ts, handshake-gate.test.ts). Each test file closes its peers after each test.
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SshOptions } from '../../src/connection/ssh.ts';

export interface SilentPeer {
  port: number;
  /** When each connection arrived (performance.now()). */
  acceptedAt: number[];
  /** The next connection accepted. */
  accepted(): Promise<Socket>;
}

/** A listener that accepts and says nothing, added to `servers` (for the caller to close). */
export async function silentPeer(servers: Server[]): Promise<SilentPeer> {
  const server = createServer();
  servers.push(server);
  const acceptedAt: number[] = [];
  server.on('connection', () => acceptedAt.push(performance.now()));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return { port, acceptedAt, accepted: async () => (await once(server, 'connection'))[0] as Socket };
}

/** Options of a connection to a silent peer: an empty known_hosts, a 120 s connect timeout unless `o` says. */
export function silentPeerOptions(name: string, port: number, o: Partial<SshOptions> = {}): SshOptions {
  const dir = mkdtempSync(join(tmpdir(), 'rs-silent-peer-'));
  writeFileSync(join(dir, 'known_hosts'), '');
  return {
    name,
    address: '127.0.0.1',
    port,
    user: 'root',
    knownHostsFile: join(dir, 'known_hosts'),
    acceptNewHostKeys: false,
    connectTimeoutMs: 120_000,
    ...o,
  };
}
