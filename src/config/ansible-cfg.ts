import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, normalize, resolve } from 'node:path';
import { InputError, type SourcePos } from '../util/errors.ts';
import { readInputText } from '../util/input-file.ts';
import { iniGet, parseIni, type IniFile } from './ini.ts';

/**
 * ansible.cfg, found and read as ansible-core 2.14 does (lib/ansible/config/manager.py), for the
 * settings racksmith honours. The command line wins over these; `ANSIBLE_*` environment variables
 * win over the file, as in Ansible.
 */

/** Where a setting came from: the file's line, or the environment variable. */
export type SettingOrigin = SourcePos;

export interface Setting<T> {
  value: T;
  origin: SettingOrigin;
}

/** The settings racksmith takes from ansible.cfg and the environment (undefined: not set). */
export interface AnsibleSettings {
  /** The file read, if any. */
  file?: string;
  inventory?: Setting<string[]>;
  forks?: Setting<number>;
  remoteUser?: Setting<string>;
  privateKeyFile?: Setting<string>;
  timeout?: Setting<number>;
  hostKeyChecking?: Setting<boolean>;
  vaultPasswordFile?: Setting<string>;
  vaultIdentityList?: Setting<string[]>;
  become?: Setting<boolean>;
  becomeUser?: Setting<string>;
  becomeMethod?: Setting<string>;
  becomeAskPass?: Setting<boolean>;
  sshArgs?: Setting<string>;
  /** Keys of the file racksmith does not honour (one warning lists them). */
  ignored: Array<{ section: string; key: string; line: number }>;
  /** Ansible's own warning: an ansible.cfg in a world-writable working directory is skipped. */
  worldWritableCwd?: string;
}

type Kind = 'pathlist' | 'path' | 'integer' | 'boolean' | 'string' | 'list';

/** The honoured settings: ansible-core's base.yml (and the ssh plugin for ssh_args). */
const SETTINGS: ReadonlyArray<{ name: keyof AnsibleSettings; section: string; key: string; env: string; kind: Kind }> = [
  { name: 'inventory', section: 'defaults', key: 'inventory', env: 'ANSIBLE_INVENTORY', kind: 'pathlist' },
  { name: 'forks', section: 'defaults', key: 'forks', env: 'ANSIBLE_FORKS', kind: 'integer' },
  { name: 'remoteUser', section: 'defaults', key: 'remote_user', env: 'ANSIBLE_REMOTE_USER', kind: 'string' },
  { name: 'privateKeyFile', section: 'defaults', key: 'private_key_file', env: 'ANSIBLE_PRIVATE_KEY_FILE', kind: 'path' },
  { name: 'timeout', section: 'defaults', key: 'timeout', env: 'ANSIBLE_TIMEOUT', kind: 'integer' },
  { name: 'hostKeyChecking', section: 'defaults', key: 'host_key_checking', env: 'ANSIBLE_HOST_KEY_CHECKING', kind: 'boolean' },
  { name: 'vaultPasswordFile', section: 'defaults', key: 'vault_password_file', env: 'ANSIBLE_VAULT_PASSWORD_FILE', kind: 'path' },
  { name: 'vaultIdentityList', section: 'defaults', key: 'vault_identity_list', env: 'ANSIBLE_VAULT_IDENTITY_LIST', kind: 'list' },
  { name: 'become', section: 'privilege_escalation', key: 'become', env: 'ANSIBLE_BECOME', kind: 'boolean' },
  { name: 'becomeUser', section: 'privilege_escalation', key: 'become_user', env: 'ANSIBLE_BECOME_USER', kind: 'string' },
  { name: 'becomeMethod', section: 'privilege_escalation', key: 'become_method', env: 'ANSIBLE_BECOME_METHOD', kind: 'string' },
  { name: 'becomeAskPass', section: 'privilege_escalation', key: 'become_ask_pass', env: 'ANSIBLE_BECOME_ASK_PASS', kind: 'boolean' },
  { name: 'sshArgs', section: 'ssh_connection', key: 'ssh_args', env: 'ANSIBLE_SSH_ARGS', kind: 'string' },
];

/**
 * Keys whose job racksmith does on its own (one SSH connection per host for the whole run, no
 * Python on hosts, its own output): honoured in effect, so not reported as ignored.
 */
const DONE_ANYWAY = new Set([
  // ANSIBLE_PIPELINING's three places (base.yml: defaults, connection; the ssh plugin's own)
  'defaults.pipelining',
  'connection.pipelining',
  'ssh_connection.pipelining',
  'ssh_connection.control_path',
  'ssh_connection.control_path_dir',
  'defaults.interpreter_python',
  'defaults.retry_files_enabled',
  'defaults.nocows',
]);

export interface Lookup {
  env: NodeJS.ProcessEnv;
  cwd: string;
  home: string;
}

const defaultLookup = (): Lookup => ({ env: process.env, cwd: process.cwd(), home: homedir() });

/** Ansible's `unfrackpath(follow=False)`: env vars and `~` expanded, relative to `base`, normalised. */
export function expandPath(path: string, base: string, env: NodeJS.ProcessEnv, home: string): string {
  let p = path.replace(/\$(\w+)|\$\{(\w+)\}/g, (whole, a: string | undefined, b: string | undefined) => env[(a ?? b)!] ?? whole);
  if (p === '~' || p.startsWith('~/')) p = home + p.slice(1);
  return normalize(isAbsolute(p) ? p : resolve(base, p));
}

