// Acceptance tests of the test bed itself (test/testbed): isolation between hosts, ssh with the
// generated key and known_hosts, the API's host controls, and a clean `down`. Runs against the bed
// of the e2e global setup (RS_TESTBED_HOSTS hosts, 2 disks each) and leaves it up again at the end.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import * as tb from '../testbed/api.ts';

const sh = (cmd: string, args: string[]): string => execFileSync(cmd, args, { encoding: 'utf8' });
const runnerSysctl = (key: string): string => readFileSync(`/proc/sys/${key.replace(/\./g, '/')}`, 'utf8').trim();

let all: tb.TestbedHost[] = [];
let shape = { hosts: 0, disks: 0 };

beforeAll(async () => {
  all = tb.hosts();
  shape = { hosts: all.length, disks: all[0]?.disks.length ?? 0 };
  expect(all.length).toBeGreaterThanOrEqual(3);
  // other e2e files may have changed (or stopped the sshd of) any host: start from fresh ones
  all = await tb.reset(all.map((h) => h.name));
});

afterAll(async () => {
  // whatever happened above, later e2e files need the global setup's bed
  if (!(await tb.matches(shape))) await tb.up({ ...shape, quiet: true });
});

describe('test bed: hosts', () => {
  it('ssh with the generated key and known_hosts (StrictHostKeyChecking=yes) reaches every host', async () => {
    const res = await Promise.all(all.map((h) => tb.sshExec(h.name, 'hostname')));
    res.forEach((r, i) => {
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout.trim()).toBe(all[i].name);
    });
    // hostnames differ per host
    expect(new Set(res.map((r) => r.stdout.trim())).size).toBe(all.length);
  });

  it('ssh refuses a host whose key is not in known_hosts', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-tb-'));
    try {
      const kh = join(dir, 'known_hosts');
      // tb2's key recorded for tb1's address: must be rejected as a changed host key
      const tb2Key = readFileSync(tb.knownHostsPath, 'utf8')
        .split('\n')
        .find((l) => l.startsWith(`${all[1].ip} `));
      writeFileSync(kh, `${tb2Key!.replace(all[1].ip, all[0].ip)}\n`);
      const args = tb.sshArgs().map((a) => (a.startsWith('UserKnownHostsFile=') ? `UserKnownHostsFile=${kh}` : a));
      let err = '';
      try {
        execFileSync('ssh', [...args, `root@${all[0].ip}`, 'true'], { encoding: 'utf8', stdio: 'pipe' });
      } catch (e) {
        err = String((e as { stderr?: string }).stderr);
      }
      expect(err).toMatch(/host key/i);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('inventory.yaml is an Ansible YAML inventory of the bed', () => {
    const inv = parse(readFileSync(tb.inventoryPath, 'utf8'));
    expect(inv.all.vars.ansible_user).toBe('root');
    expect(inv.all.vars.ansible_ssh_private_key_file).toBe(tb.keyPath);
    expect(inv.all.vars.racksmith_known_hosts).toBe(tb.knownHostsPath);
    const hs = inv.all.children.testbed.hosts;
    expect(Object.keys(hs)).toEqual(all.map((h) => h.name));
    for (const h of all) {
      expect(hs[h.name]).toMatchObject({ ansible_host: h.ip, ansible_port: 22, testbed_disks: h.disks.map((d) => d.dev) });
      expect(hs[h.name].testbed_disk_info).toEqual(h.disks.map(({ dev, rotational, serial }) => ({ dev, rotational, serial })));
    }
    expect(Object.keys(inv.all.children.storage.hosts)).toHaveLength(all.length);
    expect(Object.keys(inv.all.children.jail.hosts)).toHaveLength(all.length);
    expect(Object.keys(inv.all.children.kube_control_plane.hosts)).toEqual(['tb1']);
    // known_hosts: one key per host, under its IP and its name
    const kh = readFileSync(tb.knownHostsPath, 'utf8');
    for (const h of all) {
      expect(kh).toMatch(new RegExp(`^${h.ip.replace(/\./g, '\\.')} ssh-ed25519 AAAA`, 'm'));
      expect(kh).toMatch(new RegExp(`^${h.name} ssh-ed25519 AAAA`, 'm'));
    }
  });

  it('each host sees only its own disks, disk 1 rotational (HDD), disk 2 not (SSD)', async () => {
    for (const h of all) {
      const own = h.disks.map((d) => d.dev.replace('/dev/', '')).sort();
      // rotational read disk by disk, in the bed's order (a glob would sort loop10 before loop9)
      const rotational = h.disks.map((d) => `cat /sys/block/${d.dev.replace('/dev/', '')}/queue/rotational`).join('; ');
      const r = await tb.hostExec(h.name, `ls /sys/block; echo --; ls /dev | grep "^loop"; echo --; ${rotational}`);
      expect(r.code).toBe(0);
      const [sysBlock, dev, rot] = r.stdout.split('--\n').map((s) => s.trim().split('\n').filter(Boolean));
      expect(sysBlock.sort()).toEqual(own);
      expect(dev.sort()).toEqual(own);
      expect(rot).toEqual(h.disks.map((d) => (d.rotational ? '1' : '0')));
      expect(h.disks.map((d) => d.rotational)).toEqual(h.disks.map((_, i) => i % 2 === 0));
      expect(h.disks.map((d) => d.serial)).toEqual(h.disks.map((_, i) => `RSTB${h.name.slice(2)}D${i + 1}`));
    }
  });

  it("a file written in one host's /etc is absent on the others", async () => {
    const w = await tb.sshExec('tb1', 'echo probe > /etc/rs-testbed-probe');
    expect(w.code).toBe(0);
    expect(readFileSync(join(all[0].upper, 'etc/rs-testbed-probe'), 'utf8')).toBe('probe\n');
    const others = await Promise.all(all.slice(1).map((h) => tb.hostExec(h.name, 'test -e /etc/rs-testbed-probe')));
    others.forEach((r) => expect(r.code).toBe(1));
    for (const h of all.slice(1)) expect(existsSync(join(h.upper, 'etc/rs-testbed-probe'))).toBe(false);
  });

  it('a net. sysctl set on one host leaves the other hosts and the runner unchanged', async () => {
    const before = runnerSysctl('net.core.somaxconn');
    const other = (await tb.hostExec('tb2', 'sysctl -n net.core.somaxconn')).stdout.trim();
    const value = String(Number(before) + 1234);
    const r = await tb.sshExec('tb1', `sysctl -w net.core.somaxconn=${value} >/dev/null && sysctl -n net.core.somaxconn`);
    expect(r.stdout.trim()).toBe(value);
    expect((await tb.hostExec('tb2', 'sysctl -n net.core.somaxconn')).stdout.trim()).toBe(other);
    expect(runnerSysctl('net.core.somaxconn')).toBe(before);
  });

  it('kernel-global sysctls are per-host copies or read-only: the runner never changes', async () => {
    const fileMax = runnerSysctl('fs.file-max');
    const r = await tb.hostExec('tb1', 'sysctl -w fs.file-max=1234567 >/dev/null && sysctl -n fs.file-max');
    expect(r.stdout.trim()).toBe('1234567');
    expect((await tb.hostExec('tb2', 'sysctl -n fs.file-max')).stdout.trim()).toBe(fileMax);
    expect(runnerSysctl('fs.file-max')).toBe(fileMax);
    // not faked: read-only, fails loudly
    const ro = await tb.hostExec('tb1', 'echo never > /sys/kernel/mm/transparent_hugepage/enabled');
    expect(ro.code).not.toBe(0);
  });

  it('the shared directory is the same in every host and cross-host flock works', async () => {
    await tb.hostExec('tb1', `echo hello > ${tb.sharedMount}/from-tb1`);
    expect((await tb.hostExec('tb2', `cat ${tb.sharedMount}/from-tb1`)).stdout).toBe('hello\n');
    expect(readFileSync(join(tb.sharedDir, 'from-tb1'), 'utf8')).toBe('hello\n');
    // tb1 holds the lock for a while; tb2 cannot take it, then can
    const held = `${tb.sharedMount}/lock-held`;
    await tb.hostExec('tb1', `flock ${tb.sharedMount}/lock sh -c 'touch ${held}; sleep 2' </dev/null >/dev/null 2>&1 &`);
    // (until tb1 really holds it)
    for (let i = 0; i < 500 && !existsSync(join(tb.sharedDir, 'lock-held')); i++) await new Promise((r) => setTimeout(r, 10));
    expect((await tb.hostExec('tb2', `flock -n ${tb.sharedMount}/lock true`)).code).toBe(1);
    expect((await tb.hostExec('tb2', `flock -w 10 ${tb.sharedMount}/lock true`)).code).toBe(0);
    rmSync(join(tb.sharedDir, 'from-tb1'));
    rmSync(join(tb.sharedDir, 'lock'));
    rmSync(join(tb.sharedDir, 'lock-held'));
  });

  it.skipIf(!existsSync('/usr/bin/kubectl'))('kubectl of the runner is available in hosts', async () => {
    const r = await tb.hostExec('tb1', 'kubectl version --client');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Client Version/);
  });
});

