import net from 'node:net';
import { readFileSync } from 'node:fs';
import type { NodeSSH } from 'node-ssh';
import type { Duplex } from 'node:stream';
import { ConnectError, type Connection, type ExecResult } from './types.ts';
import { KnownHosts } from './known-hosts.ts';
import { MAX_INLINE_SCRIPT } from './transport.ts';
import { shJoin } from '../shell/quote.ts';
import { becomeFailure, execPlan, newNonce, type Become } from './become.ts';
import type { Secret } from '../util/secret.ts';

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
  knownHostsFile: string;
  /** Record unknown host keys instead of refusing them. A changed key is refused regardless. */
  acceptNewHostKeys: boolean;
  /** Reach the host through this one first (like ProxyJump). */
  jump?: Omit<SshOptions, 'jump' | 'name' | 'become'> & { name?: string };
  /** Run every exec escalated (sudo/su), in one shell. */
  become?: Become;
}

const TRANSIENT = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

function tcpConnect(address: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: address, port });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(Object.assign(new Error(`connect timeout after ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    }, timeoutMs);
    sock.once('connect', () => {
      clearTimeout(timer);
      // Without this every exec waits ~40 ms on Nagle + delayed ACK (measured: 47 ms vs 3.5 ms).
      sock.setNoDelay(true);
      resolve(sock);
    });
    sock.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** An SSH session through node-ssh, with OpenSSH-style host key checking. */
export class SshConnection implements Connection {
  execCount = 0;
  /** Marks where the script starts on stdin after a become password (see become.ts). */
  private readonly nonce = newNonce();
  private constructor(
    readonly host: string,
    private readonly ssh: NodeSSH,
    private readonly via?: SshConnection,
    private readonly become?: Become,
  ) {}

  static async open(opts: SshOptions): Promise<SshConnection> {
    // node-ssh (with ssh2) costs ~35 ms to import: only runs that reach a host over SSH pay it,
    // and it loads while the TCP connection is being made.
    const nodeSsh = import('node-ssh');
    let via: SshConnection | undefined;
    let sock: Duplex;
    try {
      if (opts.jump) {
        via = await SshConnection.open({ ...opts.jump, name: opts.jump.name ?? opts.jump.address });
        sock = await via.ssh.forwardOut('127.0.0.1', 0, opts.address, opts.port);
      } else {
        sock = await tcpConnect(opts.address, opts.port, opts.connectTimeoutMs);
      }
    } catch (e) {
      await via?.close();
      if (e instanceof ConnectError) throw e;
      const code = (e as NodeJS.ErrnoException).code ?? '';
      throw new ConnectError(
        `${opts.name}: cannot connect to ${opts.address}:${opts.port}: ${(e as Error).message}`,
        TRANSIENT.has(code) || code === '',
      );
    }

    const knownHosts = new KnownHosts(opts.knownHostsFile);
    let keyProblem: string | undefined;
    const { NodeSSH } = await nodeSsh;
    const ssh = new NodeSSH();
    try {
      await ssh.connect({
        sock,
        host: opts.address,
        port: opts.port,
        username: opts.user,
        privateKey: opts.privateKeyFile ? readFileSync(opts.privateKeyFile, 'utf8') : undefined,
        password: opts.password?.reveal(),
        agent: opts.identitiesOnly && opts.privateKeyFile ? undefined : (opts.agent ?? process.env.SSH_AUTH_SOCK),
        readyTimeout: opts.connectTimeoutMs,
        hostVerifier: (key: Buffer) => {
          const v = knownHosts.verify(opts.address, opts.port, key);
          if (v.status === 'match') return true;
          if (v.status === 'unknown' && opts.acceptNewHostKeys) {
            knownHosts.add(opts.address, opts.port, key);
            return true;
          }
          keyProblem =
            v.status === 'changed'
              ? `host key for ${opts.address}:${opts.port} has CHANGED (${v.keyType} ${v.fingerprint}); refusing to connect. If the host was reinstalled, remove its old key from ${opts.knownHostsFile}`
              : `host key for ${opts.address}:${opts.port} is unknown (${v.keyType} ${v.fingerprint}); not in ${opts.knownHostsFile}. Verify it, then add it or run with --ssh-accept-new`;
          return false;
        },
      });
    } catch (e) {
      sock.destroy();
      await via?.close();
      if (keyProblem) throw new ConnectError(`${opts.name}: ${keyProblem}`, false);
      const msg = (e as Error).message;
      const level = (e as { level?: string }).level;
      const auth = level === 'client-authentication' || /authentication/i.test(msg);
      throw new ConnectError(`${opts.name}: ssh ${opts.user}@${opts.address}:${opts.port}: ${msg}`, !auth);
    }
    // node-ssh listens for client errors only while connecting or running a command: a socket
    // error in between (the host died: EPIPE, ECONNRESET) would be an unhandled 'error' event and
    // end the whole run. The next exec on this connection fails instead.
    ssh.connection?.on('error', () => {});
    return new SshConnection(opts.name, ssh, via, opts.become);
  }

  async exec(script: string, stdin?: string): Promise<ExecResult> {
    this.execCount++;
    const run = execPlan(this.become, this.nonce, script, stdin, inlineScript);
    let r;
    try {
      r = await this.ssh.execCommand(`exec ${shJoin(['/bin/sh', ...run.args])}`, { stdin: run.stdin, noTrim: true });
    } catch (e) {
      throw new ConnectError(`${this.host}: connection lost: ${(e as Error).message}`, true);
    }
    // No exit status and no signal: the channel closed under the command (the host or its sshd
    // died). Not a result: the connection is lost (a killed remote shell reports its signal).
    if (r.code === null && r.signal === null)
      throw new ConnectError(`${this.host}: connection lost: the command ended without an exit status`, true);
    const refused = this.become && becomeFailure(this.become, r.code, r.stderr);
    if (refused) throw refused;
    return { stdout: r.stdout, stderr: r.stderr, code: r.code };
  }

  async close(): Promise<void> {
    this.ssh.dispose();
    await this.via?.close();
  }
}

function inlineScript(script: string): string {
  if (script.length > MAX_INLINE_SCRIPT) throw new Error(`script of ${script.length} bytes is too long to pass with separate stdin`);
  return script;
}
