// Every variable that holds a password is a secret, also where another one of the same setting
// wins (ansible_ssh_pass over ansible_password, ansible_become_password over ansible_become_pass)
// and where racksmith does not read it (sudo's ansible_sudo_pass, su's ansible_su_pass).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-pw-vars-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('password variables', () => {
  it('none prints in inventory --list or --host, winners and losers alike', async () => {
    const pw = ['WinSsh-4c1', 'LoseSsh-9e2', 'WinBecome-77a', 'LoseBecome-31f', 'Sudo-5d0', 'Su-8b8'];
    const inv = join(dir, 'hosts.ini');
    writeFileSync(
      inv,
      `web1 ansible_host=192.0.2.1 ansible_ssh_pass=${pw[0]} ansible_password=${pw[1]} ansible_become_password=${pw[2]} ansible_become_pass=${pw[3]} ansible_sudo_pass=${pw[4]} ansible_su_pass=${pw[5]}\n`,
    );
    for (const args of [['--list'], ['--host', 'web1']]) {
      const r = await cli(['inventory', '-i', inv, ...args]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('ansible_password');
      for (const p of pw) expect(r.stdout + r.stderr).not.toContain(p);
    }
  });

  it('none given with -e prints either', async () => {
    const inv = join(dir, 'plain.ini');
    writeFileSync(inv, 'web1 ansible_host=192.0.2.1\n');
    const r = await cli(['inventory', '-i', inv, '--list', '-e', 'ansible_password=Hist-1aa', '-e', 'ansible_ssh_pass=Hist-2bb']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('ansible_ssh_pass');
    expect(r.stdout + r.stderr).not.toContain('Hist-1aa');
    expect(r.stdout + r.stderr).not.toContain('Hist-2bb');
  });
});
