import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Host } from '../inventory/model.ts';
import { LocalConnection } from './local.ts';
import { SshConnection, type SshOptions } from './ssh.ts';
import type { Connection } from './types.ts';

export interface ConnectOptions {
  inventoryFile: string;
  /** Overrides `racksmith_known_hosts` / ~/.ssh/known_hosts. */
  knownHostsFile?: string;
  acceptNewHostKeys: boolean;
  connectTimeoutMs: number;
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
