import { homedir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
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

const str = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : String(v));

/** `[user@]host[:port]` as used by racksmith_ssh_jump (ProxyJump). */
function parseJump(spec: string): { user?: string; address: string; port: number } {
  const m = /^(?:([^@]+)@)?([^:@]+)(?::(\d+))?$/.exec(spec);
  if (!m) throw new Error(`racksmith_ssh_jump must be [user@]host[:port], got '${spec}'`);
  return { user: m[1], address: m[2], port: m[3] ? Number(m[3]) : 22 };
}

/** The SSH settings for a host, from its Ansible connection variables. */
export function sshOptionsFor(host: Host, o: ConnectOptions): SshOptions {
  const v = host.vars;
  const base = dirname(resolve(o.inventoryFile));
  const keyFile = str(v.ansible_ssh_private_key_file) ?? str(v.ansible_private_key_file);
  const knownHosts = o.knownHostsFile ?? str(v.racksmith_known_hosts) ?? join(homedir(), '.ssh', 'known_hosts');
  const timeout = v.ansible_ssh_timeout !== undefined ? Number(v.ansible_ssh_timeout) * 1000 : o.connectTimeoutMs;
  const user = str(v.ansible_user) ?? process.env.USER ?? 'root';
  const common = {
    user,
    privateKeyFile: keyFile ? resolve(base, keyFile.replace(/^~(?=\/)/, homedir())) : undefined,
    connectTimeoutMs: timeout,
    knownHostsFile: resolve(base, knownHosts.replace(/^~(?=\/)/, homedir())),
    acceptNewHostKeys: o.acceptNewHostKeys,
  };
  const jump = str(v.racksmith_ssh_jump);
  return {
    ...common,
    name: host.name,
    address: str(v.ansible_host) ?? host.name,
    port: v.ansible_port !== undefined ? Number(v.ansible_port) : 22,
    jump: jump
      ? ({ ...common, ...Object.fromEntries(Object.entries(parseJump(jump)).filter(([, x]) => x !== undefined)) } as SshOptions['jump'])
      : undefined,
  };
}

export async function connect(host: Host, o: ConnectOptions): Promise<Connection> {
  if (host.vars.ansible_connection === 'local') return new LocalConnection(host.name);
  return SshConnection.open(sshOptionsFor(host, o));
}
