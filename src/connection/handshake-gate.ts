/**
 * How many SSH handshakes a run makes at once (--ssh-handshakes). A handshake's key exchange and
 * authentication cost the controller CPU on its one JavaScript thread: started all together (say
 * 1,000 forks), every handshake waits behind all the others and each one's connect timeout runs
 * out while the controller, not the host, is busy; reachable hosts come out unreachable. Through
 * the gate the hosts over the limit wait their turn, and each host's connect timeout starts when
 * its own turn does: it measures the host, not the queue. Execs are not gated (forks bound those).
 */
export class HandshakeGate {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`handshake limit must be a whole number >= 1, not ${limit}`);
  }

  /**
   * Waits for a turn (first come, first served) and returns its release, to be called once the
   * handshake is over either way. Ctrl-C (`signal`) ends the wait at once with `onAbort`'s error.
   */
  async enter(signal: AbortSignal | undefined, onAbort: () => Error): Promise<() => void> {
    if (signal?.aborted) throw onAbort();
    if (this.inFlight < this.limit) {
      this.inFlight++;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const turn = () => {
        signal?.removeEventListener('abort', abort);
        resolve();
      };
      const abort = () => {
        const at = this.waiting.indexOf(turn);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(onAbort());
      };
      signal?.addEventListener('abort', abort, { once: true });
      this.waiting.push(turn);
    });
    // the turn was handed over by a release: inFlight already counts it
    return this.releaser();
  }

  /** Handshakes under way now, and hosts waiting for a turn (for tests and the bench). */
  get load(): { inFlight: number; waiting: number } {
    return { inFlight: this.inFlight, waiting: this.waiting.length };
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.inFlight--;
    };
  }
}
