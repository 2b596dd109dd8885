// Issue 36, host facts: a play with `facts: true` builds its resources from host.facts, gathered
// in one exec per host for all such plays; the files it writes match what the host itself says
// (memory, CPUs, NIC names, its loop data disks); a re-run changes nothing; a dry run changes
// nothing; a host that cannot be reached for its facts is unreachable and the others run; a saved
// plan is refused on a host whose facts moved (its NIC's MTU) and applied on the other;
// --list-tasks contacts no host; reading host.facts without asking is exit 3 at its line.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, recaps, writeInventory } from './helpers.ts';

const PB = 'test/fixtures/playbooks/host-facts.ts';
const HOSTS = ['tb1', 'tb2', 'tb3', 'tb4'];
const FILES = ['/etc/rs-facts.txt', '/etc/rs-facts-os.txt', '/etc/rs-facts-plain.txt'];
const tmp = () => mkdtempSync(join(tmpdir(), 'rs-facts-'));
const sh = async (host: string, cmd: string) => {
  const r = await tb.hostExec(host, cmd);
  if (r.code !== 0) throw new Error(`${host}: ${cmd}: ${r.stderr}`);
  return r.stdout.trim();
};
/** A file on the host as the runner sees it, or null. */
const onHost = (host: string, path: string): string | null => {
  const f = join(tb.host(host).upper, path);
  return existsSync(f) ? readFileSync(f, 'utf8') : null;
};

/** What the fixture's first play must write on `host`, from the host's own answers (not racksmith's). */
async function expectedFacts(host: string): Promise<string> {
  const memKb = Number(await sh(host, "sed -n 's/^MemTotal: *\\([0-9]*\\) kB$/\\1/p' /proc/meminfo"));
  const cpus = await sh(host, 'grep -c ^processor /proc/cpuinfo');
  const nics = (await sh(host, 'ls /sys/class/net')).split(/\s+/).filter((n) => n !== 'lo');
  const disks = [];
  for (const d of tb.host(host).disks) {
    const name = d.dev.replace('/dev/', '');
    const size = await sh(host, `blockdev --getsize64 ${d.dev}`);
    disks.push(`${name}:${d.rotational ? 'hdd' : 'ssd'}:${size}`);
  }
  expect(disks.length, 'the bed host has loop data disks').toBeGreaterThan(0);
  return `memory=${memKb * 1024}\ncpus=${cpus}\nnics=${nics.join(',')}\ndisks=${disks.join(',')}\n`;
}

let inv: string;
beforeAll(async () => {
  await tb.reset(HOSTS);
  inv = writeInventory({ hosts: HOSTS });
});

describe('a facts: true play', () => {
  it('writes what the host is (memory, CPUs, NICs, loop data disks), then a re-run changes nothing in two execs', async () => {
    const run = await provision([PB, '-i', inv, '-l', 'tb1,tb2', '--json', '--journal', join(tmp(), 'j')]);
    expect(run.code, run.stderr).toBe(0);
    for (const h of ['tb1', 'tb2']) {
      expect(onHost(h, '/etc/rs-facts.txt')).toBe(await expectedFacts(h));
      expect(onHost(h, '/etc/rs-facts-os.txt')).toBe(`debian ${await sh(h, 'uname -m')}\n`);
      expect(onHost(h, '/etc/rs-facts-plain.txt')).toBe(`${h}\n`);
    }
    const again = await provision([PB, '-i', inv, '-l', 'tb1,tb2', '--json', '--journal', join(tmp(), 'j')]);
    expect(again.code, again.stderr).toBe(0);
    expect(changedResources(again)).toEqual([]);
    // one exec gathers the facts for both facts plays, one probes all three plays
    for (const h of ['tb1', 'tb2']) expect(recaps(again)[h].execs).toBe(2);
  });

  it('a dry run changes nothing on the host', async () => {
    await tb.reset(['tb3']);
    const check = await provision([PB, '-i', inv, '-l', 'tb3', '--check', '--json', '--journal', join(tmp(), 'j')]);
    expect(check.code, check.stderr).toBe(2);
    expect(changedResources(check).map((r) => r.id)).toHaveLength(3);
    for (const f of FILES) expect(onHost('tb3', f)).toBeNull();
  });
});

