// A plan records its drains (plan version 9): per host with a drain provider, the provider, its
// controller, its node when not named as the host, and what the check run found (would, may with why, already out with the scheduler's
// reason, blocked by another racksmith run's drain, none), and the timeout. `plan show` lists them (text, --json, the page); `apply` refuses
// to drain otherwise than the plan, and says a drain the plan did not list. A version 6 plan
// recorded none of it.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DrainProvider } from '../../src/contract/drain.ts';
import type { DrainPlan } from '../../src/engine/drain-session.ts';
import type { RunEvent } from '../../src/engine/events.ts';
import type { RunOutcome } from '../../src/engine/run.ts';
import type { Host, Inventory } from '../../src/inventory/model.ts';
import { checkPlanDrains, planDrains, unplannedDrain, type PlanDrains } from '../../src/plan/drains.ts';
import { makePlan, PLAN_VERSION, readPlan, writePlan, type PlanFile } from '../../src/plan/plan.ts';
import { planReport } from '../../src/plan/show.ts';
import { reportHtml } from '../../src/report/html.ts';
import { reportJson, reportText } from '../../src/report/text.ts';
import { InputError } from '../../src/util/errors.ts';
import { scratchStateDir } from './facts.ts';
import { cli } from './run-cli.ts';

const NAMES = ['ctl', 'n1', 'n2', 'n3', 'n4', 'n5'];
const host = (name: string) => ({ name, groups: ['all'], vars: {}, varSources: {} }) as unknown as Host;
const inventory = { file: 'inv.yaml', sources: ['inv.yaml'], hosts: NAMES.map(host), groups: new Map() } as unknown as Inventory;
const provider = (name: string): DrainProvider => ({ name, drain: async () => ({ kind: 'drained' }), resume: async () => undefined });
const slurm = provider('slurm');

/** A drain plan: every node through `via` on `controller`. */
const drainPlanOf = (nodes: string[], via = slurm, controller = 'ctl', timeoutSec = 600): DrainPlan => ({
  hosts: new Map(nodes.map((n) => [n, { provider: via, controller: host(controller), node: n }])),
  timeoutSec,
});

/** The drain plan with one host's node named otherwise. */
const renamed = (p: DrainPlan, h: string, node: string): DrainPlan => ({
  ...p,
  hosts: new Map([...p.hosts].map(([n, d]) => [n, n === h ? { ...d, node } : d])),
});

type DrainEvent = Extract<RunEvent, { type: 'drain' }>;
const event = (h: string, rest: Partial<DrainEvent>): DrainEvent => ({
  type: 'drain',
  host: h,
  via: 'slurm',
  controller: 'ctl',
  outcome: 'would',
  ...rest,
});

// the check run's drain events: n1 would be drained, n2 may be, n3 is out by someone else, n4 and n5 have no disruptive change
const checkEvents: DrainEvent[] = [
  event('n1', {}),
  event('n2', { detail: 'may be: nic-channels:eth0 waits on a pending change', may: ['nic-channels:eth0'] }),
  event('n3', { outcome: 'already', detail: 'drained (maintenance by ops)' }),
];
const nodes = ['n1', 'n2', 'n3', 'n4', 'n5'];

const outcome: RunOutcome = {
  results: [],
  factHashes: new Map(nodes.map((n) => [n, new Map([['p', new Map([['mtu:eth0', 'h']])]])])),
  hosts: nodes.map((n) => ({ host: n, ok: 1, changed: 0, failed: 0, skipped: 0, unreachable: false, execs: 1 })),
  exitCode: 2,
  check: true,
  elapsedMs: 0,
};
const plan = {
  ...makePlan({
    argv: ['node.ts', '--drain', 'slurm'],
    cwd: '/srv',
    selection: nodes,
    inventory,
    code: {},
    outcome,
    drains: planDrains(drainPlanOf(nodes), checkEvents),
  }),
  signature: 'x',
} as PlanFile;

