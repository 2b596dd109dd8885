import { parseArgs } from 'node:util';

/** One option of `provision`: how parseArgs reads it, and what saved plans and `provision apply` make of it. */
interface CliOption {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** `provision apply PLAN` takes it: output, forks, timeouts, journal, connection, become, host keys, `-e` secrets. */
  apply?: boolean;
  /** Decides whom racksmith trusts and how it reaches hosts (host keys, login, proxies, privilege): never in a plan. */
  security?: boolean;
  /** A switch of the dry run, of its output or of its record (--label), not part of what was reviewed: never in a plan. */
  notRecorded?: boolean;
  /** `provision exec PATTERN -- CMD` takes it: inventory, selection, connection, become, forks, timeouts, output, journal. */
  exec?: boolean;
  /**
   * A listing (--list-hosts, --list-tasks, --list-tags) reads it: what is loaded and selected;
   * 'syntax-check': --syntax-check reads it too (the files a connection would read, the drains).
   * Any other option given to a listing has no effect, and is said to have none.
   */
  listing?: true | 'syntax-check';
}

/**
 * Every option of a run (`provision [PLAYBOOK...]`, `provision apply` and `provision exec`), the
 * one table the parser, saved plans, `apply` and `exec` read: the lists below are derived from
 * it, never kept by hand.
 */
export const CLI_OPTIONS = {
  inventory: { type: 'string', short: 'i', multiple: true, exec: true, listing: true },
  'vault-password-file': { type: 'string', multiple: true, apply: true, exec: true, listing: true },
  'vault-id': { type: 'string', multiple: true, apply: true, exec: true, listing: true },
  'ask-vault-pass': { type: 'boolean', apply: true, exec: true, listing: true },
  'list-hosts': { type: 'boolean' },
  'list-tasks': { type: 'boolean' },
  'list-tags': { type: 'boolean' },
  'syntax-check': { type: 'boolean' },
  check: { type: 'boolean', short: 'C', notRecorded: true },
  // output: how a run is shown, never recorded in a plan (apply shows it as its own command line says)
  diff: { type: 'boolean', short: 'D', apply: true, notRecorded: true },
  limit: { type: 'string', short: 'l', exec: true, listing: true },
  // repeatable, as in Ansible: every -t (and every --skip-tags) counts
  tags: { type: 'string', short: 't', multiple: true, listing: true },
  'skip-tags': { type: 'string', multiple: true, listing: true },
  forks: { type: 'string', short: 'f', apply: true, exec: true },
  'extra-vars': { type: 'string', short: 'e', multiple: true, apply: true, exec: true, listing: true },
  serial: { type: 'string' },
  'max-fail-percent': { type: 'string' },
  'known-hosts': { type: 'string', apply: true, security: true, exec: true, listing: 'syntax-check' },
  'ssh-accept-new': { type: 'boolean', apply: true, security: true, exec: true },
  timeout: { type: 'string', short: 'T', apply: true, exec: true },
  become: { type: 'boolean', short: 'b', apply: true, security: true, exec: true, listing: true },
  'become-user': { type: 'string', apply: true, security: true, exec: true, listing: true },
  'become-method': { type: 'string', apply: true, security: true, exec: true, listing: true },
  'ask-become-pass': { type: 'boolean', short: 'K', apply: true, security: true, exec: true },
  'ask-pass': { type: 'boolean', short: 'k', apply: true, security: true, exec: true },
  user: { type: 'string', short: 'u', apply: true, security: true, exec: true },
  'private-key': { type: 'string', apply: true, security: true, exec: true, listing: 'syntax-check' },
  'key-file': { type: 'string', apply: true, security: true, exec: true, listing: 'syntax-check' },
  connection: { type: 'string', short: 'c', apply: true, security: true, exec: true },
  'ssh-common-args': { type: 'string', apply: true, security: true, exec: true, listing: 'syntax-check' },
  'ssh-extra-args': { type: 'string', apply: true, security: true, exec: true, listing: 'syntax-check' },
  'ssh-config': { type: 'string', short: 'F', apply: true, security: true, exec: true, listing: 'syntax-check' },
  'host-timeout': { type: 'string', apply: true, exec: true },
  'ssh-keepalive': { type: 'string', apply: true, exec: true },
  'ssh-handshakes': { type: 'string', apply: true, exec: true },
  'ssh-handshakes-per-sshd': { type: 'string', apply: true, exec: true },
  'lock-timeout': { type: 'string', apply: true },
  // how hosts are drained is part of what a plan's reviewers approved (its `drains`): not apply's to change
  drain: { type: 'string', listing: 'syntax-check' },
  'drain-timeout': { type: 'string', listing: 'syntax-check' },
  'plan-out': { type: 'string', notRecorded: true },
  'plan-key': { type: 'string', apply: true, security: true, exec: true },
  yes: { type: 'boolean' },
  'max-plan-age': { type: 'string', apply: true },
  journal: { type: 'string', apply: true, notRecorded: true, exec: true },
  resume: { type: 'string', notRecorded: true, listing: true },
  // a run's history label describes that run: never recorded in a plan (apply's run is labelled as its own command line says)
  label: { type: 'string', multiple: true, apply: true, notRecorded: true, exec: true },
  json: { type: 'boolean', apply: true, notRecorded: true, exec: true },
  recap: { type: 'string', apply: true, notRecorded: true },
  verbose: { type: 'boolean', short: 'v', multiple: true, apply: true, notRecorded: true, exec: true, listing: true },
  help: { type: 'boolean', short: 'h', notRecorded: true, exec: true, listing: true },
} as const satisfies Record<string, CliOption>;

