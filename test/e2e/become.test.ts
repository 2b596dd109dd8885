// Reaching hosts the way operators do (issue #22): as the account `ops` with sudo (root login
// disabled), with and without a sudo password, through a bastion (ProxyJump in the ssh args, or
// ~/.ssh/config aliases). Hosts get their access profile from tb.setOpsAccess after a reset.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import * as tb from '../testbed/api.ts';
import { provision, recaps, repoRoot, writeInventory, type CliRun } from './helpers.ts';
import { needHddScheduler } from './hdd-scheduler.ts';

const PASSWORD = 'Pw-becomE-7f3a91';
const ROOTFS = process.env.TB_ROOTFS ?? join(repoRoot, '.cache/testbed-rootfs');
const BASTION = 'tb1';

/** The jail export the site playbook binds (a hard-linked copy of the bed's rootfs, populated marker). */
function jailExport(): void {
  const exp = join(tb.sharedDir, 'jail');
  const marker = join(exp, 'etc/soperator-jail-populated');
  if (existsSync(marker)) return;
  rmSync(exp, { recursive: true, force: true });
  execFileSync('cp', ['-al', ROOTFS, exp]);
  execFileSync('cp', ['--remove-destination', join(ROOTFS, 'etc/ld.so.cache'), join(exp, 'etc/ld.so.cache')]);
  writeFileSync(marker, 'populated by the become e2e test\n');
}

/** site.ts's variables on the bed (as bench/lib/workload.ts), hosts reached as ops. */
function siteInventory(
  hosts: string[],
  vars: Record<string, unknown> = {},
  hostVars: Record<string, Record<string, unknown>> = {},
  format?: 'yaml',
): string {
  jailExport();
  return writeInventory({
    format,
    hosts,
    vars: {
      ansible_user: 'ops',
      sysctl_overrides: { 'net.core.netdev_max_backlog': null, 'net.ipv4.tcp_mem': null },
      kernel_modules: ['br_netfilter', 'overlay'],
      jail_source: `${tb.sharedMount}/jail`,
      jail_fstype: 'none',
      jail_options: ['bind'],
      jail_gpu: false, // no driver on the bed: a GPU node would be refused
      ...vars,
    },
    hostVars: Object.fromEntries(
      hosts.map((h) => [
        h,
        {
          storage_disks: tb
            .host(h)
            .disks.map((d, i) => ({ device: d.dev, name: `d${i + 1}`, match: { KERNEL: d.dev.replace('/dev/', '') } })),
          format_allow: tb.host(h).disks.map((d) => d.dev),
          ...hostVars[h],
        },
      ]),
    ),
    groups: { storage: { hosts }, jail: { hosts } },
  });
}

/** Hosts fresh, each with its access profile (root login off everywhere). */
async function fresh(profiles: Record<string, tb.OpsAccess>): Promise<void> {
  await tb.reset(Object.keys(profiles));
  for (const [h, a] of Object.entries(profiles)) await tb.setOpsAccess(h, { rootLogin: false, ...a });
}

const journal = () => join(mkdtempSync(join(tmpdir(), 'rs-become-')), 'journal.ndjson');

/** A file the site playbook writes as root (only an escalated shell can). */
const sysctlOwner = async (h: string) => (await tb.hostExec(h, 'stat -c %U:%G /etc/sysctl.d/*racksmith*.conf | sort -u')).stdout.trim();

/**
 * Record every process command line on `hosts` that holds `needle` while `during` runs (the
 * watcher runs inside each host, polling /proc; it stops when `during` ends).
 */