describe('test bed: the fake sysfs of kernel-wide knobs', () => {
  const THP = '/sys/kernel/mm/transparent_hugepage';
  const H = 'tb10';

  it('opt-in: kernel semantics per host, back to the kernel values at a reboot, gone after a reset; the runner never changes', async (ctx) => {
    // a kernel without THP has no path to put the fake over: nothing to test here
    if (!existsSync(`${THP}/enabled`)) ctx.skip();
    const runnerThp = readFileSync(`${THP}/enabled`, 'utf8');
    await tb.reset(H);
    await tb.fakeSysfs(H);
    const read = async (p: string) => (await tb.hostExec(H, `cat ${p}`)).stdout;
    expect(await read(`${THP}/enabled`)).toBe(runnerThp); // the kernel's value at boot
    const w = await tb.hostExec(
      H,
      `echo never > ${THP}/enabled && echo 1 > /sys/kernel/mm/ksm/run && echo performance > /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor`,
    );
    expect(w.code, w.stderr).toBe(0);
    expect(await read(`${THP}/enabled`)).toBe('always madvise [never]\n');
    expect(await read('/sys/kernel/mm/ksm/run')).toBe('1\n');
    expect(await read('/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor')).toBe('performance\n');
    // an unknown word is rejected as sysfs does, and the value stays
    const bad = await tb.hostExec(H, `/bin/echo sometimes > ${THP}/enabled`); // (dash says "I/O error" for any write error)
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/Invalid argument/);
    expect(await read(`${THP}/enabled`)).toBe('always madvise [never]\n');
    expect((await tb.hostExec(H, 'echo x > /sys/devices/system/cpu/cpu0/cpufreq/scaling_available_governors')).code).not.toBe(0);
    // the other hosts and the runner keep theirs
    expect((await tb.hostExec('tb9', `cat ${THP}/enabled`)).stdout).toBe(runnerThp);
    expect(readFileSync(`${THP}/enabled`, 'utf8')).toBe(runnerThp);
    // a reboot: kernel values again, unless the boot (tmpfiles.d w lines) sets them
    expect(
      (await tb.hostExec(H, `mkdir -p /etc/tmpfiles.d && echo 'w ${THP}/defrag - - - - never' > /etc/tmpfiles.d/tb-test.conf`)).code,
    ).toBe(0);
    await tb.reboot(H);
    expect(await read(`${THP}/enabled`)).toBe(runnerThp);
    expect(await read(`${THP}/defrag`)).toMatch(/\[never\]\n$/);
    expect(await read('/sys/kernel/mm/ksm/run')).toBe('0\n');
    // a reset: the plain bed again (read-only)
    await tb.reset(H);
    expect((await tb.hostExec(H, `echo never > ${THP}/enabled`)).code).not.toBe(0);
  });
});

