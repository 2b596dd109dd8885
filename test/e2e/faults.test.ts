// Faults on real hosts: a link cut mid-apply, a probe that hangs, Ctrl-C during a hung step (also
// under become), and the temp file an interrupted write leaves. Each ends on its own, the host in
// question reported (unreachable, timed out or interrupted), its remote commands killed, the other
// hosts converged.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, repoRoot, writeInventory } from './helpers.ts';
import { Secret } from '../../src/util/secret.ts';

const WINDOW = 'test/fixtures/playbooks/window.ts';
const HANG = 'test/fixtures/playbooks/hang.ts';

/** Wait for `cmd` to succeed on the host (an event, polled), up to `tries` x 100 ms. */
async function until(host: string, cmd: string, tries = 300): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if ((await tb.hostExec(host, cmd)).code === 0) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
const running = (pattern: string, user?: string) => `pgrep ${user ? `-u ${user} ` : ''}-xf ${JSON.stringify(pattern)} >/dev/null`;
const gone = (pattern: string) => `! pgrep -xf ${JSON.stringify(pattern)} >/dev/null`;

const PASSWORD = 'Pw-faultS-4c1e07';
type Access = 'nopasswd' | 'password' | 'su';
/**
 * Fresh hosts reached with -b: as ops with sudo (NOPASSWD, or ops' password as a !secret
 * ansible_become_password), or as root with su.
 */
async function becomeRun(hosts: string[], hostVars: Record<string, Record<string, unknown>>, access: Access): Promise<string[]> {
  await tb.reset(hosts);
  if (access === 'password') for (const h of hosts) await tb.setOpsAccess(h, { sudo: 'password', password: PASSWORD });
  const inv = writeInventory({ format: 'yaml', hosts, vars: access === 'su' ? {} : { ansible_user: 'ops' }, hostVars });
  if (access === 'password')
    writeFileSync(
      inv,
      readFileSync(inv, 'utf8').replace('ansible_user: ops', `ansible_user: ops\n    ansible_become_password: !secret ${PASSWORD}`),
    );
  return [HANG, '-i', inv, '-b', ...(access === 'su' ? ['--become-method', 'su'] : []), '--json'];
}

