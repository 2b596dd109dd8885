// --ssh-handshakes (src/connection/handshake-gate.ts): at most N SSH handshakes at once, the others
// waiting their turn first come first served, each host's connect timeout started by its own turn
// (1,000 handshakes started together all ran out of their timeout behind each other: docs/scale.md).
// The connection tests use real TCP listeners on loopback that accept and never speak SSH: hosts
// whose handshake hangs until the connect timeout.
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { destinationOf, HandshakeGate } from '../../src/connection/handshake-gate.ts';
import { SshConnection } from '../../src/connection/ssh.ts';
import { ConnectError } from '../../src/connection/types.ts';
import { silentPeer, silentPeerOptions } from '../support/silent-peer.ts';

const interrupted = () => new Error('interrupted');

describe('HandshakeGate', () => {
  it('lets `limit` in at once and hands each released turn to the longest waiting, in order', async () => {
    const gate = new HandshakeGate(2);
    const a = await gate.enter(undefined, interrupted);
    const b = await gate.enter(undefined, interrupted);
    const order: string[] = [];
    const c = gate.enter(undefined, interrupted).then((release) => (order.push('c'), release));
    const d = gate.enter(undefined, interrupted).then((release) => (order.push('d'), release));
    await Promise.resolve();
    expect(order).toEqual([]);
    expect(gate.load).toEqual({ inFlight: 2, waiting: 2 });
    b();
    const releaseC = await c;
    expect(order).toEqual(['c']);
    expect(gate.load).toEqual({ inFlight: 2, waiting: 1 });
    a();
    (await d)();
    releaseC();
    expect(order).toEqual(['c', 'd']);
    expect(gate.load).toEqual({ inFlight: 0, waiting: 0 });
  });

  it('a release called twice frees one turn, not two', async () => {
    const gate = new HandshakeGate(1);
    const a = await gate.enter(undefined, interrupted);
    a();
    a();
    expect(gate.load).toEqual({ inFlight: 0, waiting: 0 });
    await gate.enter(undefined, interrupted);
    let second = false;
    void gate.enter(undefined, interrupted).then(() => (second = true));
    await Promise.resolve();
    expect(second).toBe(false);
    expect(gate.load).toEqual({ inFlight: 1, waiting: 1 });
  });

  it('Ctrl-C ends a wait at once with the caller`s error and leaves the queue; an interrupted run never enters', async () => {
    const gate = new HandshakeGate(1);
    const held = await gate.enter(undefined, interrupted);
    const abort = new AbortController();
    const waiting = gate.enter(abort.signal, interrupted);
    expect(gate.load.waiting).toBe(1);
    abort.abort();
    await expect(waiting).rejects.toThrow('interrupted');
    expect(gate.load).toEqual({ inFlight: 1, waiting: 0 });
    await expect(gate.enter(abort.signal, interrupted)).rejects.toThrow('interrupted');
    held();
    expect(gate.load).toEqual({ inFlight: 0, waiting: 0 });
  });

  it('per destination (one sshd, under its MaxStartups): at most perDestination connections at once, others elsewhere unhindered', async () => {
    const gate = new HandshakeGate(100, 3);
    const to = (destination: string, connections = 1) => ({ destination, connections });
    const held = [
      await gate.enter(undefined, interrupted, to('bastion:22')),
      await gate.enter(undefined, interrupted, to('bastion:22', 2)),
    ];
    expect(gate.loadOf('bastion:22')).toEqual({ inFlight: 3, waiting: 0 });
    let fourth = false;
    const waiting = gate.enter(undefined, interrupted, to('bastion:22')).then((r) => ((fourth = true), r));
    // another sshd, and a host behind the bastion (its own sshd, reached by a forward), go at once
    (await gate.enter(undefined, interrupted, to('other:22')))();
    (await gate.enter(undefined, interrupted, to('bastion:22>tb2:22')))();
    expect(fourth).toBe(false);
    expect(gate.loadOf('bastion:22')).toEqual({ inFlight: 3, waiting: 1 });
    // a host waiting for its destination holds none of the run's turns
    expect(gate.load).toEqual({ inFlight: 2, waiting: 0 });
    held[1](); // a certificate fetch's two connections freed
    (await waiting)();
    held[0]();
    expect(gate.loadOf('bastion:22')).toEqual({ inFlight: 0, waiting: 0 });
    expect(gate.load).toEqual({ inFlight: 0, waiting: 0 });
  });

  it('per destination: Ctrl-C ends a wait there, and the next in line that fits goes on', async () => {
    const gate = new HandshakeGate(100, 2);
    const a = await gate.enter(undefined, interrupted, { destination: 'ctl:22', connections: 1 });
    const abort = new AbortController();
    const big = gate.enter(abort.signal, interrupted, { destination: 'ctl:22', connections: 2 });
    let small = false;
    const next = gate.enter(undefined, interrupted, { destination: 'ctl:22', connections: 1 }).then((r) => ((small = true), r));
    await Promise.resolve();
    expect(small).toBe(false); // first come, first served: it waits behind the larger request
    abort.abort();
    await expect(big).rejects.toThrow('interrupted');
    (await next)();
    a();
    expect(gate.loadOf('ctl:22')).toEqual({ inFlight: 0, waiting: 0 });
  });

  it('destinationOf: the sshd at address:port, through its jump host when there is one', () => {
    expect(destinationOf('10.0.0.5', 22)).toBe('10.0.0.5:22');
    expect(destinationOf('10.0.0.5', 22, { address: 'bastion', port: 2222 })).toBe('bastion:2222>10.0.0.5:22');
  });

  it.each([1, 2.5])('refuses a limit per destination of %s (a certificate fetch needs two)', (n) => {
    expect(() => new HandshakeGate(10, n)).toThrow(RangeError);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses a limit of %s', (n) => {
    expect(() => new HandshakeGate(n)).toThrow(RangeError);
  });
});

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** When an open settled, and with what error. */
async function settled(p: Promise<SshConnection>): Promise<{ at: number; error: unknown }> {
  return p.then(
    () => ({ at: performance.now(), error: undefined }),
    (error: unknown) => ({ at: performance.now(), error }),
  );
}

