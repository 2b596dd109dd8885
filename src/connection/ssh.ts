import net from 'node:net';
import type { NodeSSH } from 'node-ssh';
import type { ServerHostKeyAlgorithm } from 'ssh2';
import type { Duplex } from 'node:stream';
import { ConnectError, type Connection, type ExecResult } from './types.ts';
import { KnownHosts, type HostKeyVerdict } from './known-hosts.ts';
import { certificateAlgorithm, parseHostCertificate, type HostCertificate } from './host-certificate.ts';
import { fetchHostCertificate } from './certificate-fetch.ts';
import { MAX_INLINE_SCRIPT } from './transport.ts';
import { shJoin } from '../shell/quote.ts';
import { INPUT_LIMITS, readInputText } from '../util/input-file.ts';
import { Escalation, execPlan, newNonce, type Become } from './become.ts';
import { execTag, KILL_TIMEOUT_MS, killGroupsScript } from './kill-groups.ts';
import type { Secret } from '../util/secret.ts';
import { destinationOf, type HandshakeGate } from './handshake-gate.ts';
import { ChannelTurns } from './channel-turns.ts';
import { JumpPool, type Lease } from './jump-pool.ts';

export interface SshOptions {
  /** Inventory name, used in messages. */
  name: string;
  address: string;
  port: number;
  user: string;
  privateKeyFile?: string;
  /** Password authentication (-k, ansible_password): tried after keys. */
  password?: Secret;
  /** Offer only privateKeyFile, not the agent's keys (IdentitiesOnly=yes). */
  identitiesOnly?: boolean;
  /** ssh-agent socket; defaults to $SSH_AUTH_SOCK. */
  agent?: string;
  connectTimeoutMs: number;
  /** SSH keepalive interval (default 10 s; 0: none); the link counts as dead after KEEPALIVE_COUNT unanswered. */
  keepaliveMs?: number;
  knownHostsFile: string;
  /** Record unknown host keys instead of refusing them. A changed key is refused regardless. */
  acceptNewHostKeys: boolean;
  /** Reach the host through this one first (like ProxyJump). */
  jump?: Omit<SshOptions, 'jump' | 'name' | 'become'> & { name?: string };
  /** Run every exec escalated (sudo/su), in one shell. */
  become?: Become;
  /**
   * The run's limit on handshakes at once (--ssh-handshakes), and per sshd (a bastion, a drain
   * controller: under its MaxStartups): the connect timeout starts at this host's turn.
   */
  handshakes?: HandshakeGate;
  /**
   * Ctrl-C: the connection, while still being made, is dropped at once (a TCP connect or handshake
   * in flight would keep the process alive until its timeout) and not retried.
   */
  signal?: AbortSignal;
}

/** Keepalives unanswered before the link counts as dead: 3 x 10 s is ~30 s for a cut link. */
export const KEEPALIVE_COUNT = 3;
export const DEFAULT_KEEPALIVE_MS = 10_000;
/** How long close() waits for a graceful end before it drops the socket (a dead link never answers). */
const CLOSE_GRACE_MS = 1000;

const TRANSIENT = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

