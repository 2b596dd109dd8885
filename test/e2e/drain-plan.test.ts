// A saved plan records the drains it will do (plan version 9), on the bed's real Slurm (tb7 the
// controller, tb8 and tb9 compute nodes, an MTU change on each): the check run asks Slurm, read
// only, which node someone else already has out; `plan show` lists the Drains (text, --json, the
// page in headless Chromium); `apply` refuses another --drain, and a plan whose drains do not
// match what apply would do, and says a drain the plan did not list; `apply PLAN` drains as reviewed: tb8 drained, changed, resumed; tb9,
// drained by hand beforehand, changed and left drained with its reason. Nodes out under other
// racksmith runs' drains are recorded blocked, said in a warning and on the page; apply asks Slurm
// again: one still blocked fails its drain (nothing applied), one put back by hand since is drained.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { signatureOf, type PlanFile } from '../../src/plan/plan.ts';
import { chromiumMissing, renderPage } from '../support/chromium.ts';
import { provision } from './helpers.ts';
import { CTL, drainEvents, IFACES, inventory, liveMtu, NODES, nodeState, onCtl, PB } from './slurm-mtu-bed.ts';

const tmp = () => mkdtempSync(join(tmpdir(), 'rs-drain-plan-'));

/** The check run's plan of every node, its page (`plan show --html`) and that page rendered in Chromium, with no console message. */
async function planPage(): Promise<{ page: string; shown: Awaited<ReturnType<typeof renderPage>> }> {
  const dir = tmp();
  const plan = join(dir, 'p.plan');
  const check = await provision([PB, '-i', inventory(), '-l', NODES.join(','), '--drain', 'slurm', '--check', '--plan-out', plan]);
  expect(check.code, check.stderr).toBe(2);
  const page = join(dir, 'plan.html');
  const r = await provision(['plan', 'show', plan, '--html', page]);
  expect(r.code, r.stderr).toBe(0);
  const shown = await renderPage(page);
  expect(shown.code).toBe(0);
  expect(shown.console).toEqual([]);
  return { page, shown };
}

