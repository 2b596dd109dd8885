// Which nodes a run may have left out of scheduling (history/drain-ledger.ts), and retention and
// `runs prune` keeping such a run (select.ts spareDrainers): the ledger directory (one file per
// node) through a run's drains, a takeover replacing the node's file in the dead run's ledger with
// who took it over (no longer keeping that run), two takeovers at once (driven through fs: neither
// loses the other's), the previous version's single ledger file read and migrated, entries that
// cannot be read keeping their run, and the split of the runs to prune.
import fs, { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  drainLedger,
  drainsLeft,
  keptLedgers,
  ledgerDir,
  oldLedgerFile,
  readLedger,
  removeLedger,
} from '../../src/history/drain-ledger.ts';
import { recordIds, runsDir } from '../../src/history/record.ts';
import type { DrainNode } from '../../src/contract/drain.ts';
import { startRecord } from '../../src/history/recorder.ts';
import { runner } from '../../src/history/provenance.ts';
import { thisProcess, type RunProcess } from '../../src/history/run-process.ts';
import { spareDrainers } from '../../src/history/select.ts';
import { fifoAt } from './fifo.ts';
import { cli } from './run-cli.ts';

const A = '20261206T101500Z-aaaaaa';
const B = '20261206T111500Z-bbbbbb';
/** Runs older than retention's 90 days. */
const OLD_LIVE = '20200102T000000Z-111111';
const OLD_DEAD = '20200101T000000Z-222222';
const n7 = { via: 'slurm', controller: 'ctl1', node: 'n7' };
const n8 = { via: 'slurm', controller: 'ctl1', node: 'n8' };

describe('spareDrainers: the runs to prune but those that may have left nodes out', () => {
  it('keeps each run with a ledger, with its nodes; prunes the others', () => {
    const gone = [{ id: A }, { id: B }, { id: 'C' }];
    expect(spareDrainers(gone, new Map([[B, [n7]]]))).toEqual({ gone: [{ id: A }, { id: 'C' }], kept: [{ run: { id: B }, nodes: [n7] }] });
    expect(spareDrainers(gone, new Map())).toEqual({ gone, kept: [] });
  });
});

