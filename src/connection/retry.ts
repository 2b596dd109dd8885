import { ConnectError } from './types.ts';

/**
 * Retry `fn` up to `attempts` times while `transient(error)` holds, with full-jitter exponential
 * backoff (so a rack of hosts rebooting together is not hammered in lockstep). `signal` (Ctrl-C)
 * ends the wait between attempts at once, with the last attempt's error.
 */
export async function withRetry<T>(
  fn: () => Promise<T>,
  attempts: number,
  transient: (e: unknown) => boolean,
  { baseMs = 250, signal }: { baseMs?: number; signal?: AbortSignal } = {},
): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= attempts || !transient(e) || signal?.aborted) throw e;
      await pause(Math.random() * baseMs * 2 ** (i - 1), signal);
      if (signal?.aborted) throw e;
    }
  }
}

/** What is retried: a connection refused, reset, timed out or dropped, not authentication or a host key. */
export const transientConnectError = (e: unknown): boolean => e instanceof ConnectError && e.transient;

/** `ms`, or less when `signal` aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((done) => {
    const end = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', end);
      done();
    };
    const timer = setTimeout(end, ms);
    signal?.addEventListener('abort', end, { once: true });
  });
}