describe('faults', () => {
  it('the link to one host cut mid-apply: it ends unreachable, the others converge, the run ends', async () => {
    const hosts = ['tb5', 'tb6', 'tb7'];
    await tb.reset(hosts);
    const inv = writeInventory({ hosts, vars: { fx_sleep: 5 } });
    const run = provision([WINDOW, '-i', inv, '--json', '--host-timeout', '45', '--ssh-keepalive', '2'], { timeoutMs: 150_000 });
    const netns = tb.host('tb6').netns;
    try {
      expect(await until('tb6', running('sleep 5'))).toBe(true);
      // only this bed's own namespace: the host's side of its link goes down
      await tb.hostExec('tb6', 'true');
      const cut = spawn('ip', ['-n', netns, 'link', 'set', 'eth0', 'down']);
      expect(await new Promise((r) => cut.on('close', r))).toBe(0);
      const r = await run;
      expect(r.code, r.stderr).toBe(1);
      const rc = recaps(r);
      expect(rc.tb6.unreachable).toBe(true);
      expect(rc.tb6.error).toMatch(/timed out after 45s|connection lost/);
      for (const h of ['tb5', 'tb7']) expect(rc[h], r.stderr).toMatchObject({ failed: 0, unreachable: false });
      for (const h of ['tb5', 'tb7']) expect((await tb.hostExec(h, 'ls /srv/rs-window')).stdout).toMatch(/slept-1/);
    } finally {
      await new Promise((r) => spawn('ip', ['-n', netns, 'link', 'set', 'eth0', 'up']).on('close', r));
    }
  });

  it('a probe that hangs: --host-timeout ends the host as unreachable and kills its remote commands', async () => {
    await tb.reset(['tb8', 'tb9']);
    const inv = writeInventory({ hosts: ['tb8', 'tb9'], hostVars: { tb8: { fx_hang_probe: 1008 } } });
    const r = await provision([HANG, '-i', inv, '--json', '--host-timeout', '8']);
    expect(r.code).toBe(1);
    expect(recaps(r).tb8).toMatchObject({ unreachable: true, error: 'timed out after 8s' });
    expect(recaps(r).tb9).toMatchObject({ failed: 0, unreachable: false, changed: 1 });
    expect(await until('tb8', gone('sleep 1008'), 50)).toBe(true);
  });

  it('Ctrl-C during a hung step: the run ends, the host is interrupted in journal and recap, its command killed', async () => {
    await tb.reset(['tb9', 'tb10']);
    const journal = join(mkdtempSync(join(tmpdir(), 'rs-int-')), 'j.ndjson');
    const inv = writeInventory({ hosts: ['tb9', 'tb10'], hostVars: { tb9: { fx_hang_step: 1009 } } });
    const child = spawn(process.execPath, [join(repoRoot, 'bin/provision.js'), HANG, '-i', inv, '--json', '--journal', journal], {
      cwd: repoRoot,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const closed = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    expect(await until('tb9', running('sleep 1009'))).toBe(true);
    child.kill('SIGINT');
    // It ends on its own (the step would sleep for 17 minutes); a watchdog stands in for "never".
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await closed;
    clearTimeout(watchdog);
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/tb9: interrupted: the steps in flight were stopped/);
    const events = readFileSync(journal, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.find((e) => e.type === 'host_recap' && e.host === 'tb9').error).toMatch(/^interrupted/);
    expect(events.at(-1).type).toBe('recap');
    expect(stdout.trim().split('\n').at(-1)).toMatch(/"type":"recap"/);
    expect(await until('tb9', gone('sleep 1009'), 50)).toBe(true);
  });

  it('Ctrl-C while 30 hosts are still in their SSH handshake: the run ends then, not at the connect timeout; each host is interrupted, no warning', async () => {
    // The "hosts" are real TCP listeners on loopback that accept and never speak SSH, one each:
    // hosts of one address and port are one sshd, whose handshakes take turns 8 at once (MaxStartups).
    const HOSTS = 30;
    let accepted = 0;
    let allIn: () => void;
    const allAccepted = new Promise<void>((r) => (allIn = r));
    const servers = await Promise.all(
      Array.from({ length: HOSTS }, async () => {
        const server = createServer(() => ++accepted === HOSTS && allIn());
        server.listen(0, '127.0.0.1');
        await once(server, 'listening');
        return server;
      }),
    );
    const ports = servers.map((server) => (server.address() as { port: number }).port);
    const dir = mkdtempSync(join(tmpdir(), 'rs-int-'));
    const journal = join(dir, 'j.ndjson');
    const inv = join(dir, 'inventory.yaml');
    const names = Array.from({ length: HOSTS }, (_, i) => `silent${i}`);
    writeFileSync(
      inv,
      `all:\n  hosts:\n${names.map((n, i) => `    ${n}:\n      ansible_host: 127.0.0.1\n      ansible_port: ${ports[i]}\n`).join('')}`,
    );
    const child = spawn(
      process.execPath,
      [join(repoRoot, 'bin/provision.js'), HANG, '-i', inv, '--json', '-f', String(HOSTS), '--timeout', '600', '--journal', journal],
      { cwd: repoRoot },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const closed = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    await allAccepted; // every TCP connection is up; each handshake waits for a banner that never comes
    child.kill('SIGINT');
    // The connect timeout is 10 minutes: a watchdog stands in for "never".
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await closed;
    clearTimeout(watchdog);
    for (const server of servers) server.close();
    expect(code, stderr).toBe(1);
    // 30 hosts in flight listening for the interrupt are not a leak: Node's warning must not show
    expect(stderr).not.toMatch(/MaxListenersExceeded|memory leak/);
    const events = readFileSync(journal, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const recaps = events.filter((e) => e.type === 'host_recap');
    expect(recaps.map((e) => e.host).sort()).toEqual([...names].sort());
    for (const r of recaps) expect(r, r.host).toMatchObject({ unreachable: false, error: expect.stringMatching(/^interrupted/) });
    expect(events.at(-1).type).toBe('recap');
  });

  it.each([
    [8, 'by default', [HANG]],
    [12, 'with --ssh-handshakes-per-sshd 12', [HANG, '--ssh-handshakes-per-sshd', '12']],
    [10, 'in provision exec with --ssh-handshakes-per-sshd 10', ['exec', 'all', '--ssh-handshakes-per-sshd', '10']],
  ])('30 hosts behind one sshd (one address and port) connect %i at a time %s, not all 30', async (perSshd, _said, how) => {
    // One listener that accepts and never speaks SSH stands for a bastion: every host's handshake
    // waits for a banner that never comes, so the connections it holds are the run's limit there.
    const HOSTS = 30;
    let accepted = 0;
    let reached: () => void;
    const limitReached = new Promise<void>((r) => (reached = r));
    const server = createServer(() => ++accepted === perSshd && reached());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), 'rs-per-sshd-'));
    const inv = join(dir, 'inventory.yaml');
    writeFileSync(
      inv,
      `all:\n  hosts:\n${Array.from({ length: HOSTS }, (_, i) => `    quiet${i}:\n      ansible_host: 127.0.0.1\n      ansible_port: ${port}\n`).join('')}`,
    );
    const child = spawn(
      process.execPath,
      [
        join(repoRoot, 'bin/provision.js'),
        ...how,
        '-i',
        inv,
        '-f',
        String(HOSTS),
        '--timeout',
        '600',
        ...(how[0] === 'exec' ? ['--', 'true'] : []),
      ],
      { cwd: repoRoot },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const closed = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 60_000);
    await Promise.race([limitReached, closed]);
    child.kill('SIGINT');
    const code = await closed;
    clearTimeout(watchdog);
    server.close();
    expect(code, stderr).toBe(1);
    // the other hosts waited for a turn there and never connected (the run has ended: no more can come)
    expect(accepted, stderr).toBe(perSshd);
  });

  it('a temp file an interrupted write left is removed by the next run that writes that file', async () => {
    await tb.reset(['tb10']);
    const stale = '/srv/rs-window/.small.conf.racksmith-tmp.Ab12Cd';
    await tb.hostExec('tb10', `mkdir -p /srv/rs-window && printf 'half' > ${stale}`);
    const inv = writeInventory({ hosts: ['tb10'] });
    const r = await provision([WINDOW, '-i', inv, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect((await tb.hostExec('tb10', `ls -A /srv/rs-window`)).stdout.split('\n').filter(Boolean).sort()).toEqual([
      'large.conf',
      'small.conf',
    ]);
  });
});

// Under become the commands are root's, started by sudo as the login user ops (or by su): the
// kill has to find the escalated shell (its argv carries the tag too) and run as root.
describe('faults under become', () => {
  it.each([
    ['as ops, NOPASSWD sudo', 'tb1', 1001, 'nopasswd'],
    ['as ops, password sudo', 'tb2', 1002, 'password'],
    ['as root, su', 'tb1', 1003, 'su'],
  ] as const)(
    '%s: a probe that hangs, --host-timeout: the host ends unreachable, its root-owned command killed',
    async (_, h, secs, access) => {
      const args = await becomeRun([h, 'tb3'], { [h]: { fx_hang_probe: secs } }, access);
      const run = provision([...args, '--host-timeout', '8']);
      expect(await until(h, running(`sleep ${secs}`, 'root'))).toBe(true);
      const r = await run;
      expect(r.code, r.stderr).toBe(1);
      expect(recaps(r)[h]).toMatchObject({ unreachable: true, error: 'timed out after 8s' });
      expect(recaps(r).tb3).toMatchObject({ failed: 0, unreachable: false, changed: 1 });
      expect(r.stdout + r.stderr).not.toContain(PASSWORD);
      expect(await until(h, gone(`sleep ${secs}`), 50)).toBe(true);
    },
  );

  it.each([
    ['NOPASSWD sudo', 1004, 'nopasswd'],
    ['password sudo', 1005, 'password'],
  ] as const)(
    'Ctrl-C during a hung step as ops with %s: the host is interrupted, its root-owned command killed',
    async (_, secs, access) => {
      const args = await becomeRun(['tb4'], { tb4: { fx_hang_step: secs } }, access);
      const child = spawn(process.execPath, [join(repoRoot, 'bin/provision.js'), ...args], { cwd: repoRoot });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.stdout.resume();
      const closed = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
      expect(await until('tb4', running(`sleep ${secs}`, 'root'))).toBe(true);
      child.kill('SIGINT');
      const watchdog = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await closed;
      clearTimeout(watchdog);
      expect(code, stderr).toBe(1);
      expect(stderr).toMatch(/tb4: interrupted: the steps in flight were stopped/);
      expect(await until('tb4', gone(`sleep ${secs}`), 50)).toBe(true);
    },
  );

  it.each([
    ['NOPASSWD sudo', 1006, 'nopasswd'],
    ['password sudo', 1007, 'password'],
  ] as const)(
    'abort() of an exec with its own stdin (the script inline) as ops with %s: its root-owned command killed',
    async (_, secs, access) => {
      await becomeRun(['tb2'], {}, access);
      const { SshConnection } = await import('../../src/connection/ssh.ts');
      const h = tb.host('tb2');
      const conn = await SshConnection.open({
        name: 'tb2',
        address: h.ip,
        port: h.port,
        user: 'ops',
        privateKeyFile: tb.keyPath,
        connectTimeoutMs: 5000,
        knownHostsFile: tb.knownHostsPath,
        acceptNewHostKeys: false,
        become: { method: 'sudo', user: 'root', password: access === 'password' ? new Secret(PASSWORD) : undefined },
      });
      try {
        const exec = conn.exec(`cat >/dev/null; sleep ${secs}`, 'input\n').then(
          () => 'ended',
          (e: Error) => e.message,
        );
        expect(await until('tb2', running(`sleep ${secs}`, 'root'))).toBe(true);
        await conn.abort();
        // killed before the socket went: sshd may still have reported the signal
        expect(await exec).toMatch(/^ended$|^tb2: connection lost/);
        expect(await until('tb2', gone(`sleep ${secs}`), 50)).toBe(true);
      } finally {
        await conn.abort();
      }
    },
  );
});

// The local connection (pull mode, -c local) ends its commands as SSH does: each script is a
// process group of its own, killed whole. Only --check runs here: the fixture's probe (a `sleep`)
// on this machine, nothing applied.
describe('faults on the local connection', () => {
  const localInventory = () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-local-'));
    const inv = join(dir, 'inventory.yaml');
    writeFileSync(inv, 'all:\n  hosts:\n    here:\n      ansible_connection: local\n');
    return { dir, inv };
  };
  /** Wait for `pgrep -xf pattern` on this machine to give `want` (an event, polled), up to 10 s. */
  async function localUntil(pattern: string, want: boolean): Promise<boolean> {
    for (let i = 0; i < 100; i++) {
      if ((spawnSync('pgrep', ['-xf', pattern]).status === 0) === want) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  }

  it('a probe that hangs: --host-timeout ends the host and kills its command', async () => {
    const { inv } = localInventory();
    const r = await provision([HANG, '-i', inv, '--check', '--json', '-e', 'fx_hang_probe=1011', '--host-timeout', '3']);
    expect(r.code, r.stderr).toBe(1);
    expect(recaps(r).here).toMatchObject({ error: 'timed out after 3s' });
    expect(r.stderr).not.toMatch(/still open after the run/);
    expect(await localUntil('sleep 1011', false)).toBe(true);
  });

  it('Ctrl-C during a hung probe: the run ends, the host is interrupted, its command killed', async () => {
    const { dir, inv } = localInventory();
    const journal = join(dir, 'j.ndjson');
    const child = spawn(
      process.execPath,
      [join(repoRoot, 'bin/provision.js'), HANG, '-i', inv, '--check', '--json', '-e', 'fx_hang_probe=1012', '--journal', journal],
      { cwd: repoRoot },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const closed = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    expect(await localUntil('sleep 1012', true)).toBe(true);
    child.kill('SIGINT');
    // It ends on its own (the probe would sleep for 17 minutes); a watchdog stands in for "never".
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await closed;
    clearTimeout(watchdog);
    expect(code, stderr).toBe(1);
    expect(stderr).not.toMatch(/still open after the run/);
    const recap = readFileSync(journal, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((e) => e.type === 'host_recap' && e.host === 'here');
    expect(recap.error).toMatch(/^interrupted/);
    expect(await localUntil('sleep 1012', false)).toBe(true);
  });
});
