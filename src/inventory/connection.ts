import { homedir } from 'node:os';
import { dirname, isAbsolute, resolve } from 'node:path';
import { InputError, type SourcePos } from '../util/errors.ts';
import { isSecret } from '../util/secret.ts';
import type { Vars } from './model.ts';

/**
 * A host's connection, from its connection variables. Where Ansible has two names for one
 * setting, the `ansible_ssh_*` name wins when both are set, whatever level set each (Ansible's
 * MAGIC_VARIABLE_MAPPING and the ssh plugin agree on that). A new setting (become, password,
 * ssh args) is one more row in CONNECTION_VARS and one more field here.
 */
export interface HostConnection {
  kind: 'ssh' | 'local';
  /** Address to connect to: ansible_ssh_host, ansible_host, else the inventory name. */
  address: string;
  port?: number;
  user?: string;
  /** Absolute path (relative paths are relative to the file that set them). */
  privateKeyFile?: string;
  timeoutSeconds?: number;
  /** racksmith_known_hosts, absolute. */
  knownHostsFile?: string;
  /** racksmith_ssh_jump: `[user@]host[:port]`. */
  jump?: { user?: string; address: string; port: number };
}

/** Each setting and the variables that give it, in Ansible's order (the first one set wins). */
export const CONNECTION_VARS = {
  address: ['ansible_ssh_host', 'ansible_host'],
  port: ['ansible_ssh_port', 'ansible_port'],
  user: ['ansible_ssh_user', 'ansible_user'],
  privateKeyFile: ['ansible_ssh_private_key_file', 'ansible_private_key_file'],
  timeoutSeconds: ['ansible_ssh_timeout', 'ansible_timeout'],
  kind: ['ansible_connection'],
  knownHostsFile: ['racksmith_known_hosts'],
  jump: ['racksmith_ssh_jump'],
} as const;

/** Every variable name racksmith itself reads (a template in one of them is refused). */
export const CONNECTION_VAR_NAMES: ReadonlySet<string> = new Set(Object.values(CONNECTION_VARS).flat());

export function hostConnection(
  name: string,
  vars: Vars,
  sources: Record<string, SourcePos>,
  templated: Record<string, SourcePos>,
): HostConnection {
  const pick = (setting: keyof typeof CONNECTION_VARS): { value: unknown; var: string } | undefined => {
    for (const v of CONNECTION_VARS[setting]) {
      if (!(v in vars) || vars[v] === null) continue;
      if (templated[v]) throw templatingError(name, v, templated[v]);
      if (isSecret(vars[v])) throw new InputError(`${name}: ${v} must be a plain value, not a secret`, sources[v]);
      return { value: vars[v], var: v };
    }
    return undefined;
  };
  const path = (p: { value: unknown; var: string } | undefined): string | undefined => {
    if (!p) return undefined;
    const text = String(p.value).replace(/^~(?=\/|$)/, homedir());
    if (isAbsolute(text)) return text;
    const file = sources[p.var]?.file;
    // a file-relative path: relative to the inventory file or vars file that set it (-e: the working directory)
    return file && !file.startsWith('-e ') ? resolve(dirname(resolve(file)), text) : resolve(text);
  };
  const kind = pick('kind');
  const port = pick('port');
  const timeout = pick('timeoutSeconds');
  const jump = pick('jump');
  const user = pick('user');
  return {
    kind: kind?.value === 'local' ? 'local' : 'ssh',
    address: String(pick('address')?.value ?? name),
    port: port ? Number(port.value) : undefined,
    user: user === undefined ? undefined : String(user.value),
    privateKeyFile: path(pick('privateKeyFile')),
    timeoutSeconds: timeout ? Number(timeout.value) : undefined,
    knownHostsFile: path(pick('knownHostsFile')),
    jump: jump ? parseJump(String(jump.value), name, sources[jump.var]) : undefined,
  };
}

/** `[user@]host[:port]` as used by racksmith_ssh_jump (ProxyJump). */
function parseJump(spec: string, host: string, pos: SourcePos | undefined): HostConnection['jump'] {
  const m = /^(?:([A-Za-z_][A-Za-z0-9_.-]*)@)?([A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?$/.exec(spec);
  if (!m || (m[3] !== undefined && (Number(m[3]) < 1 || Number(m[3]) > 65535)) || m[2].startsWith('-'))
    throw new InputError(`${host}: racksmith_ssh_jump must be [user@]host[:port], got '${spec}'`, pos);
  return { user: m[1], address: m[2].replace(/^\[|\]$/g, ''), port: m[3] ? Number(m[3]) : 22 };
}

export function templatingError(host: string, variable: string, pos: SourcePos): InputError {
  return new InputError(`${host}: ${variable}: templating is not supported: give the literal value`, pos);
}