/**
 * The config file Ansible would use: `ANSIBLE_CONFIG` (a directory means its ansible.cfg), then
 * `./ansible.cfg` (skipped when the working directory is world-writable), `~/.ansible.cfg`,
 * `/etc/ansible/ansible.cfg`: the first that exists and can be read.
 */
export function findAnsibleConfig(
  l: Lookup = defaultLookup(),
  readable: (p: string) => boolean = isReadable,
): { file?: string; worldWritableCwd?: string } {
  const candidates: string[] = [];
  let fromEnv: string | undefined;
  if (l.env.ANSIBLE_CONFIG !== undefined) {
    fromEnv = expandPath(l.env.ANSIBLE_CONFIG, l.cwd, l.env, l.home);
    if (isDirectory(fromEnv)) fromEnv = join(fromEnv, 'ansible.cfg');
    candidates.push(fromEnv);
  }
  let skippedCwd: string | undefined;
  const cwdFile = join(l.cwd, 'ansible.cfg');
  if (worldWritable(l.cwd)) {
    if (existsSync(cwdFile)) skippedCwd = l.cwd;
  } else candidates.push(cwdFile);
  candidates.push(expandPath('~/.ansible.cfg', l.cwd, l.env, l.home), '/etc/ansible/ansible.cfg');
  const file = candidates.find(readable);
  // Ansible's rule: said unless the file used is ANSIBLE_CONFIG's (unset, it is no file's name)
  const fromEnvUsed = fromEnv !== undefined && file === fromEnv;
  return { file, worldWritableCwd: skippedCwd && !fromEnvUsed ? skippedCwd : undefined };
}

function isReadable(p: string): boolean {
  try {
    accessSync(p, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}
function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
function worldWritable(dir: string): boolean {
  try {
    return (statSync(dir).mode & 0o002) !== 0;
  } catch {
    return false;
  }
}

/** The settings from ansible.cfg (found as Ansible finds it) and the `ANSIBLE_*` environment. */
export function ansibleSettings(l: Lookup = defaultLookup(), found = findAnsibleConfig(l)): AnsibleSettings {
  const file = found.file;
  // Ansible refuses other extensions; racksmith reads what it finds as INI only when Ansible would
  if (file && !/\.(cfg|ini)$/.test(file))
    throw new InputError(`unsupported configuration file extension (Ansible reads .cfg and .ini)`, { file });
  const ini: IniFile = file ? parseIni(readInputText(file, 'ansible.cfg', 1 << 20), file) : new Map();
  const out: AnsibleSettings = { file, ignored: [], worldWritableCwd: found.worldWritableCwd };
  for (const s of SETTINGS) {
    const fromEnv = l.env[s.env];
    const entry = fromEnv !== undefined ? undefined : iniGet(ini, s.section, s.key);
    if (fromEnv === undefined && entry === undefined) continue;
    const origin: SettingOrigin = entry ? { file: file!, line: entry.line } : { file: `$${s.env}` };
    // paths in the file are relative to the file; from the environment, to the working directory
    const base = entry ? dirname(file!) : l.cwd;
    const value = typed(s.kind, entry ? entry.value : fromEnv!, origin, s.key, (p) => expandPath(p, base, l.env, l.home));
    (out as unknown as Record<string, Setting<unknown>>)[s.name] = { value, origin };
  }
  const honoured = new Set(SETTINGS.map((s) => `${s.section}.${s.key}`));
  for (const [section, keys] of ini)
    for (const [key, entry] of keys)
      if (!honoured.has(`${section}.${key}`) && !DONE_ANYWAY.has(`${section}.${key}`)) out.ignored.push({ section, key, line: entry.line });
  return out;
}

const TRUE = new Set(['y', 'yes', 'on', '1', 'true', 't']);
const FALSE = new Set(['n', 'no', 'off', '0', 'false', 'f']);

/** Ansible's `ensure_type`, stricter where Ansible would silently take a typo for false or fail later. */
function typed(kind: Kind, raw: string, origin: SettingOrigin, key: string, path: (p: string) => string): unknown {
  switch (kind) {
    case 'boolean': {
      const v = raw.trim().toLowerCase();
      if (TRUE.has(v)) return true;
      if (FALSE.has(v)) return false;
      throw new InputError(`${key} must be a boolean (yes/no, true/false, on/off, 1/0), got '${raw}'`, origin);
    }
    case 'integer': {
      const v = raw.trim();
      if (!/^[+]?\d+(_\d+)*$/.test(v)) throw new InputError(`${key} must be a whole number, got '${raw}'`, origin);
      return Number(v.replace(/[+_]/g, ''));
    }
    case 'path':
      return path(raw);
    case 'pathlist':
      return raw
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '')
        .map(path);
    case 'list':
      return raw
        .split(',')
        .map((x) => unquote(x.trim()))
        .filter((x) => x !== '');
    case 'string':
      return unquote(raw);
  }
}

/** Ansible's `unquote`: one pair of matching quotes around the whole value is dropped. */
function unquote(s: string): string {
  return s.length >= 2 && (s[0] === '"' || s[0] === "'") && s.at(-1) === s[0] ? s.slice(1, -1) : s;
}

/** The one warning that lists the keys racksmith does not honour, with their lines. */
export function ignoredKeysWarning(s: AnsibleSettings): string | undefined {
  if (!s.file || s.ignored.length === 0) return undefined;
  const keys = s.ignored.map((k) => `[${k.section}] ${k.key} (line ${k.line})`).join(', ');
  return `${s.file}: not honoured by racksmith: ${keys}`;
}