async function cmdlinesHolding<T>(hosts: string[], needle: string, during: () => Promise<T>): Promise<{ result: T; seen: string }> {
  const stop = `/run/rs-watch-stop`;
  const out = `/run/rs-watch.out`;
  // the needle from a file: on grep's command line the watcher would find itself
  for (const h of hosts) await tb.hostExec(h, 'cat > /run/rs-watch.needle', { input: `${needle}\n` });
  const watchers = hosts.map((h) =>
    tb.hostExec(
      h,
      `rm -f ${stop}; : > ${out}; echo started > /run/rs-watch.ready
       while [ ! -e ${stop} ]; do cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -F -f /run/rs-watch.needle >> ${out}; done; cat ${out}`,
      { timeoutMs: 600_000 },
    ),
  );
  for (const h of hosts) while ((await tb.hostExec(h, 'cat /run/rs-watch.ready 2>/dev/null')).stdout.trim() !== 'started');
  const result = await during();
  await Promise.all(hosts.map((h) => tb.hostExec(h, `touch ${stop}; rm -f /run/rs-watch.ready`)));
  const seen = (await Promise.all(watchers)).map((r) => r.stdout).join('');
  return { result, seen };
}

/** Run the CLI with its stdin on a pseudo-terminal (util-linux `script`), typing `typed` at the prompt. */
function provisionOnPty(args: string[], typed: string): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const cmd = [process.execPath, join(repoRoot, 'bin/provision.js'), ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], { cwd: repoRoot, env: process.env });
    let stdout = '';
    let typedYet = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      if (!typedYet && stdout.includes('BECOME password:')) {
        typedYet = true;
        child.stdin.write(`${typed}\r`);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr: stdout, events: [] }));
  });
}

