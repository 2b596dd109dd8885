// `provision exec`'s --host-timeout while a host is still connecting (src/exec/run-exec.ts): the
// host is given up and its connection attempt stopped, a wait for a handshake turn
// (--ssh-handshakes) included, instead of waiting for a connection it would only drop.
import { describe, expect, it } from 'vitest';
import type { ConnectOptions } from '../../src/connection/connect.ts';
import { ConnectError, type Connection } from '../../src/connection/types.ts';
import type { Host } from '../../src/inventory/model.ts';
import { runExec } from '../../src/exec/run-exec.ts';
import { FakeFleet } from '../support/fake-host.ts';

describe('provision exec: a host given up while still connecting', () => {
  it('--host-timeout stops its connection attempt: unreachable, timed out, at once', async () => {
    const [host] = new FakeFleet(['h1']).inventory().hosts;
    const stopped: string[] = [];
    // a connection that is never made (a host waiting behind other hosts' handshakes) until stopped
    const connector = (h: Host, o: ConnectOptions): Promise<Connection> =>
      new Promise((_, reject) =>
        o.signal?.addEventListener('abort', () => {
          stopped.push(h.name);
          reject(new ConnectError(`${h.name}: interrupted while connecting`, false));
        }),
      );
    const results = await runExec(
      [host],
      'true',
      'MARK',
      {
        inventoryFile: 'fake',
        acceptNewHostKeys: false,
        connectTimeoutMs: 1000,
        forks: 1,
        connectAttempts: 3,
        hostTimeoutMs: 200,
        connector,
      },
      () => {},
    );
    expect(stopped).toEqual(['h1']);
    expect(results).toEqual([
      expect.objectContaining({ host: 'h1', status: 'unreachable', exitCode: null, error: 'timed out after 0.2s' }),
    ]);
  });
});
