// Issue 19, plans: a saved plan is checked whole before any host is contacted (its signature
// under this installation's key, the hosts of its selection, createdAt not in the future, no
// security option in its argv); apply takes host key options from its own command line only.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory } from './helpers.ts';
import { signatureOf, type PlanFile } from '../../src/plan/plan.ts';

const HOSTS = ['tb5', 'tb6'];
const PB = 'test/fixtures/playbooks/secrets.ts'; // with no secret and fx_stage=none: one directory
const tmp = () => mkdtempSync(join(tmpdir(), 'rs-plan-'));

async function sshdLogs(): Promise<string[]> {
  return Promise.all(HOSTS.map(async (h) => (await tb.hostExec(h, 'wc -l < /var/log/sshd.log')).stdout.trim()));
}

let plan: string;
let inv: string;
let original: PlanFile;

beforeAll(async () => {
  await tb.reset(HOSTS);
  // the plan covers tb5 (selected with -l); tb6 is in the inventory too
  inv = writeInventory({ hosts: HOSTS });
  plan = join(tmp(), 'p.plan');
  const check = await provision([
    PB,
    '-i',
    inv,
    '-e',
    'fx_stage=none',
    '-l',
    'tb5',
    '--check',
    '--plan-out',
    plan,
    '--journal',
    join(tmp(), 'j'),
  ]);
  expect(check.code, check.stderr).toBe(2);
  original = JSON.parse(readFileSync(plan, 'utf8'));
});

type Edit = (p: PlanFile) => void;
const unsigned = (edit: Edit) => (p: PlanFile) => edit(p);
/** The edit, then signed again with this installation's key: the other checks must still refuse it. */
const resigned = (edit: Edit) => (p: PlanFile) => {
  edit(p);
  const { signature: _, ...body } = p;
  p.signature = signatureOf(body);
};

