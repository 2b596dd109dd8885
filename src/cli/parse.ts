import { existsSync } from 'node:fs';
import { drainMode, type DrainMode } from './drain-plan.ts';
import { parseArgs } from 'node:util';
import { ignoredKeysWarning, type AnsibleSettings, type SettingOrigin } from '../config/ansible-cfg.ts';
import { sshArgsOfConfig } from '../config/ssh-args-of-config.ts';
import { DEFAULT_KEEPALIVE_MS } from '../connection/ssh.ts';
import { PER_DESTINATION } from '../connection/handshake-gate.ts';
import { batchSizes } from '../engine/batches.ts';
import type { VaultOptions } from '../inventory/vault.ts';
import type { ListingMode } from '../output/listing.ts';
import { parseLabels } from '../history/select.ts';
import { parseDuration } from '../plan/plan.ts';
import { InputError } from '../util/errors.ts';
import { checkOutputFile } from '../util/atomic-write.ts';
import { PLAN_FILE } from '../plan/plan.ts';
import { printable } from '../util/printable.ts';
import { CLI_OPTIONS } from './options.ts';
import { USAGE } from './usage.ts';

export interface CliOptions {
  inventory: string[];
  /** Where the inventory came from when no -i named it (ansible.cfg or $ANSIBLE_INVENTORY): a plan records it. */
  inventoryFromConfig?: SettingOrigin;
  /** The ansible.cfg read (named with -v), and the warning listing its keys racksmith does not honour. */
  config?: { file?: string; warnings: string[] };
  vault: VaultOptions;
  listHosts: boolean;
  /** --list-tasks, --list-tags, --syntax-check: build and check everything, print, connect to nothing. */
  listing?: ListingMode;
  playbooks: string[];
  check: boolean;
  diff: boolean;
  limit?: string;
  tags?: string[];
  skipTags?: string[];
  forks: number;
  extraVars: string[];
  serial?: Array<number | string>;
  maxFailPercent?: number;
  knownHosts?: string;
  acceptNew: boolean;
  become: { enabled?: boolean; user?: string; method?: 'sudo' | 'su' };
  askBecomePass: boolean;
  askPass: boolean;
  user?: string;
  privateKey?: string;
  connection?: 'ssh' | 'local';
  sshCommonArgs?: string;
  /** Where --ssh-common-args came from when not from the command line (ansible.cfg's ssh_args). */
  sshCommonArgsOrigin?: SettingOrigin;
  sshExtraArgs?: string;
  sshConfig?: string;
  timeoutMs: number;
  hostTimeoutMs?: number;
  keepaliveMs: number;
  /** --ssh-handshakes: SSH handshakes at once (the others wait their turn, their connect timeout not yet started). */
  sshHandshakes: number;
  /** --ssh-handshakes-per-sshd: connections being made at once to one sshd (its MaxStartups). */
  sshHandshakesPerSshd: number;
  lockTimeoutSec: number;
  /** --drain (unset: each host's racksmith_drain, default none). */
  drain?: DrainMode;
  drainTimeoutSec: number;
  planOut?: string;
  yes: boolean;
  maxPlanAgeMs: number;
  journal?: string;
  resume?: string;
  /** --label KEY=VALUE: recorded in the run's history (`provision runs --label`). */
  labels: Record<string, string>;
  json: boolean;
  verbose: number;
  /** --recap: `summary` (default: totals and the hosts not ok) or `full` (a row per host; also with -v). */
  recap: 'summary' | 'full';
}

/**
 * Options that name a file or a user: given empty (an unset variable), each would silently mean
 * "not given" (the default key, the default journal, root) or a confusing error about ''.
 * (--plan-key is read before the rest, in main.ts, with the same rule.)
 */
const NAMING_OPTIONS = [
  'inventory',
  'vault-password-file',
  'vault-id',
  'known-hosts',
  'become-user',
  'user',
  'private-key',
  'key-file',
  'ssh-config',
  'journal',
] as const;

function refuseEmptyNames(v: Partial<Record<(typeof NAMING_OPTIONS)[number], string | string[]>>): void {
  for (const name of NAMING_OPTIONS) {
    const given = v[name];
    if ((Array.isArray(given) ? given : [given]).some((x) => x !== undefined && x.trim() === ''))
      throw new InputError(`--${name} '' names nothing (an unset variable?)`);
  }
}

