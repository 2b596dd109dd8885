// The human view at fleet size (issue #37), off a terminal, over every host of the bed (30 with
// RS_TESTBED_HOSTS=30): a first run folds the same change on every host into one entry and the
// change whose value is each host's own into one entry with the values listed; a converged re-run
// prints a constant number of lines (at most 25 at 30 hosts) and names no host; a dry run after
// it changes nothing; a failing host is one line as it ends, one problem and one recap row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostList } from '../../src/output/host-ranges.ts';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory } from './helpers.ts';

const PB = 'test/fixtures/playbooks/fleet-output.ts';
let names: string[];
let inventory: string;
const lines = (text: string) => text.split('\n').length - 1;
/** The human view, without the journal's path (its last line, named apart in the counts). */
const view = (stderr: string) => stderr.replace(/^journal: .*\n/m, '');

beforeAll(async () => {
  names = tb.hosts().map((h) => h.name);
  await tb.reset(names);
  inventory = writeInventory({ hosts: names });
});

afterAll(async () => {
  // (what the runs wrote: the next file starts from clean hosts whatever happened here)
  await tb.reset(names);
});

describe('the human view at fleet size, off a terminal', () => {
  it('first run: each change once with its hosts, the per-host value folded; re-run: a constant few lines, no host named; --check after: nothing', async () => {
    const first = await provision([PB, '-i', inventory]);
    expect(first.code, first.stderr).toBe(0);
    const all = `[${hostList(names)}]`;
    expect(first.stderr).toContain(`● directory:/srv/rs-fleet  ${all}`);
    expect(first.stderr).toContain(`● file:/srv/rs-fleet/a.conf  ${all}`);
    // the line naming each host: one entry, its value a slot with the hosts' names
    expect(first.stderr).toMatch(
      new RegExp(`● line:/srv/rs-fleet/host.conf:\\^name=  \\[.*\\]\\n    .*name=‹1›.*\\n      ‹1›: ${names[0]}, `),
    );
    expect(lines(view(first.stderr))).toBeLessThanOrEqual(25);

    const again = await provision([PB, '-i', inventory, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(Object.values(recaps(again)).every((r) => r.changed === 0 && r.failed === 0)).toBe(true);
    expect(lines(again.stderr)).toBeLessThanOrEqual(25);
    for (const h of names) expect(again.stderr).not.toMatch(new RegExp(`\\b${h}\\b`));
    expect(again.stderr).toMatch(new RegExp(`^total \\(${names.length} hosts\\)\\s+${3 * names.length}\\s+0\\s+0\\s+0\\s+0\\s`, 'm'));

    const check = await provision([PB, '-i', inventory, '--check']);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stderr).not.toContain('Changes that would be made');
  });

  it('one failing host: its line, its problem and its recap row, the others counted in the totals', async () => {
    const failing = names.at(-1)!;
    const inv = writeInventory({ hosts: names, hostVars: { [failing]: { fx_fail: true } } });
    const r = await provision([PB, '-i', inv]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr.match(new RegExp(`^✖ ${failing}: `, 'mu'))).toHaveLength(1);
    expect(r.stderr).toMatch(new RegExp(`^Problems:\\n  ${failing}: command:fails here: FAILED: `, 'm'));
    expect(r.stderr).toMatch(new RegExp(`^${failing}\\s+\\d+\\s+\\d+\\s+1\\s+0\\s+no\\s`, 'm'));
    expect(r.stderr).toContain(`(${names.length - 1} hosts without a problem, not listed`);
    expect(lines(view(r.stderr))).toBeLessThanOrEqual(25);
  });

  it('a wrong sudo password on several hosts: its problem once naming them all, each host one line as it ends', async () => {
    const PASSWORD = 'Pw-fleetOut-4c1e';
    const refused = names.slice(-5);
    for (const h of refused) await tb.setOpsAccess(h, { sudo: 'password', password: PASSWORD });
    const inv = writeInventory({
      hosts: refused,
      vars: { ansible_user: 'ops', ansible_become_password: { secret: 'not-the-password' } },
    });
    const r = await provision([PB, '-i', inv, '-b']);
    expect(r.code, r.stderr).toBe(1);
    const problems = r.stderr.split('Problems:\n')[1]?.split('\n\n')[0].split('\n') ?? [];
    // the hosts' error and what it left undone, each once for all the hosts
    expect(problems, r.stderr).toHaveLength(2);
    for (const p of problems) expect(p.startsWith(`  ${hostList(refused)}: `), p).toBe(true);
    expect(problems[0]).toMatch(/not run: become \(sudo to root\) failed: .*the password was refused/);
    expect(r.stderr.match(/^✖ /gmu)).toHaveLength(refused.length);
    expect(lines(view(r.stderr))).toBeLessThanOrEqual(25);
    expect(r.stderr).not.toContain(PASSWORD);
  });

  it('--recap full: a row per host', async () => {
    const r = await provision([PB, '-i', inventory, '--recap', 'full']);
    expect(r.code, r.stderr).toBe(0);
    for (const h of names) expect(r.stderr).toMatch(new RegExp(`^${h}\\s+\\d+\\s+\\d+\\s+0\\s+0\\s+no\\s`, 'm'));
  });
});
