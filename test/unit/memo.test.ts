import { describe, expect, it } from 'vitest';
import { MEMO_ENTRIES, remember } from '../../src/util/memo.ts';

describe('remember: a bounded per-process memo', () => {
  it('keeps entries until it is full, then starts over with the new one', () => {
    const memo = new Map<number, string>();
    for (let i = 0; i < MEMO_ENTRIES; i++) expect(remember(memo, i, `v${i}`)).toBe(`v${i}`);
    expect(memo.size).toBe(MEMO_ENTRIES);
    expect(memo.get(0)).toBe('v0');
    remember(memo, -1, 'new');
    expect([...memo]).toEqual([[-1, 'new']]);
  });

  it('replacing a key of a memo that is not full keeps the others', () => {
    const memo = new Map([
      ['a', 1],
      ['b', 2],
    ]);
    remember(memo, 'a', 3);
    expect([...memo]).toEqual([
      ['a', 3],
      ['b', 2],
    ]);
  });
});
