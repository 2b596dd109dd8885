// HostConnections (src/connection/host-connections.ts): each host's one connection, retried on
// transient errors, its attempt stoppable alone; the run and fact gathering both keep one.
import { describe, expect, it } from 'vitest';
import { HostConnections } from '../../src/connection/host-connections.ts';
import { ConnectError, type Connection } from '../../src/connection/types.ts';
import type { ConnectOptions } from '../../src/connection/connect.ts';
import type { Host } from '../../src/inventory/model.ts';
import { FakeConnection, FakeFleet, neverConnecting } from '../support/fake-host.ts';

const [a, b] = new FakeFleet(['a', 'b']).inventory().hosts;
const options = {} as ConnectOptions;

/** A connector that fails each host's first `failures` attempts with `error`, then connects. */
function flaky(failures: number, error: Error) {
  const attempts = new Map<string, number>();
  const made: FakeConnection[] = [];
  const connector = async (host: Host): Promise<Connection> => {
    const n = (attempts.get(host.name) ?? 0) + 1;
    attempts.set(host.name, n);
    if (n <= failures) throw error;
    const c = new FakeConnection(host.name);
    made.push(c);
    return c;
  };
  return { connector, attempts, made };
}

describe('HostConnections', () => {
  it('opens a host once however often it is asked, and each host apart', async () => {
    const f = flaky(0, new Error('unused'));
    const conns = new HostConnections(f.connector, options, 1);
    const first = conns.open(a);
    expect(conns.open(a)).toBe(first);
    expect(conns.get('a')).toBe(first);
    expect(conns.get('b')).toBeUndefined();
    await Promise.all([first, conns.open(b)]);
    expect(Object.fromEntries(f.attempts)).toEqual({ a: 1, b: 1 });
  });

  it.each([
    { error: new ConnectError('connection refused', true), attempts: 3, connects: true, tried: 3 },
    { error: new ConnectError('connection refused', true), attempts: 2, connects: false, tried: 2 },
    { error: new ConnectError('permission denied (publickey)', false), attempts: 3, connects: false, tried: 1 },
    { error: new Error('not a connect error'), attempts: 3, connects: false, tried: 1 },
  ])(
    'retries $error.message ($error.name) within $attempts attempts: connects $connects after $tried',
    async ({ error, attempts, connects, tried }) => {
      const f = flaky(2, error);
      const conns = new HostConnections(f.connector, options, attempts);
      const outcome = await conns.open(a).then(
        () => 'connected',
        (e: Error) => e.message,
      );
      expect(outcome).toBe(connects ? 'connected' : error.message);
      expect(f.attempts.get('a')).toBe(tried);
    },
  );

  it('stops one host’s attempt and leaves the others’ alone', async () => {
    const stopped: string[] = [];
    const conns = new HostConnections(neverConnecting(stopped), options, 3);
    const pa = conns.open(a);
    conns.open(b).catch(() => undefined);
    conns.stop('a');
    await expect(pa).rejects.toThrow('a: interrupted while connecting');
    expect(stopped).toEqual(['a']);
    conns.stop('b');
  });

  it('closes the hosts picked, and skips a connection that failed', async () => {
    const made = new Map<string, FakeConnection>();
    const connector = async (host: Host): Promise<Connection> => {
      if (host.name === 'b') throw new ConnectError('connection refused', false);
      const c = new FakeConnection(host.name);
      made.set(host.name, c);
      return c;
    };
    const conns = new HostConnections(connector, options, 1);
    await conns.open(a);
    await conns.open(b).catch(() => undefined);
    await conns.close((h) => h !== 'a');
    expect(made.get('a')!.closed).toBe(false);
    await conns.close();
    expect(made.get('a')!.closed).toBe(true);
  });
});