function tcpConnect(address: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: address, port });
    const onAbort = () => {
      clearTimeout(timer);
      sock.destroy();
      reject(new Error('interrupted'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      sock.destroy();
      reject(Object.assign(new Error(`connect timeout after ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    }, timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    sock.once('connect', () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      // Without this every exec waits ~40 ms on Nagle + delayed ACK (measured: 47 ms vs 3.5 ms).
      sock.setNoDelay(true);
      resolve(sock);
    });
    sock.once('error', (e) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(e);
    });
  });
}

/** The process's jump connections, each shared by every host reached through it (jump-pool.ts). */
const jumps = new JumpPool<SshConnection>();

/** Which jump connections are one: everything that makes the connection, not who asks for it. */
function jumpKey(j: NonNullable<SshOptions['jump']>): string {
  const { address, port, user, privateKeyFile, identitiesOnly, agent, connectTimeoutMs, keepaliveMs, knownHostsFile, acceptNewHostKeys } =
    j;
  return JSON.stringify([
    address,
    port,
    user,
    privateKeyFile,
    identitiesOnly,
    agent,
    connectTimeoutMs,
    keepaliveMs,
    knownHostsFile,
    acceptNewHostKeys,
  ]);
}

/**
 * A channel to address:port through a jump connection, within the connect timeout and given up
 * at the host's stop: a jump connection shared by many hosts may be dead without knowing it yet
 * (no keepalive), and the jump host's own connect to a host that is down takes minutes. A channel
 * that comes late is closed.
 */
function forwardWithin(jump: NodeSSH, address: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    let done = false;
    const end = (e: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(e);
    };
    const onAbort = () => end(new Error('interrupted'));
    const timer = setTimeout(
      () => end(Object.assign(new Error(`no channel through the jump host within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })),
      timeoutMs,
    );
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    // (node-ssh throws at once, not in its promise, when the connection has ended)
    Promise.resolve()
      .then(() => jump.forwardOut('127.0.0.1', 0, address, port))
      .then(
        (channel) => {
          if (done) return void channel.destroy();
          done = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(channel);
        },
        (e: Error) => end(e),
      );
  });
}

/** Ctrl-C came while the connection was being made: final, never retried. */
function interruptedWhileConnecting(opts: SshOptions): ConnectError {
  return new ConnectError(`${opts.name}: interrupted while connecting to ${opts.address}:${opts.port}`, false);
}

/**
 * What a handshake's host key check found: a key refused, or the certificate's connection lost.
 * Once the handshake has ended (connected, failed, timed out, Ctrl-C) a certificate fetch still
 * under way is stopped, and its late verdict neither records a key nor reaches ssh2 (whose done()
 * throws once its connection is torn down: an unhandled rejection would end the run).
 */
class HandshakeVerdict {
  keyProblem?: string;
  certificateLost?: string;
  finished = false;
  readonly fetchStop = new AbortController();
  end(): void {
    this.finished = true;
    this.fetchStop.abort();
  }
}

/** An SSH session through node-ssh, with OpenSSH-style host key checking. */
export class SshConnection implements Connection {
  execCount = 0;
  /** The tags of the remote shells running now (each exec's `sh` carries one in its argv). */
  private readonly running = new Set<string>();
  /** Channels sshd refused (MaxSessions), asked for again. */
  private readonly channels = new ChannelTurns();
  private dropped = false;
  /** Marks where the script starts on stdin after a become password (see become.ts). */
  private readonly nonce = newNonce();
  private constructor(
    readonly host: string,
    private readonly ssh: NodeSSH,
    private readonly sock: Duplex,
    private readonly via?: Lease<SshConnection>,
    private readonly become?: Become,
  ) {
    this.escalation = become ? new Escalation(become, this.nonce) : undefined;
  }
  /** Under become: its first refusal ends every later exec of this connection (become.ts). */
  private readonly escalation?: Escalation;

