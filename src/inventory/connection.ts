import { homedir } from 'node:os';
import { dirname, isAbsolute, resolve } from 'node:path';
import { InputError, type SourcePos } from '../util/errors.ts';
import { isSecret, Secret } from '../util/secret.ts';
import { parseSshArgs, type SshArgs } from './ssh-args.ts';
import type { Vars } from './vars.ts';

/**
 * A host's connection, from its connection variables. Where Ansible has two names for one
 * setting, the `ansible_ssh_*` name wins when both are set, whatever level set each (Ansible's
 * MAGIC_VARIABLE_MAPPING and the ssh plugin agree on that). A new setting (become, password,
 * ssh args) is one more row in CONNECTION_VARS and one more field here.
 */
export interface HostConnection {
  /** ansible_connection; unset: -c, else ssh. */
  kind?: 'ssh' | 'local';
  /** Address to connect to: ansible_ssh_host, ansible_host, else the inventory name. */
  address: string;
  port?: number;
  user?: string;
  /** Absolute path (relative paths are relative to the file that set them). */
  privateKeyFile?: string;
  timeoutSeconds?: number;
  /** racksmith_known_hosts, absolute. */
  knownHostsFile?: string;
  /** StrictHostKeyChecking=accept-new|no in the ssh args (--ssh-accept-new for this host). */
  acceptNewHostKeys?: boolean;
  /** IdentitiesOnly=yes in the ssh args: offer the key file only, not the agent's keys. */
  identitiesOnly?: boolean;
  /** ProxyJump=none in the ssh args: no jump host from ~/.ssh/config either. */
  noJump?: boolean;
  /** racksmith_ssh_jump, or ProxyJump / -J in the ssh args: `[user@]host[:port]`. */
  jump?: { user?: string; address: string; port?: number };
  /** ansible_password / ansible_ssh_pass: password authentication. */
  password?: Secret;
  /** ansible_become*: unset fields fall back to the play, then the command line. */
  become?: { enabled?: boolean; user?: string; method?: 'sudo' | 'su'; password?: Secret };
  /** Set by the engine for the run (resolveBecome): whom this host's execs run as. */
  escalate?: { user: string; method: 'sudo' | 'su' };
  /** What ansible_ssh_common_args then ansible_ssh_extra_args say (the inventory's own variables win over them). */
  sshArgs?: SshArgs;
  /** racksmith_ssh_config: the OpenSSH client config to read (else ~/.ssh/config or -F). */
  sshConfigFile?: string;
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
  password: ['ansible_ssh_pass', 'ansible_ssh_password', 'ansible_password'],
  become: ['ansible_become'],
  becomeUser: ['ansible_become_user'],
  becomeMethod: ['ansible_become_method'],
  becomePassword: ['ansible_become_password', 'ansible_become_pass'],
  sshCommonArgs: ['ansible_ssh_common_args'],
  sshExtraArgs: ['ansible_ssh_extra_args'],
  sshConfigFile: ['racksmith_ssh_config'],
} as const;

/** Settings that may be secrets (a plain string is taken as one too: it never prints). */
const SECRET_SETTINGS: ReadonlySet<string> = new Set(['password', 'becomePassword']);

/**
 * Every variable that holds a password in Ansible: the settings' own (`password`, `becomePassword`),
 * and the become plugins' older names (sudo's ansible_sudo_pass, su's ansible_su_pass). Each one
 * set is a secret, also where another of them wins: no output, record or plan shows any of them.
 */
export const PASSWORD_VARS: readonly string[] = [
  ...CONNECTION_VARS.password,
  ...CONNECTION_VARS.becomePassword,
  'ansible_sudo_pass',
  'ansible_su_pass',
];

/** Every variable name racksmith itself reads (a template in one of them is refused). */
export const CONNECTION_VAR_NAMES: ReadonlySet<string> = new Set(Object.values(CONNECTION_VARS).flat());

