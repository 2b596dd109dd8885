/**
 * Which nodes a run may have left out of scheduling: its drain ledger, the directory
 * `runs/ID.drains/` beside its record, one small file per node (`slurm~tb8.json`), naming the node
 * from just before the run's drain of it starts until the node is back (resumed, or found someone
 * else's, or a drain that took nothing out); the directory goes with its last file. A run killed
 * outright (SIGKILL) leaves it naming what it had out. Retention and `runs prune` keep such a run
 * (its record is how a later run proves it dead and takes its drains over, drain-owner.ts).
 *
 * A node is its scheduler, controller and node name (two clusters of one inventory may each have a
 * `node001`; keyed by scheduler and name only, one's `back` took the other off its ledger): its
 * file is `slurm~ctl1~tb8.json`, named by its controller as this run reaches it. A later run that
 * takes it over may spell that controller another way (an address, a name): it finds the dead
 * run's entry by its file, else by the entries' contents, as node-match.ts does (the one of that
 * scheduler and name, when there is only one). An entry of a version that named the file
 * `slurm~tb8.json` is read by its contents the same way.
 *
 * A run that takes a node over replaces that node's file in the dead run's ledger with a "taken
 * over by run Y at T" entry: `runs show` of the dead run says so, and the entry does not keep the
 * run from pruning. Only once its own ledger names the node: killed in between, the node is on
 * one ledger or both, never on none. One file per node is what makes two runs taking over two nodes of one dead run
 * at once safe without a lock: each renames its own node's file, neither reads or writes the
 * other's (a single file rewritten whole lost one of the two removals). A later run whose drain
 * finds the node in scheduling, or out under someone else's drain, replaces a dead run's entry the
 * same way ("found not out": killed before its drain took the node out, or the node put back by
 * hand since), so that such a run is not kept, and listed with nodes out, for ever.
 *
 * The previous version's ledger, one file `runs/ID.drains.json` listing the nodes, is still read;
 * the first takeover from such a run moves its nodes into the directory (each created only where
 * the directory has no entry for it yet, so a second run migrating at once overwrites nothing),
 * then removes the file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DrainLedger, DrainNode } from '../contract/drain.ts';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { printable } from '../util/printable.ts';
import { readRegularFile } from '../util/regular-file.ts';
import { whoseDrain } from './drain-owner.ts';
import { findNode, nodeKey } from './node-match.ts';
import { runner } from './provenance.ts';
import { isRunId, readRecord, runsDir, type RunRecord } from './record.ts';
import { bootId, processStart } from './run-process.ts';

const DIR_SUFFIX = '.drains';
const OLD_SUFFIX = '.drains.json';

/** Run `id`'s ledger directory. */
export const ledgerDir = (id: string): string => join(runsDir(), `${id}${DIR_SUFFIX}`);
/** The previous version's ledger file of run `id` (read, migrated on the first takeover). */
export const oldLedgerFile = (id: string): string => join(runsDir(), `${id}${OLD_SUFFIX}`);

/**
 * The node's file in a ledger directory: `via~controller~node.json` when all three are plain names
 * (`~` is in none, so no two nodes share one), else a hash of them (an IPv6 controller, a node
 * named `../x`).
 */
export function entryName(n: DrainNode): string {
  const plain = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
  const name = [n.via, n.controller, n.node].every((s) => plain.test(s))
    ? `${n.via}~${n.controller}~${n.node}`
    : createHash('sha256').update(nodeKey(n)).digest('hex').slice(0, 32);
  return `${name}.json`;
}

/** How a node of a ledger is said: `tb8 (slurm via tb7)`. */
export const nodeText = (n: DrainNode): string => `${n.node} (${n.via} via ${n.controller})`;

const isNode = (n: unknown): n is DrainNode =>
  typeof n === 'object' && n !== null && ['via', 'controller', 'node'].every((k) => typeof (n as Record<string, unknown>)[k] === 'string');

/** A node of the run that a later run took over (or `found` not out): no longer this run's to put back. */
export interface TakenOver {
  node: DrainNode;
  /** The run that took it over, and when. */
  by: string;
  at: string;
  /** That run's drain found the node in scheduling, or out under someone else's drain (foundNotOut), rather than under this run's mark. */
  found?: true;
}

/** What a run's ledger says. */
export interface RunLedger {
  /** The nodes it names: out of scheduling by this run, as far as it knows. */
  nodes: DrainNode[];
  /** Entries (or a whole ledger) that cannot be read as either: the run is kept all the same, its nodes unknown. */
  unreadable: number;
  /** The nodes later runs took over. */
  takenOver: TakenOver[];
  /** Where it is (the directory, or the previous version's file when only that is there). */
  where: string;
}

