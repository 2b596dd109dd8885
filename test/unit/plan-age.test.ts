// --max-plan-age: a plan older than the limit is refused, both ages said in the unit a person reads.
import { describe, expect, it } from 'vitest';
import { checkPlan, durationText, makePlan, type PlanFile } from '../../src/plan/plan.ts';
import type { RunOutcome } from '../../src/engine/run.ts';
import type { Inventory } from '../../src/inventory/model.ts';

describe('durationText', () => {
  it.each([
    [1000, '1 second'],
    [45e3, '45 seconds'],
    [60e3, '60 seconds'],
    [120e3, '2 minutes'],
    [90 * 60e3, '90 minutes'],
    [3 * 3600e3, '3 hours'],
    [86400e3, '24 hours'],
    [3 * 86400e3, '3 days'],
  ])('%i ms: %s', (ms, want) => expect(durationText(ms)).toBe(want));
});

describe('a plan past --max-plan-age', () => {
  it('is refused, saying both ages in words (it said "1 minutes old; the limit is 0")', () => {
    const inventory = { hosts: [], groups: new Map() } as unknown as Inventory;
    const outcome: RunOutcome = { results: [], factHashes: new Map(), hosts: [], exitCode: 0, check: true, elapsedMs: 0 };
    const plan = {
      ...makePlan({ argv: ['site.ts'], cwd: '/srv', selection: [], inventory, code: {}, outcome }),
      signature: 'x',
    } as PlanFile;
    plan.createdAt = new Date(Date.now() - 5 * 60e3).toISOString();
    expect(() => checkPlan(plan, 'p.plan', { inventory, code: {}, maxAgeMs: 1000, selection: [] })).toThrow(
      'plan is 5 minutes old; the limit is 1 second (--max-plan-age)',
    );
  });
});
