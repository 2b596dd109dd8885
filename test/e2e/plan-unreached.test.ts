// Plans whose check run did not reach some hosts: each such host is recorded with why (its sshd
// stopped: connection refused; its host key unknown), `plan show` lists them with that reason in
// text, --json and --html and exits 1, and `apply` refuses the whole plan before any host is
// contacted, even once they are reachable again: what they would change was never reviewed, and
// the reviewed hosts are not changed either (a version 5 plan only counted them, and apply ran the
// others).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, writeInventory } from './helpers.ts';

const HOSTS = ['tb5', 'tb6', 'tb7'];
const PB = 'test/fixtures/playbooks/secrets.ts'; // with fx_stage=none: one directory, /srv/rs-secrets
const tmp = () => mkdtempSync(join(tmpdir(), 'rs-plan-unreached-'));
const REFUSED = /tb6 \(unreachable: tb6: cannot connect to [0-9.:]+: connect ECONNREFUSED/;
// the two hosts named in the plan's selection order: Ansible's order of the inventory, which puts
// the grouped tb6 after the ungrouped tb7 in an INI file (RS_E2E_INVENTORY=ini)
const BOTH = '\\((tb6, tb7|tb7, tb6)\\)';
const UNKNOWN_KEY = /tb7 \(unreachable: tb7: host key for [0-9.:]+ is unknown \(ssh-ed25519 SHA256:/;

let plan: string;

beforeAll(async () => {
  await tb.reset(HOSTS);
  const kh = join(tmp(), 'known_hosts');
  writeFileSync(kh, ''); // tb7's host key is in no known_hosts: refused
  const inv = writeInventory({ hosts: HOSTS, hostVars: { tb7: { racksmith_known_hosts: kh } }, groups: { rackB: { hosts: ['tb6'] } } });
  plan = join(tmp(), 'p.plan');
  await tb.stopSshd('tb6');
  try {
    const check = await provision([
      PB,
      '-i',
      inv,
      '-e',
      'fx_stage=none',
      '--check',
      '--plan-out',
      plan,
      '--timeout',
      '3',
      '--journal',
      join(tmp(), 'j'),
    ]);
    expect(check.code, check.stderr).toBe(1);
    // said when it is written: not a plan to review and apply
    expect(check.stderr).toContain(`plan written to ${plan}, but its check run did not reach 2 host(s) (`);
    expect(check.stderr).toMatch(
      new RegExp(
        `did not reach 2 host\\(s\\) ${BOTH}: \`provision apply\` refuses it \\(\`provision plan show .*p\\.plan\` says why\\); make a new one`,
      ),
    );
  } finally {
    await tb.startSshd('tb6');
  }
}, 180_000);

describe('a plan whose check run did not reach some hosts', () => {
  it('plan show: each host not reached, with why, counted and warned about; exit 1', async () => {
    const r = await provision(['plan', 'show', plan]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/selection: 3 host\(s\), 2 not reached\n/);
    expect(r.stdout).toMatch(/hosts: 3 \(2 unreachable, 1 changed\)/);
    expect(r.stdout).toMatch(REFUSED);
    expect(r.stdout).toMatch(UNKNOWN_KEY);
    expect(r.stderr).toMatch(new RegExp(`WARNING: the check run did not reach 2 host\\(s\\) ${BOTH}: their changes were never reviewed`));
  });

  it('plan show --json: the hosts not reached with status unreachable, their error and groups', async () => {
    const r = await provision(['plan', 'show', plan, '--json']);
    expect(r.code, r.stderr).toBe(1);
    const j = JSON.parse(r.stdout);
    const byName = Object.fromEntries(j.hosts.map((h: { name: string }) => [h.name, h]));
    expect(byName.tb5).toMatchObject({ status: 'changed' });
    expect(byName.tb6).toMatchObject({ status: 'unreachable', groups: ['rackB'], error: expect.stringMatching(/connect ECONNREFUSED/) });
    expect(byName.tb7).toMatchObject({ status: 'unreachable', error: expect.stringMatching(/host key for .* is unknown/) });
    expect(j.warnings.join('\n')).toMatch(new RegExp(`did not reach 2 host\\(s\\) ${BOTH}`));
  });

  it('plan show --html: a row per host not reached, status unreachable, with why', async () => {
    const page = join(tmp(), 'plan.html');
    const r = await provision(['plan', 'show', plan, '--html', page]);
    expect(r.code, r.stderr).toBe(1);
    const html = readFileSync(page, 'utf8');
    expect(html).toMatch(
      /<tr data-host="tb6" data-groups="rackB" data-status="unreachable"[^\n]*<div class="note">tb6: cannot connect to [0-9.:]+: connect ECONNREFUSED/,
    );
    expect(html).toMatch(/<tr data-host="tb7" [^>]*data-status="unreachable"[^\n]*<div class="note">tb7: host key for [0-9.:]+ is unknown/);
  });

  it('apply refuses the whole plan (exit 3) before any host is contacted, though tb6 is reachable again', async () => {
    const r = await provision(['apply', plan, '--journal', join(tmp(), 'j2')]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`plan's check run did not reach 2 host\\(s\\) ${BOTH}: their changes were never reviewed`));
    // the reviewed host was not changed either
    for (const h of ['tb5', 'tb6']) expect((await tb.hostExec(h, 'test -e /srv/rs-secrets; echo $?')).stdout.trim(), h).toBe('1');
  });
});
