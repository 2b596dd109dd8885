// ansible.cfg as the operator keeps it (issue #36): the inventory, the login user, the key and
// become come from the file alone; the host lets only `ops` in (root login off) and the file the
// playbook writes is root's, so the run proves both the user and the escalation.
import { chmodSync, copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import * as tb from '../testbed/api.ts';
import { provision, recaps, repoRoot } from './helpers.ts';

const HOST = 'tb7';
const TARGET = '/etc/rs-from-ansible-cfg';

/** An operator's directory: ansible.cfg, an inventory naming only addresses, a playbook. */
function project(): { dir: string; playbook: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rs-ansible-cfg-'));
  const h = tb.host(HOST);
  writeFileSync(
    join(dir, 'hosts.yml'),
    stringify({
      all: { hosts: { [HOST]: { ansible_host: h.ip, ansible_port: h.port } }, vars: { racksmith_known_hosts: tb.knownHostsPath } },
    }),
  );
  writeFileSync(
    join(dir, 'ansible.cfg'),
    [
      '[defaults]',
      'inventory = hosts.yml',
      'remote_user = ops',
      `private_key_file = ${tb.keyPath}`,
      'forks = 4',
      'stdout_callback = yaml',
      '',
      '[privilege_escalation]',
      'become = True',
      '',
      '[ssh_connection]',
      'ssh_args = -C -o ControlMaster=auto -o ControlPersist=60s',
      'pipelining = True',
      '',
    ].join('\n'),
  );
  // .mts: a .ts playbook outside a "type": "module" project is issue #36's first point
  const playbook = join(dir, 'site.mts');
  writeFileSync(
    playbook,
    `import { file, playbook } from ${JSON.stringify(join(repoRoot, 'src/index.ts'))};
export default playbook({ name: 'from ansible.cfg', hosts: 'all', resources: () => [file({ path: '${TARGET}', content: 'set up by ops with sudo\\n', mode: '0600' })] });
`,
  );
  return { dir, playbook };
}

describe('ansible.cfg', () => {
  let p: { dir: string; playbook: string };
  beforeAll(async () => {
    await tb.reset([HOST]);
    await tb.setOpsAccess(HOST, { sudo: 'nopasswd', rootLogin: false });
    p = project();
  });
  const run = (...args: string[]) => provision([p.playbook, '--json', ...args], { env: { ANSIBLE_CONFIG: p.dir } });

  it('supplies the inventory, user, key and become: applies, re-runs with no change, a dry run changes nothing', async () => {
    const check = await run('--check');
    expect(check.stderr).not.toMatch(/^error/m);
    expect(check.code).toBe(2);
    expect((await tb.hostExec(HOST, `test -e ${TARGET}; echo $?`)).stdout.trim()).toBe('1');

    const first = await run('-v');
    expect(first.code, first.stderr).toBe(0);
    expect(recaps(first)[HOST].changed).toBe(1);
    expect(first.stderr).toContain(`using ${join(p.dir, 'ansible.cfg')}`);
    // root's file, made through ops' sudo: root itself cannot log in
    expect((await tb.hostExec(HOST, `stat -c %U:%a ${TARGET}`)).stdout.trim()).toBe('root:600');

    const again = await run();
    expect(again.code).toBe(0);
    expect(recaps(again)[HOST].changed).toBe(0);
  });

  it('lists the keys it does not honour once, with their lines (human view and --json)', async () => {
    const r = await run('--check');
    const warning = `${join(p.dir, 'ansible.cfg')}: not honoured by racksmith: [defaults] stdout_callback (line 6)`;
    expect(r.stderr.split('\n').filter((l) => l.includes('not honoured by racksmith'))).toEqual([`warning: ${warning}`]);
    expect(r.events.filter((e) => e.type === 'warning').map((e) => e.message)).toContain(warning);
  });

  it("an ansible.cfg in a world-writable working directory is not read, and that is said: with no other config, in a listing, a run, and the missing -i's error", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'rs-ww-'));
    chmodSync(cwd, 0o777);
    copyFileSync(join(p.dir, 'ansible.cfg'), join(cwd, 'ansible.cfg'));
    copyFileSync(join(p.dir, 'hosts.yml'), join(cwd, 'hosts.yml'));
    // no ~/.ansible.cfg (an empty home; ANSIBLE_CONFIG unset, as the suite runs): the skipped file was the only one
    const env = { HOME: mkdtempSync(join(tmpdir(), 'rs-ww-home-')) };
    const said = `${cwd} is world writable: its ansible.cfg is ignored (as Ansible does)`;
    const noInventory = await provision([p.playbook, '--list-hosts'], { cwd, env });
    expect(noInventory.code).toBe(3);
    expect(noInventory.stderr).toContain(said);
    const listing = await provision([p.playbook, '-i', 'hosts.yml', '--list-hosts'], { cwd, env });
    expect(listing.code, listing.stderr).toBe(0);
    expect(listing.stderr).toContain(`warning: ${said}`);
    const check = await provision([p.playbook, '-i', 'hosts.yml', '-u', 'ops', '--private-key', tb.keyPath, '-b', '--check', '--json'], {
      cwd,
      env,
    });
    // 2 on a fresh host, 0 once the first test applied: either way a run that reached the host
    expect([0, 2], check.stderr).toContain(check.code);
    expect(check.stderr).toContain(`warning: ${said}`);
    expect(check.events.filter((e) => e.type === 'warning').map((e) => e.message)).toContain(said);
  });

  it('the command line wins: -u root is refused by the host (root login is off)', async () => {
    const r = await run('--check', '-u', 'root');
    // -u is only a default: the inventory names no user, so -u root replaces ansible.cfg's ops
    expect(r.code).toBe(1);
    expect(recaps(r)[HOST].unreachable).toBe(true);
  });
});
