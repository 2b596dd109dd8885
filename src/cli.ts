import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { parseExtraVars } from './inventory/extra-vars.ts';
import { loadInventory } from './inventory/load.ts';
import { execute, prepare, type PreparedPlay, type RunEvent } from './engine/index.ts';
import type { Playbook } from './contract/playbook.ts';
import { checkPlan, makePlan, parseDuration, plannedFrom, readPlan, writePlan, type PlanFile } from './plan/plan.ts';
import { codeHashes, type CodeHashes } from './plan/code.ts';
import { maskExtraVars, unmaskExtraVars } from './plan/extra-secrets.ts';
import { defaultJournalPath, hostsToResume, journalSink, type JournalSink } from './output/journal.ts';
import { selectHosts, selectLimit } from './inventory/limit.ts';
import type { Inventory } from './inventory/model.ts';
import { HumanReporter } from './output/human.ts';
import { jsonSink } from './output/json.ts';
import { listing, type ListingMode } from './output/listing.ts';
import { formatPos, InputError } from './util/errors.ts';
import { ignoredConnectionVars } from './inventory/ansible-connection-vars.ts';
import { batchSizes } from './engine/batches.ts';
import { playHosts, withPlayGroups } from './engine/play-hosts.ts';
import { vaultPasswords, VaultKeyring, type VaultOptions } from './inventory/vault.ts';
import { hostVarsOf, inventoryList, pythonJson } from './inventory/list-json.ts';
import { promptPassword } from './util/prompt.ts';
import { scrub, scrubbingStream, Secret } from './util/secret.ts';
import { checkConnectionFiles } from './connection/connect.ts';
import { DEFAULT_KEEPALIVE_MS } from './connection/ssh.ts';
import { printable, printableLines } from './util/printable.ts';
import { hostConnection } from './inventory/connection.ts';
import { ansibleSettings, ignoredKeysWarning, type AnsibleSettings, type SettingOrigin } from './config/ansible-cfg.ts';
import { sshArgsOfConfig } from './config/ssh-args-of-config.ts';
import { likelyTypos, typoWarning } from './inventory/did-you-mean.ts';
import { USAGE } from './cli/usage.ts';
import { APPLY_ARG, APPLY_ARG_TAKES_VALUE, CLI_OPTIONS, NOT_RECORDED, optionTokens, SECURITY_OPTIONS } from './cli/options.ts';

export const EXIT = { OK: 0, FAILED: 1, CHANGES: 2, BAD_INPUT: 3 } as const;
const PACKAGE_ROOT = packageRoot();

/** The nearest directory above this module with a package.json: from src/ and from the prebuilt dist/src/. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

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
  lockTimeoutSec: number;
  planOut?: string;
  yes: boolean;
  maxPlanAgeMs: number;
  journal?: string;
  resume?: string;
  json: boolean;
  verbose: number;
}

const list = (s: string | undefined) =>
  s === undefined
    ? undefined
    : s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);

/** The longest a Node timer can wait (2^31-1 ms): a longer timeout would fire at once. */
export const MAX_TIMER_SEC = Math.floor((2 ** 31 - 1) / 1000);
/** More hosts in flight than this is a typo, not a fleet (and each costs sockets and memory). */
export const MAX_FORKS = 10_000;

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

/**
 * argv -> options. `cfg` (ansible.cfg and the ANSIBLE_* environment, src/config/ansible-cfg.ts)
 * gives the defaults of the options it names; the command line wins over it, as in Ansible.
 */
