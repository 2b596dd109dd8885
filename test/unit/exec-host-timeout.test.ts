// `provision exec`'s --host-timeout while a host is still connecting (src/exec/run-exec.ts): the
// host is given up and its connection attempt stopped, a wait for a handshake turn
// (--ssh-handshakes) included, instead of waiting for a connection it would only drop.
import { describe, expect, it } from 'vitest';
import { runExec } from '../../src/exec/run-exec.ts';
import { FakeFleet, neverConnecting } from '../support/fake-host.ts';

describe('provision exec: a host given up while still connecting', () => {
  it('--host-timeout stops its connection attempt: unreachable, timed out, at once', async () => {
    const [host] = new FakeFleet(['h1']).inventory().hosts;
    const stopped: string[] = [];
    const connector = neverConnecting(stopped);
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
