// Error messages about bad input never quote what they refuse where it may be a secret: an INI
// line or word without '=', a refused ProxyCommand (sshpass -p ...), a "plan" that is a password
// file. The position (file:line:col) says where.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.ts';
import { readPlanUnverified } from '../../src/plan/plan.ts';
import { inputErrorOf } from './thrown.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-msg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const PW = 'Hunter2-Secret-9f';

const refusal = inputErrorOf;

describe('refusals that do not quote a secret', () => {
  it.each([
    [
      'a [group:vars] line without =',
      `[web]\nweb1\n[web:vars]\nansible_become_password ${PW}\n`,
      /hosts\.ini:4:1: expected key=value, got a line without '='/,
    ],
    [
      'a host word without = (a blank after =)',
      `web1 ansible_become_password= ${PW}\n`,
      /hosts\.ini:1:\d+: expected key=value host variable/,
    ],
    [
      'a ProxyCommand that is not ssh -W',
      `web1 ansible_ssh_common_args='-o ProxyCommand="sshpass -p ${PW} ssh -W %h:%p bastion"'\n`,
      /ProxyCommand=sshpass \.\.\.: only/,
    ],
  ])('%s', (_, text, msg) => {
    const inv = join(dir, 'hosts.ini');
    writeFileSync(inv, text);
    const e = refusal(() => loadInventory(inv));
    expect(e.message).toMatch(msg);
    expect(e.message).not.toContain(PW);
  });

  it('a password file given as a plan', () => {
    const f = join(dir, 'vault-pass');
    writeFileSync(f, `${PW}\n`);
    const e = refusal(() => readPlanUnverified(f));
    expect(e.message).toMatch(/cannot read plan: it is not JSON/);
    expect(e.message).not.toContain(PW);
  });
});
