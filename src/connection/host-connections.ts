import type { Host } from '../inventory/model.ts';
import { stoppable, type ConnectOptions } from './connect.ts';
import { transientConnectError, withRetry } from './retry.ts';
import type { Connection } from './types.ts';

/**
 * Each host's one connection, opened on first use: transient errors retried, and its attempt
 * stoppable on its own (connect.ts `stoppable`: a host given up leaves the queue for a handshake
 * turn and drops a connection still being made). A run keeps one of these (plays-run.ts), and so
 * does fact gathering before it (gather-facts.ts), which hands its connections to the run.
 */
export class HostConnections {
  private readonly opened = new Map<string, { conn: Promise<Connection>; stop: () => void }>();

  constructor(
    private readonly connector: (host: Host, o: ConnectOptions) => Promise<Connection>,
    private readonly options: ConnectOptions,
    private readonly attempts: number,
  ) {}

  /** The host's connection, its attempt started now when there was none. */
  open(host: Host): Promise<Connection> {
    let entry = this.opened.get(host.name);
    if (!entry) {
      const { options, stop } = stoppable(this.options);
      // (Ctrl-C, or the host given up, ends a wait between attempts at once)
      const conn = withRetry(() => this.connector(host, options), this.attempts, transientConnectError, { signal: options.signal });
      entry = { conn, stop };
      this.opened.set(host.name, entry);
    }
    return entry.conn;
  }

  /** The host's connection when its attempt was started. */
  get(host: string): Promise<Connection> | undefined {
    return this.opened.get(host)?.conn;
  }

  /** Stop the host's connection attempt (nothing once connected, or when none was started). */
  stop(host: string): void {
    this.opened.get(host)?.stop();
  }

  /** Close the connections of the hosts `which` picks (all by default); those that failed have nothing to close. */
  async close(which: (host: string) => boolean = () => true): Promise<void> {
    await Promise.all(
      [...this.opened]
        .filter(([host]) => which(host))
        .map(([, { conn }]) =>
          conn.then(
            (c) => c.close(),
            () => undefined,
          ),
        ),
    );
  }
}
