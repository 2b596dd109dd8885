// Gathering host facts before a run (src/engine/gather-facts.ts): one exec per host over the
// connection the run then takes, and every way a host can fail to give them. Hosts are
// FakeConnections (test/support/fake-host.ts): the real gatherer runs in this machine's /bin/sh.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConnectError, type Connection } from '../../src/connection/types.ts';
import type { ConnectOptions } from '../../src/connection/connect.ts';
import { BecomeError } from '../../src/connection/become.ts';
import { gatherAll, isFailure, SharedConnections } from '../../src/engine/gather-facts.ts';
import type { Host } from '../../src/inventory/model.ts';
import { FakeConnection, neverConnecting, type Faults } from '../support/fake-host.ts';

const host = (name: string) => ({ name }) as Host;
const OPTIONS: ConnectOptions = { inventoryFile: 'inventory.yaml', acceptNewHostKeys: false, connectTimeoutMs: 1000 };

/** Connections to fake hosts with these faults; `opened` counts connects per host. */
function fakes(faults: Record<string, Faults> = {}) {
  const opened = new Map<string, FakeConnection[]>();
  const conns = new SharedConnections(
    async (h) => {
      const f = faults[h.name] ?? {};
      if (f.connectError) throw f.connectError;
      const c = new FakeConnection(h.name, f);
      opened.set(h.name, [...(opened.get(h.name) ?? []), c]);
      return c;
    },
    OPTIONS,
    1,
  );
  return { conns, opened };
}

// (the first two gather this machine's facts: a runner with hundreds of block devices takes a second)
describe('gathering facts', { timeout: 30_000 }, () => {
  it('one exec per host, read from the host itself', async () => {
    const { conns, opened } = fakes();
    const got = await gatherAll([host('a'), host('b')], conns, { forks: 2 });
    const memKb = Number(/^MemTotal:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]);
    for (const h of ['a', 'b']) {
      const f = got.get(h)!;
      expect(isFailure(f)).toBe(false);
      expect(f).toMatchObject({ memory: { totalBytes: memKb * 1024 } });
      expect(opened.get(h)!.map((c) => c.execCount)).toEqual([1]);
    }
  });

  it('the run takes the gathered connection once, then connects anew; the ones it did not take are closed', async () => {
    const { conns, opened } = fakes();
    await gatherAll([host('a'), host('b')], conns, { forks: 1 });
    const first = await conns.connector(host('a'), OPTIONS);
    expect(first).toBe(opened.get('a')![0]);
    const again: Connection = await conns.connector(host('a'), OPTIONS);
    expect(again).not.toBe(first);
    await conns.closeUnused();
    expect(opened.get('a')![0].closed).toBe(false); // the run's to close
    expect(opened.get('b')![0].closed).toBe(true);
  });

  it.each<[string, Faults, { error: RegExp; unreachable: boolean }]>([
    [
      'a host that cannot be reached',
      { connectError: new ConnectError('c: cannot connect to 10.0.0.3:22', false) },
      { error: /^c: cannot connect/, unreachable: true },
    ],
    ['a host whose connection is lost during the exec', { lostAfterExec: 1 }, { error: /^connection lost/, unreachable: true }],
    [
      'a host that never answers (--host-timeout)',
      { hangAtExec: 1 },
      { error: /^timed out after 0\.3s gathering facts$/, unreachable: true },
    ],
  ])('%s: no facts, and why', async (_name, faults, failure) => {
    const { conns, opened } = fakes({ c: faults });
    const got = await gatherAll([host('c')], conns, { forks: 1, timeoutMs: faults.hangAtExec ? 300 : 20_000 });
    expect(got.get('c')).toMatchObject(failure);
    if (faults.hangAtExec) expect(opened.get('c')![0].closed).toBe(true);
  });

  it('a host still connecting at its --host-timeout (waiting for a handshake turn) is given up: its connection attempt stopped', async () => {
    const stopped: string[] = [];
    const conns = new SharedConnections(neverConnecting(stopped), OPTIONS, 1);
    const got = await gatherAll([host('q')], conns, { forks: 1, timeoutMs: 200 });
    expect(got.get('q')).toEqual({ error: 'timed out after 0.2s gathering facts', unreachable: true });
    expect(stopped).toEqual(['q']);
    await conns.closeUnused(); // nothing left waiting to connect
  });

  it('an interrupt during a gather that never answers ends it after the run’s grace, its connection aborted', async () => {
    const { conns, opened } = fakes({ h: { hangAtExec: 1 } });
    const abort = new AbortController();
    const got = gatherAll([host('h')], conns, { forks: 1, signal: abort.signal });
    await expect.poll(() => opened.get('h')?.[0].execCount).toBe(1); // the gatherer's exec is in flight
    abort.abort();
    expect(await got).toEqual(new Map([['h', { error: 'interrupted while its facts were gathered', unreachable: false }]]));
    expect(opened.get('h')![0].closed).toBe(true);
  });

  it('after an interrupt no host starts (and none counts an exec in its recap)', async () => {
    const { conns, opened } = fakes();
    const abort = new AbortController();
    abort.abort();
    const got = await gatherAll([host('a')], conns, { forks: 1, signal: abort.signal });
    expect(got.get('a')).toEqual({ error: 'interrupted before its facts were gathered', unreachable: false });
    expect(opened.size).toBe(0);
  });
});

describe('a gatherer that gives no facts', () => {
  it.each<[string, { stdout: string; stderr: string; code: number | null }, string]>([
    ['it failed', { stdout: '', stderr: 'sh: 1: sed: not found\n', code: 127 }, 'gathering facts: exit 127: sh: 1: sed: not found'],
    [
      'its output was cut short',
      { stdout: '@ racksmith-facts 1\n\n@ uname\n', stderr: '', code: 0 },
      'gathering facts: the facts gatherer did not finish (its output was cut short)',
    ],
  ])('%s: the host failed (reachable), with why', async (_name, result, error) => {
    const conns = new SharedConnections(
      async () => ({ host: 'x', execCount: 0, exec: async () => result, close: async () => {} }),
      OPTIONS,
      1,
    );
    expect((await gatherAll([host('x')], conns, { forks: 1 })).get('x')).toEqual({ error, unreachable: false, execs: 1 });
  });
});

it("a host that refuses sudo failed (reachable), with sudo's reason", async () => {
  const refuse = async (): Promise<never> => {
    throw new BecomeError('x: sudo: a password is required');
  };
  const conns = new SharedConnections(async () => ({ host: 'x', execCount: 0, exec: refuse, close: async () => {} }), OPTIONS, 1);
  expect((await gatherAll([host('x')], conns, { forks: 1 })).get('x')).toEqual({
    error: 'x: sudo: a password is required',
    unreachable: false,
    execs: 1,
  });
});