describe('drainLedger: the nodes a run may have out, in its file beside its record', () => {
  const saved = process.env.XDG_STATE_HOME;
  const warnings: string[] = [];
  beforeEach(() => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-ledger-'));
    warnings.length = 0;
  });
  afterEach(() => {
    process.env.XDG_STATE_HOME = saved;
  });
  const warn = (m: string) => warnings.push(m);
  /** What the ledgers keeping their runs name. */
  const left = () => drainsLeft(keptLedgers(warn));

  const AT = new Date('2026-12-06T12:00:00.000Z');
  const taker = (id: string) => drainLedger(id, warn, () => AT);
  const files = (id: string) => readdirSync(ledgerDir(id)).sort();
  const takenBy = (by: string, node = n7) => ({ node, by, at: AT.toISOString() });
  /** Run `id`'s ledger, naming `nodes` (as its drains of them start: taking). */
  const takerOf = (id: string, ...nodes: (typeof n7)[]) => {
    const l = taker(id);
    for (const n of nodes) l.taking(n);
    return l;
  };

  it('lists a node from before its drain until it is back, one file each; the directory goes with the last node', () => {
    const a = drainLedger(A, warn);
    a.taking(n7);
    a.taking(n8);
    expect(left()).toEqual(new Map([[A, [n7, n8]]]));
    expect(files(A)).toEqual(['slurm~ctl1~n7.json', 'slurm~ctl1~n8.json']);
    expect(JSON.parse(readFileSync(join(ledgerDir(A), 'slurm~ctl1~n7.json'), 'utf8'))).toEqual({ run: A, node: n7 });
    a.back(n7);
    expect(left()).toEqual(new Map([[A, [n8]]]));
    a.back(n8);
    expect(existsSync(ledgerDir(A))).toBe(false);
    expect(left()).toEqual(new Map());
    // a node named oddly: a file named by its hash, read back as the node
    const odd = { via: 'slurm', controller: 'ctl1', node: '../n 9' };
    a.taking(odd);
    expect(files(A)).toEqual([expect.stringMatching(/^[0-9a-f]{32}\.json$/)]);
    expect(left()).toEqual(new Map([[A, [odd]]]));
    a.back(odd);
    expect(existsSync(ledgerDir(A))).toBe(false);
    expect(warnings).toEqual([]);
  });

  // two clusters of one inventory, each with a node n1 (two Slurm controllers)
  const onA = { via: 'slurm', controller: 'ctlA', node: 'n1' };
  const onB = { via: 'slurm', controller: 'ctlB', node: 'n1' };

  it('two nodes of one name on two controllers are two entries: putting one back leaves the other named', () => {
    const a = drainLedger(A, warn);
    a.taking(onA);
    a.taking(onB);
    expect(left()).toEqual(new Map([[A, [onA, onB]]]));
    a.back(onA);
    expect(left()).toEqual(new Map([[A, [onB]]]));
    expect(files(A)).toEqual(['slurm~ctlB~n1.json']);
    a.back(onB);
    expect(existsSync(ledgerDir(A))).toBe(false);
    expect(warnings).toEqual([]);
  });

  it('a takeover marks the dead run’s entry of its node by controller only: one of that name via another controller is left, said, never guessed', () => {
    const dead = drainLedger(A, warn);
    dead.taking(onA);
    dead.taking(onB);
    dead.taking({ ...n7, controller: '10.0.0.1' });
    const b = taker(B);
    // by controller: the other cluster's n1 stays named
    b.taking(onB);
    b.takenOver(A, onB);
    // (read in the order of the files' names)
    expect(readLedger(A, warn)).toMatchObject({ nodes: [{ ...n7, controller: '10.0.0.1' }, onA], takenOver: [takenBy(B, onB)] });
    expect(warnings).toEqual([]);
    // n7's controller spelled as a name here: maybe that n7, maybe another cluster's an older version
    // kept one entry for: left, its run kept, and said with the file to remove if it is this node
    b.taking(n7);
    b.takenOver(A, n7);
    expect(readLedger(A, warn)).toMatchObject({ nodes: [{ ...n7, controller: '10.0.0.1' }, onA], takenOver: [takenBy(B, onB)] });
    expect(warnings).toEqual([
      `run history: n7 (slurm via ctl1) left on the drain ledger of run ${A}: it names node n7 of slurm via 10.0.0.1, not via ctl1; ` +
        `if that is this node, remove ${join(ledgerDir(A), 'slurm~10.0.0.1~n7.json')} once the node is back`,
    ]);
    warnings.length = 0;
    // n1 through a third spelling: two n1 there (one taken over already), neither its: left as it is, said so
    const odd = { ...onA, controller: '10.0.0.9' };
    b.taking(odd);
    b.takenOver(A, odd);
    expect(readLedger(A, warn)?.nodes).toEqual([{ ...n7, controller: '10.0.0.1' }, onA]);
    expect(warnings).toEqual([
      'run history: n1 (slurm via 10.0.0.9) left on the drain ledger of run 20261206T101500Z-aaaaaa: it names more than one node n1 of slurm, none via 10.0.0.9',
    ]);
  });

  it('an entry named as an earlier version named it (`slurm~n7.json`) is read, put back by its run and taken over by its controller', () => {
    mkdirSync(ledgerDir(A), { recursive: true });
    writeFileSync(join(ledgerDir(A), 'slurm~n7.json'), JSON.stringify({ run: A, node: n7 }));
    writeFileSync(join(ledgerDir(A), 'slurm~n8.json'), JSON.stringify({ run: A, node: n8 }));
    expect(left()).toEqual(new Map([[A, [n7, n8]]]));
    const b = taker(B);
    // its controller spelled another way: left (it could be another cluster's n7)
    b.taking({ ...n7, controller: 'ctl1.example' });
    b.takenOver(A, { ...n7, controller: 'ctl1.example' });
    expect(readLedger(A, warn)).toMatchObject({ nodes: [n7, n8], takenOver: [] });
    expect(warnings).toHaveLength(1);
    warnings.length = 0;
    // spelled as that entry does: taken over
    b.taking(n7);
    b.takenOver(A, n7);
    expect(readLedger(A, warn)).toMatchObject({ nodes: [n8], takenOver: [takenBy(B)] });
    expect(files(A)).toEqual(['slurm~n7.json', 'slurm~n8.json']);
    expect(warnings).toEqual([]);
  });

  it('a run that takes a node over marks it taken over in the dead run’s ledger (only that node); such an entry keeps no run', () => {
    const dead = drainLedger(A, warn);
    dead.taking(n7);
    dead.taking(n8);
    const b = taker(B);
    b.taking(n7);
    b.takenOver(A, n7);
    expect(left()).toEqual(
      new Map([
        [A, [n8]],
        [B, [n7]],
      ]),
    );
    expect(readLedger(A, warn)).toEqual({ nodes: [n8], unreadable: 0, takenOver: [takenBy(B)], where: ledgerDir(A) });
    b.taking(n8);
    b.takenOver(A, n8);
    expect(left()).toEqual(new Map([[B, [n7, n8]]]));
    expect(readLedger(A, warn)?.takenOver).toEqual([takenBy(B), takenBy(B, n8)]);
    b.takenOver('not-a-run-id', n7); // (a mark of an older racksmith: nothing to do)
    // a run that had no ledger (older, or its write failed) gets none made for it
    const C = '20261206T121500Z-cccccc';
    b.takenOver(C, n7);
    expect(readLedger(C, warn)).toBeUndefined();
    // pruned: its taken-over entries go, and the directory with them
    removeLedger(A);
    expect(existsSync(ledgerDir(A))).toBe(false);
    expect(warnings).toEqual([]);
  });

  /** Run `during` once, when the next call of fs[fn] on a path ending in `tail` is made (before it acts, or after, even when it throws). */
  function interleave(fn: Hooked, tail: string, when: 'before' | 'after', during: () => void): void {
    const real = fs[fn] as (...a: unknown[]) => unknown;
    (fs as unknown as Record<string, unknown>)[fn] = function (this: unknown, ...a: unknown[]) {
      const hit = String(a[0]).endsWith(tail) || String(a[1] ?? '').endsWith(tail);
      if (hit) {
        (fs as unknown as Record<string, unknown>)[fn] = real;
        syncBuiltinESMExports();
      }
      if (hit && when === 'before') during();
      try {
        return real.apply(this, a);
      } finally {
        if (hit && when === 'after') during();
      }
    };
    syncBuiltinESMExports();
  }
  afterEach(() => {
    // (a hook that never fired must not outlive its test)
    for (const fn of Object.keys(realFs) as Hooked[]) (fs as unknown as Record<string, unknown>)[fn] = realFs[fn];
    syncBuiltinESMExports();
  });
  const realFs = { renameSync: fs.renameSync, openSync: fs.openSync, readdirSync: fs.readdirSync };
  type Hooked = keyof typeof realFs;

  it('two runs taking over two nodes of one dead run at once: each node marked taken over, neither removal lost', () => {
    const dead = drainLedger(A, warn);
    dead.taking(n7);
    dead.taking(n8);
    const C = '20261206T121500Z-cccccc';
    const [b, c] = [takerOf(B, n7), takerOf(C, n8)];
    // B writes its change just as C, having read the ledger as it was, makes its own
    interleave('renameSync', '.json', 'before', () => c.takenOver(A, n8));
    b.takenOver(A, n7);
    expect(left().get(A)).toBeUndefined();
    expect(readLedger(A, warn)?.takenOver).toEqual([takenBy(B), takenBy(C, n8)]);
    expect(warnings).toEqual([]);
  });

  it.each<[string, Hooked, string, 'before' | 'after']>([
    ['C runs while B has the old file open', 'openSync', '.drains.json', 'after'],
    ['C runs just before B marks its node', 'renameSync', 'slurm~ctl1~n7.json', 'before'],
    ['C runs just after B marks its node', 'renameSync', 'slurm~ctl1~n7.json', 'after'],
  ])(
    'the previous version’s single file, two runs taking over at once (%s): migrated, both nodes marked taken over',
    (_, fn, tail, when) => {
      mkdirSync(runsDir(), { recursive: true });
      writeFileSync(oldLedgerFile(A), JSON.stringify({ run: A, nodes: [n7, n8] }));
      expect(left()).toEqual(new Map([[A, [n7, n8]]]));
      const C = '20261206T121500Z-cccccc';
      const [b, c] = [takerOf(B, n7), takerOf(C, n8)];
      interleave(fn, tail, when, () => c.takenOver(A, n8));
      b.takenOver(A, n7);
      expect(existsSync(oldLedgerFile(A))).toBe(false);
      expect(left().get(A)).toBeUndefined();
      expect(readLedger(A, warn)?.takenOver).toEqual([takenBy(B), takenBy(C, n8)]);
      expect(warnings).toEqual([]);
    },
  );

  // A reader lists the directory and reads the previous version's file; a takeover migrating the
  // file between the two makes the directory's entries, then removes the file. Read in the other
  // order (the directory first), the node still out is in neither.
  it.each<[string, Hooked, string, 'before' | 'after']>([
    ['just before the reader reads the old file', 'openSync', `${A}.drains.json`, 'before'],
    ['just after the reader lists the directory', 'readdirSync', `${A}.drains`, 'after'],
  ])('a migration %s: the node still out is read from one or the other (the old file first)', (_, fn, tail, when) => {
    mkdirSync(runsDir(), { recursive: true });
    writeFileSync(oldLedgerFile(A), JSON.stringify({ run: A, nodes: [n7, n8] }));
    const c = takerOf(B, n8);
    interleave(fn, tail, when, () => c.takenOver(A, n8));
    expect(left().get(A) ?? []).toContainEqual(n7);
    expect(existsSync(oldLedgerFile(A))).toBe(false); // (the migration did run in between)
    expect(readLedger(A, warn)).toMatchObject({ nodes: [n7], takenOver: [takenBy(B, n8)] });
  });

  it('the previous version’s file is read as it is until a takeover; a node put back there by the run itself is its own', () => {
    mkdirSync(runsDir(), { recursive: true });
    writeFileSync(oldLedgerFile(A), JSON.stringify({ run: A, nodes: [n7, { via: 'slurm' }, 'x'] }));
    // (entries that are not nodes keep the run, as before)
    expect(readLedger(A, warn)).toEqual({ nodes: [n7], unreadable: 2, takenOver: [], where: oldLedgerFile(A) });
    takerOf(B, n7).takenOver(A, n7);
    // (a file with entries that are not nodes stays, its node now the directory's: taken over)
    expect(readLedger(A, warn)).toEqual({ nodes: [], unreadable: 2, takenOver: [takenBy(B)], where: ledgerDir(A) });
    expect(left().get(A)).toEqual([]);
  });

  /** fs[fn] failing with `code` for the paths that hold `part` while `during` runs (EACCES: the tests may run as root, whom modes do not stop). */
  function failing<T>(fn: 'readdirSync' | 'openSync' | 'writeFileSync', code: string, part: string, during: () => T): T {
    const real = fs[fn] as (...a: unknown[]) => unknown;
    (fs as unknown as Record<string, unknown>)[fn] = function (this: unknown, ...a: unknown[]) {
      if (String(a[0]).includes(part)) throw Object.assign(new Error(`${code}: ${String(a[0])}`), { code });
      return real.apply(this, a);
    };
    syncBuiltinESMExports();
    try {
      return during();
    } finally {
      (fs as unknown as Record<string, unknown>)[fn] = real;
      syncBuiltinESMExports();
    }
  }

  it('a ledger or an entry that cannot be read keeps its run, its nodes unknown; entries that are not nodes crash nothing', () => {
    const a = drainLedger(A, warn);
    a.taking(n7);
    for (const [name, text] of [
      ['slurm~x.json', 'not json'],
      ['slurm~y.json', 'null'],
      ['slurm~z.json', JSON.stringify({ node: n8, takenOverBy: 7 })],
      ['slurm~w.json.tmp-1-ab', 'a write cut short: not an entry'],
    ])
      writeFileSync(join(ledgerDir(A), name), text);
    expect(readLedger(A, warn)).toEqual({ nodes: [n7], unreadable: 3, takenOver: [], where: ledgerDir(A) });
    a.back(n7);
    expect(left()).toEqual(new Map([[A, []]]));
    // EACCES on the directory, on an entry, on the previous version's file: kept all the same
    const b = drainLedger(B, warn);
    b.taking(n7);
    expect(failing('readdirSync', 'EACCES', `${B}.drains`, () => left().get(B))).toEqual([]);
    expect(failing('openSync', 'EACCES', `${B}.drains/`, () => readLedger(B, warn))).toMatchObject({ nodes: [], unreadable: 1 });
    const C = '20261206T121500Z-cccccc';
    writeFileSync(oldLedgerFile(C), JSON.stringify({ run: C, nodes: [n8] }));
    expect(failing('openSync', 'EACCES', `${C}.drains.json`, () => left().get(C))).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('a takeover whose own entry could not be written leaves the node on the dead run’s ledger (killed then, it is on one)', () => {
    drainLedger(A, warn).taking(n7);
    const b = taker(B);
    failing('writeFileSync', 'EIO', `${B}.drains/`, () => b.taking(n7));
    b.takenOver(A, n7);
    expect(readLedger(B, warn)?.nodes ?? []).toEqual([]);
    expect(readLedger(A, warn)).toMatchObject({ nodes: [n7], takenOver: [] });
    expect(warnings).toEqual([
      expect.stringMatching(/^run history: cannot write the drain ledger of run 20261206T111500Z-bbbbbb: .*EIO/),
      "run history: n7 (slurm via ctl1) not taken off the drain ledger of run 20261206T101500Z-aaaaaa: this run's own entry for it was not written",
    ]);
    // written at a later drain of it: taken off then
    b.taking(n7);
    b.takenOver(A, n7);
    expect(left()).toEqual(new Map([[B, [n7]]]));
  });

  it('a file there that is not a regular file (a FIFO) is skipped, said, never read: no hang of `runs`, the retention, a takeover', async () => {
    const a = drainLedger(A, warn);
    a.taking(n7);
    const fifo = join(ledgerDir(A), 'slurm~ctl1~n9.json');
    const old = oldLedgerFile(B);
    const stop = [fifoAt(fifo, JSON.stringify({ run: A, node: { ...n7, node: 'n9' } })), fifoAt(old, JSON.stringify({ nodes: [n8] }))];
    try {
      expect(left()).toEqual(new Map([[A, [n7]]]));
      const skipped = (f: string) => `run history: ${f} is a FIFO, not a regular file: skipped (racksmith makes none there: remove it)`;
      expect(warnings).toEqual([skipped(fifo), skipped(old)]);
      const { code, stderr } = await cli(['runs']);
      expect(code).toBe(0);
      expect(stderr).toContain(`warning: ${skipped(fifo)}\n`);
      // a takeover of it: nothing to mark (and B has no ledger made for it)
      warnings.length = 0;
      const c = takerOf('20261206T121500Z-cccccc', { ...n7, node: 'n9' });
      c.takenOver(A, { ...n7, node: 'n9' });
      expect(warnings).toEqual([skipped(fifo)]);
      expect(readLedger(A, warn)?.takenOver).toEqual([]);
    } finally {
      stop.forEach((kill) => kill());
    }
  });

  it('a ledger that cannot be written is a warning', () => {
    process.env.XDG_STATE_HOME = '/dev/null';
    drainLedger(A, warn).taking(n7);
    expect(warnings).toEqual([expect.stringMatching(/^run history: cannot write the drain ledger of run 20261206T101500Z-aaaaaa: /)]);
  });
});

describe('the retention after every run keeps a run that may have left nodes out', () => {
  const saved = process.env.XDG_STATE_HOME;
  afterEach(() => {
    process.env.XDG_STATE_HOME = saved;
  });
  it('a run older than 90 days with a ledger naming a node stays; one without, or whose nodes were all taken over, goes (its ledger with it)', () => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-retention-'));
    const OLD_OUT = '20200101T000000Z-aaaaaa';
    const OLD = '20200101T000000Z-bbbbbb';
    const OLD_TAKEN = '20200101T000000Z-cccccc';
    const OLD_FORMAT = '20200101T000000Z-dddddd';
    mkdirSync(runsDir(), { recursive: true });
    for (const id of [OLD_OUT, OLD, OLD_TAKEN, OLD_FORMAT])
      writeFileSync(
        join(runsDir(), `${id}.json`),
        JSON.stringify({ id, start: '2020-01-01T00:00:00.000Z', journal: '/nonexistent', hosts: {} }),
      );
    drainLedger(OLD_TAKEN, () => undefined).taking(n8);
    const out = drainLedger(OLD_OUT, () => undefined);
    out.taking(n7);
    out.taking(n8);
    out.takenOver(OLD_TAKEN, n8);
    writeFileSync(oldLedgerFile(OLD_FORMAT), JSON.stringify({ run: OLD_FORMAT, nodes: [n8] }));
    const warnings: string[] = [];
    const run = startRecord(
      { argv: [], playbooks: [], inventoryFingerprint: '', labels: {}, check: false, journal: '/nonexistent', hosts: [] },
      (m) => warnings.push(m),
    );
    run.finish({ hosts: [], exitCode: 0, check: false, elapsedMs: 0 });
    expect(warnings).toEqual([]);
    expect(recordIds()).toEqual([run.id, OLD_FORMAT, OLD_OUT]);
    expect(existsSync(ledgerDir(OLD_TAKEN))).toBe(false);
  });
});

