/**
 * Which nodes a run may have left out of scheduling: `runs/ID.drains.json` beside its record,
 * naming each node from just before the run's drain of it starts until the node is back (resumed,
 * or found someone else's, or a drain that took nothing out), and removed when none is left. A
 * run killed outright (SIGKILL) leaves it naming what it had out. Retention and `runs prune` keep
 * such a run (its record is how a later run proves it dead and takes its drains over,
 * drain-owner.ts); a run that takes a node over takes it off the dead run's ledger.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DrainLedger, DrainNode } from '../contract/drain.ts';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { printable } from '../util/printable.ts';
import { isRunId, runsDir } from './record.ts';

const SUFFIX = '.drains.json';

export const ledgerFile = (id: string): string => join(runsDir(), `${id}${SUFFIX}`);

/** A node's key: scheduler and node name, not the controller (which an inventory may spell two ways). */
const keyOf = (n: DrainNode) => `${n.via}\0${n.node}`;

/** How a node of a ledger is said: `tb8 (slurm via tb7)`. */
export const nodeText = (n: DrainNode): string => `${n.node} (${n.via} via ${n.controller})`;

const isNode = (n: unknown): n is DrainNode =>
  typeof n === 'object' && n !== null && ['via', 'controller', 'node'].every((k) => typeof (n as Record<string, unknown>)[k] === 'string');

/** The nodes of run `id`'s ledger; none (undefined) only when it has no ledger file. */
function readLedger(id: string): DrainNode[] | undefined {
  let text: string;
  try {
    text = readFileSync(ledgerFile(id), 'utf8');
  } catch (e) {
    // (one that cannot be read, EACCES say, is still a ledger: its run kept)
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : [];
  }
  try {
    const nodes = (JSON.parse(text) as { nodes?: unknown }).nodes;
    return Array.isArray(nodes) ? nodes.filter(isNode) : [];
  } catch {
    return []; // (unreadable: still a ledger, its run kept)
  }
}

function writeLedger(id: string, nodes: DrainNode[]): void {
  if (nodes.length === 0) return rmSync(ledgerFile(id), { force: true });
  mkdirSync(runsDir(), { recursive: true, mode: 0o700 });
  writeFileAtomic(ledgerFile(id), JSON.stringify({ run: id, nodes }, null, 1) + '\n', 0o600, 'drain ledger');
}

/** The nodes run `id`'s ledger names (none: no ledger). */
export const ledgerNodes = (id: string): DrainNode[] => readLedger(id) ?? [];

/** Every run with a ledger, and the nodes it names. */
export function drainsLeft(): Map<string, DrainNode[]> {
  let names: string[];
  try {
    names = readdirSync(runsDir());
  } catch {
    return new Map();
  }
  const left = new Map<string, DrainNode[]>();
  for (const name of names) {
    const id = name.slice(0, -SUFFIX.length);
    if (!name.endsWith(SUFFIX) || !isRunId(id)) continue;
    const nodes = readLedger(id);
    if (nodes) left.set(id, nodes);
  }
  return left;
}

/** Run `run`'s ledger; a write that fails is a warning (the run goes on, its record may be pruned later). */
export function drainLedger(run: string, warn: (message: string) => void): DrainLedger {
  const nodes = new Map<string, DrainNode>();
  const save = () => {
    try {
      writeLedger(run, [...nodes.values()]);
    } catch (e) {
      warn(`run history: cannot write the drain ledger of run ${run}: ${printable((e as Error).message)}`);
    }
  };
  return {
    taking(n) {
      nodes.set(keyOf(n), n);
      save();
    },
    back(n) {
      if (nodes.delete(keyOf(n))) save();
    },
    takenOver(from, n) {
      if (!isRunId(from) || from === run) return;
      try {
        const theirs = readLedger(from);
        if (theirs)
          writeLedger(
            from,
            theirs.filter((m) => keyOf(m) !== keyOf(n)),
          );
      } catch (e) {
        warn(`run history: cannot take ${nodeText(n)} off the drain ledger of run ${from}: ${printable((e as Error).message)}`);
      }
    },
  };
}
