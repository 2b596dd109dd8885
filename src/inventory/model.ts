import type { SourcePos } from '../util/errors.ts';

export type Vars = Record<string, unknown>;

export interface Host {
  name: string;
  /** Merged variables: all < parent group < child group < host < extra vars. */
  vars: Vars;
  /** Where each merged variable got its value (for file:line errors about values). */
  varSources: Record<string, SourcePos>;
  /** Every group the host is in, ancestors included, `all` first. */
  groups: string[];
  pos: SourcePos;
}

export interface Group {
  name: string;
  hosts: string[];
  children: string[];
  parents: string[];
  vars: Vars;
  varSources: Record<string, SourcePos>;
  pos: SourcePos;
}

export interface Inventory {
  file: string;
  /** Hosts in the order the inventory first names them. */
  hosts: Host[];
  groups: Map<string, Group>;
}
