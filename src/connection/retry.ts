/**
 * Retry `fn` up to `attempts` times while `transient(error)` holds, with full-jitter exponential
 * backoff (so a rack of hosts rebooting together is not hammered in lockstep).
 */
export async function withRetry<T>(fn: () => Promise<T>, attempts: number, transient: (e: unknown) => boolean, baseMs = 250): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= attempts || !transient(e)) throw e;
      await new Promise((r) => setTimeout(r, Math.random() * baseMs * 2 ** (i - 1)));
    }
  }
}
