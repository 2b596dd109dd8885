import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/contract/resource.ts';
import { ApplyEpochs, NEVER, readsSharedState, touchedBy } from '../../src/engine/apply-epochs.ts';
import { kv } from '../support/test-resources.ts';

const own = [kv({ path: '/x/own', value: '1' })];
const step = (touches: string[] | undefined): Step => ({ name: 's', script: ':', touches });
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
    e.applied('h1', undefined);
    e.applied('h1', undefined); // (applies before the answers were read change nothing)
    const at = e.stamp('h1');
    for (const h of applies) e.applied(h, undefined);
    expect(e.holds(at, 'h1', resources)).toBe(holds);
    expect(e.nothingHolds(at, 'h1')).toBe(applies.includes('h1'));
  });

  // the host's own apply, its steps touching `touches`, after answers of a resource reading `reads`
  const reader = (reads: string[] | undefined) => [{ ...kv({ path: '/x/r', value: '1' }), reads }];
  it.each<[string, string[] | undefined, string[] | undefined, boolean]>([
    ['the steps touched another file', ['file:/etc/sysctl.d/a.conf'], ['file:/etc/fstab', 'mounts'], true],
    ['the steps touched a sysctl, the probe reads mounts', ['sysctl'], ['mounts', 'block-devices'], true],
    ['the steps touched nothing at all', [], ['mounts'], true],
    ['the steps touched the file read', ['file:/etc/fstab'], ['file:/etc/fstab'], false],
    ['the steps touched a directory above the file read', ['file:/etc'], ['file:/etc/fstab'], false],
    ['the steps touched a file below the directory read', ['file:/mnt/jail/tmp/x'], ['file:/mnt/jail'], false],
    ['the steps touched the mount table read', ['file:/etc/x', 'mounts'], ['mounts'], false],
    ['a step said nothing of what it touches', undefined, ['mounts'], false],
    ['the probe said nothing of what it reads', ['sysctl'], undefined, false],
  ])("the host's own apply: %s", (_, touches, reads, holds) => {
    const e = new ApplyEpochs();
    const at = e.stamp('h1');
    e.applied('h1', touches);
    e.applied('h1', touches);
    expect(e.holds(at, 'h1', reader(reads))).toBe(holds);
    expect(e.nothingHolds(at, 'h1')).toBe(touches === undefined);
  });

  it('one apply since that may have changed anything outweighs the declared ones', () => {
    const e = new ApplyEpochs();
    const at = e.stamp('h1');
    for (const t of [['sysctl'], ['sysctl'], undefined, undefined]) e.applied('h1', t);
    expect(e.holds(at, 'h1', reader(['mounts']))).toBe(false);
    expect(e.holds(e.stamp('h1'), 'h1', reader(['mounts']))).toBe(true);
  });

  it.each<[string, { steps?: Step[] }[], string[] | undefined]>([
    ['no steps', [{}, { steps: [] }], []],
    ['every step declares', [{ steps: [step(['sysctl']), step(['file:/a'])] }, { steps: [step([])] }], ['sysctl', 'file:/a']],
    ['one step does not', [{ steps: [step(['sysctl'])] }, { steps: [step(undefined)] }], undefined],
  ])("what an exec's steps touch: %s", (_, states, want) => {
    expect(touchedBy(states)).toEqual(want);
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
