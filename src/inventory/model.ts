import type { SourcePos } from '../util/errors.ts';
import type { HostConnection } from './connection.ts';
import type { Vars } from './vars.ts';

export type { Vars };

export interface Host {
  name: string;
  /**
   * Merged variables, in ansible-core 2.14's precedence (later wins): `all` inline vars < other
   * groups' inline vars < group_vars/all files < other group_vars files < inline host vars <
   * host_vars files < extra vars. Groups are ordered by depth, ansible_group_priority, then name.
   */
  vars: Vars;
  /** Where each merged variable got its value (for file:line errors about values). */
  varSources: Record<string, SourcePos>;
  /**
   * Variables whose value holds a Jinja2 template (`{{ }}`, `{% %}`, `{# #}`, not `!unsafe`),
   * with where that string is: racksmith does not template, so reading one is an input error.
   */
  templated: Record<string, SourcePos>;
  /** Every group the host is in, ancestors included: `all` first, then in precedence order. */
  groups: string[];
  /** How to reach the host (its connection variables, resolved and checked). */
  connection: HostConnection;
  pos: SourcePos;
}

export interface Group {
  name: string;
  /** Direct members, in the order they were added. */
  hosts: string[];
  children: string[];
  parents: string[];
  /** Inline variables (group_vars/ files are merged per host, not here). */
  vars: Vars;
  varSources: Record<string, SourcePos>;
  /** Longest distance from `all`. */
  depth: number;
  /** ansible_group_priority (1 unless set). */
  priority: number;
  pos: SourcePos;
}

export interface Inventory {
  /** The sources, for messages. */
  file: string;
  /** Every `-i` as given, in order. */
  sources: string[];
  /** Hosts in the order the inventory first names them. */
  hosts: Host[];
  groups: Map<string, Group>;
  /**
   * What Ansible warns about and racksmith goes on with (a host named like a group, a host
   * pattern term that matches nothing, an .ini file a directory source skips): shared by the
   * views made of this inventory, said once before the run.
   */
  warnings?: InventoryWarning[];
}

export interface InventoryWarning {
  message: string;
  at?: SourcePos;
}

/** Records a warning once (a pattern is evaluated more than once in a run). */
export function addWarning(inv: Inventory, message: string, at?: SourcePos): void {
  inv.warnings ??= [];
  if (!inv.warnings.some((w) => w.message === message)) inv.warnings.push({ message, at });
}
