import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Host } from '../inventory/model.ts';
import { LocalConnection } from './local.ts';
import { SshConnection, type SshOptions } from './ssh.ts';
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
}

/** The SSH settings for a host, from its connection (resolved and checked by the inventory). */
export function sshOptionsFor(host: Host, o: ConnectOptions): SshOptions {
  const c = host.connection;
  const knownHosts = o.knownHostsFile ? resolve(o.knownHostsFile) : (c.knownHostsFile ?? join(homedir(), '.ssh', 'known_hosts'));
  const common = {
    user: c.user ?? process.env.USER ?? 'root',
    privateKeyFile: c.privateKeyFile,
    connectTimeoutMs: c.timeoutSeconds !== undefined ? c.timeoutSeconds * 1000 : o.connectTimeoutMs,
    knownHostsFile: knownHosts,
    acceptNewHostKeys: o.acceptNewHostKeys,
    keepaliveMs: o.keepaliveMs,
  };
  return {
    ...common,
    name: host.name,
    address: c.address,
    port: c.port ?? 22,
    jump: c.jump
      ? ({ ...common, ...Object.fromEntries(Object.entries(c.jump).filter(([, x]) => x !== undefined)) } as SshOptions['jump'])
      : undefined,
  };
}

export async function connect(host: Host, o: ConnectOptions): Promise<Connection> {
  if (host.connection.kind === 'local') return new LocalConnection(host.name);
  return SshConnection.open(sshOptionsFor(host, o));
}

/**
 * Every private key file the hosts name, read once each before any host is contacted: a missing,
 * unreadable or special file (a FIFO, /dev/zero) is bad input at the variable that names it.
 */
export function checkConnectionFiles(hosts: readonly Host[]): void {
  const seen = new Set<string>();
  for (const h of hosts) {
    const file = h.connection.kind === 'ssh' ? h.connection.privateKeyFile : undefined;
    if (file === undefined || seen.has(file)) continue;
    seen.add(file);
    try {
      readInputFile(file, 'private key file', INPUT_LIMITS.key);
    } catch (e) {
      const v = CONNECTION_VARS.privateKeyFile.find((n) => n in h.vars);
      throw new InputError(`${h.name}: ${(e as InputError).detail ?? (e as Error).message}`, v ? h.varSources[v] : h.pos);
    }
  }
}
