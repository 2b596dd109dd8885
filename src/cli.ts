import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { parseExtraVars } from './inventory/extra-vars.ts';
import { loadInventory } from './inventory/load.ts';
import { execute, prepare, type PreparedPlay, type RunEvent } from './engine/index.ts';
import type { Playbook } from './contract/playbook.ts';
import { checkPlan, makePlan, parseDuration, plannedFrom, readPlan, writePlan, type PlanFile } from './plan/plan.ts';
import { codeHashes, type CodeHashes } from './plan/code.ts';
import { defaultJournalPath, hostsToResume, journalSink } from './output/journal.ts';
import { selectHosts } from './inventory/limit.ts';
import type { Inventory } from './inventory/model.ts';
import { HumanReporter } from './output/human.ts';
import { jsonSink } from './output/json.ts';
import { InputError } from './util/errors.ts';
import { batchSizes } from './engine/batches.ts';
import { vaultPasswords, VaultKeyring, type VaultOptions } from './inventory/vault.ts';
import { hostVarsOf, inventoryList, pythonJson } from './inventory/list-json.ts';
import { promptPassword } from './util/prompt.ts';

export const EXIT = { OK: 0, FAILED: 1, CHANGES: 2, BAD_INPUT: 3 } as const;
const PACKAGE_ROOT = packageRoot();