export function hostConnection(
  name: string,
  vars: Vars,
  sources: Record<string, SourcePos>,
  templated: Record<string, SourcePos>,
): HostConnection {
  // (a Secret made of the value is what masks it wherever racksmith writes: util/secret.ts)
  for (const v of PASSWORD_VARS) if (typeof vars[v] === 'string' || typeof vars[v] === 'number') new Secret(String(vars[v]), sources[v]);
  const pick = (setting: keyof typeof CONNECTION_VARS): { value: unknown; var: string } | undefined => {
    for (const v of CONNECTION_VARS[setting]) {
      if (!(v in vars) || vars[v] === null) continue;
      if (templated[v]) throw templatingError(name, v, templated[v]);
      if (isSecret(vars[v]) && !SECRET_SETTINGS.has(setting))
        throw new InputError(`${name}: ${v} must be a plain value, not a secret`, sources[v]);
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
  const user = pick('user');
  const secret = (p: { value: unknown; var: string } | undefined): Secret | undefined =>
    p === undefined ? undefined : isSecret(p.value) ? p.value : new Secret(String(p.value));
  const become = pick('become');
  const becomeMethod = pick('becomeMethod');
  if (becomeMethod && becomeMethod.value !== 'sudo' && becomeMethod.value !== 'su')
    throw new InputError(`${name}: ${becomeMethod.var} must be sudo or su, got '${String(becomeMethod.value)}'`, sources[becomeMethod.var]);
  const becomeUser = pick('becomeUser');
  const becomePassword = secret(pick('becomePassword'));
  const common = pick('sshCommonArgs');
  const extra = pick('sshExtraArgs');
  const sshArgs = mergeSshArgs([common, extra].flatMap((a) => (a ? [parseSshArgs(String(a.value), a.var, sources[a.var])] : [])));
  const explicitJump = pick('jump');
  const jumpSpec = explicitJump
    ? { spec: String(explicitJump.value), pos: sources[explicitJump.var] }
    : sshArgs?.noJump
      ? undefined
      : sshArgs?.jump;
  // a path in ssh args is ssh's: ~ is the home directory, relative is to the working directory
  const sshPath = (p: string | undefined) => (p === undefined ? undefined : resolve(p.replace(/^~(?=\/|$)/, homedir())));
  return {
    kind: kind === undefined ? undefined : kind.value === 'local' ? 'local' : 'ssh',
    address: String(pick('address')?.value ?? name),
    port: port ? Number(port.value) : sshArgs?.port,
    user: user === undefined ? sshArgs?.user : String(user.value),
    privateKeyFile: path(pick('privateKeyFile')) ?? sshPath(sshArgs?.identityFile),
    timeoutSeconds: timeout ? Number(timeout.value) : sshArgs?.connectTimeoutSeconds,
    knownHostsFile: path(pick('knownHostsFile')) ?? sshPath(sshArgs?.knownHostsFile),
    acceptNewHostKeys: sshArgs?.acceptNewHostKeys,
    identitiesOnly: sshArgs?.identitiesOnly,
    jump: jumpSpec ? parseJump(jumpSpec.spec, name, jumpSpec.pos) : undefined,
    noJump: !explicitJump && sshArgs?.noJump ? true : undefined,
    password: secret(pick('password')),
    become:
      become || becomeUser || becomeMethod || becomePassword
        ? {
            enabled: become ? bool(become.value, name, become.var, sources[become.var]) : undefined,
            user: becomeUser ? String(becomeUser.value) : undefined,
            method: becomeMethod?.value as 'sudo' | 'su' | undefined,
            password: becomePassword,
          }
        : undefined,
    sshArgs,
    sshConfigFile: path(pick('sshConfigFile')),
  };
}

/** A boolean as Ansible reads one (YAML true/false, INI strings yes/no/1/0...). */
function bool(v: unknown, host: string, variable: string, pos: SourcePos | undefined): boolean {
  if (typeof v === 'boolean') return v;
  const t = String(v).toLowerCase();
  if (['true', 'yes', 'on', '1', 'y', 't'].includes(t)) return true;
  if (['false', 'no', 'off', '0', 'n', 'f'].includes(t)) return false;
  throw new InputError(`${host}: ${variable} must be true or false, got '${String(v)}'`, pos);
}

/** Common args first: for each option the first one given wins, as ssh reads its own command line. */
function mergeSshArgs(all: SshArgs[]): SshArgs | undefined {
  if (all.length === 0) return undefined;
  const out: SshArgs = {};
  for (const a of all) for (const [k, v] of Object.entries(a)) if (!(k in out)) (out as Record<string, unknown>)[k] = v;
  return out;
}

/** `[user@]host[:port]` as used by racksmith_ssh_jump (ProxyJump). */
export function parseJump(spec: string, host: string, pos: SourcePos | undefined): HostConnection['jump'] {
  const m = /^(?:([A-Za-z_][A-Za-z0-9_.-]*)@)?([A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?$/.exec(spec);
  if (!m || (m[3] !== undefined && (Number(m[3]) < 1 || Number(m[3]) > 65535)) || m[2].startsWith('-'))
    throw new InputError(`${host}: a jump host (racksmith_ssh_jump, ProxyJump, -J) must be [user@]host[:port], got '${spec}'`, pos);
  return { user: m[1], address: m[2].replace(/^\[|\]$/g, ''), port: m[3] ? Number(m[3]) : undefined };
}

export function templatingError(host: string, variable: string, pos: SourcePos): InputError {
  return new InputError(`${host}: ${variable}: templating is not supported: give the literal value`, pos);
}
