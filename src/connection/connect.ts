import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Host } from '../inventory/model.ts';
import type { Secret } from '../util/secret.ts';
import type { Become } from './become.ts';
import type { HandshakeGate } from './handshake-gate.ts';
import { LocalConnection } from './local.ts';
import { SshConnection, type SshOptions } from './ssh.ts';
import { defaultSshConfig, sshConfigFor } from './ssh-config.ts';
import type { Connection } from './types.ts';
import { INPUT_LIMITS, readInputFile } from '../util/input-file.ts';
import { InputError } from '../util/errors.ts';
import { CONNECTION_VARS } from '../inventory/connection.ts';

export interface ConnectOptions {
  inventoryFile: string;
  /** Overrides `racksmith_known_hosts` / ~/.ssh/known_hosts. */
  knownHostsFile?: string;
  acceptNewHostKeys: boolean;
  connectTimeoutMs: number;
  /** SSH keepalive interval in ms (default 10 s; 0: none). */
  keepaliveMs?: number;
  /** -u: the login user where the inventory names none (over ~/.ssh/config's User). */
  user?: string;
  /** --private-key: the key where the inventory names none (over ~/.ssh/config's IdentityFile). */
  privateKeyFile?: string;
  /** -c: the connection where the inventory says none. */
  connection?: 'ssh' | 'local';
  /** -k: the login password where the inventory gives none. */
  password?: Secret;
  /** -K: the become password where the inventory gives none. */
  becomePassword?: Secret;
  /** -F: the OpenSSH client config (default ~/.ssh/config; racksmith_ssh_config per host wins). */
  sshConfigFile?: string;
  /** Ctrl-C: a connection still being made is dropped at once. */
  signal?: AbortSignal;
  /** --ssh-handshakes: the run's limit on SSH handshakes at once (none: every host at once). */
  handshakes?: HandshakeGate;
}

/** The escalation a host's execs run under (the engine resolved whom; the password comes from the host or -K). */
export function becomeFor(host: Host, o: Pick<ConnectOptions, 'becomePassword'>): Become | undefined {
  const e = host.connection.escalate;
  if (!e) return undefined;
  return { ...e, password: host.connection.become?.password ?? o.becomePassword };
}

/**
 * The SSH settings for a host: its connection (inventory variables, then its ssh args), then
 * ~/.ssh/config for what those leave unset (inventory values win, as in Ansible). The login user
 * and key of `-u`/`--private-key` (or ansible.cfg's remote_user, private_key_file) come between
 * the two: Ansible hands them to ssh as `-o User=` and `-o IdentityFile=`, which the config's
 * User and IdentityFile do not override.
 */
export function sshOptionsFor(host: Host, o: ConnectOptions): SshOptions {
  const c = host.connection;
  const cfg = sshConfigFor(c.address, c.sshConfigFile ?? o.sshConfigFile);
  const knownHosts = o.knownHostsFile
    ? resolve(o.knownHostsFile)
    : (c.knownHostsFile ?? cfg.knownHostsFile ?? join(homedir(), '.ssh', 'known_hosts'));
  const timeoutSeconds = c.timeoutSeconds ?? cfg.connectTimeoutSeconds;
  const common = {
    user: c.user ?? o.user ?? cfg.user ?? process.env.USER ?? 'root',
    privateKeyFile: c.privateKeyFile ?? o.privateKeyFile ?? cfg.identityFile,
    password: c.password ?? o.password,
    identitiesOnly: c.identitiesOnly ?? cfg.identitiesOnly,
    connectTimeoutMs: timeoutSeconds !== undefined ? timeoutSeconds * 1000 : o.connectTimeoutMs,
    knownHostsFile: knownHosts,
    // --ssh-accept-new is this run's choice; else what the host's ssh args or config say
    acceptNewHostKeys: o.acceptNewHostKeys || (c.acceptNewHostKeys ?? cfg.acceptNewHostKeys ?? false),
    keepaliveMs: o.keepaliveMs,
    signal: o.signal,
    handshakes: o.handshakes,
  };
  const jump = c.jump ?? (c.noJump ? undefined : cfg.jump);
  return {
    ...common,
    name: host.name,
    address: cfg.hostName ?? c.address,
    port: c.port ?? cfg.port ?? 22,
    become: becomeFor(host, o),
    jump: jump ? jumpOptions(jump, common, c.sshConfigFile ?? o.sshConfigFile) : undefined,
  };
}