/** Whether the ledger keeps its run from pruning: a node named, or an entry that cannot be read (it may be one). */
export const keepsRun = (l: RunLedger): boolean => l.nodes.length > 0 || l.unreadable > 0;

type Warn = (message: string) => void;

/** The previous version's one ledger file of a run, read whole: 100,000 nodes' entries fit. */
const OLD_LEDGER_MAX_BYTES = 64 * 2 ** 20;

/**
 * A ledger file's text; 'gone' (removed since the directory was listed: back); 'unreadable'
 * (EACCES, say: still an entry, its run kept). One that is not a regular file is skipped, said:
 * racksmith writes none, and a FIFO read as a file would hang the reader for good.
 */
function readText(file: string, warn: Warn, maxBytes?: number): string | 'gone' | 'unreadable' {
  const r = readRegularFile(file, maxBytes);
  if (r.kind === 'text') return r.text;
  if (r.kind === 'not-regular')
    warn(printable(`run history: ${file} is ${r.what}, not a regular file: skipped (racksmith makes none there: remove it)`));
  return r.kind === 'error' ? 'unreadable' : 'gone';
}

type Entry = { kind: 'node'; node: DrainNode } | { kind: 'taken'; taken: TakenOver } | { kind: 'unreadable' } | { kind: 'gone' };

function readEntry(file: string, warn: Warn): Entry {
  const text = readText(file, warn);
  if (text === 'gone' || text === 'unreadable') return { kind: text };
  try {
    const e = JSON.parse(text) as { node?: unknown; takenOverBy?: unknown; at?: unknown; found?: unknown };
    if (!isNode(e.node)) return { kind: 'unreadable' };
    const node = { via: e.node.via, controller: e.node.controller, node: e.node.node };
    if (e.takenOverBy === undefined) return { kind: 'node', node };
    return typeof e.takenOverBy === 'string' && typeof e.at === 'string'
      ? { kind: 'taken', taken: { node, by: e.takenOverBy, at: e.at, ...(e.found === true ? { found: true as const } : {}) } }
      : { kind: 'unreadable' };
  } catch {
    return { kind: 'unreadable' };
  }
}

/**
 * The previous version's ledger file: its nodes, and how many of its entries are not nodes (they
 * keep its run all the same); 'none' when there is none; 'unreadable' (EACCES, not JSON).
 */
function readOldLedger(id: string, warn: Warn): { nodes: DrainNode[]; other: number } | 'none' | 'unreadable' {
  // (one file for every node of the run: a fleet's worth, beyond the limit of one node's entry)
  const text = readText(oldLedgerFile(id), warn, OLD_LEDGER_MAX_BYTES);
  if (text === 'gone') return 'none';
  if (text === 'unreadable') return text;
  try {
    const nodes = (JSON.parse(text) as { nodes?: unknown }).nodes;
    if (!Array.isArray(nodes)) return 'unreadable';
    const good = nodes.filter(isNode);
    return { nodes: good.map((n) => ({ via: n.via, controller: n.controller, node: n.node })), other: nodes.length - good.length };
  } catch {
    return 'unreadable';
  }
}

/** Run `id`'s ledger; undefined when it has none. `warn`: a file there skipped (readText). */
export function readLedger(id: string, warn: Warn): RunLedger | undefined {
  // the old file first: a takeover migrating it makes the directory's entries before it removes
  // the file, so a node is seen in one or the other, never in neither
  const old = readOldLedger(id, warn);
  const l: RunLedger = {
    nodes: [],
    unreadable: old === 'unreadable' ? 1 : old === 'none' ? 0 : old.other,
    takenOver: [],
    where: ledgerDir(id),
  };
  let names: string[] | undefined;
  try {
    names = readdirSync(ledgerDir(id));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') l.unreadable++; // (EACCES, say: still a ledger, its run kept)
  }
  if (names === undefined && old === 'none' && l.unreadable === 0) return undefined;
  if (names === undefined && old !== 'none') l.where = oldLedgerFile(id);
  const seen = new Set<string>();
  // (a name not ending in .json is a write cut short: its node's entry, if any, is the .json one)
  for (const name of (names ?? []).filter((n) => n.endsWith('.json')).sort()) {
    const e = readEntry(join(ledgerDir(id), name), warn);
    if (e.kind === 'unreadable') l.unreadable++;
    if (e.kind === 'node') l.nodes.push(e.node);
    if (e.kind === 'taken') l.takenOver.push(e.taken);
    if (e.kind === 'node' || e.kind === 'taken') seen.add(nodeKey(e.kind === 'node' ? e.node : e.taken.node));
  }
  // (a node in both, midway through a migration: the directory's entry is the newer; a migrated
  // entry, taken over or not, keeps the node as the file spelled it)
  if (typeof old === 'object') l.nodes.push(...old.nodes.filter((n) => !seen.has(nodeKey(n))));
  return l;
}

