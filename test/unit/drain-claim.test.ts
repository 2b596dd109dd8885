// Takeover claims (history/drain-claim.ts): whose a claim found in place is, as a table; then the
// claim files themselves in a state directory of the test's own: one run wins a node, another run
// alive holding it keeps the others off, a dead claimant's claim is passed over (never replaced in
// place, and never removed: a run letting go removes its own claim only, so two runs never both win).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs, { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimHolder, nodeClaimDir, drainClaims, type Claim } from '../../src/history/drain-claim.ts';
import { bootId, thisProcess } from '../../src/history/run-process.ts';
import { fifoAt } from './fifo.ts';

const BOOT = 'b-1';
const facts = (live?: number) => ({ boot: BOOT, startOf: (pid: number) => (pid === 4242 ? live : undefined), file: '/s/0.json' });
const claim = (run: string, process?: Claim['process']): Claim => ({ run, ...(process ? { process } : {}) });
const proc = { pid: 4242, start: 1000, boot: BOOT };

describe('claimHolder: a claim is this run’s, stale (its process gone), or held by a run that may still be draining the node or taking it over', () => {
  it.each<[string, Claim | undefined, ReturnType<typeof facts>, ReturnType<typeof claimHolder>]>([
    ['this run’s own', claim('ME', proc), facts(1000), { kind: 'mine' }],
    [
      'another run, alive, started after this one (run ids sort as the runs started)',
      claim('W', proc),
      facts(1000),
      { kind: 'held', why: 'run W of this controller holds it (pid 4242, claim /s/0.json)', older: false },
    ],
    [
      'another run, alive, started before this one',
      claim('A', proc),
      facts(1000),
      { kind: 'held', why: 'run A of this controller holds it (pid 4242, claim /s/0.json)', older: true },
    ],
    ['another run, its process gone', claim('W', proc), facts(undefined), { kind: 'stale' }],
    ['another run, its pid another process’s now', claim('W', proc), facts(2000), { kind: 'stale' }],
    ['another run, before this controller restarted', claim('W', { ...proc, boot: 'b-0' }), facts(1000), { kind: 'stale' }],
    [
      'a claim naming no process',
      claim('W'),
      facts(1000),
      {
        kind: 'unknown',
        why: 'run W claimed it (/s/0.json), and its claim does not say which process: it may still be running; remove the claim once it has ended',
      },
    ],
    [
      'a claim that cannot be read',
      undefined,
      facts(1000),
      { kind: 'unknown', why: 'its drain claim /s/0.json cannot be read: remove it if no racksmith run is draining the node' },
    ],
  ])('%s', (_, c, f, want) => expect(claimHolder(c, 'ME', f)).toEqual(want));
});