export type CliOptionName = keyof typeof CLI_OPTIONS;

const table = Object.entries(CLI_OPTIONS) as Array<[string, CliOption]>;
const named = (has: (o: CliOption) => boolean) => new Set(table.filter(([, o]) => has(o)).map(([name]) => name));

/** The options a plan never records, `provision apply` takes them from its own command line only. */
export const SECURITY_OPTIONS: ReadonlySet<string> = named((o) => !!o.security);
/** Options of the dry run, its output (--json, -D, -v) and its record (--label): not part of what was reviewed. */
export const NOT_RECORDED: ReadonlySet<string> = named((o) => !!o.notRecorded);

/** The options `provision exec` takes (-C/--check is not one: a command cannot be dry-run). */
export const EXEC_OPTIONS = Object.fromEntries(table.filter(([, o]) => o.exec)) as Record<string, CliOption>;

/** Some options of the table, as they are (for a command that takes only those). */
export function pickOptions<K extends CliOptionName>(...names: K[]): Pick<typeof CLI_OPTIONS, K> {
  return Object.fromEntries(names.map((n) => [n, CLI_OPTIONS[n]])) as Pick<typeof CLI_OPTIONS, K>;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** An option's spellings on the command line: `--name`, `-s`, and `-s+` (-vv, -vvv) for a repeatable switch. */
const spellings = ([name, o]: [string, CliOption]) => [
  `--${escape(name)}`,
  ...(o.short ? [`-${escape(o.short)}${o.type === 'boolean' && o.multiple ? '+' : ''}`] : []),
];
const applyOptions = table.filter(([, o]) => o.apply);

/** The options `provision apply PLAN` takes, as an error lists them: `--name` (with `-s` where it has one). */
export const APPLY_OPTION_NAMES: readonly string[] = applyOptions.map(([name, o]) => (o.short ? `-${o.short}/--${name}` : `--${name}`));

/** An argument `provision apply PLAN` takes after the plan: an apply option, alone or as `--name=value`. */
export const APPLY_ARG = new RegExp(`^(${applyOptions.flatMap(spellings).join('|')})(=.*)?$`);
/** An apply option whose value is the next argument. */
export const APPLY_ARG_TAKES_VALUE = new RegExp(
  `^(${applyOptions
    .filter(([, o]) => o.type === 'string')
    .flatMap(spellings)
    .join('|')})$`,
);

/** The options of an argv, as parseArgs reads them (the same grouping and `=` forms). */
export function optionTokens(argv: string[]) {
  return parseArgs({ args: argv, allowPositionals: true, options: CLI_OPTIONS, tokens: true }).tokens;
}

/** The flags that make a run a listing, the one that wins first (as load() decides). */
const LISTINGS = ['list-hosts', 'syntax-check', 'list-tasks', 'list-tags'] as const;

/**
 * The options of `argv` that the listing it asks for (if any) does not read, as they were written:
 * a listing connects to nothing, so run options (`-f`, `--check`, `--drain`...) have no effect,
 * and of two listings only the first in LISTINGS is printed.
 */
export function unreadByListing(argv: string[]): { listing: string; unread: string[] } | undefined {
  const given = optionTokens(argv).filter((t) => t.kind === 'option');
  const listing = LISTINGS.find((l) => given.some((t) => t.name === l));
  if (!listing) return undefined;
  const reads = (name: string) => {
    const o = (CLI_OPTIONS as Record<string, CliOption>)[name];
    return name === listing || o?.listing === true || (o?.listing === 'syntax-check' && listing === 'syntax-check');
  };
  const unread = [...new Set(given.filter((t) => !reads(t.name)).map((t) => t.rawName))];
  return { listing, unread };
}

/**
 * What the options of `argv` that have no effect in this kind of run are said as: a listing's
 * unread options (unreadByListing), and, in a run that neither applies a plan nor makes one
 * (`planning`: a plan records them for its apply), the apply's own: `--max-plan-age`, and in a
 * dry run `--yes` and `--lock-timeout` (it destroys no data and takes no apply lock).
 */
export function ineffectiveOptions(argv: string[], planning: boolean): string[] {
  const u = unreadByListing(argv);
  if (u) return u.unread.length ? [`--${u.listing} runs nothing on any host: ${noEffect(u.unread)}`] : [];
  if (planning) return [];
  const given = optionTokens(argv).filter((t) => t.kind === 'option');
  const named = (...names: string[]) => [...new Set(given.filter((t) => names.includes(t.name)).map((t) => t.rawName))];
  const out: string[] = [];
  const planAge = named('max-plan-age');
  if (planAge.length) out.push(`${noEffect(planAge)} here: it is the age limit of a plan that \`provision apply\` applies`);
  const applyOnly = named('yes', 'lock-timeout');
  if (named('check').length && applyOnly.length) out.push(`--check changes nothing: ${noEffect(applyOnly)}`);
  return out;
}

const noEffect = (names: string[]) => `${names.join(', ')} ${names.length === 1 ? 'has' : 'have'} no effect`;
