import type { ValidateFunction } from 'ajv';
import type { Host, Vars } from '../inventory/model.ts';
import type { Resource } from './resource.ts';
import { InputError, InputErrors, type SourcePos } from '../util/errors.ts';
import { lazySchema, validateOrThrow } from '../util/validate.ts';
import { templatingError } from '../inventory/connection.ts';
import type { HostFacts } from '../facts/types.ts';

/**
 * One thing a play read from its HostContext and what it got back: a play's resources are a
 * function of these, so another host that answers every read the same gets the same resources
 * (see play-memo.ts). `validate` is not an answer but a check that is run again per host.
 */
export type HostRead =
  | { kind: 'name' | 'vars' | 'groups' | 'inventoryHosts' | 'facts'; value: unknown }
  | { kind: 'inGroup' | 'var' | 'varPos'; arg: string; value: unknown }
  | { kind: 'error'; arg: string; message: string; value: InputError }
  | { kind: 'validate'; validate: ValidateFunction };

/**
 * What a playbook sees of a host: its name, groups and merged variables, and in a play with
 * `facts: true` its facts. Nothing to connect with.
 */
export class HostContext {
  /** Set while a play's resources are built under the memo: every read is appended. */
  reads?: HostRead[];
  constructor(
    private readonly host: Host,
    /** Every host of the inventory, for plays that need facts about the fleet (e.g. all node IPs). */
    private readonly allHosts: readonly Host[] = [],
    /** The host's facts, gathered because the play asked (`facts: true`); else why there are none. */
    private readonly hostFacts: HostFacts | NoFacts = NOT_ASKED,
  ) {}
  /** The host's facts (Ansible's gathered facts): only in a play with `facts: true`. */
  get facts(): HostFacts {
    const f = this.hostFacts;
    if (f instanceof NoFacts) throw new FactsUnavailable(f.why);
    this.reads?.push({ kind: 'facts', value: f });
    return f;
  }
  get name(): string {
    this.reads?.push({ kind: 'name', value: this.host.name });
    return this.host.name;
  }
  get vars(): Readonly<Vars> {
    this.reads?.push({ kind: 'vars', value: this.host.vars });
    return this.host.vars;
  }
  get groups(): readonly string[] {
    this.reads?.push({ kind: 'groups', value: this.host.groups });
    return this.host.groups;
  }
  get inventoryHosts(): readonly Host[] {
    this.reads?.push({ kind: 'inventoryHosts', value: this.allHosts });
    return this.allHosts;
  }
  inGroup(group: string): boolean {
    const value = this.host.groups.includes(group);
    this.reads?.push({ kind: 'inGroup', arg: group, value });
    return value;
  }
  /** A variable, or `fallback` when the inventory does not set it. */
  var<T>(name: string, fallback: T): T {
    this.refuseTemplate(name);
    // Recorded without the fallback: that comes from the play, the value from the inventory.
    const value = name in this.host.vars ? this.host.vars[name] : UNSET;
    this.reads?.push({ kind: 'var', arg: name, value });
    return value === UNSET ? fallback : (value as T);
  }
  /**
   * racksmith does not template: a variable it reads that holds `{{ }}`/`{% %}`/`{# #}` (not
   * `!unsafe`) is bad input at the string's file:line, never its literal text used as a value.
   */
  private refuseTemplate(name: string): void {
    const at = this.host.templated?.[name];
    if (at) throw templatingError(this.host.name, name, at);
  }
  /** Where a variable was set (inventory, group_vars, host_vars, -e). */
  varPos(name: string): SourcePos | undefined {
    const value = this.host.varSources[name];
    this.reads?.push({ kind: 'varPos', arg: name, value });
    return value;
  }
  /** An input error about variable `name`, located where the inventory set it. */
  error(name: string, message: string): InputError {
    const value = new InputError(`${this.host.name}: ${message}`, this.host.varSources[name] ?? this.host.pos);
    this.reads?.push({ kind: 'error', arg: name, message, value });
    return value;
  }
  /**
   * Validate this host's variables against a JSON schema (an object schema over variable
   * names). Errors name the file:line:col where the bad value was set.
   */
  validate(validate: ValidateFunction): void {
    for (const name of Object.keys((validate.schema as { properties?: object } | undefined)?.properties ?? {})) this.refuseTemplate(name);
    this.reads?.push({ kind: 'validate', validate });
    const vars = this.host.vars;
    const sources = this.host.varSources;
    validateOrThrow(validate, vars, {
      pos: (path) => sources[String(path[0])] ?? { file: `${this.host.name} (variable ${String(path[0] ?? '')})` },
    });
  }
}

/** What reading `host.facts` throws where there are none (the engine places it at the playbook line that read them). */
export class FactsUnavailable extends Error {
  override name = 'FactsUnavailable';
}

/** Why a HostContext has no facts: the message of the FactsUnavailable that reading `host.facts` throws. */
export class NoFacts {
  constructor(readonly why: string) {}
}
const NOT_ASKED = new NoFacts('host.facts is read by a play without `facts: true`: add `facts: true` to the play to gather them');