/**
 * Run `id`'s record with no end: of this controller unless `controller` says, started at `start`
 * (2026-12-06 10:15 UTC unless given), run by `process` when given.
 */
function unendedRecord(id: string, o: { process?: RunProcess; start?: string; controller?: string } = {}): void {
  writeFileSync(
    join(runsDir(), `${id}.json`),
    JSON.stringify({
      id,
      start: o.start ?? '2026-12-06T10:15:00.000Z',
      controller: o.controller ?? runner().controller,
      ...(o.process ? { process: o.process } : {}),
      journal: '/nonexistent',
      hosts: {},
    }),
  );
}

describe('runs prune and retention: a run still running is kept', () => {
  const saved = process.env.XDG_STATE_HOME;
  afterEach(() => {
    process.env.XDG_STATE_HOME = saved;
  });
  it('runs prune keeps a run whose process is alive (said, with its pid), and prunes one whose process is gone (a pid now another process)', async () => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-prune-'));
    mkdirSync(runsDir(), { recursive: true });
    const me = thisProcess()!;
    unendedRecord(A, { process: me });
    unendedRecord(B, { process: { ...me, start: me.start + 1 } });
    const { code, stdout, stderr } = await cli(['runs', 'prune', '--keep', '0', '--json']);
    expect(code, stderr).toBe(0);
    expect(
      stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([
      { id: B, pruned: true },
      { id: A, pruned: false, running: true },
    ]);
    expect(stderr).toContain(`kept run ${A}: still running (pid ${process.pid}); pruned once it has ended\n`);
    expect(recordIds()).toEqual([A]);
  });
  it("retention after a run leaves another run's record alone while that run runs", () => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-retain-'));
    mkdirSync(runsDir(), { recursive: true });
    // older than the 90 days retention keeps: removed unless still running
    const me = thisProcess()!;
    unendedRecord(OLD_LIVE, { process: me, start: '2026-01-01T00:00:00.000Z' });
    unendedRecord(OLD_DEAD, { process: { ...me, start: me.start + 1 }, start: '2026-01-01T00:00:00.000Z' });
    const run = startRecord(
      { argv: [], playbooks: [], inventoryFingerprint: '', labels: {}, check: false, journal: '/nonexistent', hosts: [] },
      () => undefined,
    );
    run.finish({ hosts: [], exitCode: 0, check: false, elapsedMs: 0 });
    expect(recordIds()).toEqual([run.id, OLD_LIVE]);
  });
});