/** The jump host's settings: its own entry in the ssh config (an alias like `bastion`), else the target's. */
function jumpOptions(
  jump: { user?: string; address: string; port?: number },
  target: Omit<SshOptions, 'name' | 'address' | 'port'>,
  configFile: string | undefined,
): SshOptions['jump'] {
  const cfg = sshConfigFor(jump.address, configFile);
  return {
    ...target,
    password: undefined,
    privateKeyFile: cfg.identityFile ?? target.privateKeyFile,
    user: jump.user ?? cfg.user ?? target.user,
    name: jump.address,
    address: cfg.hostName ?? jump.address,
    port: jump.port ?? cfg.port ?? 22,
  };
}

/**
 * `o` with a stop of its own beside the run's Ctrl-C (`o.signal`), for one host: a host given up
 * (its --host-timeout) leaves the queue for a handshake turn and drops a connection still being
 * made, rather than connect later for nothing in a turn other hosts wait for.
 */
export function stoppable<O extends ConnectOptions>(o: O): { options: O; stop: () => void } {
  const own = new AbortController();
  return { options: { ...o, signal: o.signal ? AbortSignal.any([o.signal, own.signal]) : own.signal }, stop: () => own.abort() };
}

export async function connect(host: Host, o: ConnectOptions): Promise<Connection> {
  if ((host.connection.kind ?? o.connection) === 'local') return new LocalConnection(host.name, becomeFor(host, o));
  return SshConnection.open(sshOptionsFor(host, o));
}

/**
 * Every private key, known_hosts file and OpenSSH client config the hosts name, read once each
 * before any host is contacted: a missing or unreadable key, or a special file in any of those
 * places (a FIFO, /dev/zero, a directory) or one over the size limit, is bad input at the
 * variable or option that names it. A known_hosts file that does not exist yet is fine
 * (--ssh-accept-new makes it), as is a missing client config. `cli` is the command line's own
 * (--known-hosts stands for every host's; --private-key and -F for those the inventory leaves).
 */
export function checkConnectionFiles(
  hosts: readonly Host[],
  cli: { knownHostsFile?: string; privateKeyFile?: string; sshConfigFile?: string } = {},
): void {
  const knownHostsFile = cli.knownHostsFile;
  const overSsh = hosts.filter((h) => h.connection.kind !== 'local');
  // (--private-key is the key of the hosts the inventory gives none: checked when there is one)
  const keyless = overSsh.some((h) => h.connection.privateKeyFile === undefined);
  const option = (flag: string, file: string | undefined, what: string, limit: number, optional: boolean, needed = true) => {
    if (file === undefined || overSsh.length === 0 || !needed || (optional && !existsSync(file))) return;
    try {
      readInputFile(resolve(file), what, limit);
    } catch (e) {
      throw new InputError(`${flag}: ${(e as InputError).detail ?? (e as Error).message}`);
    }
  };
  option('--private-key', cli.privateKeyFile, 'private key file', INPUT_LIMITS.key, false, keyless);
  option('-F/--ssh-config', cli.sshConfigFile ?? defaultSshConfig(), 'ssh config file', INPUT_LIMITS.sshConfig, true);
  const seen = new Set<string>();
  const check = (h: Host, file: string | undefined, what: string, limit: number, vars: readonly string[], optional: boolean) => {
    if (file === undefined || seen.has(file)) return;
    seen.add(file);
    if (optional && !existsSync(file)) return;
    try {
      readInputFile(file, what, limit);
    } catch (e) {
      const v = vars.find((n) => n in h.vars);
      throw new InputError(`${h.name}: ${(e as InputError).detail ?? (e as Error).message}`, v ? h.varSources[v] : h.pos);
    }
  };
  option('--known-hosts', knownHostsFile, 'known_hosts file', INPUT_LIMITS.sshConfig, true);
  for (const h of hosts) {
    if (h.connection.kind === 'local') continue;
    check(h, h.connection.privateKeyFile, 'private key file', INPUT_LIMITS.key, CONNECTION_VARS.privateKeyFile, false);
    check(h, h.connection.sshConfigFile, 'ssh config file', INPUT_LIMITS.sshConfig, CONNECTION_VARS.sshConfigFile, true);
    if (knownHostsFile === undefined)
      check(h, h.connection.knownHostsFile, 'known_hosts file', INPUT_LIMITS.sshConfig, KNOWN_HOSTS_VARS, true);
  }
}

/** Where a host's known_hosts file comes from: racksmith_known_hosts, else UserKnownHostsFile in its ssh args. */
const KNOWN_HOSTS_VARS = [...CONNECTION_VARS.knownHostsFile, 'ansible_ssh_common_args', 'ansible_ssh_extra_args'];