/** The nearest directory above this module with a package.json: from src/ and from the prebuilt dist/src/. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

const USAGE = `usage: provision [PLAYBOOK...] -i INVENTORY [options]
       provision apply PLAN [--max-plan-age 24h] [options]
       provision inventory -i INVENTORY (--list | --host HOST) [-e VARS] [vault options]

  -i, --inventory PATH     Ansible inventory: YAML, INI or JSON file, or a directory of them
                           (group_vars/ and host_vars/ beside it); repeatable, merged in order
      --list-hosts         print the hosts the run would reach (after -l), run nothing
      --vault-password-file FILE, --vault-id [LABEL@]FILE|prompt, --ask-vault-pass
                           passwords for !vault values and vault-encrypted files
  -C, --check              dry run: probe and diff, change nothing (exit 2 if changes are pending)
  -D, --diff               show file diffs and before → after values
  -l, --limit PATTERN      host pattern: host, group, glob, ~regex, !exclude, &intersect
  -t, --tags LIST          only resources with these tags (comma-separated)
      --skip-tags LIST     skip resources with these tags
  -f, --forks N            hosts in flight at once (default 50)
  -e, --extra-vars VARS    key=value, @file.yaml or a YAML mapping; wins over the inventory
      --serial LIST        rolling batches, e.g. 1,10%,25% (last size repeats)
      --max-fail-percent P stop later batches once more than P% of a play's hosts failed
      --known-hosts FILE   known_hosts file (default: racksmith_known_hosts var or ~/.ssh/known_hosts)
      --ssh-accept-new     record unknown host keys instead of refusing (changed keys are always refused)
      --timeout SECONDS    SSH connect timeout (default 10)
      --host-timeout SECS  give up on a host that takes longer than this (it counts as unreachable)
      --lock-timeout SECS  wait this long for another run's apply lock on a host (default 300; 0: do not wait)
      --plan-out FILE      with --check: save the reviewed changes for \`provision apply FILE\`
      --yes                apply changes that destroy data (storage_wipe) without a reviewed plan
      --max-plan-age DUR   apply: refuse plans older than this (default 24h)
      --journal FILE       where to write the run journal (NDJSON; default under ~/.local/state/racksmith)
      --resume JOURNAL     run only the hosts that failed, were unreachable or did not finish there
      --json               NDJSON events on stdout (the human view stays on stderr)
  -v, --verbose            more detail (repeat for more)
  -h, --help

Playbook defaults to playbooks/site.ts. Exit codes: 0 converged or nothing to do, 1 a host failed
or was unreachable, 2 check mode found changes, 3 bad input (nothing was run on any host).`;

export interface CliOptions {
  inventory: string[];
  vault: VaultOptions;
  listHosts: boolean;
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
  timeoutMs: number;
  hostTimeoutMs?: number;
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

function positiveInt(name: string, v: string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (!/^[0-9]+$/.test(v) || Number(v) < 1) throw new InputError(`${name} must be a positive whole number, got '${v}'`);
  return Number(v);
}

export function parseCli(argv: string[]): CliOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        inventory: { type: 'string', short: 'i', multiple: true },
        'vault-password-file': { type: 'string', multiple: true },
        'vault-id': { type: 'string', multiple: true },
        'ask-vault-pass': { type: 'boolean' },
        'list-hosts': { type: 'boolean' },
        check: { type: 'boolean', short: 'C' },
        diff: { type: 'boolean', short: 'D' },
        limit: { type: 'string', short: 'l' },
        tags: { type: 'string', short: 't' },
        'skip-tags': { type: 'string' },
        forks: { type: 'string', short: 'f' },
        'extra-vars': { type: 'string', short: 'e', multiple: true },
        serial: { type: 'string' },
        'max-fail-percent': { type: 'string' },
        'known-hosts': { type: 'string' },
        'ssh-accept-new': { type: 'boolean' },
        timeout: { type: 'string' },
        'host-timeout': { type: 'string' },
        'lock-timeout': { type: 'string' },
        'plan-out': { type: 'string' },
        yes: { type: 'boolean' },
        'max-plan-age': { type: 'string' },
        journal: { type: 'string' },
        resume: { type: 'string' },
        json: { type: 'boolean' },
        verbose: { type: 'boolean', short: 'v', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    throw new InputError(`${(e as Error).message}\n\n${USAGE}`);
  }
  const v = parsed.values;
  if (v.help) return 'help';
  if (!v.inventory?.length) throw new InputError(`-i/--inventory is required\n\n${USAGE}`);
  const maxFail = v['max-fail-percent'];
  if (maxFail !== undefined && !(/^\d+(\.\d+)?$/.test(maxFail) && Number(maxFail) <= 100)) {
    throw new InputError(`--max-fail-percent must be a number from 0 to 100, got '${maxFail}'`);
  }
  if (v['plan-out'] !== undefined && !v.check) throw new InputError('--plan-out needs --check: a plan is made from a dry run');
  const lockTimeout = v['lock-timeout'];
  if (lockTimeout !== undefined && !(/^[0-9]+$/.test(lockTimeout) && Number(lockTimeout) <= 86400)) {
    throw new InputError(`--lock-timeout must be a whole number of seconds from 0 to 86400, got '${lockTimeout}'`);
  }
  const serial = list(v.serial)?.map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  if (serial) batchSizes(1, serial); // validates every entry: bad input is exit 3, before any host
  return {
    inventory: v.inventory,
    vault: { vaultIds: v['vault-id'] ?? [], passwordFiles: v['vault-password-file'] ?? [], askVaultPass: !!v['ask-vault-pass'] },
    listHosts: !!v['list-hosts'],
    playbooks: parsed.positionals.length ? parsed.positionals : ['playbooks/site.ts'],
    check: !!v.check,
    diff: !!v.diff,
    limit: v.limit,
    tags: list(v.tags),
    skipTags: list(v['skip-tags']),
    forks: positiveInt('--forks', v.forks, 50),
    extraVars: v['extra-vars'] ?? [],
    serial,
    maxFailPercent: maxFail === undefined ? undefined : Number(maxFail),
    knownHosts: v['known-hosts'],
    acceptNew: !!v['ssh-accept-new'],
    timeoutMs: positiveInt('--timeout', v.timeout, 10) * 1000,
    hostTimeoutMs: v['host-timeout'] === undefined ? undefined : positiveInt('--host-timeout', v['host-timeout'], 0) * 1000,
    lockTimeoutSec: lockTimeout === undefined ? 300 : Number(lockTimeout),
    planOut: v['plan-out'],
    yes: !!v.yes,
    maxPlanAgeMs: parseDuration(v['max-plan-age'] ?? '24h'),
    journal: v.journal,
    resume: v.resume,
    json: !!v.json,
    verbose: v.verbose?.length ?? 0,
  };
}

/** Find a playbook: as given (relative to the working directory), else inside racksmith itself. */
function resolvePlaybook(p: string, baseDir: string): string {
  const here = resolve(baseDir, p);
  if (existsSync(here)) return here;
  const bundled = resolve(PACKAGE_ROOT, p);
  if (existsSync(bundled)) return bundled;
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
  return pb;
}