describe("foundNotOut: a node a drain found in scheduling is no dead run's to put back", () => {
  const saved = process.env.XDG_STATE_HOME;
  afterEach(() => {
    process.env.XDG_STATE_HOME = saved;
  });
  /** Run `id`'s record with no end (unendedRecord's options) and a ledger naming `nodes`. */
  const killed = (id: string, nodes: DrainNode[], record: Parameters<typeof unendedRecord>[1] = {}) => {
    unendedRecord(id, record);
    const l = drainLedger(id, () => undefined);
    for (const n of nodes) l.taking(n);
  };
  it("marks a dead run's entry of the node, and only that: a live run's, a namesake via another controller, a run that cannot be proven ended stay", () => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-found-'));
    mkdirSync(runsDir(), { recursive: true });
    const me = thisProcess()!;
    const [DEAD, LIVE, NO_RECORD, NO_PROCESS, ELSEWHERE] = [
      '20261206T090000Z-dddddd',
      '20261206T091500Z-eeeeee',
      '20261206T093000Z-ffffff',
      '20261206T094500Z-111111',
      '20261206T095000Z-222222',
    ];
    const n8via2 = { ...n8, controller: 'ctl2' };
    killed(DEAD, [n7, n8], { process: { ...me, start: me.start + 1 } });
    killed(LIVE, [n7], { process: me });
    killed(NO_RECORD, [n7]);
    rmSync(join(runsDir(), `${NO_RECORD}.json`));
    // (a record naming no process; one of another controller, a state directory shared over NFS)
    killed(NO_PROCESS, [n7]);
    killed(ELSEWHERE, [n7], { process: { ...me, start: me.start + 1 }, controller: 'login2' });
    const at = new Date('2026-12-06T16:00:00.000Z');
    const warnings: string[] = [];
    const later = drainLedger(
      B,
      (m) => warnings.push(m),
      () => at,
    );
    later.taking(n7);
    later.foundNotOut(n7);
    later.foundNotOut(n8via2);
    expect(warnings).toEqual([]);
    expect(readLedger(DEAD, () => undefined)).toMatchObject({
      nodes: [n8],
      takenOver: [{ node: n7, by: B, at: at.toISOString(), found: true }],
    });
    expect(readLedger(LIVE, () => undefined)).toMatchObject({ nodes: [n7], takenOver: [] });
    for (const id of [NO_RECORD, NO_PROCESS, ELSEWHERE])
      expect(readLedger(id, () => undefined)).toMatchObject({ nodes: [n7], takenOver: [] });
    // (its own entry stays its own)
    expect(readLedger(B, () => undefined)).toMatchObject({ nodes: [n7], takenOver: [] });
  });
});