describe('become: hosts reached as ops with sudo', () => {
  it('site.ts as ops with -b (root login off, NOPASSWD sudo): --check changes nothing, converges, re-run 0 changes, one exec per host', async (ctx) => {
    needHddScheduler(ctx);
    const hosts = ['tb2', 'tb3'];
    await fresh({ tb2: { sudo: 'nopasswd' }, tb3: { sudo: 'nopasswd' } });
    expect((await tb.sshExec('tb2', 'true')).code).not.toBe(0); // root cannot log in
    const inv = siteInventory(hosts);

    const check = await provision(['playbooks/site.ts', '-i', inv, '-b', '--check', '--json', '--journal', journal()]);
    expect(check.code, check.stderr).toBe(2);
    expect((await tb.hostExec('tb2', 'ls /etc/sysctl.d')).stdout).not.toContain('racksmith');

    const first = await provision(['playbooks/site.ts', '-i', inv, '-b', '--json', '--journal', journal()], { timeoutMs: 300_000 });
    expect(first.code, first.stderr).toBe(0);
    for (const h of hosts) expect(recaps(first)[h]).toMatchObject({ failed: 0, unreachable: false });
    for (const h of hosts) expect(await sysctlOwner(h)).toBe('root:root');
    // the apply lock is root's (/run/racksmith), not the login user's own in $TMPDIR
    const lock = await tb.hostExec('tb2', 'cat /run/racksmith/apply.holder; ls -d /tmp/racksmith-* 2>/dev/null');
    expect(lock.stdout).toMatch(/^\S+ \d+ \d+\n$/);

    const again = await provision(['playbooks/site.ts', '-i', inv, '-b', '--json', '--journal', journal()]);
    expect(again.code, again.stderr).toBe(0);
    for (const h of hosts) expect(recaps(again)[h]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    const recheck = await provision(['playbooks/site.ts', '-i', inv, '-b', '--check', '--json', '--journal', journal()]);
    expect(recheck.code, recheck.stderr).toBe(0);
  }, 400_000);

  it('without -b the same hosts are not escalated: root-only changes fail (the login user is ops)', async () => {
    await fresh({ tb3: { sudo: 'nopasswd' } });
    const run = await provision(['playbooks/network.ts', '-i', siteInventory(['tb3']), '--json', '--journal', journal()]);
    expect(run.code).toBe(1);
    expect(recaps(run).tb3.failed).toBeGreaterThan(0);
  }, 400_000);

  it('--plan-out then apply -b, and --resume, run through become', async () => {
    await fresh({ tb2: { sudo: 'nopasswd' }, tb5: { sudo: 'requiretty' } });
    const inv = siteInventory(['tb2', 'tb5']);
    const dir = mkdtempSync(join(tmpdir(), 'rs-become-plan-'));
    const plan = join(dir, 'plan.json');
    const check = await provision([
      'playbooks/network.ts',
      '-i',
      inv,
      '-b',
      '-l',
      'tb2',
      '--check',
      '--plan-out',
      plan,
      '--journal',
      journal(),
    ]);
    expect(check.code, check.stderr).toBe(2);
    const applied = await provision(['apply', plan, '-b', '--json', '--journal', journal()]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(recaps(applied).tb2).toMatchObject({ failed: 0 });
    expect(recaps(applied).tb2.changed).toBeGreaterThan(0);

    // tb5 needs a tty for sudo: it fails; once it does not, --resume runs it alone
    const j = journal();
    const run = await provision(['playbooks/network.ts', '-i', inv, '-b', '--json', '--journal', j]);
    expect(run.code).toBe(1);
    expect(recaps(run).tb5.error).toMatch(/must have a tty/);
    await tb.setOpsAccess('tb5', { sudo: 'nopasswd', rootLogin: false });
    const resumed = await provision(['playbooks/network.ts', '-i', inv, '-b', '--json', '--resume', j, '--journal', journal()]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(Object.keys(recaps(resumed))).toEqual(['tb5']);
  }, 400_000);

  it('-K through a pty and ansible_become_password as !secret: converge; the password is in no output, journal, plan or host cmdline', async () => {
    await fresh({ tb4: { sudo: 'password', password: PASSWORD }, tb8: { sudo: 'password', password: PASSWORD } });
    // tb4: -K typed at the prompt; tb8: its password from the inventory as a secret
    const invK = siteInventory(['tb4']);
    const j1 = journal();
    const { result: typed, seen: seen1 } = await cmdlinesHolding(['tb4'], PASSWORD, () =>
      provisionOnPty(['playbooks/network.ts', '-i', invK, '-b', '-K', '--journal', j1], PASSWORD),
    );
    expect(typed.code, typed.stdout).toBe(0);
    expect(typed.stdout).not.toContain(PASSWORD);
    expect(readFileSync(j1, 'utf8')).not.toContain(PASSWORD);
    expect(seen1).toBe('');

    const invS = join(mkdtempSync(join(tmpdir(), 'rs-become-s-')), 'inventory.yaml');
    const text = readFileSync(siteInventory(['tb8'], {}, {}, 'yaml'), 'utf8').replace(
      'ansible_user: ops',
      `ansible_user: ops\n    ansible_become_password: !secret ${PASSWORD}`,
    );
    writeFileSync(invS, text);
    const j2 = journal();
    const plan = join(mkdtempSync(join(tmpdir(), 'rs-become-p-')), 'plan.json');
    const { result: runs, seen: seen2 } = await cmdlinesHolding(['tb8'], PASSWORD, async () => {
      const check = await provision(['playbooks/network.ts', '-i', invS, '-b', '--check', '--plan-out', plan, '--json', '--journal', j2]);
      const apply = await provision(['apply', plan, '-b', '--json', '--journal', j2]);
      return { check, apply };
    });
    expect(runs.check.code, runs.check.stderr).toBe(2);
    expect(runs.apply.code, runs.apply.stderr).toBe(0);
    for (const text of [
      runs.check.stdout,
      runs.check.stderr,
      runs.apply.stdout,
      runs.apply.stderr,
      readFileSync(j2, 'utf8'),
      readFileSync(plan, 'utf8'),
    ])
      expect(text).not.toContain(PASSWORD);
    expect(seen2).toBe('');
  }, 400_000);

  it('requiretty, a wrong password and a user without sudo: each host fails alone with its cause; the others converge; exit 1', async () => {
    await fresh({
      tb2: { sudo: 'nopasswd' },
      tb4: { sudo: 'password', password: PASSWORD },
      tb5: { sudo: 'requiretty' },
      tb6: { sudo: 'none', password: PASSWORD },
    });
    const inv = siteInventory(
      ['tb2', 'tb4', 'tb5', 'tb6'],
      {},
      {
        tb4: { ansible_become_password: 'not-the-password' },
        tb6: { ansible_become_password: PASSWORD },
      },
    );
    const run = await provision(['playbooks/network.ts', '-i', inv, '-b', '--json', '--journal', journal()]);
    expect(run.code, run.stderr).toBe(1);
    const r = recaps(run);
    expect(r.tb2).toMatchObject({ failed: 0, unreachable: false });
    expect(r.tb4.error).toMatch(/become \(sudo to root\) failed: Sorry, try again\.; sudo: the password was refused \(not tried again\)/);
    expect(r.tb5.error).toMatch(/become \(sudo to root\) failed: .*must have a tty/);
    expect(r.tb6.error).toMatch(/become \(sudo to root\) failed: .*ops may not run sudo/);
    for (const h of ['tb4', 'tb5', 'tb6']) expect(r[h]).toMatchObject({ unreachable: false, changed: 0, execs: 1 });
    expect(run.stderr).not.toContain(PASSWORD);
  }, 400_000);
});

describe('a refused become is tried once per host per run', () => {
  it('a wrong password on a 3-play run: one failed sudo authentication on that host, its message shown once; exit 1', async () => {
    await fresh({ tb2: { sudo: 'nopasswd' }, tb4: { sudo: 'password', password: PASSWORD, countSudoAuth: true } });
    const inv = writeInventory({
      hosts: ['tb2', 'tb4'],
      vars: { ansible_user: 'ops' },
      hostVars: { tb4: { ansible_become_password: 'not-the-password' } },
    });
    const run = await provision(['test/fixtures/playbooks/three-plays.ts', '-i', inv, '-b', '--json', '--journal', journal()]);
    expect(run.code, run.stderr).toBe(1);
    const failedAuths = (await tb.hostExec('tb4', `cat ${tb.SUDO_AUTH_LOG}`)).stdout.split('\n').filter(Boolean);
    expect(failedAuths, 'failed sudo authentications on tb4 for the whole run').toEqual(['sudo ops']);
    const r = recaps(run);
    expect(r.tb4).toMatchObject({ unreachable: false, changed: 0, execs: 1, error: expect.stringMatching(/the password was refused/) });
    // its resources of the first play only point at the host's error; the later plays never started there
    const tb4 = run.events.filter((e) => e.type === 'resource' && e.host === 'tb4');
    expect(new Set(tb4.map((e) => e.play))).toEqual(new Set(['one']));
    for (const e of tb4) expect(e).toMatchObject({ status: 'failed', error: 'not run: become failed on this host' });
    expect(run.stderr.match(/the password was refused/g), run.stderr).toHaveLength(1);
    // the other host converged every play
    expect(r.tb2).toMatchObject({ failed: 0, unreachable: false });
    expect((await tb.hostExec('tb2', 'ls /srv/rs-three')).stdout).toBe('one\nthree\ntwo\n');
  }, 400_000);
});

describe('password authentication', () => {
  it('ansible_password (a !secret), no key: logs in with the password and becomes with the same', async () => {
    await fresh({ tb9: { sudo: 'password', password: PASSWORD, passwordLogin: true } });
    const base = readFileSync(siteInventory(['tb9'], {}, {}, 'yaml'), 'utf8');
    const inv = join(mkdtempSync(join(tmpdir(), 'rs-become-pw-')), 'inventory.yaml');
    writeFileSync(
      inv,
      base
        .replace(/ {4}ansible_ssh_private_key_file: .*\n/, '')
        .replace(
          'ansible_user: ops',
          `ansible_user: ops\n    ansible_password: !secret ${PASSWORD}\n    ansible_become_password: !secret ${PASSWORD}`,
        ),
    );
    expect(readFileSync(inv, 'utf8')).not.toContain('id_ed25519');
    const run = await provision(['playbooks/network.ts', '-i', inv, '-b', '--json', '--journal', journal()], {
      env: { SSH_AUTH_SOCK: '' },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(recaps(run).tb9).toMatchObject({ failed: 0, unreachable: false });
    expect(run.stdout + run.stderr).not.toContain(PASSWORD);
  }, 400_000);
});

describe('reaching hosts through a bastion', () => {
  it("hosts reachable only through ansible_ssh_common_args '-o ProxyJump=ops@BASTION' converge", async () => {
    await fresh({ [BASTION]: { sudo: 'nopasswd' }, tb7: { sudo: 'nopasswd', onlyViaBastion: true } });
    expect((await provision(['playbooks/network.ts', '-i', siteInventory(['tb7']), '-b', '--journal', journal()])).code).toBe(1);
    const args = `-o ProxyJump=ops@${tb.host(BASTION).ip} -o UserKnownHostsFile=${tb.knownHostsPath} -o StrictHostKeyChecking=yes`;
    const inv = siteInventory(['tb7'], { ansible_ssh_common_args: args });
    const run = await provision(['playbooks/network.ts', '-i', inv, '-b', '--json', '--journal', journal()]);
    expect(run.code, run.stderr).toBe(0);
    expect(recaps(run).tb7).toMatchObject({ failed: 0, unreachable: false });
    const again = await provision(['playbooks/network.ts', '-i', inv, '-b', '--json', '--journal', journal()]);
    expect(recaps(again).tb7).toMatchObject({ changed: 0, execs: 1 });
  }, 400_000);

  it('hosts named by ~/.ssh/config aliases (-F): HostName, User, IdentityFile, ProxyJump to an aliased bastion', async () => {
    await fresh({ [BASTION]: { sudo: 'nopasswd' }, tb7: { sudo: 'nopasswd', onlyViaBastion: true } });
    const dir = mkdtempSync(join(tmpdir(), 'rs-become-cfg-'));
    const cfg = join(dir, 'ssh_config');
    writeFileSync(
      cfg,
      [
        'Host bastion',
        `  HostName ${tb.host(BASTION).ip}`,
        'Host rack-seven',
        `  HostName ${tb.host('tb7').ip}`,
        '  ProxyJump bastion',
        'Host *',
        '  User ops',
        `  IdentityFile ${tb.keyPath}`,
        `  UserKnownHostsFile ${tb.knownHostsPath}`,
        '  User root', // first match wins: ops
        '',
      ].join('\n'),
    );
    // the host by its alias only: no ansible_host, ansible_user, key or known_hosts in the inventory
    const inv = join(dir, 'inventory.yaml');
    writeFileSync(
      inv,
      stringify({
        all: {
          vars: { sysctl_overrides: { 'net.core.netdev_max_backlog': null, 'net.ipv4.tcp_mem': null } },
          hosts: { 'rack-seven': null },
        },
      }),
    );
    const run = await provision(['playbooks/network.ts', '-i', inv, '-F', cfg, '-b', '--json', '--journal', journal()]);
    expect(run.code, run.stderr).toBe(0);
    expect(recaps(run)['rack-seven']).toMatchObject({ failed: 0, unreachable: false });
  }, 400_000);

  it('--ssh-handshakes 1 through a bastion: each host and its jump connection take turns of their own', async () => {
    // A host holding the one turn while its jump connection waited for a turn would never connect.
    const behind = ['tb7', 'tb9'];
    await fresh({
      [BASTION]: { sudo: 'nopasswd' },
      ...Object.fromEntries(behind.map((h): [string, tb.OpsAccess] => [h, { sudo: 'nopasswd', onlyViaBastion: true }])),
    });
    const args = `-o ProxyJump=ops@${tb.host(BASTION).ip} -o UserKnownHostsFile=${tb.knownHostsPath} -o StrictHostKeyChecking=yes`;
    const inv = siteInventory(behind, { ansible_ssh_common_args: args });
    const run = await provision([
      'exec',
      'all',
      '-i',
      inv,
      '-f',
      '2',
      '--ssh-handshakes',
      '1',
      '--json',
      '--journal',
      journal(),
      '--',
      'hostname',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const perHost = run.events.filter((e) => e.type === 'exec');
    expect(perHost.map((e) => [e.host, e.stdout]).sort()).toEqual(behind.map((h) => [h, `${h}\n`]));
  }, 400_000);

  it('an unsupported -o option in ansible_ssh_common_args: exit 3 at its line, nothing run', async () => {
    const inv = siteInventory(['tb7'], { ansible_ssh_common_args: '-o ControlMaster=auto' }, {}, 'yaml');
    const run = await provision(['playbooks/network.ts', '-i', inv, '-b', '--journal', journal()]);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/inventory\.(yaml|ini):\d+.*ansible_ssh_common_args: -o ControlMaster is not supported/);
  }, 400_000);
});