interface Loaded {
  opts: CliOptions;
  inventory: Inventory;
  prepared: PreparedPlay[];
  /** The code the playbooks run (for saved plans): hashed while loading them, only when a plan is made or applied. */
  code?: CodeHashes;
  /** --list-hosts: the hosts, nothing prepared. */
  listed?: string[];
}

/** The hosts each play would reach (its pattern within --limit), without building anything. */
function prepareHostsOnly(inv: Inventory, playbooks: Playbook[], limit: string | undefined): string[] {
  const within = limit !== undefined ? new Set(selectHosts(inv, limit, '--limit')) : undefined;
  return playbooks.flatMap((pb) =>
    pb.plays.flatMap((p) => selectHosts(inv, p.hosts, `pattern of play '${p.name}'`, true).filter((n) => !within || within.has(n))),
  );
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
  const opts = parseCli(argv);
  if (opts === 'help') return 'help';
  // A plan's paths are relative to where it was made.
  if (baseDir) opts.inventory = opts.inventory.map((i) => resolve(baseDir, i));
  const vault = await keyring(opts.vault);
  const extra = parseExtraVars(opts.extraVars, vault);
  const inventory = loadInventory(opts.inventory, extra.vars, extra.sources, { vault });
  const files = opts.playbooks.map((p) => resolvePlaybook(p, baseDir ?? process.cwd()));
  const playbooks = [];
  for (const f of files) playbooks.push(await loadPlaybook(f, importPlaybook));
  if (opts.listHosts) {
    const names = new Set(prepareHostsOnly(inventory, playbooks, opts.limit));
    return { opts, inventory, prepared: [], listed: inventory.hosts.map((h) => h.name).filter((n) => names.has(n)) };
  }
  let limit = opts.limit;
  const only = [...(extraLimit ?? []), ...(opts.resume ? hostsToResume(opts.resume) : [])];
  if (opts.resume || extraLimit) {
    if (only.length === 0)
      throw new InputError(opts.resume ? `nothing to resume: every host in ${opts.resume} converged` : 'the plan lists no hosts');
    const names = new Set(only);
    const within = new Set(limit !== undefined ? selectHosts(inventory, limit, '--limit') : inventory.hosts.map((h) => h.name));
    const chosen = inventory.hosts.map((h) => h.name).filter((h) => names.has(h) && within.has(h));
    if (chosen.length === 0) throw new InputError('none of the hosts to run again is in this inventory and --limit');
    limit = chosen.join(',');
  }
  const prepared = prepare(inventory, playbooks, { limit, tags: opts.tags, skipTags: opts.skipTags });
  if (prepared.every((p) => p.hosts.length === 0)) throw new InputError('no hosts matched: nothing to do');
  const code = forPlan || opts.planOut !== undefined ? codeHashes(files, PACKAGE_ROOT) : undefined;
  return { opts, inventory, prepared, code };
}

/** The arguments a plan records: the same selection, minus the dry-run switches. */
function planArgv(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-C' || a === '--check') continue;
    if (a === '--plan-out' || a === '--journal' || a === '--resume') {
      i++;
      continue;
    }
    if (/^--(plan-out|journal|resume)=/.test(a)) continue;
    out.push(a);
  }
  return out;
}