/** Every run with a ledger, and what it says (a directory that cannot be listed: none). */
export function ledgers(warn: Warn): Map<string, RunLedger> {
  let names: string[];
  try {
    names = readdirSync(runsDir());
  } catch {
    return new Map();
  }
  const ids = new Set<string>();
  for (const name of names)
    for (const suffix of [DIR_SUFFIX, OLD_SUFFIX]) {
      const id = name.slice(0, -suffix.length);
      if (name.endsWith(suffix) && isRunId(id)) ids.add(id);
    }
  const all = new Map<string, RunLedger>();
  for (const id of [...ids].sort()) {
    const l = readLedger(id, warn);
    if (l) all.set(id, l);
  }
  return all;
}

/** Every run whose ledger keeps it from pruning, with that ledger. */
export function keptLedgers(warn: Warn): Map<string, RunLedger> {
  return new Map([...ledgers(warn)].filter(([, l]) => keepsRun(l)));
}

/** Every run whose ledger keeps it from pruning, and the nodes it names (none known: it cannot be read). */
export function drainsLeft(kept: Map<string, RunLedger>): Map<string, DrainNode[]> {
  return new Map([...kept].map(([id, l]) => [id, l.nodes]));
}

/** A pruned run's ledger: the entries of nodes taken over (nothing else: a ledger naming a node keeps its run), then its directory. */
export function removeLedger(id: string): void {
  const dir = ledgerDir(id);
  try {
    for (const name of readdirSync(dir))
      // (a file skipped when the ledger was read is left, unsaid again)
      if (name.endsWith('.json') && readEntry(join(dir, name), () => undefined).kind === 'taken') rmSync(join(dir, name), { force: true });
    removeIfEmpty(dir);
  } catch {
    // (none, or one that cannot be changed: left as it is, and read again by the next prune)
  }
}

