import type { ValidateFunction } from 'ajv';
import type { Host, Vars } from '../inventory/model.ts';
import type { Resource } from '../resources/types.ts';
import { InputError, type SourcePos } from '../util/errors.ts';
import { ajv, validateOrThrow } from '../util/validate.ts';

/** What a playbook sees of a host: its name, groups and merged variables. Nothing to connect with. */
export class HostContext {
  constructor(
    private readonly host: Host,
    /** Every host of the inventory, for plays that need facts about the fleet (e.g. all node IPs). */
    readonly inventoryHosts: readonly Host[] = [],
  ) {}
  get name(): string {
    return this.host.name;
  }
  get vars(): Readonly<Vars> {
    return this.host.vars;
  }
  get groups(): readonly string[] {
    return this.host.groups;
  }
  inGroup(group: string): boolean {
    return this.host.groups.includes(group);
  }
  /** A variable, or `fallback` when the inventory does not set it. */
  var<T>(name: string, fallback: T): T {
    return name in this.host.vars ? (this.host.vars[name] as T) : fallback;
  }
  /** Where a variable was set (inventory, group_vars, host_vars, -e). */
  varPos(name: string): SourcePos | undefined {
    return this.host.varSources[name];
  }
  /** An input error about variable `name`, located where the inventory set it. */
  error(name: string, message: string): InputError {
    return new InputError(`${this.name}: ${message}`, this.varPos(name) ?? this.host.pos);
  }
  /**
   * Validate this host's variables against a JSON schema (an object schema over variable
   * names). Errors name the file:line:col where the bad value was set.
   */
  validate(validate: ValidateFunction): void {
    const vars = this.host.vars;
    const sources = this.host.varSources;
    validateOrThrow(validate, vars, {
      pos: (path) => sources[String(path[0])] ?? { file: `${this.name} (variable ${String(path[0] ?? '')})` },
    });
  }
}

/** Compile a vars schema once per playbook module. */
export function varsSchema(schema: object): ValidateFunction {
  return ajv.compile({ type: 'object', ...schema });
}

export interface Play {
  name: string;
  /** Host pattern, as for --limit: `all`, `storage`, `kube_control_plane[0]`, `!foo`... */
  hosts: string;
  tags?: string[];
  /** Rolling batches: `[1, '10%', '25%']`; the last size repeats. */
  serial?: Array<number | string>;
  /** Stop later batches when more than this percentage of the play's hosts failed. */
  maxFailPercent?: number;
  resources: (host: HostContext) => Resource[];
}

export interface Playbook {
  name: string;
  plays: Play[];
}

/** Declare a playbook: one play, or several run in order (each finishes on every host first). */
export function playbook(def: Play | { name: string; plays: Play[] }): Playbook {
  if ('plays' in def) return { name: def.name, plays: def.plays };
  return { name: def.name, plays: [def] };
}