/** --resume names a journal or a run; an empty one (an unset variable) would re-run every host. */
function resumeOf(value: string | undefined): string | undefined {
  if (value !== undefined && value.trim() === '') throw new InputError("--resume '' names no journal and no run");
  return value;
}

/**
 * -t/--skip-tags: every occurrence's comma-separated tags, together (blanks between commas
 * dropped). One that names no tag at all is refused: an unset variable (`-t "$TAGS"`) would
 * otherwise select every resource.
 */
function tagList(option: string, given: readonly string[] | undefined): string[] | undefined {
  if (given === undefined) return undefined;
  const each = given.map((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );
  const empty = given.find((_, i) => each[i].length === 0);
  if (empty !== undefined) throw new InputError(`${option} '${printable(empty)}' names no tag`);
  return each.flat();
}

/** The longest a Node timer can wait (2^31-1 ms): a longer timeout would fire at once. */
export const MAX_TIMER_SEC = Math.floor((2 ** 31 - 1) / 1000);
/** More hosts in flight than this is a typo, not a fleet (and each costs sockets and memory). */
export const MAX_FORKS = 10_000;
/** SSH handshakes at once by default (docs/scale.md: what one controller's thread handshakes). */
export const DEFAULT_SSH_HANDSHAKES = 100;

/** A whole number from `min` to `max` (the option's range), or `fallback` when not given. */
function wholeInRange(name: string, v: string | undefined, min: number, max: number, fallback: number, unit = ''): number {
  if (v === undefined) return fallback;
  if (!/^[0-9]+$/.test(v) || Number(v) < min || Number(v) > max)
    throw new InputError(`${name} must be a whole number${unit} from ${min} to ${max}, got '${printable(v)}'`);
  return Number(v);
}

/** --serial: comma-separated counts and percentages; an empty entry is a typo, not "skip". */
function serialList(v: string | undefined): Array<number | string> | undefined {
  if (v === undefined) return undefined;
  const entries = v.split(',').map((x) => x.trim());
  if (entries.some((x) => x === '')) throw new InputError(`--serial has an empty entry: '${printable(v)}' (e.g. 1,10%,25%)`);
  const serial = entries.map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  batchSizes(1, serial); // validates every entry: bad input is exit 3, before any host
  return serial;
}

/** A setting of ansible.cfg in the range of the option it stands for, else exit 3 at its line. */
function configInRange(name: string, s: { value: number; origin: SettingOrigin } | undefined, min: number, max: number) {
  if (s === undefined) return undefined;
  if (s.value < min || s.value > max) throw new InputError(`${name} must be from ${min} to ${max}, got ${s.value}`, s.origin);
  return String(s.value);
}

/** argv as parseArgs reads it with the option table; what it cannot read is bad input, shown with the usage. */
function parseCliArgs(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: CLI_OPTIONS });
  } catch (e) {
    throw new InputError(`${(e as Error).message}\n\n${USAGE}`);
  }
}

/**
 * ansible.cfg's settings as the defaults of the options they stand for, where the command line
 * gives none. Returns the --ssh-common-args it made of ssh_args, if it did.
 */
function withConfigDefaults(v: ReturnType<typeof parseCliArgs>['values'], cfg: AnsibleSettings): string | undefined {
  v.forks ??= configInRange('forks', cfg.forks, 1, MAX_FORKS);
  v.timeout ??= configInRange('timeout', cfg.timeout, 1, MAX_TIMER_SEC);
  v.user ??= cfg.remoteUser?.value;
  if (v['private-key'] === undefined && v['key-file'] === undefined) v['private-key'] = cfg.privateKeyFile?.value;
  // host_key_checking = False: Ansible passes StrictHostKeyChecking=no, which racksmith reads as accept-new
  if (cfg.hostKeyChecking?.value === false) v['ssh-accept-new'] = true;
  if (v.become === undefined && cfg.become?.value) v.become = true;
  v['become-user'] ??= cfg.becomeUser?.value;
  v['become-method'] ??= cfg.becomeMethod?.value;
  if (v['ask-become-pass'] === undefined && cfg.becomeAskPass?.value) v['ask-become-pass'] = true;
  const cfgSshArgs = v['ssh-common-args'] === undefined && cfg.sshArgs ? sshArgsOfConfig(cfg.sshArgs.value, cfg.sshArgs.origin) : undefined;
  if (cfgSshArgs !== undefined) v['ssh-common-args'] = cfgSshArgs;
  return cfgSshArgs;
}

