// A check run that failed somewhere makes a plan that says so: its failed resources (with their
// errors) and failed hosts (become failed) are recorded, `plan show` lists them and warns, and
// `apply` refuses the plan before any host is contacted. A failed resource once read as "no change".
// A host never reached is recorded with why (`unreached`), shown, and refused the same way: a
// version 5 plan only counted it, and apply skipped it.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkPlan, makePlan, writePlan, type PlanFile } from '../../src/plan/plan.ts';
import { planReport } from '../../src/plan/show.ts';
import type { RunOutcome } from '../../src/engine/run.ts';
import type { Inventory } from '../../src/inventory/model.ts';
import { InputError } from '../../src/util/errors.ts';
import { scratchStateDir } from './facts.ts';
import { cli } from './run-cli.ts';

const inventory = {
  file: 'inv.yaml',
  sources: ['inv.yaml'],
  hosts: ['solo', 'nobecome', 'fine'].map((name) => ({ name, groups: ['all'], vars: {} })),
  groups: new Map(),
} as unknown as Inventory;

const result = (host: string, id: string, status: 'ok' | 'changed' | 'failed', error?: string) =>
  ({
    host,
    play: 'p',
    id,
    kind: id.split(':')[0],
    status,
    changes: status === 'changed' ? [{ summary: `create ${id}` }] : [],
    ...(error ? { error } : {}),
  }) as RunOutcome['results'][number];

const outcome: RunOutcome = {
  results: [
    result('solo', 'file:/t/a', 'changed'),
    result('solo', 'line:/t/missing:a=1', 'failed', 'refused: /t/missing does not exist (set create: true to create it)'),
    result('fine', 'file:/t/a', 'ok'),
  ],
  factHashes: new Map([
    [
      'solo',
      new Map([
        [
          'p',
          new Map([
            ['file:/t/a', 'h1'],
            ['line:/t/missing:a=1', 'h2'],
          ]),
        ],
      ]),
    ],
    ['nobecome', new Map([['p', new Map()]])],
    ['fine', new Map([['p', new Map([['file:/t/a', 'h3']])]])],
  ]),
  hosts: [
    { host: 'solo', ok: 0, changed: 1, failed: 1, skipped: 0, unreachable: false, execs: 1 },
    { host: 'nobecome', ok: 0, changed: 0, failed: 4, skipped: 0, unreachable: false, execs: 1, error: 'not run: become (su to x) failed' },
    { host: 'fine', ok: 1, changed: 0, failed: 0, skipped: 0, unreachable: false, execs: 1 },
  ],
  exitCode: 1,
  check: true,
  elapsedMs: 0,
};

const plan = {
  ...makePlan({ argv: ['site.ts'], cwd: '/srv', selection: ['solo', 'nobecome', 'fine'], inventory, code: {}, outcome }),
  signature: 'x',
} as PlanFile;

