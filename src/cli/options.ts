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
  /** A switch of the dry run, not part of what was reviewed: never in a plan. */
  notRecorded?: boolean;
}

/**
 * Every option of a run (`provision [PLAYBOOK...]` and `provision apply`), the one table the
 * parser, saved plans and `apply` read: the lists below are derived from it, never kept by hand.
 */
export const CLI_OPTIONS = {
  inventory: { type: 'string', short: 'i', multiple: true },
  'vault-password-file': { type: 'string', multiple: true, apply: true },
  'vault-id': { type: 'string', multiple: true, apply: true },
  'ask-vault-pass': { type: 'boolean', apply: true },
  'list-hosts': { type: 'boolean' },
  'list-tasks': { type: 'boolean' },
  'list-tags': { type: 'boolean' },
  'syntax-check': { type: 'boolean' },
  check: { type: 'boolean', short: 'C', notRecorded: true },
  diff: { type: 'boolean', short: 'D', apply: true },
  limit: { type: 'string', short: 'l' },
  tags: { type: 'string', short: 't' },
  'skip-tags': { type: 'string' },
  forks: { type: 'string', short: 'f', apply: true },
  'extra-vars': { type: 'string', short: 'e', multiple: true, apply: true },
  serial: { type: 'string' },
  'max-fail-percent': { type: 'string' },
  'known-hosts': { type: 'string', apply: true, security: true },
  'ssh-accept-new': { type: 'boolean', apply: true, security: true },
  timeout: { type: 'string', short: 'T', apply: true },
  become: { type: 'boolean', short: 'b', apply: true, security: true },
  'become-user': { type: 'string', apply: true, security: true },
  'become-method': { type: 'string', apply: true, security: true },
  'ask-become-pass': { type: 'boolean', short: 'K', apply: true, security: true },
  'ask-pass': { type: 'boolean', short: 'k', apply: true, security: true },
  user: { type: 'string', short: 'u', apply: true, security: true },
  'private-key': { type: 'string', apply: true, security: true },
  'key-file': { type: 'string', apply: true, security: true },
  connection: { type: 'string', short: 'c', apply: true, security: true },
  'ssh-common-args': { type: 'string', apply: true, security: true },
  'ssh-extra-args': { type: 'string', apply: true, security: true },
  'ssh-config': { type: 'string', short: 'F', apply: true, security: true },
  'host-timeout': { type: 'string', apply: true },
  'ssh-keepalive': { type: 'string', apply: true },
  'lock-timeout': { type: 'string', apply: true },
  drain: { type: 'string', apply: true },
  'drain-timeout': { type: 'string', apply: true },
  'plan-out': { type: 'string', notRecorded: true },
  'plan-key': { type: 'string', apply: true, security: true },
  yes: { type: 'boolean' },
  'max-plan-age': { type: 'string', apply: true },
  journal: { type: 'string', apply: true, notRecorded: true },
  resume: { type: 'string', notRecorded: true },
  json: { type: 'boolean', apply: true },
  verbose: { type: 'boolean', short: 'v', multiple: true, apply: true },
  help: { type: 'boolean', short: 'h', notRecorded: true },
} as const satisfies Record<string, CliOption>;

export type CliOptionName = keyof typeof CLI_OPTIONS;

const table = Object.entries(CLI_OPTIONS) as Array<[string, CliOption]>;
const named = (has: (o: CliOption) => boolean) => new Set(table.filter(([, o]) => has(o)).map(([name]) => name));

/** The options a plan never records, `provision apply` takes them from its own command line only. */
export const SECURITY_OPTIONS: ReadonlySet<string> = named((o) => !!o.security);
/** Options of the dry run that are not part of what was reviewed. */
export const NOT_RECORDED: ReadonlySet<string> = named((o) => !!o.notRecorded);

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
