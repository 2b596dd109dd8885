/**
 * How many SSH handshakes a run makes at once (--ssh-handshakes). A handshake's key exchange and
 * authentication cost the controller CPU on its one JavaScript thread: started all together (say
 * 1,000 forks), every handshake waits behind all the others and each one's connect timeout runs
 * out while the controller, not the host, is busy; reachable hosts come out unreachable. Through
 * the gate the hosts over the limit wait their turn, and each host's connect timeout starts when
 * its own turn does: it measures the host, not the queue. Execs are not gated (forks bound those).
 *
 * Handshakes to one sshd (a bastion every host jumps through, a drain controller every drain
 * connects to) also take turns of their own, PER_DESTINATION at once unless the run says
 * otherwise (--ssh-handshakes-per-sshd): sshd's MaxStartups
 * (OpenSSH's default 10:30:100) drops new connections at random once 10 are unauthenticated, and
 * the run is not the only client.
 */
export class HandshakeGate {
  private readonly run: Turns;
  /** Per destination (the sshd a connection reaches), while a handshake to it is under way or waits. */
  private readonly destinations = new Map<string, Turns>();

  constructor(
    readonly limit: number,
    readonly perDestination = PER_DESTINATION,
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`handshake limit must be a whole number >= 1, not ${limit}`);
    if (!Number.isInteger(perDestination) || perDestination < 2)
      throw new RangeError(`handshake limit per destination must be a whole number >= 2, not ${perDestination}`);
    this.run = new Turns(limit);
  }

  /**
   * Waits for a turn (first come, first served) and returns its release, to be called once the
   * handshake is over either way. Ctrl-C (`signal`) ends the wait at once with `onAbort`'s error.
   * `to` names the sshd the handshake reaches; `connections` is how many unauthenticated
   * connections it opens there (2 when it fetches the host certificate on a second one). The
   * destination's turn comes first: a host waiting for it holds none of the run's turns, which
   * hosts going elsewhere may use.
   */
  async enter(
    signal: AbortSignal | undefined,
    onAbort: () => Error,
    to?: { destination: string; connections: number },
  ): Promise<() => void> {
    let endHere: (() => void) | undefined;
    if (to) {
      let d = this.destinations.get(to.destination);
      if (!d) this.destinations.set(to.destination, (d = new Turns(this.perDestination)));
      const turns = d;
      try {
        const release = await turns.enter(Math.min(to.connections, this.perDestination), signal, onAbort);
        endHere = () => {
          release();
          if (turns.idle && this.destinations.get(to.destination) === turns) this.destinations.delete(to.destination);
        };
      } catch (e) {
        if (turns.idle) this.destinations.delete(to.destination);
        throw e;
      }
    }
    try {
      const endRun = await this.run.enter(1, signal, onAbort);
      return () => {
        endRun();
        endHere?.();
      };
    } catch (e) {
      endHere?.();
      throw e;
    }
  }

  /** Handshakes under way now, and hosts waiting for a turn (for tests and the bench). */
  get load(): { inFlight: number; waiting: number } {
    return this.run.load;
  }

  /** A destination's handshakes: connections under way now and requests waiting (for tests). */
  loadOf(destination: string): { inFlight: number; waiting: number } {
    return this.destinations.get(destination)?.load ?? { inFlight: 0, waiting: 0 };
  }
}

/**
 * Unauthenticated connections at once to one sshd: under MaxStartups' 10 by default, leaving two
 * for other clients (an operator's ssh, another run) and for the moment sshd takes to count a
 * connection as authenticated after the client has.
 */
export const PER_DESTINATION = 8;

/** Where a handshake goes: the sshd at address:port, as reached through `jump` (its own address:port) if any. */
export function destinationOf(address: string, port: number, jump?: { address: string; port: number }): string {
  const here = `${address}:${port}`;
  return jump ? `${jump.address}:${jump.port}>${here}` : here;
}

/** A first come, first served count of turns; a request takes `weight` of them. */
class Turns {
  private used = 0;
  private readonly waiting: Array<{ weight: number; go: () => void }> = [];

  constructor(private readonly limit: number) {}

  get idle(): boolean {
    return this.used === 0 && this.waiting.length === 0;
  }

  get load(): { inFlight: number; waiting: number } {
    return { inFlight: this.used, waiting: this.waiting.length };
  }

  async enter(weight: number, signal: AbortSignal | undefined, onAbort: () => Error): Promise<() => void> {
    if (signal?.aborted) throw onAbort();
    if (this.waiting.length === 0 && this.used + weight <= this.limit) {
      this.used += weight;
      return this.releaser(weight);
    }
    await new Promise<void>((resolve, reject) => {
      const me = {
        weight,
        go: () => {
          signal?.removeEventListener('abort', abort);
          resolve();
        },
      };
      const abort = () => {
        const at = this.waiting.indexOf(me);
        if (at >= 0) this.waiting.splice(at, 1);
        this.handOver(); // (the one behind may fit where this one did not)
        reject(onAbort());
      };
      signal?.addEventListener('abort', abort, { once: true });
      this.waiting.push(me);
    });
    // handOver counted this turn in `used` already
    return this.releaser(weight);
  }

  private releaser(weight: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= weight;
      this.handOver();
    };
  }

  /** The waiting requests that now fit, in order. */
  private handOver(): void {
    while (this.waiting.length && this.used + this.waiting[0].weight <= this.limit) {
      const next = this.waiting.shift()!;
      this.used += next.weight;
      next.go();
    }
  }
}