export function parseCli(argv: string[], cfg: AnsibleSettings = { ignored: [] }): CliOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: CLI_OPTIONS,
    });
  } catch (e) {
    throw new InputError(`${(e as Error).message}\n\n${USAGE}`);
  }
  const v = parsed.values;
  if (v.help) return 'help';
  const inventory = v.inventory?.length ? v.inventory : cfg.inventory?.value;
  if (!inventory?.length) throw new InputError(`-i/--inventory is required (or 'inventory' in ansible.cfg's [defaults])\n\n${USAGE}`);
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
  const maxFail = v['max-fail-percent'];
  if (maxFail !== undefined && !(/^\d{1,3}(\.\d{1,6})?$/.test(maxFail) && Number(maxFail) <= 100)) {
    throw new InputError(`--max-fail-percent must be a number from 0 to 100, got '${printable(maxFail)}'`);
  }
  if (v['plan-out'] !== undefined && !v.check) throw new InputError('--plan-out needs --check: a plan is made from a dry run');
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
    tags: list(v.tags),
    skipTags: list(v['skip-tags']),
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
    keepaliveMs: wholeInRange('--ssh-keepalive', v['ssh-keepalive'], 0, 3600, DEFAULT_KEEPALIVE_MS / 1000, ' of seconds') * 1000,
    planOut: v['plan-out'],
    yes: !!v.yes,
    maxPlanAgeMs: parseDuration(v['max-plan-age'] ?? '24h'),
    journal: v.journal,
    resume: v.resume,
    json: !!v.json,
    verbose: v.verbose?.length ?? 0,
  };
}

/** Ansible's order: vault_identity_list before --vault-id; vault_password_file after --vault-password-file. */
function configVault(o: VaultOptions, cfg: AnsibleSettings): VaultOptions {
  const fileSetting = cfg.vaultPasswordFile;
  return {
    ...o,
    vaultIds: [...(cfg.vaultIdentityList?.value ?? []), ...o.vaultIds],
    // $ANSIBLE_VAULT_PASSWORD_FILE itself is read by vaultPasswords (src/inventory/vault.ts)
    passwordFiles: fileSetting && !fileSetting.origin.file.startsWith('$') ? [...o.passwordFiles, fileSetting.value] : o.passwordFiles,
  };
}

function configWarnings(cfg: AnsibleSettings): string[] {
  const ignored = ignoredKeysWarning(cfg);
  return [
    ...(cfg.worldWritableCwd ? [`${cfg.worldWritableCwd} is world writable: its ansible.cfg is ignored (as Ansible does)`] : []),
    ...(ignored ? [ignored] : []),
  ];
}

/**
 * Find a playbook: as given (relative to the working directory), else inside racksmith itself,
 * which is said (`notices`): the operator may have meant a site.ts of their own.
 */
function resolvePlaybook(p: string, baseDir: string, notices: string[]): string {
  const here = resolve(baseDir, p);
  if (existsSync(here)) return here;
  const bundled = resolve(PACKAGE_ROOT, p);
  if (existsSync(bundled)) {
    if (bundled !== here) notices.push(`no ${p} in ${baseDir}: running racksmith's bundled ${p} (${bundled})`);
    return bundled;
  }
  throw new InputError(`playbook not found: ${p}`);
}

/** Loads a playbook module; bin/provision.js passes one that uses the prebuilt dist/ when it is current. */
export type PlaybookImporter = (file: string) => Promise<{ default?: unknown }>;
const importSource: PlaybookImporter = (file) => import(pathToFileURL(file).href);

export async function loadPlaybook(file: string, importPlaybook: PlaybookImporter = importSource): Promise<Playbook> {
  let mod: { default?: unknown };
  try {
    mod = await importPlaybook(file);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`cannot load playbook: ${(e as Error).message.split('\n')[0]}`, { file });
  }
  const pb = mod.default as Playbook | undefined;
  if (!pb || !Array.isArray(pb.plays)) throw new InputError('playbook must `export default playbook({...})`', { file });
  return { ...pb, file: relative(process.cwd(), file) || file };
}

interface Loaded {
  opts: CliOptions;
  inventory: Inventory;
  prepared: PreparedPlay[];
  /** The code the playbooks run (for saved plans): hashed while loading them, only when a plan is made or applied. */
  code?: CodeHashes;
  /** --list-hosts: the hosts, nothing prepared. */
  listed?: string[];
  /** The hosts the selection (playbooks' patterns within --limit) reaches: recorded in and checked against plans. */
  selection?: string[];
  vault?: VaultKeyring;
  /** --list-tasks / --list-tags / --syntax-check: what to print (everything built and checked). */
  listingText?: string;
  /** What loading decided that the operator should hear (a skipped .ini, a bundled playbook): warnings. */
  notices: string[];
}