  static async open(opts: SshOptions): Promise<SshConnection> {
    if (opts.signal?.aborted) throw interruptedWhileConnecting(opts);
    // node-ssh (with ssh2) costs ~35 ms to import: only runs that reach a host over SSH pay it,
    // and it loads while the TCP connection is being made.
    const nodeSsh = import('node-ssh');
    // The key and known_hosts files are read before anything is opened: a file that cannot be
    // (missing, a FIFO, /dev/zero, too large) stays so: a permanent error, never retried, and no
    // socket is left behind to keep the process alive after the run.
    let privateKey: string | undefined;
    let knownHosts: KnownHosts;
    let hostKeyAlgorithms: string[];
    try {
      privateKey = opts.privateKeyFile ? readInputText(opts.privateKeyFile, 'private key file', INPUT_LIMITS.key) : undefined;
      knownHosts = new KnownHosts(opts.knownHostsFile);
      // toward the key types known_hosts records for the host, as OpenSSH orders them
      hostKeyAlgorithms = knownHosts.algorithmsFor(opts.address, opts.port);
    } catch (e) {
      throw new ConnectError(`${opts.name}: ${(e as Error).message}`, false);
    }
    let via: Lease<SshConnection> | undefined;
    let sock: Duplex;
    let endTurn: (() => void) | undefined;
    try {
      // The jump host's connection, shared (jump-pool.ts), takes its own turn at the gate first: a
      // host holding a turn while it waits for its jump's could leave every turn held by hosts waiting so.
      const jump = opts.jump;
      if (jump)
        via = await jumps.lease(
          jumpKey(jump),
          (stop) => SshConnection.open({ ...jump, name: jump.name ?? jump.address, signal: stop }),
          opts.signal,
        );
      // (one turn of the destination's per connection it opens there: a certificate takes a second)
      endTurn = await opts.handshakes?.enter(opts.signal, () => new Error('interrupted'), {
        destination: destinationOf(opts.address, opts.port, opts.jump),
        connections: knownHosts.wantsCertificate(opts.address, opts.port) ? 2 : 1,
      });
      sock = via
        ? await forwardWithin(via.conn.ssh, opts.address, opts.port, opts.connectTimeoutMs, opts.signal)
        : await tcpConnect(opts.address, opts.port, opts.connectTimeoutMs, opts.signal);
    } catch (e) {
      endTurn?.();
      // (no channel within the timeout: a jump connection dead without knowing it yet, or a host
      // the jump host cannot reach; either way no new host is given this connection, the hosts on
      // it keep theirs, and the next try opens another)
      if ((e as NodeJS.ErrnoException).code === 'ETIMEDOUT') via?.retire();
      await via?.release();
      if (e instanceof ConnectError) throw e;
      if (opts.signal?.aborted) throw interruptedWhileConnecting(opts);
      const code = (e as NodeJS.ErrnoException).code ?? '';
      throw new ConnectError(
        `${opts.name}: cannot connect to ${opts.address}:${opts.port}: ${(e as Error).message}`,
        TRANSIENT.has(code) || code === '',
      );
    }

    let ssh: NodeSSH;
    try {
      ssh = new (await nodeSsh).NodeSSH();
    } catch (e) {
      // (node-ssh that cannot load: the turn, the socket and the jump connection are given back all the same)
      sock.destroy();
      await via?.release();
      endTurn?.();
      throw new ConnectError(`${opts.name}: ${(e as Error).message}`, false);
    }
    const verdict = new HandshakeVerdict();
    // Ctrl-C during the handshake: the socket is dropped, the handshake fails at once
    const dropSocket = () => sock.destroy();
    opts.signal?.addEventListener('abort', dropSocket, { once: true });
    try {
      if (opts.signal?.aborted) throw new Error('interrupted');
      await ssh.connect({
        sock,
        host: opts.address,
        port: opts.port,
        username: opts.user,
        privateKey,
        password: opts.password?.reveal(),
        agent: opts.identitiesOnly && opts.privateKeyFile ? undefined : (opts.agent ?? process.env.SSH_AUTH_SOCK),
        readyTimeout: opts.connectTimeoutMs,
        algorithms: { serverHostKey: hostKeyAlgorithms as ServerHostKeyAlgorithm[] },
        keepaliveInterval: opts.keepaliveMs ?? DEFAULT_KEEPALIVE_MS,
        keepaliveCountMax: KEEPALIVE_COUNT,
        hostVerifier: SshConnection.hostVerifier(opts, knownHosts, hostKeyAlgorithms, via?.conn, verdict),
      });
    } catch (e) {
      sock.destroy();
      await via?.release();
      if (verdict.keyProblem) throw new ConnectError(`${opts.name}: ${verdict.keyProblem}`, false);
      if (opts.signal?.aborted) throw interruptedWhileConnecting(opts);
      if (verdict.certificateLost !== undefined)
        throw new ConnectError(`${opts.name}: its host certificate could not be fetched: ${verdict.certificateLost}`, true);
      const msg = (e as Error).message;
      const level = (e as { level?: string }).level;
      const auth = level === 'client-authentication' || /authentication/i.test(msg);
      throw new ConnectError(`${opts.name}: ssh ${opts.user}@${opts.address}:${opts.port}: ${msg}`, !auth);
    } finally {
      verdict.end();
      opts.signal?.removeEventListener('abort', dropSocket);
      endTurn?.();
    }
    // node-ssh listens for client errors only while connecting or running a command: a socket
    // error in between (the host died: EPIPE, ECONNRESET) would be an unhandled 'error' event and
    // end the whole run. The next exec on this connection fails instead.
    ssh.connection?.on('error', () => {});
    const conn = new SshConnection(opts.name, ssh, sock, via, opts.become);
    // (a jump connection that died is not handed out again: jump-pool.ts)
    ssh.connection?.once('close', () => (conn.closed = true));
    return conn;
  }

