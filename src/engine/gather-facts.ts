import type { Connection } from '../connection/types.ts';
import type { ConnectOptions } from '../connection/connect.ts';
import { HostConnections } from '../connection/host-connections.ts';
import { BecomeError } from '../connection/become.ts';
import type { Host } from '../inventory/model.ts';
import { NoFacts } from '../contract/playbook.ts';
import { GatherError, gatherFacts } from '../facts/gather.ts';
import type { HostFacts } from '../facts/types.ts';
import type { FactsOf } from './run-types.ts';
import { allowHostsInFlight, watchHost, type HostEnd } from './host-watch.ts';

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
  private readonly opened: HostConnections;
  private readonly handed = new Set<string>();
  constructor(
    private readonly connect: (host: Host, o: ConnectOptions) => Promise<Connection>,
    options: ConnectOptions,
    attempts: number,
  ) {
    this.opened = new HostConnections(connect, options, attempts);
  }

  open(host: Host): Promise<Connection> {
    return this.opened.open(host);
  }

  /**
   * A host given up (its watch ended): it leaves the queue for a handshake turn (--ssh-handshakes)
   * and drops a connection still being made, rather than connect later for nothing.
   */
  giveUp(host: string): void {
    this.opened.stop(host);
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
  closeUnused(): Promise<void> {
    return this.opened.close((h) => !this.handed.has(h));
  }
}

/**
 * Gather `hosts`' facts, up to `forks` at once: one exec each. A host watched as in the run
 * (host-watch.ts): one that does not answer within `timeoutMs` (--host-timeout) is given up on,
 * and after an interrupt (Ctrl-C) the gathers in flight get the run's grace, then their
 * connections are aborted; no further host starts.
 */
export async function gatherAll(
  hosts: readonly Host[],
  conns: SharedConnections,
  o: { forks: number; timeoutMs?: number; signal?: AbortSignal },
): Promise<GatheredFacts> {
  allowHostsInFlight(o.signal, o.forks);
  const out = new Map<string, HostFacts | FactsFailure>();
  const queue = [...hosts];
  const one = async (h: Host): Promise<HostFacts | FactsFailure> => {
    if (o.signal?.aborted) return { error: 'interrupted before its facts were gathered', unreachable: false };
    const pending = conns.open(h);
    const w = watchHost(pending, o.timeoutMs, o.signal, () => conns.giveUp(h.name));
    try {
      return await Promise.race([gatherOver(pending), w.ended.then((why) => ended(why, o.timeoutMs))]);
    } finally {
      w.clear();
    }
  };
  const worker = async () => {
    for (let h = queue.shift(); h; h = queue.shift()) out.set(h.name, await one(h));
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, o.forks), hosts.length) }, worker));
  return out;
}

/** The facts read over this connection, or why not. */
async function gatherOver(pending: Promise<Connection>): Promise<HostFacts | FactsFailure> {
  let conn: Connection;
  try {
    conn = await pending;
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
}

/** A host whose watch ended its gathering (its connection aborted: the exec then fails and is dropped). */
function ended(why: HostEnd, timeoutMs: number | undefined): FactsFailure {
  return why === 'timeout'
    ? { error: `timed out after ${timeoutMs! / 1000}s gathering facts`, unreachable: true }
    : { error: 'interrupted while its facts were gathered', unreachable: false };
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