/** Parse, load, prepare, run. Returns the exit code; never calls process.exit itself. */
export async function run(
  argv: string[],
  out: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream } = process,
  importPlaybook: PlaybookImporter = importSource,
): Promise<number> {
  let loaded: Loaded | 'help';
  let planned: ReturnType<typeof plannedFrom> | undefined;
  try {
    if (argv[0] === 'inventory') return await inventoryCommand(argv.slice(1), out);
    if (argv[0] === 'apply') {
      const { plan, file, rest } = parseApply(argv.slice(1));
      const l = await load([...plan.argv, ...rest], importPlaybook, Object.keys(plan.hosts), plan.cwd, true);
      if (l === 'help') throw new InputError('apply takes a plan file, not --help');
      checkPlan(plan, file, { inventory: l.inventory, code: l.code!, maxAgeMs: l.opts.maxPlanAgeMs });
      planned = plannedFrom(plan);
      loaded = l;
    } else {
      loaded = await load(argv, importPlaybook);
    }
    if (loaded === 'help') {
      out.stdout.write(USAGE + '\n');
      return EXIT.OK;
    }
    if (loaded.listed) {
      out.stdout.write(`  hosts (${loaded.listed.length}):\n${loaded.listed.map((h) => `    ${h}\n`).join('')}`);
      return EXIT.OK;
    }
  } catch (e) {
    if (e instanceof InputError) {
      out.stderr.write(`error: ${e.message}\n`);
      return EXIT.BAD_INPUT;
    }
    throw e;
  }
  const { opts, prepared } = loaded;

  const journalFile = opts.journal ?? defaultJournalPath();
  const human = new HumanReporter({ diff: opts.diff, verbose: opts.verbose, out: out.stderr });
  const json = opts.json ? jsonSink(out.stdout) : undefined;
  const journal = journalSink(journalFile);
  const emit = (e: RunEvent) => {
    human.onEvent(e);
    json?.(e);
    journal(e);
  };
  const hostNames = [...new Set(prepared.flatMap((p) => p.hosts.map((h) => h.host.name)))];
  emit({ type: 'run_start', playbooks: opts.playbooks, hosts: hostNames, check: opts.check });
  // Ctrl-C: finish what is in flight, write the journal, exit cleanly. A second one is final.
  const abort = new AbortController();
  const onSignal = () => {
    journal.flush();
    if (abort.signal.aborted) process.exit(130);
    out.stderr.write('\ninterrupted: finishing the steps in flight (Ctrl-C again to quit now)\n');
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
        hostTimeoutMs: opts.hostTimeoutMs,
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
          argv: planArgv(argv),
          cwd: process.cwd(),
          inventory: loaded.inventory,
          code: loaded.code!,
          outcome,
        }),
      );
      out.stderr.write(`plan written to ${opts.planOut}: review it, then \`provision apply ${opts.planOut}\`\n`);
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
  if (!values.inventory?.length) throw new InputError(`inventory: -i/--inventory is required\n\n${USAGE}`);
  if (!!values.list === (values.host !== undefined)) throw new InputError('inventory: give exactly one of --list or --host HOST');
  const vault = await keyring({
    vaultIds: values['vault-id'] ?? [],
    passwordFiles: values['vault-password-file'] ?? [],
    askVaultPass: !!values['ask-vault-pass'],
  });
  const extra = parseExtraVars(values['extra-vars'] ?? [], vault);
  const inv = loadInventory(values.inventory, extra.vars, extra.sources, { vault });
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

/** `apply PLAN [options]`: the plan file, plus options allowed to differ from the reviewed run. */
function parseApply(args: string[]): { plan: PlanFile; file: string; rest: string[] } {
  const file = args[0];
  if (!file || file.startsWith('-')) throw new InputError(`apply needs a plan file\n\n${USAGE}`);
  const rest = args.slice(1);
  const allowed =
    /^(--json|-v+|--verbose|-f|--forks|--journal|--max-plan-age|--known-hosts|--ssh-accept-new|--timeout|--host-timeout|--lock-timeout|-D|--diff|--vault-password-file|--vault-id|--ask-vault-pass)(=.*)?$/;
  for (let i = 0; i < rest.length; i++) {
    if (!allowed.test(rest[i]))
      throw new InputError(`apply: ${rest[i]} cannot change a reviewed plan (only output, forks, timeouts, journal and host-key options)`);
    if (
      /^(-f|--forks|--journal|--max-plan-age|--known-hosts|--timeout|--host-timeout|--lock-timeout|--vault-password-file|--vault-id)$/.test(
        rest[i],
      )
    )
      i++;
  }
  return { plan: readPlan(file), file, rest };
}

export async function main(argv: string[], importPlaybook?: PlaybookImporter): Promise<void> {
  try {
    process.exitCode = await run(argv, process, importPlaybook);
  } catch (e) {
    process.stderr.write(`internal error: ${(e as Error).stack ?? e}\n`);
    process.exitCode = EXIT.FAILED;
  }
}