/** The hosts each play would reach (its pattern within --limit), without building anything. */
function prepareHostsOnly(written: Inventory, playbooks: Playbook[], limit: string | undefined): string[] {
  const inv = withPlayGroups(written, playbooks);
  const within = limit !== undefined ? new Set(selectLimit(inv, limit)) : undefined;
  return playbooks.flatMap((pb) => pb.plays.flatMap((p) => playHosts(inv, pb, p).filter((n) => !within || within.has(n))));
}

/** The vault passwords the options give, asked for on the terminal when they say so. */
async function keyring(o: VaultOptions): Promise<VaultKeyring | undefined> {
  const passwords = await vaultPasswords(o, promptPassword);
  return passwords.length ? new VaultKeyring(passwords) : undefined;
}

/** Everything up to the first connection: parse, load, validate, build every resource. */
async function load(
  argv: string[],
  importPlaybook: PlaybookImporter,
  extraLimit?: string[],
  baseDir?: string,
  forPlan = false,
): Promise<Loaded | 'help'> {
  const opts = parseCli(argv, ansibleSettings());
  if (opts === 'help') return 'help';
  // A plan's paths are relative to where it was made.
  if (baseDir) opts.inventory = opts.inventory.map((i) => resolve(baseDir, i));
  const vault = await keyring(opts.vault);
  const extra = parseExtraVars(opts.extraVars, vault);
  const inventory = loadInventory(opts.inventory, extra.vars, extra.sources, { vault });
  withCliSshArgs(inventory, opts);
  const notices = [...(inventory.notices ?? [])];
  const files = opts.playbooks.map((p) => resolvePlaybook(p, baseDir ?? process.cwd(), notices));
  const playbooks = [];
  for (const f of files) playbooks.push(await loadPlaybook(f, importPlaybook));
  if (opts.listHosts) {
    // in the plays' order, each play's hosts in Ansible's order (the order its batches take)
    return { opts, inventory, prepared: [], notices, listed: [...new Set(prepareHostsOnly(inventory, playbooks, opts.limit))] };
  }
  let limit = opts.limit;
  const only = [...(extraLimit ?? []), ...(opts.resume ? hostsToResume(opts.resume) : [])];
  if (opts.resume || extraLimit) {
    if (only.length === 0)
      throw new InputError(opts.resume ? `nothing to resume: every host in ${opts.resume} converged` : 'the plan lists no hosts');
    const names = new Set(only);
    const within = new Set(
      limit !== undefined ? selectLimit(withPlayGroups(inventory, playbooks), limit) : inventory.hosts.map((h) => h.name),
    );
    const chosen = inventory.hosts.map((h) => h.name).filter((h) => names.has(h) && within.has(h));
    if (chosen.length === 0) throw new InputError('none of the hosts to run again is in this inventory and --limit');
    limit = chosen.join(',');
  }
  const prepared = prepare(inventory, playbooks, { limit, tags: opts.tags, skipTags: opts.skipTags, become: opts.become });
  if (opts.listing) return { opts, inventory, prepared, notices, listingText: listing(opts.listing, playbooks, prepared) };
  if (prepared.every((p) => p.hosts.length === 0)) throw new InputError(['no hosts matched: nothing to do', ...notices].join('\n  '));
  const reached = [...new Set(prepared.flatMap((p) => p.hosts.map((h) => h.host)))];
  checkConnectionFiles(reached, opts.knownHosts);
  revealConnectionSecrets(reached);
  const planning = forPlan || opts.planOut !== undefined;
  const code = planning ? codeHashes(files, PACKAGE_ROOT) : undefined;
  const selection = planning ? [...new Set(prepareHostsOnly(inventory, playbooks, opts.limit))] : undefined;
  return { opts, inventory, prepared, code, selection, vault, notices };
}

/** Loading's notices (a skipped .ini, a bundled playbook) as warnings on stderr, where no run reports them. */
function writeNotices(out: { stderr: { write(s: string): unknown } }, notices: string[]): void {
  for (const message of notices) out.stderr.write(`warning: ${printable(message)}\n`);
}

