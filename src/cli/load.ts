import { resolve } from 'node:path';
import { ansibleSettings } from '../config/ansible-cfg.ts';
import { checkConnectionFiles } from '../connection/connect.ts';
import type { Playbook } from '../contract/playbook.ts';
import { prepare, type FactsOf, type PreparedPlay } from '../engine/index.ts';
import { playHosts, withPlayGroups } from '../engine/play-hosts.ts';
import { hostConnection } from '../inventory/connection.ts';
import { parseExtraVars } from '../inventory/extra-vars.ts';
import { selectLimit } from '../inventory/limit.ts';
import { loadInventory } from '../inventory/load.ts';
import type { Inventory } from '../inventory/model.ts';
import type { VaultKeyring } from '../inventory/vault.ts';
import { hostsToResume } from '../output/journal.ts';
import { listing } from '../output/listing.ts';
import { codeHashes, type CodeHashes } from '../plan/code.ts';
import { InputError } from '../util/errors.ts';
import { ineffectiveOptions } from './options.ts';
import { parseCli, type CliOptions } from './parse.ts';
import { keyring } from './passwords.ts';
import { loadPlaybook, PACKAGE_ROOT, resolvePlaybook, type PlaybookImporter } from './playbook.ts';
import { drainPlan } from './drain-plan.ts';

export interface Loaded {
  opts: CliOptions;
  /** The playbook files loaded (a plan's resolved where it was made): what the run record names. */
  playbookFiles: string[];
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
  /** When a play asks for facts (`facts: true`): every play prepared again, with the hosts' gathered facts. */
  withFacts?: (factsOf: FactsOf) => PreparedPlay[];
}

/** Everything up to the first connection: parse, load, validate, build every resource. */
export async function load(
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
  const notices = ineffectiveOptions(argv, forPlan || opts.planOut !== undefined);
  const files = opts.playbooks.map((p) => resolvePlaybook(p, baseDir ?? process.cwd(), notices));
  const playbooks: Playbook[] = [];
  for (const f of files) playbooks.push(await loadPlaybook(f, importPlaybook));
  const limit = limitOfRerun(inventory, playbooks, opts, extraLimit);
  if (opts.listHosts) {
    // in the plays' order, each play's hosts in Ansible's order (the order its batches take)
    return {
      opts,
      playbookFiles: files,
      inventory,
      prepared: [],
      notices,
      listed: [...new Set(prepareHostsOnly(inventory, playbooks, limit))],
    };
  }
  const sel = { limit, tags: opts.tags, skipTags: opts.skipTags, become: opts.become };
  const prepared = prepare(inventory, playbooks, sel);
  const reached = [...new Set(prepared.flatMap((p) => p.hosts.map((h) => h.host)))];
  const connectionFiles = () =>
    checkConnectionFiles(reached, { knownHostsFile: opts.knownHosts, privateKeyFile: opts.privateKey, sshConfigFile: opts.sshConfig });
  // --syntax-check checks what a run would read before any host (keys, known_hosts, ssh configs);
  // the listings do not: they serve reviewers who may not hold the keys
  if (opts.listing === 'syntax') {
    connectionFiles();
    drainPlan(inventory, reached, opts.drain, opts.drainTimeoutSec); // (each host's drain and its controller)
  }
  if (opts.listing)
    return { opts, playbookFiles: files, inventory, prepared, notices, listingText: listing(opts.listing, playbooks, prepared) };
  if (prepared.every((p) => p.hosts.length === 0))
    throw new InputError(['no hosts matched: nothing to do', ...(inventory.warnings ?? []).map((w) => w.message), ...notices].join('\n  '));
  connectionFiles();
  revealConnectionSecrets(reached);
  const planning = forPlan || opts.planOut !== undefined;
  const code = planning ? codeHashes(files, PACKAGE_ROOT) : undefined;
  const selection = planning ? [...new Set(prepareHostsOnly(inventory, playbooks, opts.limit))] : undefined;
  const withFacts = prepared.some((p) => p.awaitsFacts && p.hosts.length)
    ? (factsOf: FactsOf) => prepare(inventory, playbooks, sel, factsOf)
    : undefined;
  return { opts, playbookFiles: files, inventory, prepared, code, selection, vault, notices, withFacts };
}

/**
 * The --limit of a run again: a --resume's hosts to run again, or a plan's hosts (`only`), within
 * the command line's --limit; the command line's --limit alone otherwise.
 */
function limitOfRerun(inventory: Inventory, playbooks: Playbook[], opts: CliOptions, extraLimit: string[] | undefined): string | undefined {
  if (!opts.resume && !extraLimit) return opts.limit;
  const only = [...(extraLimit ?? []), ...(opts.resume ? hostsToResume(opts.resume) : [])];
  if (only.length === 0)
    throw new InputError(
      opts.resume
        ? `nothing to resume: no host of ${opts.resume} failed, was unreachable or was left unfinished`
        : 'the plan lists no hosts',
    );
  const names = new Set(only);
  const within = new Set(
    opts.limit !== undefined ? selectLimit(withPlayGroups(inventory, playbooks), opts.limit) : inventory.hosts.map((h) => h.name),
  );
  const chosen = inventory.hosts.map((h) => h.name).filter((h) => names.has(h) && within.has(h));
  if (chosen.length === 0) throw new InputError('none of the hosts to run again is in this inventory and --limit');
  return chosen.join(',');
}

/** The hosts each play would reach (its pattern within --limit), without building anything. */
function prepareHostsOnly(written: Inventory, playbooks: Playbook[], limit: string | undefined): string[] {
  const inv = withPlayGroups(written, playbooks);
  const within = limit !== undefined ? new Set(selectLimit(inv, limit)) : undefined;
  return playbooks.flatMap((pb) => pb.plays.flatMap((p) => playHosts(inv, pb, p).filter((n) => !within || within.has(n))));
}

/**
 * --ssh-common-args / --ssh-extra-args are the default of ansible_ssh_common_args /
 * ansible_ssh_extra_args, as in Ansible: a host whose inventory sets the variable keeps its own.
 */
export function withCliSshArgs(inv: Inventory, opts: CliOptions): void {
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

/** The passwords hosts are reached with, opened now: a vaulted one read without a vault password is exit 3 here, at the value. */
export function revealConnectionSecrets(hosts: readonly Inventory['hosts'][number][]): void {
  for (const h of hosts) {
    h.connection.password?.reveal();
    h.connection.become?.password?.reveal();
  }
}