  /**
   * ssh2's host key check: known_hosts' verdict on the key, after the host's certificate when a
   * marker line asks for one (its second handshake). What it found goes to `verdict`.
   */
  private static hostVerifier(
    opts: SshOptions,
    knownHosts: KnownHosts,
    hostKeyAlgorithms: string[],
    via: SshConnection | undefined,
    verdict: HandshakeVerdict,
  ): (key: Buffer, done: (ok: boolean) => void) => void {
    return (key, done) => {
      const settle = (ok: boolean) => {
        if (verdict.finished) return;
        try {
          done(ok);
        } catch {
          // (the handshake ended meanwhile)
        }
      };
      const decide = (shown?: HostCertificate | string) => {
        if (verdict.finished) return;
        try {
          const v = knownHosts.verify(opts.address, opts.port, key, shown);
          if (v.status === 'unknown' && opts.acceptNewHostKeys) knownHosts.add(opts.address, opts.port, key);
          else if (v.status !== 'match') verdict.keyProblem = keyRefusal(v, `${opts.address}:${opts.port}`, opts.knownHostsFile);
        } catch (e) {
          // known_hosts replaced by something unreadable mid-run, or a new key that cannot be recorded
          verdict.keyProblem = (e as Error).message;
        }
        settle(!verdict.keyProblem);
      };
      if (!knownHosts.wantsCertificate(opts.address, opts.port)) {
        decide();
        return;
      }
      // the certificate algorithms in the order this handshake offered the plain ones
      const offered = hostKeyAlgorithms.map(certificateAlgorithm);
      // (its connection lost: a failure to connect, tried again, never a verdict on the host's key)
      void SshConnection.certificateShown(opts, via, offered, verdict.fetchStop.signal)
        .then(decide, (e: Error) => {
          if (verdict.finished) return;
          verdict.certificateLost = e.message;
          settle(false);
        })
        .catch(() => undefined);
    };
  }

  /** The host certificate the host shows on a second handshake (see certificate-fetch.ts), or why none. */
  private static async certificateShown(
    opts: SshOptions,
    via: SshConnection | undefined,
    algorithms: string[],
    handshakeEnded: AbortSignal,
  ): Promise<HostCertificate | string> {
    const stop = opts.signal ? AbortSignal.any([opts.signal, handshakeEnded]) : handshakeEnded;
    const stream = via
      ? await forwardWithin(via.ssh, opts.address, opts.port, opts.connectTimeoutMs, stop)
      : await tcpConnect(opts.address, opts.port, opts.connectTimeoutMs, stop);
    // (the main handshake ended first: this one is dropped, its answer no longer wanted)
    if (stop.aborted) stream.destroy();
    else stop.addEventListener('abort', () => stream.destroy(), { once: true });
    const r = await fetchHostCertificate(stream, algorithms, opts.connectTimeoutMs);
    if ('lost' in r) throw new Error(r.lost);
    if ('none' in r) return `it shows no host certificate (${r.none})`;
    try {
      return parseHostCertificate(r.certificate);
    } catch (e) {
      return `its host certificate cannot be read (${(e as Error).message})`;
    }
  }

  async exec(script: string, stdin?: string): Promise<ExecResult> {
    this.escalation?.refuseAgain();
    this.execCount++;
    // sshd runs each command as a session leader: its process group is the remote shell and
    // everything it starts. The tag (the last argument of the login shell, and under become of
    // sudo/su and the escalated shell) finds them again from a second channel (abort).
    const tag = execTag();
    const run = this.remote(script, stdin, tag);
    let r;
    this.running.add(tag);
    try {
      r = await this.channels.run(() => this.ssh.execCommand(run.command, { stdin: run.stdin, noTrim: true }));
    } catch (e) {
      throw new ConnectError(`${this.host}: connection lost: ${(e as Error).message}`, true);
    } finally {
      this.running.delete(tag);
    }
    // No exit status and no signal: the channel closed under the command (the host or its sshd
    // died). Not a result: the connection is lost (a killed remote shell reports its signal).
    if (r.code === null && r.signal === null)
      throw new ConnectError(`${this.host}: connection lost: the command ended without an exit status`, true);
    const result = { stdout: r.stdout, stderr: r.stderr, code: r.code };
    return this.escalation ? this.escalation.result(result) : result;
  }