/** The directory, when nothing is left in it (a node named since, or a write cut short, keeps it). */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch (e) {
    if (!['ENOENT', 'ENOTEMPTY', 'EEXIST'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
  }
}

/** `text` as `file` unless `file` exists: made whole beside it, then linked in (a link, as O_EXCL, fails on a name taken). */
function createWhole(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
    linkSync(tmp, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    rmSync(tmp, { force: true });
  }
}

const nodeEntry = (run: string, n: DrainNode) => JSON.stringify({ run, node: n }) + '\n';

/**
 * The previous version's ledger file of run `id` moved into its directory: each node's entry made
 * where there is none yet (never over one: another run may already have marked it taken over),
 * then the file removed. A file that cannot be read, or with entries that are not nodes, stays (it
 * keeps its run, as before; its nodes the directory names are read from there).
 */
function migrate(id: string, warn: Warn): void {
  const old = readOldLedger(id, warn);
  if (typeof old !== 'object') return;
  mkdirSync(ledgerDir(id), { recursive: true, mode: 0o700 });
  for (const n of old.nodes) createWhole(join(ledgerDir(id), entryName(n)), nodeEntry(id, n));
  if (old.other === 0) rmSync(oldLedgerFile(id), { force: true });
  removeIfEmpty(ledgerDir(id)); // (a file that listed no node)
}

/**
 * The file of run `from`'s ledger that names node `n` (as a run taking it over spells it), with the
 * node as that file does: its own file, else the one entry of that scheduler and name (file names
 * of an older version, a controller spelled another way); none; or several, which cannot be told apart.
 */
function entryOf(from: string, n: DrainNode, warn: Warn): { file: string; node: DrainNode } | 'none' | 'ambiguous' {
  const own = join(ledgerDir(from), entryName(n));
  const e = readEntry(own, warn);
  if (e.kind === 'node' || e.kind === 'unreadable') return { file: own, node: n };
  if (e.kind === 'taken') return { file: own, node: e.taken.node };
  let names: string[];
  try {
    names = readdirSync(ledgerDir(from));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'none';
    throw e;
  }
  const entries = names
    .filter((name) => name.endsWith('.json'))
    .filter((name) => name !== entryName(n))
    .map((name) => ({ file: join(ledgerDir(from), name), e: readEntry(join(ledgerDir(from), name), warn) }))
    .flatMap(({ file, e }) => (e.kind === 'node' ? [{ file, node: e.node }] : e.kind === 'taken' ? [{ file, node: e.taken.node }] : []));
  const m = findNode(n, entries, (x) => x.node);
  return m.kind === 'found' ? m.it : m.kind;
}

/** Whether ledger entry `found` is node `n` by its controller as well (not only its scheduler and name). */
const sameController = (found: { node: DrainNode }, n: DrainNode) => found.node.controller === n.controller;

/** Run `run`'s ledger; a write that fails is a warning (the run goes on, its record may be pruned later). */
export function drainLedger(run: string, warn: (message: string) => void, now: () => Date = () => new Date()): DrainLedger {
  /** The nodes this run has named (only those are taken off when back). */
  const named = new Set<string>();
  /** Those whose entry was written: only such a node is taken off a dead run's ledger (takenOver). */
  const written = new Set<string>();
  const fail = (what: string, e: unknown) => warn(`run history: cannot ${what}: ${printable((e as Error).message)}`);
  /** The other runs with a ledger directory, listed once (a ledger made later is a live run's). */
  let others: string[] | undefined;
  const otherLedgers = (): string[] => {
    try {
      others ??= readdirSync(runsDir())
        .filter((name) => name.endsWith(DIR_SUFFIX))
        .map((name) => name.slice(0, -DIR_SUFFIX.length))
        .filter((id) => isRunId(id) && id !== run);
    } catch {
      others = [];
    }
    return others;
  };
  return {
    taking(n) {
      named.add(nodeKey(n));
      written.delete(nodeKey(n));
      try {
        mkdirSync(ledgerDir(run), { recursive: true, mode: 0o700 });
        writeFileAtomic(join(ledgerDir(run), entryName(n)), nodeEntry(run, n), 0o600, 'drain ledger');
        written.add(nodeKey(n));
      } catch (e) {
        fail(`write the drain ledger of run ${run}`, e);
      }
    },
    back(n) {
      written.delete(nodeKey(n));
      if (!named.delete(nodeKey(n))) return;
      try {
        rmSync(join(ledgerDir(run), entryName(n)), { force: true });
        removeIfEmpty(ledgerDir(run));
      } catch (e) {
        fail(`write the drain ledger of run ${run}`, e);
      }
    },
    takenOver(from, n) {
      if (!isRunId(from) || from === run) return;
      // (the node stays on the dead run's ledger until it is on this one's: killed in between, it is on one)
      if (!written.has(nodeKey(n)))
        return warn(
          printable(
            `run history: ${nodeText(n)} not taken off the drain ledger of run ${from}: this run's own entry for it was not written`,
          ),
        );
      try {
        migrate(from, warn);
        const found = entryOf(from, n, warn);
        // (only where the dead run names the node: a run with no ledger gets none made for it)
        if (found === 'none') return;
        // (left as it is: its run stays kept, the safe way round)
        if (found === 'ambiguous')
          return warn(
            printable(
              `run history: ${nodeText(n)} left on the drain ledger of run ${from}: it names more than one node ${n.node} of ${n.via}, none via ${n.controller}`,
            ),
          );
        // An entry of that scheduler and name via another controller may be this node (the controller
        // spelled another way, a file of an older version) or another cluster's node of the same name
        // (an older version kept one entry for both): taking it off could drop a node still out from
        // every ledger, so it is left, its run kept, and said.
        if (!sameController(found, n))
          return warn(
            printable(
              `run history: ${nodeText(n)} left on the drain ledger of run ${from}: it names node ${n.node} of ${n.via} via ` +
                `${found.node.controller}, not via ${n.controller}; if that is this node, remove ${found.file} once the node is back`,
            ),
          );
        const entry = { run: from, node: found.node, takenOverBy: run, at: now().toISOString() };
        writeFileAtomic(found.file, JSON.stringify(entry) + '\n', 0o600, 'drain ledger');
      } catch (e) {
        fail(`take ${nodeText(n)} off the drain ledger of run ${from}`, e);
      }
    },
    foundNotOut(n) {
      const { controller } = runner();
      for (const id of otherLedgers()) {
        const file = join(ledgerDir(id), entryName(n));
        const e = readEntry(file, () => undefined);
        // (its own entry only, as a takeover marks: a namesake via another controller may be another cluster's node)
        if (e.kind !== 'node' || !sameController(e, n)) continue;
        let record: RunRecord;
        try {
          record = readRecord(id);
        } catch {
          continue; // (no record to prove the run ended: left, its run kept, the safe way round)
        }
        // (only a run this controller can prove ended, as a takeover asks: one still under way that holds
        // no claim, an older racksmith's, may be about to drain the node; one of another controller, or
        // whose record names no process, cannot be told)
        const owner = whoseDrain(id, undefined, { controller, boot: bootId(), record, startOf: processStart, runsDir: runsDir() });
        if (!owner.takeOver) continue;
        try {
          const entry = { run: id, node: e.node, takenOverBy: run, at: now().toISOString(), found: true };
          writeFileAtomic(file, JSON.stringify(entry) + '\n', 0o600, 'drain ledger');
        } catch (err) {
          fail(`mark ${nodeText(n)} not out on the drain ledger of run ${id}`, err);
        }
      }
    },
  };
}