describe('an edited plan is refused before any host is contacted', () => {
  const future = new Date(Date.now() + 3600e3).toISOString();
  const empty = join(tmpdir(), 'rs-empty-known-hosts');
  const cases: Array<[string, (p: PlanFile) => void, RegExp]> = [
    [
      'argv + --ssh-accept-new --known-hosts EMPTY',
      unsigned((p) => p.argv.push('--ssh-accept-new', '--known-hosts', empty)),
      /signature does not match/,
    ],
    ['argv + --ssh-accept-new, signed again', resigned((p) => p.argv.push('--ssh-accept-new')), /argv holds --ssh-accept-new/],
    ['argv + a --limit', unsigned((p) => p.argv.push('--limit', 'tb6')), /signature does not match/],
    ['createdAt in the future', unsigned((p) => (p.createdAt = future)), /signature does not match/],
    ['createdAt in the future, signed again', resigned((p) => (p.createdAt = future)), /is not a time in the past/],
    ['a host added', unsigned((p) => (p.hosts.tb6 = p.hosts.tb5)), /signature does not match/],
    ['a host added, signed again', resigned((p) => (p.hosts.tb6 = p.hosts.tb5)), /outside its selection/],
    [
      'a host added to the selection too, signed again',
      resigned((p) => ((p.hosts.tb6 = p.hosts.tb5), p.selection.push('tb6'))),
      /not the hosts its selection reaches/,
    ],
    [
      'a fact hash',
      unsigned((p) => (Object.values(Object.values(p.hosts.tb5)[0])[0].factHash = '0'.repeat(64))),
      /signature does not match/,
    ],
    [
      'a change summary',
      unsigned((p) => Object.values(Object.values(p.hosts.tb5)[0])[0].changes.push('rm -rf /')),
      /signature does not match/,
    ],
    ['the signature removed', (p) => delete (p as Partial<PlanFile>).signature, /signature/],
    ['an unknown field', (p) => Object.assign(p, { extra: 1 }), /extra/],
    ['the version', (p) => (p.version = 2), /version 2 \(made by an older racksmith\) is not supported/],
  ];
  it.each(cases)('%s', async (_, edit, why) => {
    writeFileSync(empty, '');
    const p = structuredClone(original);
    edit(p);
    const file = join(tmp(), 'edited.plan');
    writeFileSync(file, JSON.stringify(p, null, 2));
    const journal = join(tmp(), 'j.ndjson');
    const before = await sshdLogs();
    const r = await provision(['apply', file, '--journal', journal]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(why);
    expect(await sshdLogs()).toEqual(before);
    expect(existsSync(journal)).toBe(false);
  });

  it('the untouched plan applies (the refusals above are the edits)', async () => {
    const copy = join(tmp(), 'same.plan');
    writeFileSync(copy, JSON.stringify(original, null, 2)); // re-serialised: same content, same signature
    const r = await provision(['apply', copy, '--json', '--journal', join(tmp(), 'j')]);
    expect(r.code, r.stderr).toBe(0);
    expect(Object.keys(recaps(r))).toEqual(['tb5']);
  });
});

describe('security options come from apply’s command line, never from the plan', () => {
  it('a plan made with --ssh-accept-new --known-hosts F records neither; apply uses only its own', async () => {
    await tb.reset(HOSTS);
    const dir = tmp();
    const accepting = join(dir, 'accept_known_hosts');
    writeFileSync(accepting, '');
    const p = join(dir, 'p.plan');
    const check = await provision([
      PB,
      '-i',
      inv,
      '-e',
      'fx_stage=none',
      '-l',
      'tb6',
      '--check',
      '--ssh-accept-new',
      '--known-hosts',
      accepting,
      '--plan-out',
      p,
      '--journal',
      join(dir, 'c'),
    ]);
    expect(check.code, check.stderr).toBe(2);
    expect(readFileSync(accepting, 'utf8')).toMatch(/ssh-ed25519/); // the check run did accept the key
    const argv = (JSON.parse(readFileSync(p, 'utf8')) as PlanFile).argv;
    expect(argv).not.toContain('--ssh-accept-new');
    expect(argv).not.toContain('--known-hosts');
    // apply with an empty known_hosts of its own and no accept-new: the host is refused
    const empty = join(dir, 'empty_known_hosts');
    writeFileSync(empty, '');
    const refused = await provision(['apply', p, '--known-hosts', empty, '--json', '--journal', join(dir, 'a')]);
    expect(refused.code).toBe(1);
    expect(recaps(refused).tb6.error).toMatch(/host key for .* is unknown/);
    expect(readFileSync(empty, 'utf8')).toBe('');
    // apply with the inventory's known_hosts (no option): it runs
    const ok = await provision(['apply', p, '--json', '--journal', join(dir, 'b')]);
    expect(ok.code, ok.stderr).toBe(0);
  });
});

describe('a team plan key (--plan-key, RACKSMITH_PLAN_KEY)', () => {
  it('a plan made under a team key applies from another installation holding the key, and only there', async () => {
    await tb.reset(HOSTS);
    const dir = tmp();
    const key = join(dir, 'team.key');
    writeFileSync(key, randomBytes(32), { mode: 0o600 });
    const ci = { XDG_STATE_HOME: join(dir, 'ci-state') }; // the installation that makes the plan (CI)
    const duty = { XDG_STATE_HOME: join(dir, 'duty-state') }; // the operator on duty's
    const p = join(dir, 'p.plan');
    const check = await provision([PB, '-i', inv, '-e', 'fx_stage=none', '-l', 'tb6', '--check', '--plan-key', key, '--plan-out', p], {
      env: ci,
    });
    expect(check.code, check.stderr).toBe(2);
    expect((JSON.parse(readFileSync(p, 'utf8')) as PlanFile).argv).not.toContain('--plan-key');
    // another installation without the key: refused as a plan of another installation
    const without = await provision(['apply', p, '--journal', join(dir, 'a')], { env: duty });
    expect(without.code).toBe(3);
    expect(without.stderr).toMatch(/signature does not match/);
    // a key file others can read is refused, as an installation key is
    const loose = join(dir, 'loose.key');
    writeFileSync(loose, randomBytes(32), { mode: 0o644 });
    const refused = await provision(['apply', p, '--plan-key', loose, '--journal', join(dir, 'b')], { env: duty });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/readable by others/);
    // the same key, from the environment: applied
    const ok = await provision(['apply', p, '--json', '--journal', join(dir, 'c')], { env: { ...duty, RACKSMITH_PLAN_KEY: key } });
    expect(ok.code, ok.stderr).toBe(0);
    expect(Object.keys(recaps(ok))).toEqual(['tb6']);
  });
});
