import { BecomeError } from '../connection/become.ts';
import { connect, stoppable, type ConnectOptions } from '../connection/connect.ts';
import { withRetry } from '../connection/retry.ts';
import { ConnectError, type Connection } from '../connection/types.ts';
import type { Host } from '../inventory/model.ts';
import { allowHostsInFlight } from '../engine/host-watch.ts';
import { cutOutput, type BoundedText } from './output-bound.ts';
import type { ExecHostResult } from './result.ts';

export interface ExecRunOptions extends ConnectOptions {
  forks: number;
  /** Attempts for transient connection errors (refused, reset, timeout). */
  connectAttempts: number;
  /** Give up on a host after this long, connecting included: its command is killed, it counts as unreachable. */
  hostTimeoutMs?: number;
  /** Ctrl-C: no host is started after it, and the commands in flight are killed. */
  signal?: AbortSignal;
  /** Connection factory, replaceable in tests. */
  connector?: (host: Host, o: ConnectOptions) => Promise<Connection>;
}

const NOTHING: BoundedText = { text: '', cut: 0 };

/**
 * The bounded script (output-bound.ts) on every host, up to `forks` at once, each host's result
 * handed to `onResult` as soon as it is known; the results come back in the hosts' order.
 */
export async function runExec(
  hosts: readonly Host[],
  script: string,
  mark: string,
  o: ExecRunOptions,
  onResult: (r: ExecHostResult) => void,
): Promise<ExecHostResult[]> {
  allowHostsInFlight(o.signal, o.forks);
  const out: ExecHostResult[] = new Array(hosts.length);
  let next = 0;
  const worker = async () => {
    while (next < hosts.length) {
      const i = next++;
      out[i] = o.signal?.aborted ? notRun(hosts[i].name) : await onHost(hosts[i], script, mark, o);
      onResult(out[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, o.forks), hosts.length) }, worker));
  return out;
}

function notRun(host: string): ExecHostResult {
  return { host, status: 'failed', exitCode: null, stdout: NOTHING, stderr: NOTHING, error: 'not run: interrupted' };
}

/** One host: connect (transient errors retried), run, close; its timeout and Ctrl-C abort the connection. */
async function onHost(host: Host, script: string, mark: string, o: ExecRunOptions): Promise<ExecHostResult> {
  const name = host.name;
  let ended: 'timeout' | 'interrupted' | undefined;
  let conn: Connection | undefined;
  const connecting = stoppable(o);
  const end = (why: 'timeout' | 'interrupted') => {
    ended ??= why;
    connecting.stop();
    void conn?.abort?.().catch(() => undefined);
  };
  const timer = o.hostTimeoutMs ? setTimeout(() => end('timeout'), o.hostTimeoutMs) : undefined;
  const onAbort = () => end('interrupted');
  o.signal?.addEventListener('abort', onAbort, { once: true });
  const endedResult = (): ExecHostResult => ({
    host: name,
    status: ended === 'timeout' ? 'unreachable' : 'failed',
    exitCode: null,
    stdout: NOTHING,
    stderr: NOTHING,
    error: ended === 'timeout' ? `timed out after ${o.hostTimeoutMs! / 1000}s` : 'interrupted: the command was stopped',
  });
  try {
    try {
      conn = await withRetry(
        () => (o.connector ?? connect)(host, connecting.options),
        o.connectAttempts,
        (e) => e instanceof ConnectError && e.transient && !ended,
      );
    } catch (e) {
      if (ended) return endedResult();
      return { host: name, status: 'unreachable', exitCode: null, stdout: NOTHING, stderr: NOTHING, error: withoutHost(e, name) };
    }
    // (a host that timed out while connecting: its connection is dropped, nothing is run)
    if (ended) {
      void conn.abort?.().catch(() => undefined);
      return endedResult();
    }
    try {
      const r = await conn.exec(script);
      if (ended) return endedResult();
      const stdout = cutOutput(r.stdout, mark);
      const stderr = cutOutput(r.stderr, mark);
      if (r.code === null)
        return { host: name, status: 'failed', exitCode: null, stdout, stderr, error: 'no exit status: the command was killed' };
      return { host: name, status: r.code === 0 ? 'ok' : 'failed', exitCode: r.code, stdout, stderr };
    } catch (e) {
      if (ended) return endedResult();
      const refused = e instanceof BecomeError;
      return {
        host: name,
        status: refused ? 'failed' : 'unreachable',
        exitCode: null,
        stdout: NOTHING,
        stderr: NOTHING,
        error: withoutHost(e, name),
      };
    }
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
    if (conn && !ended) await conn.close().catch(() => undefined);
  }
}

/** An error's message without its leading `host: ` (the header names the hosts, and hosts then share it). */
function withoutHost(e: unknown, host: string): string {
  const message = (e as Error).message;
  return message.startsWith(`${host}: `) ? message.slice(host.length + 2) : message;
}