describe('drainClaims: the claim files', () => {
  const saved = process.env.XDG_STATE_HOME;
  const N = { via: 'slurm', controller: 'ctl1', node: 'n7' };
  beforeEach(() => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-claims-'));
  });
  afterEach(() => {
    process.env.XDG_STATE_HOME = saved;
  });
  const files = () => readdirSync(nodeClaimDir(N)).sort();
  /** A process that has ended: its claim is stale. */
  const deadProcess = async () => {
    const p = spawn('true');
    await once(p, 'close');
    return { pid: p.pid!, start: 1, boot: bootId()! };
  };

  it('one run wins the node; another, while the winner lives, is told whose it is; after the winner lets go, the node is free', () => {
    const a = drainClaims('RUN-A', thisProcess());
    const b = drainClaims('RUN-B', thisProcess());
    expect(a.claim(N)).toBeUndefined();
    expect(a.claim(N)).toBeUndefined(); // its own, again (a later play's drain)
    const why = `run RUN-A of this controller holds it (pid ${process.pid}, claim ${join(nodeClaimDir(N), '0.json')})`;
    expect(b.claim(N)).toEqual({ held: why, older: true });
    expect(b.peek(N)).toEqual({ held: why, older: true });
    // (told apart from B's side: A started after an earlier run)
    expect(drainClaims('RUN-0', thisProcess()).claim(N)).toEqual({ held: why, older: false });
    expect(a.peek(N)).toBeUndefined();
    b.release(N); // (not B's: nothing happens)
    expect(files()).toEqual(['0.json']);
    a.release(N);
    expect(files()).toEqual([]);
    expect(b.claim(N)).toBeUndefined();
    // another node is another claim
    expect(a.claim({ ...N, node: 'n8' })).toBeUndefined();
    b.releaseAll();
    a.releaseAll();
    expect(files()).toEqual([]);
  });

  it('by the cluster its scheduler names: two clusters’ nodes of one name are two claims, two spellings of one controller one', () => {
    const root = join(process.env.XDG_STATE_HOME!, 'racksmith/drain-claims');
    expect(nodeClaimDir({ ...N, cluster: 'east' })).toBe(join(root, 'slurm~east~n7'));
    expect(nodeClaimDir({ ...N, controller: '10.0.0.1', cluster: 'east' })).toBe(join(root, 'slurm~east~n7'));
    // (a name that is not plain, and no cluster: hashed, and never one of the plain names)
    expect(nodeClaimDir({ ...N, cluster: 'east coast' })).toMatch(/\/[0-9a-f]{32}$/);
    expect(nodeClaimDir({ ...N, cluster: 'east coast' })).not.toBe(nodeClaimDir({ ...N, cluster: 'east_coast' }));
    expect(nodeClaimDir(N)).toBe(join(root, 'slurm~n7'));
    const a = drainClaims('RUN-A', thisProcess());
    const b = drainClaims('RUN-B', thisProcess());
    expect(a.claim({ ...N, controller: 'ctlA', cluster: 'east' })).toBeUndefined();
    expect(b.claim({ ...N, controller: 'ctlB', cluster: 'west' })).toBeUndefined();
    expect(b.claim({ ...N, controller: '10.0.0.1', cluster: 'east' })).toMatchObject({ held: expect.stringMatching(/^run RUN-A /) });
    a.releaseAll();
    b.releaseAll();
  });

  it('a live claim by the node’s name alone (a racksmith before the cluster was in the key) holds the node for the cluster-keyed claim too', () => {
    const older = drainClaims('RUN-A', thisProcess());
    const b = drainClaims('RUN-B', thisProcess());
    expect(older.claim(N)).toBeUndefined();
    const held = { held: expect.stringMatching(/^run RUN-A of this controller holds it .*slurm~n7\/0\.json\)$/), older: true };
    expect(b.peek({ ...N, cluster: 'east' })).toEqual(held);
    expect(b.claim({ ...N, cluster: 'east' })).toEqual(held);
    older.releaseAll();
    expect(b.claim({ ...N, cluster: 'east' })).toBeUndefined();
    b.releaseAll();
  });

  it('two clusters’ nodes of one name, their clusters not known, share a claim: a run holding it for both lets go of it once it lets go of both', () => {
    const onA = { ...N, controller: 'ctlA' };
    const onB = { ...N, controller: 'ctlB' };
    const a = drainClaims('RUN-A', thisProcess());
    const b = drainClaims('RUN-B', thisProcess());
    expect(a.claim(onA)).toBeUndefined();
    expect(a.claim(onB)).toBeUndefined();
    a.release(onA);
    // (still holding onB: another run keeps off it)
    expect(files()).toEqual(['0.json']);
    expect(b.claim(onB)).toMatchObject({ held: expect.stringMatching(/^run RUN-A of this controller holds it/) });
    a.release(onB);
    expect(files()).toEqual([]);
    expect(b.claim(onB)).toBeUndefined();
    b.releaseAll();
    expect(files()).toEqual([]);
  });

  it('a dead claimant’s claim is passed over to the next number, which one run only wins; letting go removes its own only', async () => {
    const dead = drainClaims('RUN-DEAD', await deadProcess());
    expect(dead.claim(N)).toBeUndefined();
    const b = drainClaims('RUN-B', thisProcess());
    const c = drainClaims('RUN-C', thisProcess());
    expect(b.claim(N)).toBeUndefined();
    expect(files()).toEqual(['0.json', '1.json']);
    expect(c.claim(N)).toMatchObject({ held: expect.stringMatching(/^run RUN-B of this controller holds it .*\/1\.json\)$/) });
    b.release(N);
    // (its own only: the stale one stays, see the next test)
    expect(files()).toEqual(['0.json']);
    expect(c.claim(N)).toBeUndefined();
    expect(files()).toEqual(['0.json', '1.json']);
  });

  it('a run letting go while another walks past a stale claim: one winner (a stale claim is never removed)', async () => {
    // X died holding 0.json; F holds 1.json. H reads 0.json (stale) and, before it reads on, F lets
    // go and G claims. Had F's letting go removed the stale 0.json, G would win 0 and H 1: both.
    const dead = drainClaims('RUN-X', await deadProcess());
    expect(dead.claim(N)).toBeUndefined();
    const [F, G, H] = ['RUN-F', 'RUN-G', 'RUN-H'].map((r) => drainClaims(r, thisProcess()));
    expect(F.claim(N)).toBeUndefined();
    let g: ReturnType<typeof G.claim> | 'not asked' = 'not asked';
    const open = fs.openSync;
    let once_ = false;
    (fs as { openSync: unknown }).openSync = function (this: unknown, ...a: Parameters<typeof fs.openSync>) {
      const r = open.apply(this, a);
      if (!once_ && String(a[0]).endsWith('/0.json')) {
        once_ = true;
        (fs as { openSync: unknown }).openSync = open;
        syncBuiltinESMExports();
        F.release(N);
        g = G.claim(N);
      }
      return r;
    };
    syncBuiltinESMExports();
    try {
      const h = H.claim(N);
      expect([g, h].filter((w) => w === undefined)).toHaveLength(1);
      expect(h).toMatchObject({ held: expect.stringMatching(/^run RUN-G of this controller holds it/) });
    } finally {
      (fs as { openSync: unknown }).openSync = open;
      syncBuiltinESMExports();
    }
  });

  it('a claim file that is not a claim keeps every run off, said so; a state directory where none can be made is said', () => {
    const a = drainClaims('RUN-A', thisProcess());
    expect(a.claim(N)).toBeUndefined();
    a.releaseAll();
    writeFileSync(join(nodeClaimDir(N), '0.json'), 'not json');
    expect(a.claim(N)).toMatchObject({ cannot: expect.stringMatching(/^its drain claim .*0\.json cannot be read: remove it/) });
    // a FIFO: not read (it would hang the run), held all the same
    const other = { ...N, node: 'n9' };
    mkdirSync(nodeClaimDir(other), { recursive: true });
    const stop = fifoAt(join(nodeClaimDir(other), '0.json'), JSON.stringify({ run: 'RUN-A' }));
    try {
      expect(a.claim(other)).toMatchObject({ cannot: expect.stringMatching(/^its drain claim .*n9\/0\.json cannot be read: remove it/) });
    } finally {
      stop();
    }
    const file = join(process.env.XDG_STATE_HOME!, 'a-file');
    writeFileSync(file, '');
    process.env.XDG_STATE_HOME = file;
    const notDir = { cannot: `its drain cannot be claimed in ${file}/racksmith/drain-claims/slurm~n7: ENOTDIR` };
    expect(a.claim(N)).toEqual(notDir);
    expect(a.peek(N)).toMatchObject({ cannot: expect.stringContaining(`${file}/racksmith/drain-claims/slurm~n7`) });
  });
});