describe('test bed: host controls', () => {
  it('stopSshd makes a host unreachable, startSshd brings it back', async () => {
    await tb.stopSshd('tb3');
    const refused = await tb.sshExec('tb3', 'true');
    expect(refused.code).toBe(255);
    expect(await tb.portOpen(all[2].ip, 22)).toBe(false);
    expect(tb.isRunning('tb3')).toBe(true); // the host itself stays up
    await tb.startSshd('tb3');
    expect((await tb.sshExec('tb3', 'hostname')).stdout.trim()).toBe('tb3');
  });

  it('reboot keeps the upper dir and disks, re-applies persisted config, resets runtime state', async () => {
    const disk = all[0].disks[0].dev;
    const prep = await tb.sshExec(
      'tb1',
      `set -e; mkfs.xfs -q -f ${disk}; mkdir -p /data; echo "${disk} /data xfs defaults 0 0" >> /etc/fstab; mount -a; ` +
        'echo kept > /data/f; echo "net.ipv4.tcp_fin_timeout = 17" > /etc/sysctl.d/90-rs.conf; sysctl -w net.core.somaxconn=999',
    );
    expect(prep.code).toBe(0);
    const oldPid = tb.host('tb1').initPid;
    await tb.reboot('tb1');
    expect(tb.host('tb1').initPid).not.toBe(oldPid);
    const r = await tb.sshExec('tb1', 'cat /data/f; sysctl -n net.ipv4.tcp_fin_timeout; sysctl -n net.core.somaxconn');
    expect(r.stdout.split('\n').slice(0, 2)).toEqual(['kept', '17']);
    expect(r.stdout.split('\n')[2]).toBe((await tb.hostExec('tb2', 'sysctl -n net.core.somaxconn')).stdout.trim());
  });

  it('reset gives a host as fresh as after up (empty upper dir, zeroed disks), same keys and disks', async () => {
    const before = tb.host('tb1');
    await tb.sshExec('tb1', 'echo x > /etc/rs-reset-probe');
    const t0 = Date.now();
    await tb.reset('tb1');
    const elapsed = Date.now() - t0;
    const after = tb.host('tb1');
    expect(after.disks).toEqual(before.disks);
    const r = await tb.sshExec('tb1', `test -e /etc/rs-reset-probe; echo $?; findmnt -n /data; blkid -p ${before.disks[0].dev}; echo $?`);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('1\n2\n'); // no probe file, nothing mounted, no signature on the disk
    expect(existsSync(join(after.upper, 'etc/rs-reset-probe'))).toBe(false);
    expect(elapsed).toBeLessThan(10_000);
  });
});

