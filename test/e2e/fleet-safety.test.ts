// Issue "Change windows and fleet safety" acceptance on the test bed: saved plans and drift,
// unreachable and killed hosts, --resume, rolling batches with a failure budget, secrets, host keys.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { execFileSync, spawn } from 'node:child_process';
import { changedResources, provision, recaps, repoRoot, writeInventory } from './helpers.ts';

const ALL = Array.from({ length: 10 }, (_, i) => `tb${i + 1}`);
const PB = 'test/fixtures/playbooks/window.ts';
const tmp = () => mkdtempSync(join(tmpdir(), 'rs-window-'));
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const large = (gen: number) => `# generation ${gen}\n` + `line of generation ${gen}\n`.repeat(180_000);

beforeAll(async () => {
  await tb.reset(ALL);
});

describe('saved plans', () => {
  it('plan → one host changed by hand → apply: that host is refused with a drift report, the others get exactly the plan', async () => {
    const hosts = ['tb1', 'tb2', 'tb3'];
    const inv = writeInventory({ hosts });
    const plan = join(tmp(), 'window.plan');
    const check = await provision([PB, '-i', inv, '--check', '--plan-out', plan, '--json']);
    expect(check.code, check.stderr).toBe(2);
    const saved = JSON.parse(readFileSync(plan, 'utf8'));
    expect(Object.keys(saved.hosts).sort()).toEqual(hosts);
    // between review and window, somebody creates the directory on tb2 with other content
    await tb.hostExec('tb2', 'mkdir -p /srv/rs-window && echo "generation = hand-made" > /srv/rs-window/small.conf');
    const apply = await provision(['apply', plan, '--json']);
    expect(apply.code, apply.stderr).toBe(1);
    const r = recaps(apply);
    expect(r.tb2.error).toMatch(/drift since the plan: .*file:\/srv\/rs-window\/small.conf/);
    const tb2Failed = apply.events.filter((e) => e.type === 'resource' && e.host === 'tb2' && e.status === 'failed');
    expect(tb2Failed[0].error).toMatch(
      /facts changed since the plan: .*small\.conf \(now: update \/srv\/rs-window\/small\.conf.*planned: create \/srv\/rs-window\/small\.conf/,
    );
    expect(changedResources(apply).filter((c) => c.host === 'tb2')).toEqual([]);
    expect((await tb.hostExec('tb2', 'cat /srv/rs-window/small.conf; ls /srv/rs-window')).stdout).toBe(
      'generation = hand-made\nsmall.conf\n',
    );
    // the others: exactly the planned changes, counted per host
    for (const h of ['tb1', 'tb3']) {
      const planned = Object.values(saved.hosts[h]['window fixture'] as Record<string, { changes: string[] }>).filter(
        (x) => x.changes.length,
      ).length;
      expect(changedResources(apply).filter((c) => c.host === h).length).toBe(planned);
      expect(r[h]).toMatchObject({ failed: 0, changed: planned });
    }
  });

  it('a plan for another inventory version, or too old, is refused before anything runs', async () => {
    const hosts = ['tb4'];
    const dir = tmp();
    const inv = writeInventory({ hosts });
    const plan = join(dir, 'p.plan');
    expect((await provision([PB, '-i', inv, '--check', '--plan-out', plan])).code).toBe(2);
    // the same inventory with one more variable, in the same file (either format)
    writeFileSync(inv, readFileSync(writeInventory({ hosts, vars: { fx_generation: '2' } }), 'utf8'));
    const r1 = await provision(['apply', plan]);
    expect(r1.code).toBe(3);
    expect(r1.stderr).toMatch(/another version of the inventory/);
    const r2 = await provision(['apply', plan, '--max-plan-age', '0s']);
    expect(r2.code).toBe(3);
    expect((await tb.hostExec('tb4', 'ls /srv/rs-window 2>&1')).stdout).toMatch(/No such file/);
  });
});

describe('failures across a fleet', () => {
  it('2 hosts down and 1 killed mid-apply: the others converge, files are old or new never partial, --resume finishes', async () => {
    await tb.reset(ALL);
    const journal = join(tmp(), 'run.ndjson');
    const inv = writeInventory({ hosts: ALL, hostVars: { tb5: { fx_sleep: 4 } } });
    // tb5 already has generation 1 of large.conf, so an interrupted write could only leave it old or new
    expect((await provision([PB, '-i', inv, '-l', 'tb5', '-e', 'fx_sleep=0'])).code).toBe(0);
    const inv2 = writeInventory({ hosts: ALL, vars: { fx_generation: '2' }, hostVars: { tb5: { fx_sleep: 4 } } });
    await tb.stopSshd('tb8');
    await tb.stopSshd('tb9');
    const running = provision([PB, '-i', inv2, '--json', '--journal', journal, '--timeout', '2']);
    // kill tb5's sshd (and its sessions) while its slow step runs
    await new Promise((r) => setTimeout(r, 2500));
    await tb.stopSshd('tb5');
    const run = await running;
    expect(run.code).toBe(1);
    const r = recaps(run);
    for (const h of ['tb8', 'tb9', 'tb5']) expect(r[h].unreachable, h).toBe(true);
    for (const h of ALL.filter((x) => !['tb5', 'tb8', 'tb9'].includes(x))) expect(r[h], h).toMatchObject({ failed: 0, unreachable: false });
    for (const h of ['tb5', 'tb8', 'tb9']) await tb.startSshd(h);
    const large5 = (await tb.hostExec('tb5', 'sha256sum < /srv/rs-window/large.conf | cut -c1-64')).stdout.trim();
    expect([sha(large(1)), sha(large(2))]).toContain(large5);
    const small5 = (await tb.hostExec('tb5', 'cat /srv/rs-window/small.conf')).stdout;
    expect(['generation = 1\n', 'generation = 2\n']).toContain(small5);

    const resumed = await provision([PB, '-i', inv2, '--json', '--resume', journal]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(Object.keys(recaps(resumed)).sort()).toEqual(['tb5', 'tb8', 'tb9']);
    for (const h of ['tb5', 'tb8', 'tb9']) {
      expect((await tb.hostExec(h, 'sha256sum < /srv/rs-window/large.conf | cut -c1-64')).stdout.trim()).toBe(sha(large(2)));
    }
  });

  it('--serial 2 --max-fail-percent 20: stops exactly when the budget is exceeded', async () => {
    const inv = writeInventory({ hosts: ALL, hostVars: { tb1: { fx_fail: true }, tb4: { fx_fail: true }, tb6: { fx_fail: true } } });
    const run = await provision([PB, '-i', inv, '--serial', '2', '--max-fail-percent', '20', '--json']);
    expect(run.code).toBe(1);
    const started = run.events.filter((e) => e.type === 'host_start').map((e) => e.host);
    // batches (tb1,tb2) 10 %, (tb3,tb4) 20 % = budget, (tb5,tb6) 30 % > 20 %: stop
    expect(started).toEqual(['tb1', 'tb2', 'tb3', 'tb4', 'tb5', 'tb6']);
    const r = recaps(run);
    for (const h of ['tb7', 'tb8', 'tb9', 'tb10'])
      expect(r[h].error).toMatch(/not run: play 'window fixture' stopped, 3 of 10 hosts failed \(max 20%\)/);
  });
});

describe('a stopped rollout ends the run', () => {
  const THREE = 'test/fixtures/playbooks/three-plays.ts';
  const hosts = ['tb1', 'tb2', 'tb3'];
  const files = async (h: string) => (await tb.hostExec(h, 'ls /srv/rs-three 2>/dev/null')).stdout.split('\n').filter(Boolean);

  it.each<[string, string[], NodeJS.ProcessEnv, string]>([
    [
      '--serial 1 --max-fail-percent 0',
      ['--serial', '1', '--max-fail-percent', '0'],
      {},
      "play 'one' stopped, 1 of 3 hosts failed (max 0%)",
    ],
    ['anyErrorsFatal in the play', ['--forks', '1'], { RS_FX_FATAL: '1' }, "play 'one' stopped, tb1 failed (anyErrorsFatal)"],
  ])('%s, the first host failing: no later play runs on any host, those left out are not run, exit 1', async (_, args, env, why) => {
    await tb.reset(hosts);
    const inv = writeInventory({ hosts, hostVars: { tb1: { fx_fail: true } } });
    const run = await provision([THREE, '-i', inv, '--json', ...args], { env });
    expect(run.code, run.stderr).toBe(1);
    expect(run.events.filter((e) => e.type === 'play_start').map((e) => e.play)).toEqual(['one']);
    expect(run.events.filter((e) => e.type === 'host_start').map((e) => e.host)).toEqual(['tb1']);
    expect(await files('tb1')).toEqual(['one']); // written before its failing step; plays two and three never ran
    for (const h of ['tb2', 'tb3']) expect(await files(h), h).toEqual([]);
    const r = recaps(run);
    expect(r.tb1).toMatchObject({ failed: 1, error: `not run from play 'two' on: ${why}` });
    for (const h of ['tb2', 'tb3']) expect(r[h].error, h).toBe(`not run: ${why}`);
  });
});

describe('check mode counts', () => {
  it('a change pending on another is counted apart: the check counts exactly the changes the apply makes', async () => {
    await tb.reset(['tb4']);
    // b already holds its content: once a is written, b has nothing to do
    await tb.hostExec('tb4', "mkdir -p /srv/rs-pending && chmod 755 /srv/rs-pending && printf 'b\\n' > /srv/rs-pending/b");
    const inv = writeInventory({ hosts: ['tb4'] });
    const PAIR = 'test/fixtures/playbooks/pending-pair.ts';
    const check = await provision([PAIR, '-i', inv, '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(recaps(check).tb4).toMatchObject({ ok: 1, changed: 1, pending: 1, failed: 0 });
    expect(check.stderr).toMatch(/RECAP \([\d.]+s, check mode: 1 to change, 1 pending on those\)/);
    expect(check.stderr).toMatch(
      /Pending on those changes[^\n]*\n\n● file:\/srv\/rs-pending\/b {2}\[tb4\]\n {4}depends on a pending change of file:\/srv\/rs-pending\/a/,
    );
    expect((await tb.hostExec('tb4', 'ls /srv/rs-pending')).stdout).toBe('b\n'); // nothing done
    const apply = await provision([PAIR, '-i', inv, '--json']);
    expect(apply.code, apply.stderr).toBe(0);
    expect(recaps(apply).tb4).toMatchObject({ changed: 1, pending: 0 });
    expect(recaps(apply).tb4.changed).toBe(recaps(check).tb4.changed);
  });
});

describe('interruptions and slow hosts', () => {
  it('Ctrl-C stops the step in flight (after a moment), starts no other host, writes the journal and exits 1', async () => {
    await tb.reset(['tb3', 'tb4']);
    const journal = join(tmp(), 'int.ndjson');
    const inv = writeInventory({ hosts: ['tb3', 'tb4'], vars: { fx_sleep: 30 } });
    const child = spawn(
      process.execPath,
      [join(repoRoot, 'bin/provision.js'), PB, '-i', inv, '--json', '--forks', '1', '--journal', journal],
      { cwd: repoRoot },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    // wait until tb3's apply is in flight (its slow step is running), then Ctrl-C
    for (let i = 0; i < 100 && !(await tb.hostExec('tb3', 'pgrep -xf "sleep 30" >/dev/null && echo y')).stdout.includes('y'); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGINT');
    const code = await new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/interrupted: stopping the steps in flight/);
    // the step in flight was stopped (its remote command killed: no marker); tb4 was never started
    expect((await tb.hostExec('tb3', 'ls /srv/rs-window')).stdout).not.toMatch(/slept-1/);
    expect((await tb.hostExec('tb4', 'ls /srv/rs-window 2>&1')).stdout).toMatch(/No such file/);
    const events = readFileSync(journal, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.at(-1).type).toBe('recap');
    expect(events.find((e) => e.type === 'host_recap' && e.host === 'tb4').error).toBe('not run: interrupted');
    expect(events.find((e) => e.type === 'host_recap' && e.host === 'tb3').error).toMatch(/^interrupted/);
    expect(
      stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).type)
        .at(-1),
    ).toBe('recap');
  });

  it('--host-timeout gives up on a host that takes too long; the others are not held up', async () => {
    await tb.reset(['tb3', 'tb4']);
    const inv = writeInventory({ hosts: ['tb3', 'tb4'], hostVars: { tb3: { fx_sleep: 20 } } });
    const t0 = Date.now();
    const run = await provision([PB, '-i', inv, '--json', '--host-timeout', '3']);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(run.code).toBe(1);
    expect(recaps(run).tb3).toMatchObject({ unreachable: true, error: 'timed out after 3s' });
    expect(recaps(run).tb4, run.stderr).toMatchObject({ failed: 0, unreachable: false });
  });
});

describe('secrets', () => {
  // The ways to mark a secret: a YAML tag in the inventory, a {"secret": ...} wrapper in a
  // JSON host_vars file (JSON has no tags), and a value encrypted with ansible-vault.
  it.each([
    [
      'a !secret value in the inventory',
      (inv: string, value: string): string[] => {
        writeFileSync(inv, readFileSync(inv, 'utf8').replace('ansible_user: root', `ansible_user: root\n    fx_secret: !secret ${value}`));
        return [];
      },
    ],
    [
      'a {"secret": ...} value in a JSON host_vars file',
      (inv: string, value: string): string[] => {
        mkdirSync(join(dirname(inv), 'host_vars'), { recursive: true });
        writeFileSync(join(dirname(inv), 'host_vars', 'tb7.json'), JSON.stringify({ fx_secret: { secret: value } }));
        return [];
      },
    ],
    [
      'an ansible-vault encrypt_string value in host_vars',
      (inv: string, value: string): string[] => {
        const pw = join(dirname(inv), 'vault-pw');
        writeFileSync(pw, 'vault-password-' + sha(value).slice(0, 8) + '\n');
        const enc = execFileSync('ansible-vault', ['encrypt_string', '--vault-password-file', pw, '--name', 'fx_secret', value], {
          encoding: 'utf8',
        });
        mkdirSync(join(dirname(inv), 'host_vars'), { recursive: true });
        writeFileSync(join(dirname(inv), 'host_vars', 'tb7.yml'), enc);
        return ['--vault-password-file', pw];
      },
    ],
  ])('%s reaches the host but never stdout, stderr, the plan or the journal', async (_, mark) => {
    await tb.reset(['tb7']);
    const value = 'S3cr3t-v4lue-' + Math.random().toString(36).slice(2);
    const dir = tmp();
    const inv = join(dir, 'inv.yaml');
    writeFileSync(inv, readFileSync(writeInventory({ hosts: ['tb7'], format: 'yaml' }), 'utf8')); // edited as YAML text below
    const extra = mark(inv, value);
    const plan = join(dir, 'p.plan');
    const journal = join(dir, 'j.ndjson');
    const check = await provision([
      PB,
      '-i',
      inv,
      ...extra,
      '--check',
      '--diff',
      '-v',
      '-v',
      '--json',
      '--plan-out',
      plan,
      '--journal',
      journal,
    ]);
    expect(check.code, check.stderr).toBe(2);
    const apply = await provision(['apply', plan, '--json', '-D', '--journal', journal]);
    expect(apply.code, apply.stderr).toBe(0);
    for (const text of [
      check.stdout,
      check.stderr,
      apply.stdout,
      apply.stderr,
      readFileSync(plan, 'utf8'),
      readFileSync(journal, 'utf8'),
    ]) {
      expect(text).not.toContain(value);
    }
    expect(check.stderr).toContain('create /srv/rs-window/token');
    expect((await tb.hostExec('tb7', 'cat /srv/rs-window/token')).stdout).toBe(value);
  });
});

describe('host keys', () => {
  it('an unknown host is refused (fingerprint shown) unless accepted; a changed key is always refused', async () => {
    const dir = tmp();
    const kh = join(dir, 'known_hosts');
    writeFileSync(kh, '');
    const ip = tb.host('tb7').ip;
    const otherIp = tb.host('tb8').ip;
    const re = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const inv = writeInventory({ hosts: ['tb7'], vars: { racksmith_known_hosts: kh } });
    const unknown = await provision([PB, '-i', inv, '--check', '--json']);
    expect(unknown.code).toBe(1);
    expect(recaps(unknown).tb7.error).toMatch(
      new RegExp(`host key for ${re(ip)}:22 is unknown \\(ssh-ed25519 SHA256:[A-Za-z0-9+/]{43}\\)`),
    );
    const accepted = await provision([PB, '-i', inv, '--check', '--json', '--ssh-accept-new']);
    expect(recaps(accepted).tb7.unreachable).toBe(false);
    const recorded = readFileSync(kh, 'utf8');
    expect(recorded).toMatch(new RegExp(`^${re(ip)} ssh-ed25519 AAAA`));
    expect(recaps(await provision([PB, '-i', inv, '--check', '--json'])).tb7.unreachable).toBe(false);
    // another host's key recorded for tb7: a changed key, refused even with --ssh-accept-new
    const other = readFileSync(tb.knownHostsPath, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${otherIp} `))!;
    writeFileSync(kh, other.replace(otherIp, ip) + '\n');
    const changed = await provision([PB, '-i', inv, '--check', '--json', '--ssh-accept-new']);
    expect(changed.code).toBe(1);
    expect(recaps(changed).tb7.error).toMatch(new RegExp(`host key for ${re(ip)}:22 has CHANGED`));
  });
});
