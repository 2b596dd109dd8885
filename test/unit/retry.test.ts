import { afterEach, describe, expect, it, vi } from 'vitest';
import { transientConnectError, withRetry } from '../../src/connection/retry.ts';
import { ConnectError } from '../../src/connection/types.ts';

/** A connect that fails with these errors in turn, then succeeds; how often it was called. */
function failing(...errors: Error[]) {
  const calls = { n: 0 };
  const fn = async () => {
    const e = errors[calls.n++];
    if (e) throw e;
    return 'connected';
  };
  return { fn, calls };
}
const dropped = () => new ConnectError('ctl: ssh root@ctl:22: Connection lost before handshake', true);

describe('withRetry over connection errors', () => {
  afterEach(() => vi.restoreAllMocks());

  it('retries transient errors up to its attempts, then gives the last', async () => {
    const twice = failing(dropped(), dropped());
    await expect(withRetry(twice.fn, 3, transientConnectError, { baseMs: 1 })).resolves.toBe('connected');
    const thrice = failing(dropped(), dropped(), new ConnectError('third', true));
    await expect(withRetry(thrice.fn, 3, transientConnectError, { baseMs: 1 })).rejects.toThrow('third');
    expect(thrice.calls.n).toBe(3);
  });

  it('never retries an authentication or host-key error', async () => {
    const auth = failing(new ConnectError('ctl: All configured authentication methods failed', false));
    await expect(withRetry(auth.fn, 3, transientConnectError, { baseMs: 1 })).rejects.toThrow('authentication');
    expect(auth.calls.n).toBe(1);
  });

  it('Ctrl-C ends the wait between attempts at once, with the last error', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(1); // (the wait is the full 60 s)
    const abort = new AbortController();
    const once = failing(dropped());
    const t0 = Date.now();
    const tried = withRetry(once.fn, 3, transientConnectError, { baseMs: 60_000, signal: abort.signal });
    setTimeout(() => abort.abort(), 20);
    await expect(tried).rejects.toThrow('Connection lost before handshake');
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(once.calls.n).toBe(1);
  });
});