/** A variable the inventory does not set. */
export const UNSET: unique symbol = Symbol('unset');

/**
 * A vars schema, compiled once, on first use: importing a playbook module costs nothing for the
 * plays a run does not reach (and the build precompiles it: see lazySchema).
 */
export function varsSchema(schema: object): ValidateFunction {
  return lazySchema({ type: 'object', ...schema });
}

export interface Play {
  name: string;
  /** Host pattern, as for --limit: `all`, `storage`, `kube_control_plane[0]`, `!foo`... */
  hosts: string;
  tags?: string[];
  /** Rolling batches: `[1, '10%', '25%']`; the last size repeats (one size alone: `5`, `'10%'`). */
  serial?: number | string | Array<number | string>;
  /**
   * End the run once more than this percentage of the play's hosts failed (0 to 100): no later
   * wave, handler, batch or play starts on any host.
   */
  maxFailPercent?: number;
  /** Ansible's any_errors_fatal: the first host that fails ends the run, as maxFailPercent 0 does. */
  anyErrorsFatal?: boolean;
  /**
   * Run as another user (sudo/su), like Ansible's play keywords. A host's ansible_become* variables
   * win over these, and these over -b/--become-user/--become-method. One exec runs one shell, so
   * all plays that reach a host must agree on it.
   */
  become?: boolean;
  becomeUser?: string;
  becomeMethod?: 'sudo' | 'su';
  /**
   * Gather the host's facts (`host.facts`: hardware, OS, NICs, disks, GPUs) before this play's
   * resources are built, as Ansible's gather_facts: one exec per host, once per run, shared by
   * every play that asks. Plays without it never pay for it.
   */
  facts?: boolean;
  /**
   * The play's resources for one host. It must depend only on what it reads from `host` (and
   * on what is the same for the whole run): hosts that answer the same reads share one build.
   */
  resources: (host: HostContext) => Resource[];
}

export interface Playbook {
  name: string;
  plays: Play[];
  /** The file it was loaded from (set by the CLI), for messages. */
  file?: string;
}

/**
 * Declare a playbook: one play, or several run in order (each finishes on every host first). A
 * play that is not what its type says is bad input at this call (JavaScript, or TypeScript run
 * without tsc, is not type-checked).
 */
export function playbook(def: Play | { name: string; plays: Play[] }): Playbook {
  if (Array.isArray(def)) throw new InputError('takes one play, or { name, plays: [ ... ] } for several, not a list');
  const pb =
    def !== null && typeof def === 'object' && 'plays' in def ? { name: def.name, plays: def.plays } : { name: def?.name, plays: [def] };
  const problems = playbookProblems(pb);
  if (problems.length) throw new InputError(problems.join('\n  '));
  return pb;
}

// A play's keys, as its type has them: a misspelt one (`host:`, `tag:`) is refused, not ignored,
// as Ansible refuses a keyword a play does not have.
const validatePlay = lazySchema({
  type: 'object',
  required: ['name', 'hosts', 'resources'],
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    hosts: { type: 'string', minLength: 1 },
    tags: { type: 'array', items: { type: 'string' } },
    serial: { anyOf: [{ type: ['integer', 'string'] }, { type: 'array', items: { type: ['integer', 'string'] } }] },
    maxFailPercent: { type: 'number', minimum: 0, maximum: 100 },
    anyErrorsFatal: { type: 'boolean' },
    become: { type: 'boolean' },
    becomeUser: { type: 'string', minLength: 1 },
    becomeMethod: { enum: ['sudo', 'su'] },
    facts: { type: 'boolean' },
    resources: {}, // a function: JSON schemas have no type for it (playProblems checks it)
  },
});

/** What is wrong with a playbook's shape, each problem said with its play (`plays[0]`, and its name). */
export function playbookProblems(pb: { name?: unknown; plays?: unknown }): string[] {
  if (typeof pb.name !== 'string') return ["the playbook's name must be a string"];
  if (!Array.isArray(pb.plays)) return ["the playbook's plays must be a list of plays"];
  return pb.plays.flatMap(playProblems);
}

function playProblems(play: unknown, i: number): string[] {
  const where = `plays[${i}]`;
  if (play === null || typeof play !== 'object' || Array.isArray(play)) return [`${where} must be a play: { name, hosts, resources }`];
  const name = (play as { name?: unknown }).name;
  const which = typeof name === 'string' ? ` (play '${name}')` : '';
  const out: string[] = [];
  try {
    validateOrThrow(validatePlay, play, { pos: () => ({ file: 'playbook' }) }, [where]);
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    out.push(...(e instanceof InputErrors ? e.errors : [e]).map((x) => x.detail + which));
  }
  const resources = (play as { resources?: unknown }).resources;
  if (resources !== undefined && typeof resources !== 'function')
    out.push(`${where}.resources must be a function of the host, (host) => [ ... ]${which}`);
  return out;
}