describe('a plan whose check run failed', () => {
  scratchStateDir();

  it('plan show (text and --json) lists the failures and exits 1, though the plan verifies', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rs-planfail-')), 'p.plan');
    const { signature: _, ...body } = plan;
    writePlan(file, body);
    const text = await cli(['plan', 'show', file]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/signature: verified/);
    expect(text.stdout).toMatch(/nobecome \(failed: not run: become/);
    expect(text.stdout).toMatch(/line:\/t\/missing:a=1 \(failed\)[^]*error: refused/);
    expect(text.stderr).toMatch(/WARNING: the check run failed on 2 host/);
    const json = await cli(['plan', 'show', file, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).hosts.map((h: { status: string }) => h.status)).toEqual(['failed', 'failed', 'ok']);
  });
  it('records each failed resource with its error, and each failed host', () => {
    expect(plan.hosts.solo.p['line:/t/missing:a=1']).toMatchObject({ changes: [], error: expect.stringMatching(/does not exist/) });
    expect(plan.hosts.solo.p['file:/t/a'].error).toBeUndefined();
    expect(plan.failed).toEqual({ solo: '1 resource(s) failed', nobecome: 'not run: become (su to x) failed' });
  });

  it('plan show lists the failed resource and hosts, and warns', () => {
    const r = planReport(plan, 'p.plan', true);
    expect(r.hosts.map((h) => [h.name, h.status, h.error])).toEqual([
      ['solo', 'failed', '1 resource(s) failed'],
      ['nobecome', 'failed', 'not run: become (su to x) failed'],
      ['fine', 'ok', undefined],
    ]);
    expect(r.items.filter((i) => i.status === 'failed').map((i) => [i.host, i.id, i.note])).toEqual([
      ['solo', 'line:/t/missing:a=1', 'refused: /t/missing does not exist (set create: true to create it)'],
    ]);
    expect(r.warnings.join('\n')).toMatch(/check run failed on 2 host\(s\) \(solo, nobecome\).*apply` refuses this plan/);
  });

  it('apply refuses it whole, before anything else is checked', () => {
    const check = () => checkPlan(plan, 'p.plan', { inventory, code: {}, maxAgeMs: 86400e3, selection: plan.selection });
    expect(check).toThrow(InputError);
    expect(check).toThrow(/check run failed on 2 host\(s\) \(solo, nobecome\).*make a new plan/);
  });

  // each selected host's recap (undefined: none) and review -> where the plan puts it, with why
  it.each([
    ['reviewed, fine', { unreachable: false }, true, undefined, undefined],
    ['lost mid-review', { unreachable: true }, true, 'unreachable', undefined],
    ['lost mid-review, with why', { unreachable: true, error: 'connection lost' }, true, 'connection lost', undefined],
    [
      'never reached',
      { unreachable: true, error: 'connect ECONNREFUSED 10.0.0.9:22' },
      false,
      undefined,
      'connect ECONNREFUSED 10.0.0.9:22',
    ],
    ['never reached, timed out', { unreachable: true, error: 'timed out after 3s' }, false, undefined, 'timed out after 3s'],
    ['never reached, no error', { unreachable: true }, false, undefined, 'unreachable'],
    [
      'facts not gathered (sudo refused)',
      { unreachable: false, error: 'sudo: a password is required' },
      false,
      'sudo: a password is required',
      undefined,
    ],
    [
      'left out: the run halted',
      { unreachable: false, error: 'not run: max-fail-percent reached' },
      false,
      'not run: max-fail-percent reached',
      undefined,
    ],
    ['no recap at all', undefined, false, 'not run by the check run', undefined],
  ] as const)('a host %s', (_, recap, reviewed, failed, unreached) => {
    const p = makePlan({
      argv: ['site.ts'],
      cwd: '/srv',
      selection: ['fine', 'h'],
      inventory,
      code: {},
      outcome: {
        ...outcome,
        results: [],
        factHashes: new Map([
          ['fine', new Map([['p', new Map([['file:/t/a', 'h3']])]])],
          ...(reviewed ? [['h', new Map([['p', new Map()]])] as const] : []),
        ]),
        hosts: [
          { host: 'fine', ok: 1, changed: 0, failed: 0, skipped: 0, unreachable: false, execs: 1 },
          ...(recap ? [{ host: 'h', ok: 0, changed: 0, failed: 0, skipped: 0, execs: 0, ...recap }] : []),
        ],
      },
    });
    expect(p.failed).toEqual(failed === undefined ? undefined : { h: failed });
    expect(p.unreached).toEqual(unreached === undefined ? undefined : { h: unreached });
    expect(Object.keys(p.hosts)).toEqual(reviewed ? ['fine', 'h'] : ['fine']);
  });

  it('a host never reached: plan show lists it with why and exits 1, apply refuses the plan whole', async () => {
    const unreachedPlan = {
      ...makePlan({
        argv: ['site.ts'],
        cwd: '/srv',
        selection: ['fine', 'nobecome'],
        inventory,
        code: {},
        outcome: {
          ...outcome,
          results: [outcome.results[2]],
          factHashes: new Map([['fine', new Map([['p', new Map([['file:/t/a', 'h3']])]])]]),
          hosts: [
            outcome.hosts[2],
            { host: 'nobecome', ok: 0, changed: 0, failed: 0, skipped: 0, unreachable: true, execs: 0, error: 'host key refused' },
          ],
        },
      }),
      signature: 'x',
    } as PlanFile;
    expect(unreachedPlan.groups).toEqual({ nobecome: [], fine: [] });
    const check = () => checkPlan(unreachedPlan, 'p.plan', { inventory, code: {}, maxAgeMs: 86400e3, selection: unreachedPlan.selection });
    expect(check).toThrow(/check run did not reach 1 host\(s\) \(nobecome\): their changes were never reviewed.*--limit/);
    const file = join(mkdtempSync(join(tmpdir(), 'rs-planfail-')), 'p.plan');
    const { signature: _, ...body } = unreachedPlan;
    writePlan(file, body);
    const text = await cli(['plan', 'show', file]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/selection: 2 host\(s\), 1 not reached/);
    expect(text.stdout).toMatch(/nobecome \(unreachable: host key refused\)/);
    expect(text.stderr).toMatch(/WARNING: the check run did not reach 1 host\(s\) \(nobecome\)/);
    const json = JSON.parse((await cli(['plan', 'show', file, '--json'])).stdout);
    expect(json.hosts.find((h: { name: string }) => h.name === 'nobecome')).toMatchObject({
      status: 'unreachable',
      error: 'host key refused',
    });
  });

  it('a plan without failures has no `failed`', () => {
    const ok = makePlan({
      argv: ['site.ts'],
      cwd: '/srv',
      selection: ['fine'],
      inventory,
      code: {},
      outcome: { ...outcome, results: [outcome.results[2]], hosts: [outcome.hosts[2]] },
    });
    expect(ok.failed).toBeUndefined();
  });

  it('a version 5 plan (unreached hosts only counted) is refused by plan show and apply, exit 3, saying why', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rs-planfail-')), 'p.plan');
    const { signature: _, ...body } = plan;
    writePlan(file, { ...body, version: 5 });
    for (const args of [
      ['plan', 'show', file],
      ['apply', file],
    ]) {
      const r = await cli(args);
      expect(r.code, args[0]).toBe(3);
      expect(r.stderr).toMatch(
        /plan format version 5 \(made by an older racksmith\) is not supported \(this racksmith reads 9\); make a new one/,
      );
    }
  });
});
