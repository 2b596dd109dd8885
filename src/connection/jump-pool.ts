/**
 * One connection per jump host (ProxyJump) for every host of the process reached through it, as
 * OpenSSH's ControlMaster shares one: each host's connection is a channel (direct-tcpip) on it,
 * which sshd's MaxSessions does not count. A fleet behind one bastion then costs the bastion one
 * handshake, not one per host (under its MaxStartups, 8 at a time: 1,000 hosts took 125 rounds).
 *
 * At most HOSTS_PER_JUMP hosts share one: sshd serves a connection in one process, each channel
 * an open socket there, and that process's file limit is usually systemd's soft 1,024 (past it,
 * every further channel is refused); more hosts open another connection (which takes its turn
 * under the jump host's MaxStartups, as every connection does).
 *
 * Shared while a host uses it, closed with the last (dropped at once when the last one drops its
 * own). Its opening is no one host's: a host that gives up waiting (its --host-timeout, Ctrl-C)
 * leaves, and an opening every host has left is stopped. A connection that failed to open, or
 * died since (the bastion restarted, the link cut: every host on it then fails its exec, as
 * behind ControlMaster), or that a host's channel timed out on (retired: dead without knowing it
 * yet, or that host unreachable from the jump host), is not handed out again: the next host opens
 * a new one.
 */

/** What the pool shares: a connection that can be closed, dropped, and says when it is gone. */
export interface Shareable {
  /** End it gracefully. */
  close(): Promise<void>;
  /** End it now. */
  drop(): void;
  /** Closed or dropped: no new channel can be opened on it. */
  readonly gone: boolean;
}

/** A host's use of a shared connection, given back once (a second release does nothing). */
export interface Lease<T> {
  readonly conn: T;
  /** Given back; the last host's release closes it (`now`: drops it). */
  release(now?: boolean): Promise<void>;
  /** Given to no new host (suspected dead): the hosts on it keep it until they give it back. */
  retire(): void;
}

interface Entry<T> {
  opening: Promise<T>;
  /** The connection, once opened. */
  conn?: T;
  users: number;
  /** Stops the opening once no host waits for it. */
  stop: AbortController;
}

/** Hosts on one jump connection at most (see the top). */
export const HOSTS_PER_JUMP = 256;

export class JumpPool<T extends Shareable> {
  /** Per key, its connections (opened or being opened), each with room or not. */
  private readonly shared = new Map<string, Array<Entry<T>>>();

  constructor(private readonly perConnection = HOSTS_PER_JUMP) {}

  /**
   * The connection for `key`, shared: the one open (or being opened), else `open(stop)`'s. A
   * host's `signal` ends its own wait only (with `interrupted`), never the opening others wait for.
   */
  async lease(key: string, open: (stop: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<Lease<T>> {
    // (each turn of the loop forgets a dead connection: a bound only against the unforeseen)
    for (let tries = 0; ; tries++) {
      if (signal?.aborted) throw new Error('interrupted');
      const e = this.entry(key, open);
      e.users++;
      let conn: T;
      try {
        conn = await untilAborted(e.opening, signal);
      } catch (err) {
        await this.giveBack(key, e, true);
        throw err;
      }
      if (conn.gone) {
        // (died since it was opened: off the pool, and a new one for this host)
        this.forget(key, e);
        await this.giveBack(key, e, true);
        if (tries < 8) continue;
        throw new Error('its jump connection closed as each was opened');
      }
      let given = false;
      return {
        conn,
        release: async (now = false) => {
          if (given) return;
          given = true;
          await this.giveBack(key, e, now);
        },
        retire: () => this.forget(key, e),
      };
    }
  }

  /** How many connections are shared now (tests). */
  get size(): number {
    return [...this.shared.values()].reduce((n, l) => n + l.length, 0);
  }

  private entry(key: string, open: (stop: AbortSignal) => Promise<T>): Entry<T> {
    const list = this.shared.get(key) ?? [];
    const room = list.find((e) => e.users < this.perConnection);
    if (room) return room;
    const stop = new AbortController();
    const e: Entry<T> = { opening: open(stop.signal), users: 0, stop };
    // (a failed opening is not handed out again: the hosts waiting are told, the next opens anew)
    e.opening.then(
      (conn) => (e.conn = conn),
      () => this.forget(key, e),
    );
    this.shared.set(key, [...list, e]);
    return e;
  }

  private forget(key: string, e: Entry<T>): void {
    const list = this.shared.get(key)?.filter((x) => x !== e) ?? [];
    if (list.length) this.shared.set(key, list);
    else this.shared.delete(key);
  }

  /**
   * One host less on `e`; with none left, off the pool and ended: an opening under way is stopped,
   * and ended when it comes (the host leaving does not wait for it).
   */
  private async giveBack(key: string, e: Entry<T>, now: boolean): Promise<void> {
    if (--e.users > 0) return;
    this.forget(key, e);
    e.stop.abort();
    const end = (conn: T) => (now ? conn.drop() : conn.close());
    if (e.conn) return end(e.conn);
    void e.opening.then(end, () => undefined);
  }
}

/** `p`, or a rejection with `interrupted` as soon as `signal` aborts (p itself goes on). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new Error('interrupted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('interrupted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (err: unknown) => (signal.removeEventListener('abort', onAbort), reject(err)),
    );
  });
}