describe('runs prune: a run kept for its ledger, and where to look', () => {
  const saved = process.env.XDG_STATE_HOME;
  afterEach(() => {
    process.env.XDG_STATE_HOME = saved;
  });
  it('names the ledger it read: the directory of this version, the single file of the previous one', async () => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-prune-'));
    mkdirSync(runsDir(), { recursive: true });
    for (const id of [A, B])
      writeFileSync(
        join(runsDir(), `${id}.json`),
        JSON.stringify({ id, start: '2026-12-06T10:15:00.000Z', journal: '/nonexistent', hosts: {} }),
      );
    drainLedger(A, () => undefined).taking(n7);
    writeFileSync(oldLedgerFile(B), JSON.stringify({ run: B, nodes: [n8] }));
    const { code, stderr } = await cli(['runs', 'prune', '--keep', '0']);
    expect(code).toBe(0);
    expect(stderr).toContain(
      `kept run ${A}: it may have left n7 (slurm via ctl1) out of scheduling (its drain ledger ${ledgerDir(A)}); the next run of this controller that drains such a node takes it over; once one is back by hand, remove the file there that names it\n`,
    );
    expect(stderr).toContain(
      `kept run ${B}: it may have left n8 (slurm via ctl1) out of scheduling (its drain ledger ${oldLedgerFile(B)}); the next run of this controller that drains such a node takes it over; once one is back by hand, remove it from that file (or the file, once none is left out)\n`,
    );
  });
});
