// Issue "Jail" acceptance on the test bed. The kernel here has no NFS server or client, so the
// shared jail export is a directory on the runner (.testbed/shared) that the test bed binds into
// every host at /srv/shared; the playbook mounts it with fstype `none` + `bind`, exactly the code
// path an NFS source takes except for the fstype. The jail is populated with a hard-linked copy
// of the test bed's Debian rootfs and the populated marker. Fake GPU driver files are real ELF
// shared objects (built with gcc) so that ldconfig inside the jail indexes them.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, recaps, repoRoot, writeInventory } from './helpers.ts';

const HOSTS = ['tb8', 'tb9', 'tb10'];
const GPU_HOSTS = ['tb8', 'tb9'];
const PB = 'playbooks/jail.ts';
const EXPORT = join(tb.sharedDir, 'jail');
const LIB = '/usr/lib/x86_64-linux-gnu';
const DRIVER = '550.54.15';
const vars = {
  jail_source: `${tb.sharedMount}/jail`,
  jail_fstype: 'none',
  jail_options: ['bind'],
  jail_submounts: [{ path: '/mnt/scratch', source: 'tmpfs', fstype: 'tmpfs', options: ['size=16m', 'mode=1777'] }],
  jail_bind_files: ['/etc/hosts', '/etc/resolv.conf'],
};
const inventory = (extra: Record<string, unknown> = {}) =>
  writeInventory({ hosts: HOSTS, groups: { jail: { hosts: HOSTS } }, vars: { ...vars, ...extra } });
