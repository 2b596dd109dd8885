// Issue #37: a saved plan as plan show presents it: per host and play the resources it changes or
// that wait on another's change, their reviewed diffs; converged resources left out; an
// unverified plan said loudly.
import { describe, expect, it } from 'vitest';
import { PLAN_FORMAT, PLAN_VERSION, type PlanFile } from '../../src/plan/plan.ts';
import { planReport } from '../../src/plan/show.ts';
import { reportText } from '../../src/report/text.ts';

const plan: PlanFile = {
  format: PLAN_FORMAT,
  version: PLAN_VERSION,
  createdAt: '2026-01-01T00:00:00.000Z',
  argv: ['site.ts', '--inventory', 'inv.yaml'],
  cwd: '/srv',
  selection: ['a1', 'a2', 'a3', 'a4'],
  inventoryFingerprint: 'x',
  playbookFingerprint: 'y',
  code: {},
  // a2 finished first: the report keeps the selection's order
  hosts: {
    a2: { disks: { 'mkfs:/dev/sdb': { factHash: 'h', changes: ['mkfs.xfs /dev/sdb'], kind: 'mkfs' } } },
    a1: {
      disks: {
        'mkfs:/dev/sdb': { factHash: 'h', changes: ['mkfs.xfs /dev/sdb'], kind: 'mkfs' },
        'mount:/data': { factHash: 'h', changes: ['depends on a pending change of mkfs:/dev/sdb'], pending: 'mkfs:/dev/sdb' },
        'file:/etc/x': { factHash: 'h', changes: ['update /etc/x'], diffs: ['-a\n+b\n'] },
        'sysctl:vm.swappiness': { factHash: 'h', changes: [] },
      },
    },
    a3: { disks: { 'sysctl:vm.swappiness': { factHash: 'h', changes: [] } } },
  },
  groups: { a1: ['rack1', 'storage'], a2: ['rack1'], a3: ['rack2'] },
  signature: 'hmac-sha256:0',
};

describe('planReport', () => {
  const r = planReport(plan, 'p.plan', true);

  it('hosts in the selection order, with their groups and what they would come to', () => {
    expect(r.hosts).toEqual([
      { name: 'a1', groups: ['rack1', 'storage'], status: 'changed' },
      { name: 'a2', groups: ['rack1'], status: 'changed' },
      { name: 'a3', groups: ['rack2'], status: 'ok' },
    ]);
  });

  it('changed and pending resources with their diffs; converged ones left out; kind from the id where not recorded', () => {
    expect(r.items.map((i) => [i.host, i.id, i.kind, i.status, i.diffs.length, i.note])).toEqual([
      ['a1', 'mkfs:/dev/sdb', 'mkfs', 'changed', 0, undefined],
      ['a1', 'mount:/data', 'mount', 'pending', 0, 'mkfs:/dev/sdb'],
      ['a1', 'file:/etc/x', 'file', 'changed', 1, undefined],
      ['a2', 'mkfs:/dev/sdb', 'mkfs', 'changed', 0, undefined],
    ]);
  });

  it('counts a selected host the plan says nothing of as not reviewed, and says that the signature verified', () => {
    expect(Object.fromEntries(r.meta).selection).toBe('4 host(s), 1 not reviewed');
    expect(Object.fromEntries(r.meta).signature).toBe('verified');
    expect(r.warnings).toEqual([]);
  });

  it('an unverified plan: a warning and DOES NOT VERIFY', () => {
    const u = planReport(plan, 'p.plan', false);
    expect(u.warnings[0]).toMatch(/edited since it was made, or signed under another key/);
    expect(Object.fromEntries(u.meta).signature).toBe('DOES NOT VERIFY');
  });

  it('a host never reached: listed in the selection order with why, counted, and warned about', () => {
    const u = planReport(
      { ...plan, unreached: { a4: 'connect ECONNREFUSED 10.0.0.4:22' }, groups: { ...plan.groups, a4: ['rack2'] } },
      'p.plan',
      true,
    );
    expect(u.hosts.map((h) => [h.name, h.status, h.error, h.groups])).toEqual([
      ['a1', 'changed', undefined, ['rack1', 'storage']],
      ['a2', 'changed', undefined, ['rack1']],
      ['a3', 'ok', undefined, ['rack2']],
      ['a4', 'unreachable', 'connect ECONNREFUSED 10.0.0.4:22', ['rack2']],
    ]);
    expect(Object.fromEntries(u.meta).selection).toBe('4 host(s), 1 not reached');
    expect(u.warnings).toEqual([
      'the check run did not reach 1 host(s) (a4): their changes were never reviewed, and `provision apply` refuses this plan',
    ]);
  });

  it('text: a host not reached in a plan with no change is listed under its heading, not under "No changes."', () => {
    const text = reportText(
      planReport({ ...plan, hosts: { a3: plan.hosts.a3 }, selection: ['a3', 'a4'], unreached: { a4: 'refused' } }, 'p.plan', true),
    );
    expect(text).toMatch(/\nNo changes\.\n\nPer host:\n {2}a4 \(unreachable: refused\)\n/);
  });
});