/**
 * argv -> options. `cfg` (ansible.cfg and the ANSIBLE_* environment, src/config/ansible-cfg.ts)
 * gives the defaults of the options it names; the command line wins over it, as in Ansible.
 */
export function parseCli(argv: string[], cfg: AnsibleSettings = { ignored: [] }): CliOptions | 'help' {
  const parsed = parseCliArgs(argv);
  const v = parsed.values;
  if (v.help) return 'help';
  refuseEmptyNames(v);
  const inventory = v.inventory?.length ? v.inventory : cfg.inventory?.value;
  if (!inventory?.length) throw new InputError(`${inventoryRequired(cfg)}\n\n${USAGE}`);
  const cfgSshArgs = withConfigDefaults(v, cfg);
  const maxFail = v['max-fail-percent'];
  if (maxFail !== undefined && !(/^\d{1,3}(\.\d{1,6})?$/.test(maxFail) && Number(maxFail) <= 100)) {
    throw new InputError(`--max-fail-percent must be a number from 0 to 100, got '${printable(maxFail)}'`);
  }
  if (v['plan-out'] !== undefined && !v.check) throw new InputError('--plan-out needs --check: a plan is made from a dry run');
  if (v['plan-out'] !== undefined) checkOutputFile(v['plan-out'], '--plan-out', PLAN_FILE);
  // -u (or ansible.cfg's remote_user) as the inventory's ansible_user must be (inventory/schema.ts)
  if (v.user !== undefined && !/^[A-Za-z_][A-Za-z0-9_.-]*\$?$/.test(v.user)) {
    throw new InputError(
      `-u/--user must be a user name (letters, digits, _ . -), got '${printable(v.user)}'`,
      cfg.remoteUser && v.user === cfg.remoteUser.value ? cfg.remoteUser.origin : undefined,
    );
  }
  const method = v['become-method'];
  if (method !== undefined && method !== 'sudo' && method !== 'su')
    throw new InputError(
      `--become-method must be sudo or su, got '${method}'`,
      cfg.becomeMethod && method === cfg.becomeMethod.value ? cfg.becomeMethod.origin : undefined,
    );
  const connection = v.connection;
  if (connection !== undefined && connection !== 'ssh' && connection !== 'local')
    throw new InputError(`-c/--connection must be ssh or local, got '${connection}'`);
  if (v['ssh-config'] !== undefined && !existsSync(v['ssh-config']))
    throw new InputError(`-F/--ssh-config: no such file: ${v['ssh-config']}`);
  const serial = serialList(v.serial);
  if (v.recap !== undefined && v.recap !== 'summary' && v.recap !== 'full')
    throw new InputError(`--recap must be summary or full, got '${printable(v.recap)}'`);
  const warning = ignoredKeysWarning(cfg);
  return {
    inventory,
    ...(v.inventory?.length ? {} : { inventoryFromConfig: cfg.inventory!.origin }),
    ...(cfg.file || warning || cfg.worldWritableCwd ? { config: { file: cfg.file, warnings: configWarnings(cfg) } } : {}),
    vault: configVault(
      { vaultIds: v['vault-id'] ?? [], passwordFiles: v['vault-password-file'] ?? [], askVaultPass: !!v['ask-vault-pass'] },
      cfg,
    ),
    listHosts: !!v['list-hosts'],
    listing: v['syntax-check'] ? 'syntax' : v['list-tasks'] ? 'tasks' : v['list-tags'] ? 'tags' : undefined,
    playbooks: parsed.positionals.length ? parsed.positionals : ['playbooks/site.ts'],
    check: !!v.check,
    diff: !!v.diff,
    limit: v.limit,
    tags: tagList('-t/--tags', v.tags),
    skipTags: tagList('--skip-tags', v['skip-tags']),
    forks: wholeInRange('--forks', v.forks, 1, MAX_FORKS, 50),
    extraVars: v['extra-vars'] ?? [],
    serial,
    maxFailPercent: maxFail === undefined ? undefined : Number(maxFail),
    knownHosts: v['known-hosts'],
    acceptNew: !!v['ssh-accept-new'],
    become: { enabled: v.become ? true : undefined, user: v['become-user'], method },
    askBecomePass: !!v['ask-become-pass'],
    askPass: !!v['ask-pass'],
    user: v.user,
    privateKey: v['private-key'] ?? v['key-file'],
    connection,
    sshCommonArgs: v['ssh-common-args'],
    ...(cfgSshArgs !== undefined ? { sshCommonArgsOrigin: cfg.sshArgs!.origin } : {}),
    sshExtraArgs: v['ssh-extra-args'],
    sshConfig: v['ssh-config'],
    timeoutMs: wholeInRange('--timeout', v.timeout, 1, MAX_TIMER_SEC, 10, ' of seconds') * 1000,
    hostTimeoutMs:
      v['host-timeout'] === undefined
        ? undefined
        : wholeInRange('--host-timeout', v['host-timeout'], 1, MAX_TIMER_SEC, 0, ' of seconds') * 1000,
    lockTimeoutSec: wholeInRange('--lock-timeout', v['lock-timeout'], 0, 86400, 300, ' of seconds'),
    drain: v.drain === undefined ? undefined : drainMode(v.drain, '--drain'),
    drainTimeoutSec: wholeInRange('--drain-timeout', v['drain-timeout'], 1, 86400, 600, ' of seconds'),
    keepaliveMs: wholeInRange('--ssh-keepalive', v['ssh-keepalive'], 0, 3600, DEFAULT_KEEPALIVE_MS / 1000, ' of seconds') * 1000,
    sshHandshakes: wholeInRange('--ssh-handshakes', v['ssh-handshakes'], 1, MAX_FORKS, DEFAULT_SSH_HANDSHAKES),
    // (at least 2: a host certificate's fetch opens a second connection beside the handshake's)
    sshHandshakesPerSshd: wholeInRange('--ssh-handshakes-per-sshd', v['ssh-handshakes-per-sshd'], 2, MAX_FORKS, PER_DESTINATION),
    planOut: v['plan-out'],
    yes: !!v.yes,
    maxPlanAgeMs: parseDuration(v['max-plan-age'] ?? '24h'),
    journal: v.journal,
    resume: resumeOf(v.resume),
    labels: parseLabels(v.label ?? []),
    json: !!v.json,
    verbose: v.verbose?.length ?? 0,
    recap: v.recap ?? 'summary',
  };
}

