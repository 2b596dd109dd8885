// bench/lib/behaviour.ts: what the fleet behaviour checks conclude from a run's journal.
import { describe, expect, it } from 'vitest';
import {
  batchProblems,
  failBudgetCase,
  fmtSizes,
  hostOutcomes,
  observedBatches,
  parseJournal,
  percentBatches,
  type JournalEvent,
} from '../../bench/lib/behaviour.ts';

const start = (host: string, play = 'p'): JournalEvent => ({ type: 'host_start', host, play });
const res = (host: string, play = 'p'): JournalEvent => ({ type: 'resource', host, play });
const playStart = (hosts: string[], play = 'p'): JournalEvent => ({ type: 'play_start', play, hosts });

describe('percentBatches: --serial P% as docs/cli.md states it', () => {
  it.each([
    [1000, 10, Array(10).fill(100)],
    [40, 10, Array(10).fill(4)],
    [25, 10, [...Array(12).fill(2), 1]], // 2.5 rounded down
    [5, 10, Array(5).fill(1)], // at least 1
    [3, 100, [3]],
    [0, 10, []],
  ])('%i hosts at %i%%', (total, pct, sizes) => {
    expect(percentBatches(total, pct)).toEqual(sizes);
  });
});

describe('observedBatches: a batch ends where every host started before has written its last event', () => {
  it('batches run one after the other are seen as such', () => {
    const ev = [playStart(['a', 'b', 'c', 'd']), start('a'), start('b'), res('b'), res('a'), start('c'), start('d'), res('c'), res('d')];
    const [p] = observedBatches(ev);
    expect(p).toMatchObject({ play: 'p', started: ['a', 'b', 'c', 'd'], visible: true, observed: [2, 2] });
    expect(batchProblems(p, [2, 2])).toEqual([]);
  });

  it('a batch that starts before the last one finished is one batch, and said to be wrong', () => {
    const ev = [playStart(['a', 'b', 'c', 'd']), start('a'), start('b'), res('a'), start('c'), res('b'), start('d'), res('c'), res('d')];
    const [p] = observedBatches(ev);
    expect(p.observed).toEqual([4]);
    expect(batchProblems(p, [2, 2])).toEqual(["play 'p': batches 4, expected 2 x 2"]);
  });

  it('plays are told apart, events of another play do not count', () => {
    const ev = [
      playStart(['a', 'b'], 'one'),
      start('a', 'one'),
      res('a', 'one'),
      start('b', 'one'),
      res('b', 'one'),
      playStart(['a', 'b'], 'two'),
      start('a', 'two'),
      start('b', 'two'),
      res('a', 'two'),
      res('b', 'two'),
    ];
    expect(observedBatches(ev).map((p) => [p.play, p.observed])).toEqual([
      ['one', [1, 1]],
      ['two', [2]],
    ]);
  });

  it('hosts started out of the play order, or not all, are a problem', () => {
    const [p] = observedBatches([playStart(['a', 'b', 'c']), start('b'), res('b'), start('a'), res('a')]);
    expect(batchProblems(p, [1, 1, 1])[0]).toBe("play 'p': 2 of 3 hosts started, or not in the play's order");
  });

  it('a play whose hosts write no event besides their start shows no batches: only its order is checked', () => {
    const [p] = observedBatches([playStart(['a', 'b']), start('a'), start('b')]);
    expect(p.visible).toBe(false);
    expect(batchProblems(p, [1, 1])).toEqual([]);
  });
});

describe('hostOutcomes', () => {
  it('sorts the recaps of an interrupted run and names the hosts without one', () => {
    const ev: JournalEvent[] = [
      { type: 'host_recap', host: 'a', failed: 0, unreachable: false },
      { type: 'host_recap', host: 'b', error: 'interrupted: the steps in flight were stopped' },
      { type: 'host_recap', host: 'c', error: "not run from play 'two' on: interrupted" },
      { type: 'host_recap', host: 'd', error: 'not run: interrupted' },
      { type: 'host_recap', host: 'e', failed: 1 },
    ];
    expect(hostOutcomes(ev, ['a', 'b', 'c', 'd', 'e', 'f'])).toEqual({
      done: ['a'],
      interrupted: ['b'],
      notRunFrom: ['c'],
      notRun: ['d'],
      other: ['e'],
      missing: ['f'],
    });
  });
});

describe('failBudgetCase: the failures that exceed --max-fail-percent in a chosen batch', () => {
  const hosts = (n: number) => Array.from({ length: n }, (_, i) => `h${i + 1}`);

  it('1,000 hosts, 5%: 50 down in batch 1 (at the budget), the 51st in batch 3; batches 4-10 not run', () => {
    const c = failBudgetCase(hosts(1000), percentBatches(1000, 10), 5, 3, 'one')!;
    expect(c.failing.length).toBe(51);
    expect(c.failing.slice(0, 50)).toEqual(hosts(50));
    expect(c.failing[50]).toBe('h201');
    expect(c.started).toEqual(hosts(300));
    expect(c.reason).toBe("play 'one' stopped, 51 of 1000 hosts failed (max 5%)");
  });

  it('40 hosts, 5%: 2 is exactly 5 % (goes on), 3 exceeds it', () => {
    const c = failBudgetCase(hosts(40), percentBatches(40, 10), 5, 3, 'one')!;
    expect(c.failing).toEqual(['h1', 'h2', 'h9']);
    expect(c.started.length).toBe(12);
    expect(c.reason).toBe("play 'one' stopped, 3 of 40 hosts failed (max 5%)");
  });

  it('no case when no batch follows the halting one, or batch 1 cannot hold the failures at the budget', () => {
    expect(failBudgetCase(hosts(3), percentBatches(3, 10), 5, 3, 'one')).toBeUndefined();
    expect(failBudgetCase(hosts(100), percentBatches(100, 10), 20, 3, 'one')).toBeUndefined();
  });
});

describe('parseJournal and fmtSizes', () => {
  it('a line cut short (a crash) is left out', () => {
    expect(parseJournal('{"type":"run_start"}\n{"type":"host_st')).toEqual([{ type: 'run_start' }]);
  });
  it('sizes folded', () => {
    expect(fmtSizes([4, 4, 4, 1])).toBe('3 x 4, 1');
    expect(fmtSizes([])).toBe('none');
  });
});