/** The passwords hosts are reached with, opened now: a vaulted one read without a vault password is exit 3 here, at the value. */
function revealConnectionSecrets(hosts: readonly Inventory['hosts'][number][]): void {
  for (const h of hosts) {
    h.connection.password?.reveal();
    h.connection.become?.password?.reveal();
  }
}

const isSecurityOption = (name: string) => SECURITY_OPTIONS.has(name);

/**
 * --ssh-common-args / --ssh-extra-args are the default of ansible_ssh_common_args /
 * ansible_ssh_extra_args, as in Ansible: a host whose inventory sets the variable keeps its own.
 */
function withCliSshArgs(inv: Inventory, opts: CliOptions): void {
  const given = [
    ['ansible_ssh_common_args', opts.sshCommonArgs, opts.sshCommonArgsOrigin ?? { file: '--ssh-common-args' }],
    ['ansible_ssh_extra_args', opts.sshExtraArgs, { file: '--ssh-extra-args' }],
  ] as const;
  if (given.every(([, v]) => v === undefined)) return;
  for (const h of inv.hosts) {
    const vars = { ...h.vars };
    const sources = { ...h.varSources };
    for (const [name, value, flag] of given) {
      if (value === undefined || (name in vars && vars[name] !== null)) continue;
      vars[name] = value;
      sources[name] = flag;
    }
    h.connection = hostConnection(h.name, vars, sources, h.templated);
  }
}

/** The passwords the options ask for, once per run (before any host is reached). */
async function askedPasswords(opts: CliOptions): Promise<{ password?: Secret; becomePassword?: Secret }> {
  const ask = async (prompt: string) => new Secret((await promptPassword(prompt)).toString('utf8'));
  const password = opts.askPass ? await ask('SSH password: ') : undefined;
  const becomePassword = opts.askBecomePass ? await ask('BECOME password: ') : undefined;
  return { password, becomePassword };
}

/**
 * The arguments a plan records, in one canonical form (`--name value`): the same selection,
 * minus the dry-run switches and the security options, `-e` secrets as placeholders with their masks.
 */
function planArgv(argv: string[], vault: VaultKeyring | undefined, opts: CliOptions): string[] {
  // an inventory named by ansible.cfg is recorded as -i: the plan applies to the inventory reviewed
  const out: string[] = opts.inventoryFromConfig ? opts.inventory.flatMap((i) => ['--inventory', resolve(i)]) : [];
  for (const t of optionTokens(argv)) {
    if (t.kind === 'positional') {
      if (t.value.startsWith('-'))
        throw new InputError(`a plan cannot record the playbook '${t.value}' (it starts with '-'): give it as ./${t.value}`);
      out.push(t.value);
    } else if (t.kind === 'option' && !NOT_RECORDED.has(t.name) && !isSecurityOption(t.name)) {
      if (t.value === undefined) out.push(`--${t.name}`);
      else out.push(`--${t.name}`, t.name === 'extra-vars' ? maskExtraVars(t.value, vault) : t.value);
    }
  }
  return out;
}

/** A plan's argv holds only what planArgv records (it is signed; this is the second lock). */
function checkPlanArgv(argv: string[], file: string): void {
  let tokens;
  try {
    tokens = optionTokens(argv);
  } catch (e) {
    throw new InputError(`plan's argv: ${(e as Error).message}`, { file });
  }
  for (const t of tokens)
    if (t.kind === 'option' && (NOT_RECORDED.has(t.name) || isSecurityOption(t.name)))
      throw new InputError(`plan's argv holds ${t.rawName}: apply takes it from its own command line only`, { file });
}

