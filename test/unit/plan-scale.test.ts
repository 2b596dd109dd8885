// A saved plan grows linearly with the fleet (issue #39): makePlan for 10,000 hosts x 50
// resources against 1,000 x 50, as a ratio of CPU time measured side by side, not a timed test
// (the machine's speed cancels out). Linear is 10x; a search of every result per host (quadratic)
// is up to 100x at this size (75x measured with one planted in makePlan). The bound is about their
// geometric mean, 30x: a busy machine's GC and CPU contention moved a linear run to 17x in CI. Each
// size is its fastest of a few runs, the estimate least moved by the machine's load.
// (writePlan is JSON.stringify, scrub and an HMAC of the result: linear.)
import { describe, expect, it } from 'vitest';
import { makePlan } from '../../src/plan/plan.ts';
import type { RunOutcome } from '../../src/engine/run.ts';
import type { Inventory } from '../../src/inventory/model.ts';

const RESOURCES = 50;
const PLAY = 'site';

/** A converged (check-mode) outcome of `hosts` hosts, one in ten resources with a change to review. */
function outcome(hosts: number): { inventory: Inventory; outcome: RunOutcome } {
  const names = Array.from({ length: hosts }, (_, i) => `node${i + 1}`);
  const results: RunOutcome['results'] = [];
  const factHashes: RunOutcome['factHashes'] = new Map();
  for (const host of names) {
    const hashes = new Map<string, string>();
    for (let r = 0; r < RESOURCES; r++) {
      const id = `file:/etc/bench/f${r}.conf`;
      const changed = r % 10 === 0;
      results.push({
        host,
        play: PLAY,
        id,
        kind: 'file',
        status: changed ? 'changed' : 'ok',
        changes: changed ? [{ summary: `/etc/bench/f${r}.conf: content (${host})` }] : [],
      } as RunOutcome['results'][number]);
      hashes.set(id, `${host}-${r}`.padEnd(64, '0'));
    }
    factHashes.set(host, new Map([[PLAY, hashes]]));
  }
  const inventory = {
    file: 'synthetic.yaml',
    sources: ['synthetic.yaml'],
    hosts: names.map((name, i) => ({ name, groups: ['all'], vars: { ansible_host: `10.0.${i >> 8}.${i & 255}` } })),
    groups: new Map(),
  } as unknown as Inventory;
  return {
    inventory,
    outcome: { results, factHashes, hosts: [], exitCode: 2, check: true, elapsedMs: 0 },
  };
}

/** CPU milliseconds of making the plan (the fixture is built before the clock starts). */
function planCpuMs(hosts: number): number {
  const o = outcome(hosts);
  const c0 = process.cpuUsage();
  const plan = makePlan({ argv: ['site.ts', '--check'], cwd: '/', selection: o.inventory.hosts.map((h) => h.name), code: {}, ...o });
  const c = process.cpuUsage(c0);
  expect(Object.keys(plan.hosts)).toHaveLength(hosts);
  return (c.user + c.system) / 1000;
}

/** The fastest of `runs` measurements. */
const fastest = (runs: number, measure: () => number) => Math.min(...Array.from({ length: runs }, measure));

describe('a saved plan at fleet size', () => {
  it('10,000 hosts x 50 resources cost at most 30x what 1,000 cost (linear: 10x, quadratic: 100x)', () => {
    planCpuMs(1000); // warm-up: the first run compiles
    const small = fastest(3, () => planCpuMs(1000));
    const large = fastest(2, () => planCpuMs(10_000));
    expect(large / small, `1,000 hosts: ${small.toFixed(0)} ms, 10,000 hosts: ${large.toFixed(0)} ms`).toBeLessThanOrEqual(30);
  }, 120_000);
});