describe('a host whose facts cannot be gathered', () => {
  it('is unreachable, with the reason, and the other hosts run', async () => {
    await tb.reset(['tb3', 'tb4']);
    await tb.stopSshd('tb4');
    try {
      const run = await provision([PB, '-i', inv, '-l', 'tb3,tb4', '--json', '--journal', join(tmp(), 'j')]);
      expect(run.code, run.stderr).toBe(1);
      expect(recaps(run).tb4.unreachable).toBe(true);
      expect(recaps(run).tb4.error).toMatch(/^tb4: cannot connect to [0-9.]+:22/);
      expect(recaps(run).tb3.error).toBeUndefined();
      expect(onHost('tb3', '/etc/rs-facts.txt')).toBe(await expectedFacts('tb3'));
      for (const f of FILES) expect(onHost('tb4', f)).toBeNull();
    } finally {
      await tb.startSshd('tb4');
    }
  });
});

describe('a saved plan and facts that moved', () => {
  it('apply refuses the host whose NIC MTU changed since the review and applies the other', async () => {
    await tb.reset(['tb3', 'tb4']);
    const plan = join(tmp(), 'p.plan');
    const check = await provision([PB, '-i', inv, '-l', 'tb3,tb4', '--check', '--plan-out', plan, '--journal', join(tmp(), 'j')]);
    expect(check.code, check.stderr).toBe(2);
    const saved = readFileSync(plan, 'utf8');
    expect(Object.keys(JSON.parse(saved).facts.tb3)).toContain('nics.eth0');
    expect(saved, 'hashes only').not.toContain(await sh('tb3', 'cat /sys/class/net/eth0/address'));
    const mtu = Number(await sh('tb3', 'cat /sys/class/net/eth0/mtu'));
    await sh('tb3', `ip link set eth0 mtu ${mtu - 100}`);
    try {
      const apply = await provision(['apply', plan, '--json', '--journal', join(tmp(), 'j')]);
      expect(apply.code, apply.stderr).toBe(1);
      expect(recaps(apply).tb3).toMatchObject({
        error: 'refused: host facts changed since the plan: nics.eth0 (make a new plan)',
        execs: 1, // the gatherer's, nothing after
      });
      expect(recaps(apply).tb4.error).toBeUndefined();
      for (const f of FILES) {
        expect(onHost('tb3', f)).toBeNull();
        expect(onHost('tb4', f)).not.toBeNull();
      }
    } finally {
      await sh('tb3', `ip link set eth0 mtu ${mtu}`);
    }
  });
});

describe('without contacting a host', () => {
  const sshdLines = () => Promise.all(HOSTS.map((h) => sh(h, 'wc -l < /var/log/sshd.log')));

  it('--list-tasks marks the plays whose resources depend on facts', async () => {
    const before = await sshdLines();
    const list = await provision([PB, '-i', inv, '-l', 'tb1', '--list-tasks']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain('play #1 (all): facts file');
    expect(list.stdout).toMatch(/play #1 \(all\): facts file[^\n]*\n {4}hosts \(1\): tb1\n {6}\(depends on facts\)\n/);
    expect(list.stdout).toMatch(/play #3 \(all\): plain file[^\n]*\n {4}hosts \(1\): tb1\n {6}file:\/etc\/rs-facts-plain.txt/);
    expect(await sshdLines()).toEqual(before);
  });

  it('a play reading host.facts without facts: true is exit 3 at the playbook line that read them', async () => {
    const before = await sshdLines();
    const run = await provision([PB, '-i', inv, '-l', 'tb1', '-e', 'fx_unasked=true', '--journal', join(tmp(), 'j')]);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(/host-facts\.ts:\d+:\d+: .*play 'plain file'.*host\.facts is read by a play without `facts: true`/);
    expect(await sshdLines()).toEqual(before);
  });
});
