// Ctrl-C while connections are still being made: each is dropped at once, not retried, and not
// left to its connect timeout (a socket still connecting kept the process alive ~10 s at 1,000
// hosts). The peer is a real TCP listener on loopback that accepts and never speaks SSH: a host
// whose handshake hangs.
import { once } from 'node:events';
import type { Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SshConnection } from '../../src/connection/ssh.ts';
import { ConnectError } from '../../src/connection/types.ts';
import { silentPeer, silentPeerOptions } from '../support/silent-peer.ts';

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

const options = (port: number, signal: AbortSignal) => silentPeerOptions('silent', port, { signal });

describe('Ctrl-C while connecting', () => {
  it('drops a handshake in flight at once: a final ConnectError, the peer sees its socket closed', async () => {
    const peer = await silentPeer(servers);
    const abort = new AbortController();
    const opening = SshConnection.open(options(peer.port, abort.signal));
    opening.catch(() => undefined);
    const sock = await peer.accepted(); // TCP is up, the handshake waits for a banner that never comes
    const closed = once(sock, 'close');
    abort.abort();
    const e = await opening.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ConnectError);
    expect((e as ConnectError).transient).toBe(false);
    expect((e as Error).message).toBe(`silent: interrupted while connecting to 127.0.0.1:${peer.port}`);
    await closed; // the socket was dropped, not left to the 120 s connect timeout
  });

  it('does not start a connection once interrupted', async () => {
    const peer = await silentPeer(servers);
    const abort = new AbortController();
    abort.abort();
    let accepted = false;
    void peer.accepted().then(() => (accepted = true));
    await expect(SshConnection.open(options(peer.port, abort.signal))).rejects.toThrow(/interrupted while connecting/);
    expect(accepted).toBe(false);
  });

  it('without an interrupt the handshake is left to its own timeout (the signal changes nothing else)', async () => {
    const peer = await silentPeer(servers);
    const abort = new AbortController();
    const o = { ...options(peer.port, abort.signal), connectTimeoutMs: 300 };
    const e = await SshConnection.open(o).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ConnectError);
    expect((e as Error).message).not.toMatch(/interrupted/);
    expect((e as ConnectError).transient).toBe(true);
  });
});
