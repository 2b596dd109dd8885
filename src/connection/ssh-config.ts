import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
// ssh-config (MIT, maintained since 2013, no dependencies): OpenSSH's Host pattern and
// first-match-wins rules without writing another parser; Match exec is never evaluated.
import SSHConfig from 'ssh-config';
import { parseJump } from '../inventory/connection.ts';
import { INPUT_LIMITS, readInputText } from '../util/input-file.ts';

/** What racksmith takes from an OpenSSH client config for one host (the rest it leaves alone). */
export interface SshConfigEntry {
  hostName?: string;
  user?: string;
  port?: number;
  identityFile?: string;
  identitiesOnly?: boolean;
  jump?: { user?: string; address: string; port?: number };
  knownHostsFile?: string;
  acceptNewHostKeys?: boolean;
  connectTimeoutSeconds?: number;
}

const parsed = new Map<string, SSHConfig | undefined>();

/** ~/.ssh/config: the client config where neither -F nor racksmith_ssh_config names one. */
export const defaultSshConfig = (): string => resolve(homedir(), '.ssh', 'config');

function load(file: string): SSHConfig | undefined {
  // (read as every input file is: a FIFO, a device or a directory there is refused, never read)
  if (!parsed.has(file))
    parsed.set(file, existsSync(file) ? SSHConfig.parse(readInputText(file, 'ssh config file', INPUT_LIMITS.sshConfig)) : undefined);
  return parsed.get(file);
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);
const tilde = (p: string) => resolve(p.replace(/^~(?=\/|$)/, homedir()));

/** The settings `ssh -F FILE HOST` would use for `host` (default file: ~/.ssh/config). */
export function sshConfigFor(host: string, file?: string): SshConfigEntry {
  const cfg = load(file ?? defaultSshConfig());
  if (!cfg) return {};
  const c = cfg.compute(host, { ignoreCase: true, matchExec: false });
  const get = (k: string) => first(c[k.toLowerCase()]);
  const out: SshConfigEntry = {};
  const hostName = get('HostName');
  if (hostName) out.hostName = hostName.replace(/%h/g, host);
  if (get('User')) out.user = get('User');
  const port = get('Port');
  if (port && /^[0-9]+$/.test(port)) out.port = Number(port);
  if (get('IdentityFile')) out.identityFile = tilde(get('IdentityFile')!);
  if (get('IdentitiesOnly')) out.identitiesOnly = get('IdentitiesOnly')!.toLowerCase() === 'yes';
  const jump = get('ProxyJump');
  if (jump && jump.toLowerCase() !== 'none') out.jump = parseJump(jump.split(',')[0], host, { file: file ?? '~/.ssh/config' });
  const known = get('UserKnownHostsFile');
  if (known) out.knownHostsFile = tilde(known.split(/\s+/)[0]);
  const strict = get('StrictHostKeyChecking')?.toLowerCase();
  if (strict) out.acceptNewHostKeys = ['accept-new', 'no', 'off'].includes(strict);
  const timeout = get('ConnectTimeout');
  if (timeout && /^[0-9]+$/.test(timeout)) out.connectTimeoutSeconds = Number(timeout);
  return out;
}