describe('SSH connections through the gate', () => {
  it('a host over the limit connects only once a turn is free, and gets its whole connect timeout from then', async () => {
    const TIMEOUT = 400;
    const gate = new HandshakeGate(1);
    const [first, second] = [await silentPeer(servers), await silentPeer(servers)];
    const a = settled(SshConnection.open(silentPeerOptions('first', first.port, { connectTimeoutMs: TIMEOUT, handshakes: gate })));
    const b = settled(SshConnection.open(silentPeerOptions('second', second.port, { connectTimeoutMs: TIMEOUT, handshakes: gate })));
    const [ra, rb] = await Promise.all([a, b]);
    for (const r of [ra, rb]) expect((r.error as Error).message).toMatch(/Timed out while waiting for handshake/);
    // the second host's TCP connection was not even made while the first held the turn...
    expect(first.acceptedAt).toHaveLength(1);
    expect(second.acceptedAt).toHaveLength(1);
    expect(second.acceptedAt[0]).toBeGreaterThanOrEqual(ra.at);
    // ...and its timeout ran from its own turn, not from when it started waiting
    expect(rb.at - second.acceptedAt[0]).toBeGreaterThanOrEqual(TIMEOUT - 50);
    expect(gate.load).toEqual({ inFlight: 0, waiting: 0 });
  });

  it('without a gate both hosts connect at once (what the test above tells apart)', async () => {
    const [first, second] = [await silentPeer(servers), await silentPeer(servers)];
    const abort = new AbortController();
    const a = settled(SshConnection.open(silentPeerOptions('first', first.port, { signal: abort.signal })));
    const b = settled(SshConnection.open(silentPeerOptions('second', second.port, { signal: abort.signal })));
    await Promise.all([first.accepted(), second.accepted()]);
    abort.abort();
    await Promise.all([a, b]);
  });

  it('Ctrl-C while a host waits for its turn: a final ConnectError at once, no connection ever made, the turn holder dropped too', async () => {
    const gate = new HandshakeGate(1);
    const [holder, waiter] = [await silentPeer(servers), await silentPeer(servers)];
    const abort = new AbortController();
    const a = settled(SshConnection.open(silentPeerOptions('holder', holder.port, { handshakes: gate, signal: abort.signal })));
    const sock = await holder.accepted();
    // (read and dropped, so that the peer sees the holder's socket close: a socket not read never does)
    sock.resume();
    const closed = once(sock, 'close');
    const b = settled(SshConnection.open(silentPeerOptions('waiter', waiter.port, { handshakes: gate, signal: abort.signal })));
    // (the waiter reaches the gate within a few microtasks: awaited by the gate's load, not counted)
    await vi.waitFor(() => expect(gate.load).toEqual({ inFlight: 1, waiting: 1 }), { interval: 1 });
    abort.abort();
    const [ra, rb] = await Promise.all([a, b]);
    for (const [r, name, port] of [
      [ra, 'holder', holder.port],
      [rb, 'waiter', waiter.port],
    ] as const) {
      expect(r.error).toBeInstanceOf(ConnectError);
      expect((r.error as ConnectError).transient).toBe(false);
      expect((r.error as Error).message).toBe(`${name}: interrupted while connecting to 127.0.0.1:${port}`);
    }
    await closed;
    expect(waiter.acceptedAt).toHaveLength(0);
    expect(gate.load).toEqual({ inFlight: 0, waiting: 0 });
  });

  it('a host that cannot connect at all (refused) gives its turn back', async () => {
    const gate = new HandshakeGate(1);
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    server.close();
    await once(server, 'close');
    const r = await settled(SshConnection.open(silentPeerOptions('refused', port, { handshakes: gate })));
    expect((r.error as Error).message).toMatch(/cannot connect to 127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    expect(gate.load).toEqual({ inFlight: 0, waiting: 0 });
  });
});
