export interface ExecResult {
  stdout: string;
  stderr: string;
  /** Exit status; null when the remote process was killed by a signal or the channel dropped. */
  code: number | null;
}

/**
 * A live session to one host. The engine opens one per host per run and sends whole scripts:
 * `exec` is the only way to run anything, so counting its calls counts round trips.
 */
export interface Connection {
  readonly host: string;
  /** Round trips made so far on this connection. */
  readonly execCount: number;
  exec(script: string, stdin?: string): Promise<ExecResult>;
  close(): Promise<void>;
  /**
   * End now (host timeout, interrupt): kill what this connection's commands still run on the
   * host where it can, then drop the link without a graceful close. Unset: close().
   */
  abort?(): Promise<void>;
  /**
   * A process on the host that lives exactly as long as this connection, for state that must end
   * with it (the apply lock's holder, engine/apply-lock.ts). Unset: the remote shell's parent,
   * which over SSH is sshd's process for this connection.
   */
  readonly sessionPid?: number;
}

/** A host could not be reached or authenticated: the host is "unreachable", not "failed". */
export class ConnectError extends Error {
  constructor(
    message: string,
    /** auth and host-key problems are never retried; refused/reset/timeout are transient. */
    readonly transient: boolean,
  ) {
    super(message);
    this.name = 'ConnectError';
  }
}