describe.skipIf(!tb.slurmAvailable())('a saved plan records its drains (real Slurm on the bed)', () => {
  beforeEach(async () => {
    await tb.reset([CTL, ...NODES]);
    await tb.slurm([CTL, ...NODES]);
    for (const h of NODES) await tb.hostExec(h, `mkdir -p /etc/network && printf '%s' '${IFACES}' > /etc/network/interfaces`);
  }, 60_000);

  it('--plan-out records them, plan show lists them, apply refuses another --drain and drains as reviewed', async () => {
    await onCtl(`scontrol update nodename=tb9 state=drain reason='maintenance by ops'`);
    const inv = inventory();
    const dir = tmp();
    const plan = join(dir, 'p.plan');
    const check = await provision([PB, '-i', inv, '-l', NODES.join(','), '--drain', 'slurm', '--check', '--json', '--plan-out', plan]);
    expect(check.code, check.stderr).toBe(2);
    // the check run asked Slurm, and changed nothing (the hosts run side by side: by host)
    expect(drainEvents(check).sort((a, b) => a.host.localeCompare(b.host))).toEqual([
      { type: 'drain', host: 'tb8', via: 'slurm', controller: CTL, outcome: 'would' },
      { type: 'drain', host: 'tb9', via: 'slurm', controller: CTL, outcome: 'already', detail: 'drained (maintenance by ops)' },
    ]);
    expect(check.stderr).toContain('tb9: already out of scheduling, left as it is (slurm via tb7): drained (maintenance by ops)');
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });
    const recorded = JSON.parse(readFileSync(plan, 'utf8')) as PlanFile;
    expect(recorded.drains).toEqual({
      timeoutSec: 600,
      hosts: {
        tb8: { via: 'slurm', controller: CTL, outcome: 'would' },
        tb9: { via: 'slurm', controller: CTL, outcome: 'already', detail: 'drained (maintenance by ops)' },
      },
    });

    const text = await provision(['plan', 'show', plan]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(
      [
        'Drains (--drain, timeout 600s; the apply drains these, the check run drained nothing):',
        '  tb8: would be drained (it has disruptive changes) (slurm via tb7)',
        '  tb9: already out of scheduling, left as it is (slurm via tb7): drained (maintenance by ops)',
      ].join('\n'),
    );
    const json = await provision(['plan', 'show', plan, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).drains).toEqual({
      timeoutSec: 600,
      hosts: [
        { host: 'tb8', via: 'slurm', controller: CTL, outcome: 'would' },
        { host: 'tb9', via: 'slurm', controller: CTL, outcome: 'already', detail: 'drained (maintenance by ops)' },
      ],
    });

    // the reviewed drains are the plan's: apply takes no --drain of its own
    for (const other of [
      ['--drain', 'none'],
      ['--drain-timeout', '5'],
    ]) {
      const refused = await provision(['apply', plan, ...other]);
      expect(refused.code, refused.stderr).toBe(3);
      expect(refused.stderr).toContain(`apply: ${other[0]} cannot change a reviewed plan`);
    }
    // a plan whose drains are not what apply would do (signed again, as by a tool that dropped them): refused
    const { signature: _, drains: __, ...body } = recorded;
    const forged = join(dir, 'forged.plan');
    writeFileSync(forged, JSON.stringify({ ...body, signature: signatureOf(body) }));
    const mismatch = await provision(['apply', forged]);
    expect(mismatch.code, mismatch.stderr).toBe(3);
    expect(mismatch.stderr).toContain(
      "apply would drain otherwise than the plan: tb8: slurm via tb7, the plan's none; tb9: slurm via tb7, the plan's none",
    );
    expect(await liveMtu('tb8')).toBe('1500');
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });

    const apply = await provision(['apply', plan, '--json']);
    expect(apply.code, apply.stderr).toBe(0);
    // (the hosts run side by side: each host's events in order)
    const byHost = drainEvents(apply).sort((a, b) => a.host.localeCompare(b.host));
    expect(byHost).toEqual([
      { type: 'drain', host: 'tb8', via: 'slurm', controller: CTL, outcome: 'drained' },
      { type: 'resume', host: 'tb8', via: 'slurm', controller: CTL, ok: true },
      { type: 'drain', host: 'tb9', via: 'slurm', controller: CTL, outcome: 'already', detail: 'drained (maintenance by ops)' },
    ]);
    expect(apply.stderr).not.toContain('the plan did not list');
    for (const h of NODES) expect(await liveMtu(h)).toBe('9000');
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });
    expect(await nodeState('tb9')).toEqual({ state: 'drained', reason: 'maintenance by ops' });
  }, 180_000);

  it('apply says a drain its plan did not list (a plan signed again with tb8 as not drained)', async () => {
    const dir = tmp();
    const plan = join(dir, 'p.plan');
    const check = await provision([PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm', '--check', '--plan-out', plan]);
    expect(check.code, check.stderr).toBe(2);
    const { signature: _, ...body } = JSON.parse(readFileSync(plan, 'utf8')) as PlanFile;
    body.drains!.hosts.tb8.outcome = 'none';
    writeFileSync(plan, JSON.stringify({ ...body, signature: signatureOf(body) }));
    const journal = join(dir, 'journal');
    const apply = await provision(['apply', plan, '--json', '--journal', journal]);
    expect(apply.code, apply.stderr).toBe(0);
    const said =
      "tb8 has a disruptive change the plan did not list (the plan's check run found none on it), so it was drained though its reviewers were not shown a drain of it";
    expect(apply.stderr).toContain(`warning: ${said}`);
    expect(apply.events).toContainEqual(expect.objectContaining({ type: 'warning', message: said }));
    expect(readFileSync(journal, 'utf8')).toContain(JSON.stringify(said));
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });
  }, 120_000);

  it.skipIf(chromiumMissing)(
    'plan show --html: the page lists the drains, with no console message',
    async () => {
      await onCtl(`scontrol update nodename=tb9 state=drain reason='maintenance by ops'`);
      const { shown } = await planPage();
      expect(shown.dom).toContain('<h2>Drains (--drain, timeout 600s; the apply drains these, the check run drained nothing)</h2>');
      expect(shown.dom).toContain(
        '<tr data-host="tb8" data-drain="would"><td>tb8</td><td><span class="st s-drain-would">would be drained</span></td><td>slurm via tb7</td></tr>',
      );
      expect(shown.dom).toContain(
        '<tr data-host="tb9" data-drain="already"><td>tb9</td><td><span class="st s-drain-already">already out of scheduling, left as it is</span><div class="note">drained (maintenance by ops)</div></td><td>slurm via tb7</td></tr>',
      );
    },
    120_000,
  );

  /** tb8 and tb9 out under the drains of racksmith runs this controller cannot vouch for (not in its history; another controller's). */
  const otherRunsDrains = async () => {
    const marks = { tb8: `racksmith 20260101T000000Z-abcdef on ${hostname()}`, tb9: 'racksmith 20260101T000000Z-abcdef on rack2-ctl' };
    for (const h of NODES) await onCtl(`scontrol update nodename=${h} state=drain reason='${marks[h as 'tb8']}'`);
    return marks;
  };
  const BLOCKED = "BLOCKED by another racksmith run's drain, its drain would fail and nothing disruptive be applied";

  it("nodes under other racksmith runs' drains: recorded blocked and warned of; apply asks again: the one still blocked fails its drain, the one put back by hand since is drained (warned)", async () => {
    const marks = await otherRunsDrains();
    const dir = tmp();
    const plan = join(dir, 'p.plan');
    const check = await provision([
      PB,
      '-i',
      inventory(),
      '-l',
      NODES.join(','),
      '--drain',
      'slurm',
      '--check',
      '--json',
      '--plan-out',
      plan,
    ]);
    expect(check.code, check.stderr).toBe(2);
    const recorded = JSON.parse(readFileSync(plan, 'utf8')) as PlanFile;
    expect(recorded.version).toBe(9);
    for (const h of NODES)
      expect(recorded.drains!.hosts[h]).toEqual({
        via: 'slurm',
        controller: CTL,
        outcome: 'blocked',
        detail: expect.stringMatching(
          new RegExp(`^drained \\(${marks[h as 'tb8']}\\): run 20260101T000000Z-abcdef .*state=resume\\) and run again$`),
        ),
      });
    const text = await provision(['plan', 'show', plan]);
    expect(text.code, text.stderr).toBe(0); // (not refused: apply asks again)
    const warning =
      "WARNING: 2 host(s) (tb8, tb9) out of scheduling under another racksmith run's drain (Drains): their disruptive changes are not applied while that run holds their node; `provision apply` fails their drain unless the node is free by then";
    expect(text.stderr).toContain(warning);
    expect(text.stdout).toMatch(/^WARNING: 2 host\(s\) \(tb8, tb9\) out of scheduling under another racksmith run's drain/);
    expect(text.stdout).toContain(
      `  tb8: ${BLOCKED} (slurm via tb7): drained (${marks.tb8}): run 20260101T000000Z-abcdef is not in this controller's run history`,
    );
    const json = await provision(['plan', 'show', plan, '--json']);
    expect(JSON.parse(json.stdout).drains.hosts.map((h: { host: string; outcome: string }) => `${h.host} ${h.outcome}`)).toEqual([
      'tb8 blocked',
      'tb9 blocked',
    ]);

    // the operator puts tb9 back by hand (another controller's run, dead): the apply drains it now
    await onCtl('scontrol update nodename=tb9 state=resume');
    const apply = await provision(['apply', plan, '--json']);
    expect(apply.code, apply.stderr).toBe(1);
    const byHost = drainEvents(apply).sort((a, b) => a.host.localeCompare(b.host));
    expect(byHost).toEqual([
      {
        type: 'drain',
        host: 'tb8',
        via: 'slurm',
        controller: CTL,
        outcome: 'failed',
        detail: recorded.drains!.hosts.tb8.detail,
        tookOut: false,
      },
      { type: 'drain', host: 'tb9', via: 'slurm', controller: CTL, outcome: 'drained' },
      { type: 'resume', host: 'tb9', via: 'slurm', controller: CTL, ok: true },
    ]);
    expect(apply.stderr).toContain(
      "warning: tb9 was out of scheduling under another racksmith run's drain when the plan was made (its reviewers were shown its changes blocked), but apply found it to drain: it is drained now, its changes applied, and it will be put back after them",
    );
    expect(await liveMtu('tb8')).toBe('1500');
    expect(await nodeState('tb8')).toEqual({ state: 'drained', reason: marks.tb8 });
    expect(await liveMtu('tb9')).toBe('9000');
    expect(await nodeState('tb9')).toEqual({ state: 'idle', reason: 'none' });
  }, 180_000);

  it.skipIf(chromiumMissing)(
    'plan show --html: blocked drains on the page, the warning at its top, the host filter, no console message',
    async () => {
      await otherRunsDrains();
      await onCtl('scontrol update nodename=tb9 state=resume');
      const { page, shown } = await planPage();
      expect(shown.dom).toContain(
        '<p class="warning">WARNING: 1 host(s) (tb8) out of scheduling under another racksmith run\'s drain (Drains): their disruptive changes are not applied',
      );
      expect(shown.dom).toMatch(
        /<tr data-host="tb8" data-drain="blocked"><td>tb8<\/td><td><span class="st s-drain-blocked">BLOCKED by another racksmith run's drain \(its changes would not be applied\)<\/span><div class="note">drained \(racksmith 20260101T000000Z-abcdef on [^)]+\): run 20260101T000000Z-abcdef is not in this controller's run history .*<\/div><\/td><td>slurm via tb7<\/td><\/tr>/,
      );
      expect(shown.dom).toContain('<tr data-host="tb9" data-drain="would">');
      expect(shown.dom).toContain('2 of 2 drains');
      // the host filter keeps the blocked host's drain, hides the other's
      const one = await renderPage(`${page}#host=tb8`);
      expect(one.console).toEqual([]);
      expect(one.dom).toContain('<tr data-host="tb8" data-drain="blocked">');
      expect(one.dom).toContain('<tr data-host="tb9" data-drain="would" class="hidden">');
      expect(one.dom).toContain('1 of 2 drains');
    },
    120_000,
  );
});
