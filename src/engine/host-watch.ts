import { getMaxListeners, setMaxListeners } from 'node:events';
import type { Connection } from '../connection/types.ts';

/** What each host in flight puts on the run's interrupt signal: its watch and its connection attempt (ssh.ts). */
const LISTENERS_PER_HOST = 2;

/**
 * Lets `forks` hosts in flight listen for the interrupt without Node's leak warning (printed on
 * stderr in the middle of a run), which stays for a real leak: more listeners than that.
 */
export function allowHostsInFlight(signal: AbortSignal | undefined, forks: number): void {
  if (signal) setMaxListeners(Math.max(getMaxListeners(signal), LISTENERS_PER_HOST * forks + 10), signal);
}

/** Why a host's watch ended it. */
export type HostEnd = 'timeout' | 'interrupted';

/** A host's end as the run sees it: when it came (`ended`), why (`reason`), and its timers' cleanup. */
export interface HostWatch {
  readonly ended: Promise<HostEnd>;
  readonly reason: HostEnd | undefined;
  clear(): void;
}

/** After an interrupt, how long the steps in flight get to finish before their hosts are aborted. */
const INTERRUPT_GRACE_MS = 1500;
/** After a host's abort, how long its work gets to notice (its exec fails) before it is left behind. */
const ABANDON_AFTER_MS = 1500;

/**
 * A host's end, when its --host-timeout passes or the run is interrupted (Ctrl-C: after a grace
 * for the exec in flight): its connection is aborted (the remote process groups killed, the
 * socket dropped), so nothing of a host outlasts either. A connection still being made is
 * stopped by `stopConnecting` (connect.ts `stoppable`): it leaves the queue for a handshake turn.
 */
export function watchHost(
  conn: Promise<Connection>,
  hostTimeoutMs: number | undefined,
  signal: AbortSignal | undefined,
  stopConnecting?: () => void,
): HostWatch {
  let reason: HostEnd | undefined;
  let fire: (r: HostEnd) => void = () => {};
  const ended = new Promise<HostEnd>((r) => (fire = r));
  let grace: NodeJS.Timeout | undefined;
  const end = (r: HostEnd) => {
    if (reason) return;
    reason = r;
    fire(r);
    stopConnecting?.();
    void conn.then(
      (c) => (c.abort ? c.abort() : c.close()),
      () => undefined,
    );
  };
  const timer = hostTimeoutMs ? setTimeout(() => end('timeout'), hostTimeoutMs) : undefined;
  const onAbort = () => (grace = setTimeout(() => end('interrupted'), INTERRUPT_GRACE_MS));
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  return {
    ended,
    get reason() {
      return reason;
    },
    clear() {
      clearTimeout(timer);
      clearTimeout(grace);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}

/** What a host's recap says when its watch ended it. */
export function endedError(reason: HostEnd, hostTimeoutMs: number | undefined): string {
  return reason === 'timeout' ? `timed out after ${hostTimeoutMs! / 1000}s` : 'interrupted: the steps in flight were stopped';
}

/** `p`, or undefined once the watch ended and the host's work did not finish within a moment more. */
export function until<T>(p: Promise<T>, w: HostWatch): Promise<T | undefined> {
  return Promise.race([p, w.ended.then(() => new Promise<undefined>((r) => setTimeout(r, ABANDON_AFTER_MS)))]);
}