/** Parse, load, prepare, run. Returns the exit code; never calls process.exit itself. */
export async function run(
  argv: string[],
  out: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream } = process,
  importPlaybook: PlaybookImporter = importSource,
): Promise<number> {
  // Every secret of the run is masked in whatever reaches the terminal or a pipe.
  out = { stdout: scrubbingStream(out.stdout), stderr: scrubbingStream(out.stderr) };
  let loaded: Loaded | 'help';
  let planned: ReturnType<typeof plannedFrom> | undefined;
  try {
    if (argv[0] === 'inventory') return await inventoryCommand(argv.slice(1), out);
    if (argv[0] === 'apply') {
      const { plan, file, rest, extra } = parseApply(argv.slice(1));
      checkPlanArgv(plan.argv, file);
      const planArgs = await unmaskExtraVars(plan.argv, extra, async (what) => (await promptPassword(what)).toString('utf8'));
      const l = await load([...planArgs, ...rest], importPlaybook, Object.keys(plan.hosts), plan.cwd, true);
      if (l === 'help') throw new InputError('apply takes a plan file, not --help');
      checkPlan(plan, file, { inventory: l.inventory, code: l.code!, maxAgeMs: l.opts.maxPlanAgeMs, selection: l.selection! });
      planned = plannedFrom(plan);
      loaded = l;
    } else {
      loaded = await load(argv, importPlaybook);
    }
    if (loaded === 'help') {
      out.stdout.write(USAGE + '\n');
      return EXIT.OK;
    }
    if (loaded.listingText !== undefined || loaded.listed)
      for (const w of loaded.inventory.warnings ?? []) out.stderr.write(`warning: ${printableLines(w.message)}\n`);
    if (loaded.listingText !== undefined) {
      writeNotices(out, loaded.notices);
      out.stdout.write(loaded.listingText);
      return EXIT.OK;
    }
    if (loaded.listed) {
      writeNotices(out, loaded.notices);
      out.stdout.write(`  hosts (${loaded.listed.length}):\n${loaded.listed.map((h) => `    ${h}\n`).join('')}`);
      return EXIT.OK;
    }
  } catch (e) {
    if (e instanceof InputError) {
      out.stderr.write(`error: ${printableLines(e.message)}\n`);
      return EXIT.BAD_INPUT;
    }
    throw e;
  }
  const { opts, prepared } = loaded;

  const journalFile = opts.journal ?? defaultJournalPath();
  const hostNames = [...new Set(prepared.flatMap((p) => p.hosts.map((h) => h.host.name)))];
  const runStart: RunEvent = { type: 'run_start', playbooks: opts.playbooks, hosts: hostNames, check: opts.check };
  // The journal is opened and its first line written before any host is contacted: a journal
  // that cannot be written is bad input (exit 3); one that fails later (disk full) is a warning
  // and the run goes on, its recap on the terminal (exit 1: the record of the run is incomplete).
  let journal: JournalSink;
  let journalStarted = false;
  try {
    journal = journalSink(journalFile, (err) => {
      if (journalStarted)
        out.stderr.write(`\nwarning: journal ${printable(journalFile)}: ${err.message}: the journal ends here; the run goes on\n`);
    });
    journal(runStart);
    journalStarted = true;
    if (journal.failure) {
      journal.close();
      throw new InputError(
        `cannot write the journal ${printable(journalFile)}: ${journal.failure.message} (give another place with --journal FILE)`,
      );
    }
  } catch (e) {
    if (e instanceof InputError) {
      out.stderr.write(`error: ${e.message}\n`);
      return EXIT.BAD_INPUT;
    }
    throw e;
  }
  let asked;
  try {
    asked = await askedPasswords(opts);
  } catch (e) {
    if (e instanceof InputError) {
      out.stderr.write(`error: ${e.message}\n`);
      return EXIT.BAD_INPUT;
    }
    throw e;
  }
  const human = new HumanReporter({ diff: opts.diff, verbose: opts.verbose, out: out.stderr });
  const json = opts.json ? jsonSink(out.stdout) : undefined;
  const emit = (e: RunEvent) => {
    human.onEvent(e);
    json?.(e);
    journal(e);
  };
  human.onEvent(runStart);
  json?.(runStart);
  if (opts.config?.file && opts.verbose > 0) out.stderr.write(`using ${printable(opts.config.file)}\n`);
  for (const message of opts.config?.warnings ?? []) {
    out.stderr.write(`warning: ${printable(message)}\n`);
    json?.({ type: 'warning', message });
  }
  const declared = new Set(prepared.flatMap((p) => [...(p.variables ?? [])]));
  const selectedHosts = [...new Map(prepared.flatMap((p) => p.hosts.map((h) => [h.host.name, h.host] as const))).values()];
  for (const t of likelyTypos(selectedHosts, declared)) {
    const message = typoWarning(t);
    out.stderr.write(`warning: ${printable(message)}\n`);
    json?.({ type: 'warning', message, variable: t.variable, suggestion: t.suggestion, at: t.pos ? formatPos(t.pos) : undefined });
  }
  // what Ansible warns about too: a host named like a group, a pattern term that matches nothing
  for (const w of loaded.inventory.warnings ?? []) {
    out.stderr.write(`warning: ${printableLines(w.message)}\n`);
    json?.({ type: 'warning', message: w.message, at: w.at ? formatPos(w.at) : undefined });
  }
  for (const message of loaded.notices) {
    out.stderr.write(`warning: ${printable(message)}\n`);
    json?.({ type: 'warning', message });
  }
  for (const w of ignoredConnectionVars(loaded.inventory, new Set(hostNames))) {
    const at = w.pos ? formatPos(w.pos) : undefined;
    const message = `${at ? `${at}: ` : ''}${w.variable} is not honoured: ${w.why}`;
    out.stderr.write(`warning: ${message}\n`);
    json?.({ type: 'warning', message, variable: w.variable, at });
  }
  // Ctrl-C: no new host or step; the steps in flight get a moment, then their hosts are aborted
  // (remote commands killed) and reported as interrupted; journal and recap are written. A second one is final.
  const abort = new AbortController();
  const onSignal = () => {
    journal.flush();
    if (abort.signal.aborted) process.exit(130);
    out.stderr.write('\ninterrupted: stopping the steps in flight, then writing the recap (Ctrl-C again to quit now)\n');
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const outcome = await execute(
      prepared,
      {
        inventoryFile: opts.inventory[0],
        knownHostsFile: opts.knownHosts,
        acceptNewHostKeys: opts.acceptNew,
        connectTimeoutMs: opts.timeoutMs,
        user: opts.user,
        privateKeyFile: opts.privateKey,
        connection: opts.connection,
        sshConfigFile: opts.sshConfig,
        ...asked,
        hostTimeoutMs: opts.hostTimeoutMs,
        keepaliveMs: opts.keepaliveMs,
        lockTimeoutSec: opts.lockTimeoutSec,
        check: opts.check,
        yes: opts.yes,
        forks: opts.forks,
        serial: opts.serial,
        maxFailPercent: opts.maxFailPercent,
        connectAttempts: 3,
        planned,
        // fingerprints of the facts only where a saved plan is written or checked
        hashFacts: planned !== undefined || opts.planOut !== undefined,
        signal: abort.signal,
      },
      emit,
    );
    await human.finish(outcome);
    if (opts.planOut) {
      writePlan(
        opts.planOut,
        makePlan({
          argv: planArgv(argv, loaded.vault, opts),
          cwd: process.cwd(),
          selection: loaded.selection!,
          inventory: loaded.inventory,
          code: loaded.code!,
          outcome,
        }),
      );
      out.stderr.write(`plan written to ${opts.planOut}: review it, then \`provision apply ${opts.planOut}\`\n`);
    }
    const journalFailure = journal.failure as Error | undefined; // set by a write during the run
    if (journalFailure) {
      out.stderr.write(`journal: ${journalFile} (incomplete: ${journalFailure.message})\n`);
      return EXIT.FAILED;
    }
    out.stderr.write(`journal: ${journalFile}\n`);
    // Interrupted runs report hosts that were not run as failed, so the recap's code stands.
    return outcome.exitCode;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    journal.close();
  }
}