const inJail = (h: string, cmd: string) => tb.hostExec(h, `chroot /mnt/jail /bin/sh -c '${cmd.replace(/'/g, `'\\''`)}'`);

/** Real ELF shared objects named like driver libraries, with the driver's sonames. */
function buildFakeDriver(): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'rs-gpu-'));
  writeFileSync(join(dir, 'x.c'), 'int racksmith_fake_driver(void) { return 42; }\n');
  const out: Record<string, string> = {};
  for (const [file, soname] of [
    [`libnvidia-ml.so.${DRIVER}`, 'libnvidia-ml.so.1'],
    [`libcuda.so.${DRIVER}`, 'libcuda.so.1'],
  ]) {
    execFileSync('gcc', ['-shared', '-fPIC', `-Wl,-soname,${soname}`, '-o', join(dir, file), join(dir, 'x.c')]);
    out[`${LIB}/${file}`] = readFileSync(join(dir, file)).toString('base64');
  }
  out['/usr/bin/nvidia-smi'] = Buffer.from('#!/bin/sh\necho "fake nvidia-smi on $(hostname)"\n').toString('base64');
  rmSync(dir, { recursive: true, force: true });
  return out;
}

async function installFakeDriver(host: string, files: Record<string, string>) {
  for (const [path, b64] of Object.entries(files)) {
    const r = await tb.hostExec(host, `base64 -d > '${path}' && chmod 755 '${path}'`, { input: b64 });
    expect(r.code, r.stderr).toBe(0);
  }
}

function populateExport() {
  rmSync(EXPORT, { recursive: true, force: true });
  // Hard links: instant, and nothing here writes into an existing file (ldconfig renames).
  execFileSync('cp', ['-al', join(repoRoot, '.cache/testbed-rootfs'), EXPORT]);
  rmSync(join(EXPORT, 'etc/ld.so.cache'), { force: true });
  execFileSync('cp', [join(repoRoot, '.cache/testbed-rootfs/etc/ld.so.cache'), join(EXPORT, 'etc/ld.so.cache')]);
  writeFileSync(join(EXPORT, 'etc/soperator-jail-populated'), 'populated by the jail e2e test\n');
}

let driver: Record<string, string>;
beforeAll(async () => {
  await tb.reset(HOSTS);
  populateExport();
  driver = buildFakeDriver();
  for (const h of GPU_HOSTS) await installFakeDriver(h, driver);
});

afterAll(async () => {
  await tb.reset(HOSTS); // drop the jail mounts before the export goes away
  rmSync(EXPORT, { recursive: true, force: true });
});

describe('jail', () => {
  it('--check lists each mount and fstab entry that would be added, changes nothing, exit 2', async () => {
    const fstab = (await tb.hostExec('tb10', 'cat /etc/fstab')).stdout;
    const run = await provision([PB, '-i', inventory(), '--check', '--diff']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`mount ${tb.sharedMount}/jail on /mnt/jail`);
    expect(run.stderr).toContain('+/srv/shared/jail /mnt/jail none bind 0 0');
    expect(run.stderr).toMatch(/depends on a pending change of mount:\/mnt\/jail/);
    expect((await tb.hostExec('tb10', 'cat /etc/fstab')).stdout).toBe(fstab);
    expect((await tb.hostExec('tb10', 'findmnt -rn /mnt/jail')).stdout).toBe('');
  });

  it('first run mounts everything on every host, second run changes nothing', async () => {
    const first = await provision([PB, '-i', inventory(), '--json']);
    expect(first.code, first.stderr).toBe(0);
    for (const h of HOSTS) {
      const mounts = (await tb.hostExec(h, 'findmnt -rn -o TARGET | grep ^/mnt/jail | sort')).stdout;
      for (const p of [
        '/mnt/jail',
        '/mnt/jail/tmp',
        '/mnt/jail/run',
        '/mnt/jail/proc',
        '/mnt/jail/sys',
        '/mnt/jail/dev',
        '/mnt/jail/var/log',
        '/mnt/jail/etc/hosts',
        '/mnt/jail/mnt/scratch',
      ]) {
        expect(mounts.split('\n')).toContain(p);
      }
      const fstab = (await tb.hostExec(h, 'cat /etc/fstab')).stdout;
      expect(fstab).toContain('/run /mnt/jail/run none rbind,x-systemd.requires-mounts-for=/mnt/jail 0 0');
      expect(fstab.indexOf(' /mnt/jail none ')).toBeLessThan(fstab.indexOf(' /mnt/jail/tmp '));
    }
    const second = await provision([PB, '-i', inventory(), '--json']);
    expect(second.code, second.stderr).toBe(0);
    for (const h of HOSTS) expect(recaps(second)[h]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it('chroot /mnt/jail: own /tmp per host, shared files everywhere, GPU files on GPU hosts only', async () => {
    for (const h of HOSTS) expect((await inJail(h, `echo ${h} > /tmp/who`)).code).toBe(0);
    for (const h of HOSTS) expect((await inJail(h, 'cat /tmp/who')).stdout).toBe(`${h}\n`);
    expect(existsSync(join(EXPORT, 'tmp/who'))).toBe(false); // node-local, not on the shared export
    writeFileSync(join(EXPORT, 'etc/shared-note'), 'written on the export\n');
    for (const h of HOSTS) expect((await inJail(h, 'cat /etc/shared-note')).stdout).toBe('written on the export\n');

    const want = Buffer.from(driver[`${LIB}/libnvidia-ml.so.${DRIVER}`], 'base64');
    for (const h of GPU_HOSTS) {
      const lib = await tb.hostExec(h, `base64 -w0 /mnt/jail${LIB}/libnvidia-ml.so.${DRIVER}`);
      expect(Buffer.from(lib.stdout, 'base64').equals(want)).toBe(true);
      expect((await inJail(h, 'ldconfig -p')).stdout).toMatch(/libnvidia-ml\.so\.1 .*=> \S*\/x86_64-linux-gnu\/libnvidia-ml\.so\.1/);
      expect((await inJail(h, 'nvidia-smi')).stdout).toBe(`fake nvidia-smi on ${h}\n`);
      expect((await tb.hostExec(h, `findmnt -rn -o OPTIONS /mnt/jail${LIB}/libcuda.so.${DRIVER}`)).stdout).toMatch(/^ro,/);
    }
    // the CPU host sees the empty placeholder from the shared FS, nothing bound
    expect(
      (
        await tb.hostExec(
          'tb10',
          `stat -c %s /mnt/jail${LIB}/libnvidia-ml.so.${DRIVER}; findmnt -rn /mnt/jail${LIB}/libnvidia-ml.so.${DRIVER}`,
        )
      ).stdout,
    ).toBe('0\n');
  });

  it('a bind unmounted by hand is restored, nothing else changes', async () => {
    await tb.hostExec('tb9', 'umount /mnt/jail/tmp');
    const run = await provision([PB, '-i', inventory(), '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(changedResources(run)).toEqual([{ host: 'tb9', id: 'mount:/mnt/jail/tmp' }]);
    expect((await inJail('tb9', 'cat /tmp/who')).stdout).toBe('tb9\n');
  });

  it('survives a reboot: fstab brings the same layout back in order', async () => {
    await tb.reboot(['tb8']);
    expect((await inJail('tb8', 'cat /etc/shared-note')).stdout).toBe('written on the export\n');
    const run = await provision([PB, '-i', inventory(), '-l', 'tb8', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(changedResources(run)).toEqual([]);
  });

  it('two hosts running the GPU step at the same moment leave one consistent ld.so.cache', async () => {
    await tb.reset(GPU_HOSTS);
    for (const h of GPU_HOSTS) await installFakeDriver(h, driver);
    // a jail that has never seen the driver: no placeholders, no soname links, no cache entries
    execFileSync('sh', ['-c', `rm -f ${EXPORT}${LIB}/libnvidia-ml.so* ${EXPORT}${LIB}/libcuda.so* ${EXPORT}/usr/bin/nvidia-smi`]);
    execFileSync('cp', ['--remove-destination', join(repoRoot, '.cache/testbed-rootfs/etc/ld.so.cache'), join(EXPORT, 'etc/ld.so.cache')]);
    const inv = inventory();
    const runs = await Promise.all(GPU_HOSTS.map((h) => provision([PB, '-i', inv, '-l', h, '--json'])));
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    for (const h of GPU_HOSTS) {
      const p = await inJail(h, 'ldconfig -p');
      expect(p.code).toBe(0);
      expect(p.stdout).toMatch(/libnvidia-ml\.so\.1 /);
      expect(p.stdout).toMatch(/libcuda\.so\.1 /);
    }
    expect(execFileSync('sh', ['-c', `ls -a ${EXPORT}/etc | grep -c racksmith-new || true`], { encoding: 'utf8' }).trim()).toBe('0');
    const again = await provision([PB, '-i', inv, '-l', GPU_HOSTS.join(','), '--json']);
    expect(changedResources(again)).toEqual([]);
  });

  it('a jail without its populated marker: that host fails with a clear message, nothing mounted', async () => {
    await tb.reset(['tb10']);
    const empty = join(tb.sharedDir, 'jail-empty');
    execFileSync('mkdir', ['-p', join(empty, 'etc')]);
    const fstab = (await tb.hostExec('tb10', 'cat /etc/fstab')).stdout;
    const run = await provision([PB, '-i', inventory({ jail_source: `${tb.sharedMount}/jail-empty` }), '-l', 'tb10', '--json']);
    expect(run.code).toBe(1);
    const root = run.events.find((e) => e.type === 'resource' && e.id === 'mount:/mnt/jail');
    expect(root?.status, run.stderr).toBe('failed');
    expect(root?.error).toMatch(/not populated: marker etc\/soperator-jail-populated is missing/);
    expect((await tb.hostExec('tb10', 'findmnt -rn -o TARGET | grep -c ^/mnt/jail || true')).stdout.trim()).toBe('0');
    expect((await tb.hostExec('tb10', 'cat /etc/fstab')).stdout).toBe(fstab);
    rmSync(empty, { recursive: true, force: true });
  });
});