describe("a plan's drains", () => {
  scratchStateDir();

  it('records per host the provider, controller and what the check run found, and the timeout', () => {
    expect(plan.version).toBe(9);
    expect(PLAN_VERSION).toBe(9);
    expect(plan.drains).toEqual({
      timeoutSec: 600,
      hosts: {
        n1: { via: 'slurm', controller: 'ctl', outcome: 'would' },
        n2: { via: 'slurm', controller: 'ctl', outcome: 'may', detail: 'may be: nic-channels:eth0 waits on a pending change' },
        n3: { via: 'slurm', controller: 'ctl', outcome: 'already', detail: 'drained (maintenance by ops)' },
        n4: { via: 'slurm', controller: 'ctl', outcome: 'none' },
        n5: { via: 'slurm', controller: 'ctl', outcome: 'none' },
      },
    });
    // no host with a drain provider: no drains recorded
    expect(planDrains(undefined, [])).toBeUndefined();
    expect(makePlan({ argv: [], cwd: '/', selection: nodes, inventory, code: {}, outcome }).drains).toBeUndefined();
  });

  it('are signed with the rest, and a plan whose drains are not of this shape is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-plandrain-'));
    const { signature: _, ...body } = plan;
    writePlan(join(dir, 'ok.plan'), body);
    expect(readPlan(join(dir, 'ok.plan')).drains).toEqual(plan.drains);
    writePlan(join(dir, 'bad.plan'), {
      ...body,
      drains: { timeoutSec: 600, hosts: { n1: { via: 'slurm', controller: 'ctl', outcome: 'maybe' } } },
    } as never);
    expect(() => readPlan(join(dir, 'bad.plan'))).toThrow(InputError);
  });

  it("plan show, text: a Drains section with the check run's lines, the others folded", () => {
    const text = reportText(planReport(plan, 'p.plan', true));
    expect(text).toContain(
      [
        'Drains (--drain, timeout 600s; the apply drains these, the check run drained nothing):',
        '  n1: would be drained (it has disruptive changes) (slurm via ctl)',
        '  n2: would be drained (it has disruptive changes) (slurm via ctl): may be: nic-channels:eth0 waits on a pending change',
        '  n3: already out of scheduling, left as it is (slurm via ctl): drained (maintenance by ops)',
        '  not drained, no disruptive change: n[4-5] (2 hosts)',
      ].join('\n'),
    );
    // a plan without drains has no such section
    const { drains: _, ...none } = plan;
    expect(reportText(planReport(none as PlanFile, 'p.plan', true))).not.toContain('Drains');
  });

  it('plan show --json carries them, in host order', () => {
    const j = JSON.parse(reportJson(planReport(plan, 'p.plan', true)));
    expect(j.drains.timeoutSec).toBe(600);
    expect(j.drains.hosts.map((h: { host: string; outcome: string }) => `${h.host} ${h.outcome}`)).toEqual([
      'n1 would',
      'n2 may',
      'n3 already',
      'n4 none',
      'n5 none',
    ]);
    expect(j.drains.hosts[2]).toEqual({
      host: 'n3',
      via: 'slurm',
      controller: 'ctl',
      outcome: 'already',
      detail: 'drained (maintenance by ops)',
    });
  });

  it('plan show --html: a Drains table, each host with what it comes to, escaped', () => {
    const page = reportHtml(planReport(plan, 'p.plan', true));
    expect(page).toContain('<section id="drains"><h2>Drains (--drain, timeout 600s;');
    expect(page).toContain(
      '<tr data-host="n3" data-drain="already"><td>n3</td><td><span class="st s-drain-already">already out of scheduling, left as it is</span><div class="note">drained (maintenance by ops)</div></td><td>slurm via ctl</td></tr>',
    );
    expect(page).toContain('<tr data-host="n4" data-drain="none">');
  });

  it('apply drains as the plan says: another mode, controller, host set or timeout is refused', () => {
    const ok = () => checkPlanDrains(plan.drains, drainPlanOf(nodes), 'p.plan');
    expect(ok).not.toThrow();
    const refused: Array<[string, DrainPlan | undefined, RegExp]> = [
      [
        '--drain none',
        undefined,
        /apply would drain otherwise than the plan: n1: none, the plan's slurm via ctl; n2: .*; the reviewed plan says how its hosts are drained/,
      ],
      ['--drain kubernetes', drainPlanOf(nodes, provider('kubernetes')), /n1: kubernetes via ctl, the plan's slurm via ctl/],
      ['another controller', drainPlanOf(nodes, slurm, 'n5'), /n1: slurm via n5, the plan's slurm via ctl/],
      ['a host more', drainPlanOf([...nodes, 'ctl']), /ctl: slurm via ctl, the plan's none/],
      ['another timeout', drainPlanOf(nodes, slurm, 'ctl', 60), /apply's drain timeout \(60s\) is not the plan's \(600s\)/],
      ['another node', renamed(drainPlanOf(nodes), 'n2', 'worker-2'), /n2: slurm via ctl, node worker-2, the plan's slurm via ctl;/],
    ];
    for (const [what, now, msg] of refused) {
      const check = () => checkPlanDrains(plan.drains, now, 'p.plan');
      expect(check, what).toThrow(InputError);
      expect(check, what).toThrow(msg);
    }
    // a plan without drains: apply drains nothing either
    expect(() => checkPlanDrains(undefined, undefined, 'p.plan')).not.toThrow();
    expect(() => checkPlanDrains(undefined, drainPlanOf(['n1']), 'p.plan')).toThrow(/n1: slurm via ctl, the plan's none/);
  });

  it('a host whose node in the scheduler is not its name (racksmith_slurm_node): recorded, shown in every view, and apply drains that node only', () => {
    const named = renamed(drainPlanOf(nodes), 'n2', 'worker-2');
    const p = { ...plan, drains: planDrains(named, checkEvents) } as PlanFile;
    expect(p.drains!.hosts.n2).toEqual({ ...plan.drains!.hosts.n2, node: 'worker-2' });
    expect(p.drains!.hosts.n1).not.toHaveProperty('node');
    const report = planReport(p, 'p.plan', true);
    expect(reportText(report)).toContain(
      '  n2: would be drained (it has disruptive changes) (slurm via ctl, node worker-2): may be: nic-channels:eth0 waits on a pending change',
    );
    expect(JSON.parse(reportJson(report)).drains.hosts[1]).toMatchObject({ host: 'n2', node: 'worker-2' });
    expect(reportHtml(report)).toContain('<td>slurm via ctl, node worker-2</td></tr>');
    expect(() => checkPlanDrains(p.drains, named, 'p.plan')).not.toThrow();
    expect(() => checkPlanDrains(p.drains, drainPlanOf(nodes), 'p.plan')).toThrow(
      /n2: slurm via ctl, the plan's slurm via ctl, node worker-2/,
    );
  });

  it("apply says a drain the plan's reviewers were not shown", () => {
    const drains = plan.drains as PlanDrains;
    expect(unplannedDrain(drains, event('n1', { outcome: 'drained' }))).toBeUndefined();
    expect(unplannedDrain(drains, event('n2', { outcome: 'drained' }))).toBeUndefined();
    expect(unplannedDrain(drains, event('n3', { outcome: 'already', detail: 'drained (x)' }))).toBeUndefined();
    expect(unplannedDrain(drains, event('n4', { outcome: 'drained' }))).toBe(
      "n4 has a disruptive change the plan did not list (the plan's check run found none on it), so it was drained though its reviewers were not shown a drain of it",
    );
    expect(unplannedDrain(drains, event('n5', { outcome: 'failed', detail: 'timed out' }))).toMatch(/^n5 .*the drain failed/);
    // shown as left out by someone else, then drained by apply (lifted since, or a dead run's taken over): said
    expect(unplannedDrain(drains, event('n3', { outcome: 'drained', detail: 'taken over from run R0, which did not finish' }))).toBe(
      'n3 was out of scheduling by someone else when the plan was made (its reviewers were shown it left so), but apply found it to drain (taken over from run R0, which did not finish): it is drained now and will be put back after its changes',
    );
  });

  it("a host out under another racksmith run's drain: recorded `blocked`, shown in every view and said in a warning; apply says so if it drains it after all", () => {
    const why =
      "drained (racksmith R0 on c): run R0 is still running on this controller (pid 9); no disruptive change is applied under another racksmith run's drain ...";
    const p = {
      ...plan,
      drains: planDrains(drainPlanOf(nodes), [...checkEvents, event('n4', { outcome: 'blocked', detail: why })]),
    } as PlanFile;
    expect(p.drains!.hosts.n4).toEqual({ via: 'slurm', controller: 'ctl', outcome: 'blocked', detail: why });
    const dir = mkdtempSync(join(tmpdir(), 'rs-plandrain-'));
    const { signature: _, ...body } = p;
    writePlan(join(dir, 'blocked.plan'), body);
    expect(readPlan(join(dir, 'blocked.plan')).drains!.hosts.n4.outcome).toBe('blocked');
    const report = planReport(p, 'p.plan', true);
    const warning =
      "1 host(s) (n4) out of scheduling under another racksmith run's drain (Drains): their disruptive changes are not applied while that run holds their node; `provision apply` fails their drain unless the node is free by then";
    expect(report.warnings).toEqual([warning]);
    const text = reportText(report);
    expect(text).toContain(`WARNING: ${warning}`);
    expect(text).toContain(
      `  n4: BLOCKED by another racksmith run's drain, its drain would fail and nothing disruptive be applied (slurm via ctl): ${why}\n  not drained, no disruptive change: n5\n`,
    );
    expect(JSON.parse(reportJson(report)).drains.hosts[3]).toEqual({
      host: 'n4',
      via: 'slurm',
      controller: 'ctl',
      outcome: 'blocked',
      detail: why,
    });
    expect(reportHtml(report)).toContain(
      `<tr data-host="n4" data-drain="blocked"><td>n4</td><td><span class="st s-drain-blocked">BLOCKED by another racksmith run&#39;s drain (its changes would not be applied)</span><div class="note">`,
    );
    // the apply asks again: still blocked, its drain fails (as listed); free by then, drained: said
    expect(unplannedDrain(p.drains, event('n4', { outcome: 'failed', detail: why }))).toBeUndefined();
    expect(unplannedDrain(p.drains, event('n4', { outcome: 'drained' }))).toBe(
      "n4 was out of scheduling under another racksmith run's drain when the plan was made (its reviewers were shown its changes blocked), but apply found it to drain: it is drained now, its changes applied, and it will be put back after them",
    );
    // that run ended and an operator drained the node since: its changes are applied under the operator's drain, said
    expect(unplannedDrain(p.drains, event('n4', { outcome: 'already', detail: 'drained (ops: bad DIMM)' }))).toBe(
      "n4 was out of scheduling under another racksmith run's drain when the plan was made (its reviewers were shown its changes blocked), but apply found it out by someone else (drained (ops: bad DIMM)): its changes are applied under that drain, and it is left out of scheduling as it was",
    );
  });

  it('a version 7 plan (no node names recorded) is refused by plan show and apply, exit 3, saying why', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rs-plandrain-')), 'p.plan');
    const { signature: _, ...body } = plan;
    writePlan(file, { ...body, version: 7 });
    for (const args of [
      ['plan', 'show', file],
      ['apply', file],
    ]) {
      const r = await cli(args);
      expect(r.code, args[0]).toBe(3);
      expect(r.stderr).toMatch(
        /plan format version 7 \(made by an older racksmith\) is not supported \(this racksmith reads 9\); make a new one/,
      );
    }
  });
});
