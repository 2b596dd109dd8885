import { describe, expect, it } from 'vitest';
import { ApplyEpochs, NEVER, readsSharedState } from '../../src/engine/apply-epochs.ts';
import { kv } from '../support/test-resources.ts';

const own = [kv({ path: '/x/own', value: '1' })];
const shared = [kv({ path: '/x/own', value: '1' }), kv({ path: '/x/shared', value: '1', shared: true })];

describe('whether answers read earlier still hold (ApplyEpochs)', () => {
  // each case: the applies (start and end of an exec each count) made after h1's answers were read
  it.each<[string, string[], typeof own, boolean]>([
    ['nothing applied anywhere', [], shared, true],
    ["another host applied: the host's own facts hold", ['h2', 'h2'], own, true],
    ['another host applied: shared state does not hold', ['h2', 'h2'], shared, false],
    ['another host is still applying (only its start counted)', ['h2'], shared, false],
    ['the host itself applied: nothing holds', ['h1', 'h1'], own, false],
    ['the host itself applied: shared state neither', ['h1', 'h1'], shared, false],
  ])('%s', (_, applies, resources, holds) => {
    const e = new ApplyEpochs();
    e.applied('h1');
    e.applied('h1'); // (applies before the answers were read change nothing)
    const at = e.stamp('h1');
    for (const h of applies) e.applied(h);
    expect(e.holds(at, 'h1', resources)).toBe(holds);
    expect(e.appliedOnHostSince(at, 'h1')).toBe(applies.includes('h1'));
  });

  it('answers never read never hold', () => {
    expect(new ApplyEpochs().holds(NEVER, 'h1', own)).toBe(false);
  });

  it.each<[string, typeof own, boolean]>([
    ['no resource', [], false],
    ['only host-local resources', own, false],
    ['one that reads shared state', shared, true],
  ])('a play reads shared state: %s', (_, resources, want) => {
    expect(readsSharedState(resources)).toBe(want);
  });
});
