import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { parseExtraVars } from './inventory/extra-vars.ts';
import { loadInventory } from './inventory/load.ts';
import { execute, prepare, type Playbook, type RunEvent } from './engine/index.ts';
import { HumanReporter } from './ui/human.ts';
import { jsonSink } from './ui/json.ts';
import { InputError } from './util/errors.ts';
import { batchSizes } from './engine/batches.ts';

export const EXIT = { OK: 0, FAILED: 1, CHANGES: 2, BAD_INPUT: 3 } as const;
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const USAGE = `usage: provision [PLAYBOOK...] -i INVENTORY [options]

  -i, --inventory FILE     Ansible YAML inventory (group_vars/ and host_vars/ beside it)
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
      --json               NDJSON events on stdout (the human view stays on stderr)
  -v, --verbose            more detail (repeat for more)
  -h, --help

Playbook defaults to playbooks/site.ts. Exit codes: 0 converged or nothing to do, 1 a host failed
or was unreachable, 2 check mode found changes, 3 bad input (nothing was run on any host).`;

export interface CliOptions {
  inventory: string;
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
  json: boolean;
  verbose: number;
}

const list = (s: string | undefined) => (s === undefined ? undefined : s.split(',').map((x) => x.trim()).filter(Boolean));

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
        inventory: { type: 'string', short: 'i' },
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
  if (!v.inventory) throw new InputError(`-i/--inventory is required\n\n${USAGE}`);
  const maxFail = v['max-fail-percent'];
  if (maxFail !== undefined && !(/^\d+(\.\d+)?$/.test(maxFail) && Number(maxFail) <= 100)) {
    throw new InputError(`--max-fail-percent must be a number from 0 to 100, got '${maxFail}'`);
  }
  const serial = list(v.serial)?.map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  if (serial) batchSizes(1, serial); // validates every entry: bad input is exit 3, before any host
  return {
    inventory: v.inventory,
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
    json: !!v.json,
    verbose: v.verbose?.length ?? 0,
  };
}

/** Find a playbook: as given (relative to the working directory), else inside racksmith itself. */
function resolvePlaybook(p: string): string {
  const here = resolve(p);
  if (existsSync(here)) return here;
  const bundled = resolve(PACKAGE_ROOT, p);
  if (existsSync(bundled)) return bundled;
  throw new InputError(`playbook not found: ${p}`);
}

export async function loadPlaybook(path: string): Promise<Playbook> {
  const file = resolvePlaybook(path);
  let mod: { default?: unknown };
  try {
    mod = await import(pathToFileURL(file).href);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`cannot load playbook: ${(e as Error).message.split('\n')[0]}`, { file });
  }
  const pb = mod.default as Playbook | undefined;
  if (!pb || !Array.isArray(pb.plays)) throw new InputError('playbook must `export default playbook({...})`', { file });
  return pb;
}

/** Parse, load, prepare, run. Returns the exit code; never calls process.exit itself. */
export async function run(argv: string[], out: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream } = process): Promise<number> {
  let opts: CliOptions | 'help';
  let prepared;
  try {
    opts = parseCli(argv);
    if (opts === 'help') {
      out.stdout.write(USAGE + '\n');
      return EXIT.OK;
    }
    const extra = parseExtraVars(opts.extraVars);
    const inventory = loadInventory(opts.inventory, extra.vars, extra.sources);
    const playbooks = [];
    for (const p of opts.playbooks) playbooks.push(await loadPlaybook(p));
    prepared = prepare(inventory, playbooks, { limit: opts.limit, tags: opts.tags, skipTags: opts.skipTags });
    if (prepared.every((p) => p.hosts.length === 0)) throw new InputError('no hosts matched: nothing to do');
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
  };
  const hostNames = [...new Set(prepared.flatMap((p) => p.hosts.map((h) => h.host.name)))];
  emit({ type: 'run_start', playbooks: opts.playbooks, hosts: hostNames, check: opts.check });
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGINT', onSignal);
  try {
    const outcome = await execute(
      prepared,
      {
        inventoryFile: opts.inventory,
        knownHostsFile: opts.knownHosts,
        acceptNewHostKeys: opts.acceptNew,
        connectTimeoutMs: opts.timeoutMs,
        check: opts.check,
        forks: opts.forks,
        serial: opts.serial,
        maxFailPercent: opts.maxFailPercent,
        connectAttempts: 3,
        signal: abort.signal,
      },
      emit,
    );
    await human.finish(outcome);
    return outcome.exitCode;
  } finally {
    process.off('SIGINT', onSignal);
  }
}

export async function main(argv: string[]): Promise<void> {
  try {
    process.exitCode = await run(argv);
  } catch (e) {
    process.stderr.write(`internal error: ${(e as Error).stack ?? e}\n`);
    process.exitCode = EXIT.FAILED;
  }
}