/** Ansible's order: vault_identity_list before --vault-id; vault_password_file after --vault-password-file. */
export function configVault(o: VaultOptions, cfg: AnsibleSettings): VaultOptions {
  const fileSetting = cfg.vaultPasswordFile;
  return {
    ...o,
    vaultIds: [...(cfg.vaultIdentityList?.value ?? []), ...o.vaultIds],
    // $ANSIBLE_VAULT_PASSWORD_FILE itself is read by vaultPasswords (src/inventory/vault.ts)
    passwordFiles: fileSetting && !fileSetting.origin.file.startsWith('$') ? [...o.passwordFiles, fileSetting.value] : o.passwordFiles,
  };
}

/** No inventory anywhere: said with the ansible.cfg that was not read, when one was skipped. */
export function inventoryRequired(cfg: AnsibleSettings): string {
  const skipped = cfg.worldWritableCwd ? `; ${worldWritableWarning(cfg.worldWritableCwd)}` : '';
  return `-i/--inventory is required (or 'inventory' in ansible.cfg's [defaults])${skipped}`;
}

function worldWritableWarning(dir: string): string {
  return `${dir} is world writable: its ansible.cfg is ignored (as Ansible does)`;
}

function configWarnings(cfg: AnsibleSettings): string[] {
  const ignored = ignoredKeysWarning(cfg);
  return [...(cfg.worldWritableCwd ? [worldWritableWarning(cfg.worldWritableCwd)] : []), ...(ignored ? [ignored] : [])];
}