/**
 * `provision inventory -i INV --list | --host H`: what racksmith resolved, in ansible-inventory's
 * JSON, so the two tools can be compared (secrets masked, vaulted values as their ciphertext).
 */
async function inventoryCommand(args: string[], out: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream }): Promise<number> {
  const { values } = (() => {
    try {
      return parseArgs({
        args,
        options: {
          inventory: { type: 'string', short: 'i', multiple: true },
          list: { type: 'boolean' },
          host: { type: 'string' },
          'extra-vars': { type: 'string', short: 'e', multiple: true },
          'vault-password-file': { type: 'string', multiple: true },
          'vault-id': { type: 'string', multiple: true },
          'ask-vault-pass': { type: 'boolean' },
        },
      });
    } catch (e) {
      throw new InputError(`inventory: ${(e as Error).message}\n\n${USAGE}`);
    }
  })();
  const cfg = ansibleSettings();
  const inventory = values.inventory?.length ? values.inventory : cfg.inventory?.value;
  if (!inventory?.length)
    throw new InputError(`inventory: -i/--inventory is required (or 'inventory' in ansible.cfg's [defaults])\n\n${USAGE}`);
  if (!!values.list === (values.host !== undefined)) throw new InputError('inventory: give exactly one of --list or --host HOST');
  const vault = await keyring(
    configVault(
      {
        vaultIds: values['vault-id'] ?? [],
        passwordFiles: values['vault-password-file'] ?? [],
        askVaultPass: !!values['ask-vault-pass'],
      },
      cfg,
    ),
  );
  const extra = parseExtraVars(values['extra-vars'] ?? [], vault);
  const inv = loadInventory(inventory, extra.vars, extra.sources, { vault });
  for (const w of inv.warnings ?? []) out.stderr.write(`warning: ${printableLines(w.message)}\n`);
  writeNotices(out, inv.notices ?? []);
  if (values.list) {
    out.stdout.write(pythonJson(inventoryList(inv)) + '\n');
    return EXIT.OK;
  }
  const names = selectHosts(inv, values.host!, '--host');
  if (names.length !== 1)
    throw new InputError(`inventory --host: '${values.host}' must name exactly one host (it matches ${names.length})`);
  out.stdout.write(pythonJson(hostVarsOf(inv.hosts.find((h) => h.name === names[0])!)) + '\n');
  return EXIT.OK;
}