  /** The login shell's command line and stdin for one script, escalated as this connection's execs are. */
  private remote(script: string, stdin?: string, tag?: string): { command: string; stdin: string } {
    const run = execPlan(this.become, this.nonce, script, stdin, inlineScript, tag);
    return { command: `exec ${shJoin(['/bin/sh', ...run.args])}`, stdin: run.stdin };
  }

  /**
   * End now (host timeout, Ctrl-C): kill the process groups of the commands still running on
   * the host, over a second channel while the link still answers, then drop the socket without
   * waiting for a graceful close. The exec in flight fails as a lost connection. Under become
   * the kill is escalated as every exec is: the login user could not signal root's processes.
   */
  async abort(): Promise<void> {
    if (this.dropped) return;
    this.channels.stop();
    // (escalation refused: no escalated shell started, and a kill would ask sudo once more)
    if (this.running.size > 0 && !this.escalation?.refused) {
      const kill = Promise.resolve()
        .then(() => {
          const k = this.remote(killGroupsScript([...this.running]));
          return this.ssh.execCommand(k.command, { stdin: k.stdin });
        })
        .catch(() => undefined);
      await Promise.race([kill, new Promise((r) => setTimeout(r, KILL_TIMEOUT_MS).unref())]);
    }
    this.drop();
  }

  drop(): void {
    this.dropped = true;
    this.sock.destroy();
    void this.via?.release(true);
  }

  /** Its SSH connection closed by the other side (or the link). */
  private closed = false;
  /** Dropped, closing, or closed: no channel can be opened on it. */
  get gone(): boolean {
    return this.dropped || this.closing || this.closed || !this.ssh.isConnected();
  }
  private closing = false;

  async close(): Promise<void> {
    if (this.dropped) return;
    this.closing = true;
    this.channels.stop();
    this.ssh.dispose();
    // A graceful end needs the other side: on a dead link the socket would stay open for good.
    if (!this.sock.destroyed) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, CLOSE_GRACE_MS);
        this.sock.once('close', () => (clearTimeout(t), resolve()));
      });
    }
    this.dropped = true;
    this.sock.destroy();
    await this.via?.release();
  }
}

function inlineScript(script: string): string {
  if (script.length > MAX_INLINE_SCRIPT) throw new Error(`script of ${script.length} bytes is too long to pass with separate stdin`);
  return script;
}

/** Why a host key is refused, with what to do about it. */
function keyRefusal(v: Exclude<HostKeyVerdict, { status: 'match' }>, at: string, file: string): string {
  const key = `${v.keyType} ${v.fingerprint}`;
  const cert = 'certificate' in v && v.certificate ? `; ${v.certificate}` : '';
  switch (v.status) {
    case 'changed':
      return `host key for ${at} has CHANGED (${key})${cert}; refusing to connect. If the host was reinstalled, remove its old key from ${file}`;
    case 'revoked':
      return v.ca
        ? `the CA of the host certificate of ${at} is REVOKED in ${file} (${key}); refusing to connect`
        : `host key for ${at} is REVOKED in ${file} (${key}); refusing to connect`;
    case 'other-type':
      return `host key for ${at} is of a type not recorded for it (${key}; ${file} has ${v.recorded.join(', ')}) and the host offers none of those${cert}; refusing to connect. If that is expected, record its new key`;
    case 'bad-certificate':
      return `the host certificate of ${at} (for ${key}) names a CA trusted in ${file} but its signature does not verify; refusing to connect`;
    case 'unknown':
      return `host key for ${at} is unknown (${key}); not in ${file}${cert}. Verify it, then add it or run with --ssh-accept-new`;
  }
}
