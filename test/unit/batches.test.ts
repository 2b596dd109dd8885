import { describe, expect, it } from 'vitest';
import { batchSizes } from '../../src/engine/batches.ts';
import { InputError } from '../../src/util/errors.ts';

describe('batchSizes', () => {
  it.each<[number, number | string | Array<number | string> | undefined, number[]]>([
    // total, serial, sizes (Ansible: percentages of the play's hosts, rounded down, at least 1; last repeats)
    [20, [1, '10%', '25%'], [1, 2, 5, 5, 5, 2]],
    [100, [1, '10%', '25%'], [1, 10, 25, 25, 25, 14]],
    [3, ['50%'], [1, 1, 1]],
    [4, ['50%'], [2, 2]],
    [5, ['50%'], [2, 2, 1]],
    [10, undefined, [10]],
    [10, [], [10]],
    [1, undefined, [1]],
    [0, undefined, []],
    [0, [1, '10%'], []],
    [7, [1], [1, 1, 1, 1, 1, 1, 1]],
    [7, [3], [3, 3, 1]],
    [3, [5], [3]],
    [7, ['100%'], [7]],
    [5, ['1%'], [1, 1, 1, 1, 1]], // rounds down to 0, at least 1
    [8, ['12.5%'], [1, 1, 1, 1, 1, 1, 1, 1]],
    [16, ['12.5%'], [2, 2, 2, 2, 2, 2, 2, 2]],
    [10, ['3'], [3, 3, 3, 1]], // a count given as a string
    [10, [' 20% '], [2, 2, 2, 2, 2]],
    [10, [2, 5, 100], [2, 5, 3]],
    [6, [1, 2, 3, 4, 5], [1, 2, 3]],
    [7, 3, [3, 3, 1]], // one size alone, as Ansible's `serial: 3`
    [10, '50%', [5, 5]],
  ])('%i hosts, serial %j -> %j', (total, serial, want) => {
    const sizes = batchSizes(total, serial);
    expect(sizes).toEqual(want);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(total);
    for (const s of sizes) expect(s).toBeGreaterThanOrEqual(1);
  });

  it.each<[Array<number | string>]>([
    [[0]],
    [[-1]],
    [[1.5]],
    [[Number.NaN]],
    [['abc']],
    [['']],
    [['%']],
    [['-5%']],
    [['10 %']],
    [['0']],
    [['ten']],
    [['5%%']],
    [[1, 'x']],
    [['0%']],
    [['0.5%']],
    [['150%']],
    [['100.1%']],
    [[1e20]],
  ])('serial %j is an InputError', (serial) => {
    let err: unknown;
    try {
      batchSizes(20, serial);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/^serial: /);
  });

  // A typo in a later entry must not depend on how many hosts the play happens to select
  // (with --limit to one host the second entry is never reached).
  it.each<[number, Array<number | string>]>([
    [1, [1, 'abc']],
    [2, [5, '10 %']],
    [0, ['abc']],
  ])('an invalid entry is refused even when %i host(s) never reach it: %j', (total, serial) => {
    expect(() => batchSizes(total, serial)).toThrow(InputError);
  });
});