describe('test bed: down', () => {
  it('down leaves no namespace, loop device, mount or process behind (then the bed comes back up)', async () => {
    const hostPids = tb.hosts().map((h) => h.initPid);
    try {
      await tb.down({ quiet: true });
      expect(sh('ip', ['netns', 'list'])).not.toMatch(/^rs-tb\d+/m);
      expect(sh('ip', ['-o', 'link', 'show'])).not.toMatch(/\brsbr0\b|\brstbv\d+/);
      // ours only: another bed's state directory may share this one's name as a prefix (.testbed-bench)
      const ours = `${tb.stateDir}/`;
      const loops = sh('losetup', ['-l', '-n', '-O', 'NAME,BACK-FILE']);
      expect(loops.split('\n').filter((l) => l.includes(ours))).toEqual([]);
      const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .map((l) => l.split(' ')[4] ?? '');
      expect(mounts.filter((m) => m === tb.stateDir || m.startsWith(ours))).toEqual([]);
      const leftover = readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .filter((p) => {
          try {
            return /tb-init|host-init/.test(readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' '));
          } catch {
            return false;
          }
        })
        // hosts of another bed on this machine (e.g. the benchmark's) live in its named netns;
        // one of ours left behind would sit in a netns that no longer has a name (or an rs-tbN one)
        .filter((p) => !/^(?!rs-tb\d)\S+/m.test(sh('ip', ['netns', 'identify', p])));
      expect(leftover).toEqual([]);
      for (const pid of hostPids)
        expect(existsSync(`/proc/${pid}/cmdline`) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('tb-init')).toBe(false);
      expect(existsSync(tb.stateDir)).toBe(false);
      // safe to run twice
      await tb.down({ quiet: true });
    } finally {
      await tb.up({ ...shape, quiet: true });
    }
    expect(await tb.matches(shape)).toBe(true);
  });
});