/**
 * `apply PLAN [options]`: the plan file, plus options allowed to differ from the reviewed run
 * (output, forks, timeouts, journal), the security options (host keys: never from the plan) and
 * `-e` giving the plan's `-e` secrets again (`extra`).
 */
function parseApply(args: string[]): { plan: PlanFile; file: string; rest: string[]; extra: string[] } {
  const file = args[0];
  if (!file || file.startsWith('-')) throw new InputError(`apply needs a plan file\n\n${USAGE}`);
  const rest: string[] = [];
  const extra: string[] = [];
  const args1 = args.slice(1);
  for (let i = 0; i < args1.length; i++) {
    const a = args1[i];
    if (!APPLY_ARG.test(a))
      throw new InputError(
        `apply: ${a} cannot change a reviewed plan (only output, forks, timeouts, journal, connection, become and host-key options, and -e secrets)`,
      );
    const takesValue = APPLY_ARG_TAKES_VALUE.test(a);
    if (/^(-e|--extra-vars)(=|$)/.test(a)) {
      const v = takesValue ? args1[++i] : a.slice(a.indexOf('=') + 1);
      if (v === undefined) throw new InputError('apply: -e needs a value');
      extra.push(v);
      continue;
    }
    rest.push(a);
    if (takesValue && i + 1 < args1.length) rest.push(args1[++i]);
  }
  return { plan: readPlan(file), file, rest, extra };
}

/** How long the process may stay after the run has ended before it is ended (see main). */
export const EXIT_GRACE_MS = 3000;

export async function main(argv: string[], importPlaybook?: PlaybookImporter): Promise<void> {
  try {
    process.exitCode = await run(argv, process, importPlaybook);
  } catch (e) {
    process.stderr.write(scrub(`internal error: ${printableLines(String((e as Error).stack ?? e))}\n`));
    process.exitCode = EXIT.FAILED;
  }
  // The run is over, recap and journal written. Nothing should be left open, and normally the
  // process ends before this timer (unref'd: it keeps nothing alive) fires; a handle a failure
  // left open (a socket, a timer) must not keep it alive for ever: a CI job would hang.
  setTimeout(() => {
    process.stderr.write(`warning: still open after the run (${process.getActiveResourcesInfo().join(', ')}): exiting\n`);
    process.exit();
  }, EXIT_GRACE_MS).unref();
}
