import type { Connection } from '../connection/types.ts';
import { ConnectError } from '../connection/types.ts';
import type { ConnectOptions } from '../connection/connect.ts';
import { withRetry } from '../connection/retry.ts';
import { BecomeError } from '../connection/become.ts';
import type { Host } from '../inventory/model.ts';
import { NoFacts } from '../contract/playbook.ts';
import { GatherError, gatherFacts } from '../facts/gather.ts';
import type { HostFacts } from '../facts/types.ts';
import type { FactsOf } from './run-types.ts';

/** Why a host has no facts: it is not run (`ExecuteOptions.refused`), with this as its recap's error. */
export interface FactsFailure {
  error: string;
  unreachable: boolean;
  /** The gatherer's exec when it ran and the host answered (its recap counts it); absent when none ran. */
  execs?: 1;
}

/** Each host's facts, or why they could not be gathered. */
export type GatheredFacts = ReadonlyMap<string, HostFacts | FactsFailure>;

/**
 * Connections opened before the run (to gather facts) and then handed to it: a host gathered
 * and run costs one connection. `connector` is the run's (ExecuteOptions.connector).
 */
export class SharedConnections {
  private readonly opened = new Map<string, Promise<Connection>>();
  private readonly handed = new Set<string>();
  constructor(
    private readonly connect: (host: Host, o: ConnectOptions) => Promise<Connection>,
    private readonly options: ConnectOptions,
    private readonly attempts: number,
  ) {}

  open(host: Host): Promise<Connection> {
    let p = this.opened.get(host.name);
    if (!p) {
      p = withRetry(
        () => this.connect(host, this.options),
        this.attempts,
        (e) => e instanceof ConnectError && e.transient,
      );
      this.opened.set(host.name, p);
    }
    return p;
  }

  /** The run's connector: a host's gathered connection the first time (the run closes it), a new one after. */
  readonly connector = (host: Host, o: ConnectOptions): Promise<Connection> => {
    const p = this.opened.get(host.name);
    if (p && !this.handed.has(host.name)) {
      this.handed.add(host.name);
      return p;
    }
    return this.connect(host, o);
  };

  /** Close the connections the run did not take (hosts it refused). */
  async closeUnused(): Promise<void> {
    await Promise.all(
      [...this.opened]
        .filter(([h]) => !this.handed.has(h))
        .map(([, p]) =>
          p.then(
            (c) => c.close(),
            () => undefined,
          ),
        ),
    );
  }
}

/**
 * Gather `hosts`' facts, up to `forks` at once: one exec each. A host that does not answer within
 * `timeoutMs` (--host-timeout) is given up on (its connection aborted), as the run would; after
 * an interrupt no further host starts.
 */
export async function gatherAll(
  hosts: readonly Host[],
  conns: SharedConnections,
  o: { forks: number; timeoutMs?: number; signal?: AbortSignal },
): Promise<GatheredFacts> {
  const out = new Map<string, HostFacts | FactsFailure>();
  const queue = [...hosts];
  const one = async (h: Host): Promise<HostFacts | FactsFailure> => {
    if (o.signal?.aborted) return { error: 'interrupted before its facts were gathered', unreachable: false };
    let conn: Connection;
    try {
      conn = await conns.open(h);
    } catch (e) {
      return { error: (e as Error).message, unreachable: true };
    }
    try {
      return await gatherFacts(conn);
    } catch (e) {
      // (an exec that fails is a connection lost: unreachable, as in the run; a refused sudo is a failed host)
      const reachable = e instanceof GatherError || e instanceof BecomeError;
      return reachable ? { error: (e as Error).message, unreachable: false, execs: 1 } : { error: (e as Error).message, unreachable: true };
    }
  };
  const worker = async () => {
    for (let h = queue.shift(); h; h = queue.shift()) out.set(h.name, await withTimeout(one(h), h, conns, o.timeoutMs));
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, o.forks), hosts.length) }, worker));
  return out;
}

/** `work`, or after `ms` an unreachable host whose connection is aborted (its exec then fails and is dropped). */
async function withTimeout(
  work: Promise<HostFacts | FactsFailure>,
  h: Host,
  conns: SharedConnections,
  ms: number | undefined,
): Promise<HostFacts | FactsFailure> {
  if (!ms) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<FactsFailure>((done) => {
    timer = setTimeout(() => {
      void conns.open(h).then(
        (c) => (c.abort ? c.abort() : c.close()),
        () => undefined,
      );
      done({ error: `timed out after ${ms / 1000}s gathering facts`, unreachable: true });
    }, ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** What a play with `facts: true` gives its HostContext for host `name`. */
export function factsOf(gathered: GatheredFacts): FactsOf {
  return (name) => {
    const f = gathered.get(name);
    if (!f) return new NoFacts(`the facts of ${name} were not gathered`);
    return isFailure(f) ? new NoFacts(f.error) : f;
  };
}

export function isFailure(f: HostFacts | FactsFailure): f is FactsFailure {
  return 'error' in f;
}
