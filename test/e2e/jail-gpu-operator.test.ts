// Issue #38: a GPU node whose driver NVIDIA's GPU Operator installs keeps the driver's files in
// the driver container's root, /run/nvidia/driver (usr/lib/<arch>-linux-gnu, usr/bin), not on the
// host. Test double (no GPU, no Kubernetes here): the root is a tmpfs mounted at
// /run/nvidia/driver holding the fake driver files of jail-fixtures.ts (real ELF objects with the
// driver's sonames); the driver container going away is that tmpfs unmounted (the directory stays,
// empty). The jail export is shared as in jail.test.ts (fstype none: a bind of /srv/shared/...).
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, recaps, writeInventory, type CliRun } from './helpers.ts';
import {
  DRIVER,
  driverFiles,
  exportDir,
  fakeProcVersion,
  installFiles,
  LIB,
  mountsAt,
  OLD_DRIVER,
  populateExport,
} from './jail-fixtures.ts';

const PB = 'playbooks/jail.ts';
const ROOT = '/run/nvidia/driver';
/** The GPU Operator host, and a GPU host with its own driver. */
const OP = 'tb2';
const OWN = 'tb3';
const EXPORTS = ['jail-op', 'jail-op-mixed', 'jail-op-left', 'jail-op-stale'];
const GONE = `the GPU Operator's driver root ${ROOT} is gone (its driver container is not running?): binds left as they are; if a driver of the host's own is to serve the jail now, set jail_gpu_driver_root: /`;

const sh = (h: string, cmd: string) => tb.hostExec(h, cmd);
const inventory = (hosts: string[], exp: string) =>
  writeInventory({ hosts, groups: { jail: { hosts } }, vars: { jail_source: `${tb.sharedMount}/${exp}`, jail_fstype: 'none' } });
const resourceEvent = (run: CliRun, host: string, id: string) =>
  run.events.find((e) => e.type === 'resource' && e.host === host && e.id === id);
const summaries = (run: CliRun, host: string, id: string): string[] =>
  (resourceEvent(run, host, id)?.changes ?? []).map((c: { summary: string }) => c.summary);
const mountsUnder = async (h: string, dir: string) =>
  (await sh(h, `findmnt -rn -o TARGET | grep '^${dir}' | sort || true`)).stdout.split('\n').filter(Boolean);

/** The fake driver only under the GPU Operator's root: a tmpfs at /run/nvidia/driver (the driver container's root). */
async function operatorHost(h: string) {
  const r = await sh(h, `mkdir -p ${ROOT} && mount -t tmpfs rs-fake-driver-root ${ROOT}`);
  expect(r.code, r.stderr).toBe(0);
  await installFiles(h, Object.fromEntries(Object.entries(driverFiles(DRIVER)).map(([p, b64]) => [`${ROOT}${p}`, b64])));
  // the host itself has no driver: the default root must be found on the host
  expect((await sh(h, `ls ${LIB}/libnvidia-ml.so.* /usr/bin/nvidia-smi 2>/dev/null`)).stdout).toBe('');
}

const bound = ['/mnt/jail/usr/bin/nvidia-smi', `/mnt/jail${LIB}/libcuda.so.${DRIVER}`, `/mnt/jail${LIB}/libnvidia-ml.so.${DRIVER}`];

beforeAll(async () => {
  await tb.reset([OP, OWN]);
}, 300_000);

afterAll(async () => {
  await tb.reset([OP, OWN]); // drop the jail mounts before the exports go away
  for (const e of EXPORTS) rmSync(exportDir(e), { recursive: true, force: true });
}, 300_000);

describe('jail on a GPU Operator host (driver under /run/nvidia/driver)', () => {
  it('binds the root’s files at their root-relative paths; a dry run and a re-run change nothing; the root gone fails and leaves the binds', async () => {
    populateExport('jail-op');
    await tb.reset([OP]);
    await operatorHost(OP);
    const inv = inventory([OP], 'jail-op');
    const fstab = (await sh(OP, 'cat /etc/fstab')).stdout;

    const dry = await provision([PB, '-i', inv, '--check', '--json']);
    expect(dry.code, dry.stderr).toBe(2);
    expect(await mountsUnder(OP, '/mnt/jail')).toEqual([]);
    expect((await sh(OP, 'cat /etc/fstab')).stdout).toBe(fstab);

    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const mounts = await mountsUnder(OP, `/mnt/jail${LIB}/`);
    expect([...mounts, ...(await mountsUnder(OP, '/mnt/jail/usr/bin/'))].sort()).toEqual(bound);
    // each target is the root's file itself, read-only, at the root-relative path
    for (const t of bound) {
      const src = `${ROOT}${t.slice('/mnt/jail'.length)}`;
      expect((await sh(OP, `[ ${t} -ef ${src} ] && findmnt -rn -o OPTIONS ${t}`)).stdout, t).toMatch(/^ro,/);
    }
    expect(summaries(run, OP, 'gpu-binds:/mnt/jail')).toContain(
      `/etc/fstab: GPU bind entries (driver ${DRIVER} from libnvidia-ml.so.${DRIVER} under ${ROOT}, files from globs under ${ROOT})`,
    );
    const fstabNow = (await sh(OP, 'cat /etc/fstab')).stdout;
    // nofail: at boot the driver container's root is empty until its pod runs; its binds fail alone
    expect(fstabNow).toContain(
      `${ROOT}${LIB}/libcuda.so.${DRIVER} /mnt/jail${LIB}/libcuda.so.${DRIVER} none bind,ro,x-systemd.requires-mounts-for=/mnt/jail,nofail 0 0`,
    );
    const smi = await sh(OP, `chroot /mnt/jail /bin/sh -c 'nvidia-smi; ldconfig -p'`);
    expect(smi.stdout).toContain(`fake nvidia-smi on ${OP}\n`);
    expect(smi.stdout).toMatch(/libnvidia-ml\.so\.1 .*=> \S*\/x86_64-linux-gnu\/libnvidia-ml\.so\.1/);

    const again = await provision([PB, '-i', inv, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(recaps(again)[OP]).toMatchObject({ changed: 0, failed: 0 });
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code, check.stderr).toBe(0);

    // the driver container goes away: its root is empty; the host fails with the reason, binds stay
    expect((await sh(OP, `umount ${ROOT} && ls -A ${ROOT}`)).stdout).toBe('');
    const before = await mountsUnder(OP, '/mnt/jail');
    for (const mode of [['--check'], []]) {
      const gone = await provision([PB, '-i', inv, '--json', ...mode]);
      expect(gone.code, gone.stderr).toBe(1);
      const e = resourceEvent(gone, OP, 'gpu-driver:/mnt/jail');
      expect(e?.status).toBe('failed');
      expect(e?.error).toContain(GONE);
      expect(changedResources(gone)).toEqual([]);
    }
    expect(await mountsUnder(OP, '/mnt/jail')).toEqual(before);
    expect((await sh(OP, 'cat /etc/fstab')).stdout).toBe(fstabNow);
  });

  it('the driver container started again (its root mounted anew, the same files): the binds follow it, the old ones unmounted, not left under', async () => {
    populateExport('jail-op');
    await tb.reset([OP]);
    await operatorHost(OP);
    const inv = inventory([OP], 'jail-op');
    const first = await provision([PB, '-i', inv, '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(await mountsAt(OP, bound)).toEqual(bound.map(() => 1));
    // the pod again: a new root filesystem at the same path; the jail's binds still show the old one
    expect((await sh(OP, `umount ${ROOT}`)).code).toBe(0);
    await operatorHost(OP);
    const sameAsRoot = (t: string) => sh(OP, `[ ${t} -ef ${ROOT}${t.slice('/mnt/jail'.length)} ]`).then((r) => r.code === 0);
    expect(await sameAsRoot(bound[0])).toBe(false);

    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(summaries(run, OP, 'gpu-binds:/mnt/jail').filter((c) => c.endsWith(', in place of the stale bind there'))).toHaveLength(
      bound.length,
    );
    expect(await mountsAt(OP, bound)).toEqual(bound.map(() => 1));
    for (const t of bound) expect(await sameAsRoot(t), t).toBe(true);
    const again = await provision([PB, '-i', inv, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(changedResources(again)).toEqual([]);
  });

  it('a host moved to the GPU Operator with its old host driver left: the root whose libraries match the loaded module serves the jail', async () => {
    populateExport('jail-op-left');
    await tb.reset([OP]);
    await operatorHost(OP);
    await installFiles(OP, driverFiles(OLD_DRIVER)); // the host driver of before, /usr/bin/nvidia-smi with it
    await fakeProcVersion(OP, DRIVER); // the operator's module is loaded
    const run = await provision([PB, '-i', inventory([OP], 'jail-op-left'), '--json']);
    expect(run.code, run.stderr).toBe(0);
    const mounts = [...(await mountsUnder(OP, `/mnt/jail${LIB}/`)), ...(await mountsUnder(OP, '/mnt/jail/usr/bin/'))].sort();
    expect(mounts).toEqual(bound);
    for (const t of bound)
      expect((await sh(OP, `[ ${t} -ef ${ROOT}${t.slice('/mnt/jail'.length)} ] && echo same`)).stdout, t).toBe('same\n');
    expect(summaries(run, OP, 'gpu-binds:/mnt/jail')).toContain(
      `/etc/fstab: GPU bind entries (driver ${DRIVER} from /proc/driver/nvidia/version, files from globs under ${ROOT})`,
    );
  });

  it('files on disk of another version than the loaded module (upgraded without a reboot): fails, binds and fstab left as they were', async () => {
    populateExport('jail-op-stale');
    await tb.reset([OWN]);
    await installFiles(OWN, driverFiles(OLD_DRIVER));
    await fakeProcVersion(OWN, OLD_DRIVER);
    const inv = inventory([OWN], 'jail-op-stale');
    const first = await provision([PB, '-i', inv, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const libs = [`/mnt/jail${LIB}/libcuda.so.${OLD_DRIVER}`, `/mnt/jail${LIB}/libnvidia-ml.so.${OLD_DRIVER}`];
    expect(await mountsUnder(OWN, `/mnt/jail${LIB}/`)).toEqual(libs);
    // the package upgrade: the new version's files in, the old ones out; the old module stays loaded
    await installFiles(OWN, driverFiles(DRIVER));
    expect((await sh(OWN, `rm ${LIB}/libcuda.so.${OLD_DRIVER} ${LIB}/libnvidia-ml.so.${OLD_DRIVER}`)).code).toBe(0);
    const fstab = (await sh(OWN, 'cat /etc/fstab')).stdout;
    const before = await mountsUnder(OWN, '/mnt/jail');
    for (const mode of [['--check'], []]) {
      const stale = await provision([PB, '-i', inv, '--json', ...mode]);
      expect(stale.code, stale.stderr).toBe(1);
      const e = resourceEvent(stale, OWN, 'gpu-driver:/mnt/jail');
      expect(e?.status).toBe('failed');
      expect(e?.error).toContain(
        `driver files on disk are ${DRIVER}, the loaded kernel module is ${OLD_DRIVER} (/proc/driver/nvidia/version): no libnvidia-ml.so.${OLD_DRIVER} or libcuda.so.${OLD_DRIVER}, nothing bound; reboot the host`,
      );
      expect(changedResources(stale)).toEqual([]);
    }
    expect(await mountsUnder(OWN, '/mnt/jail')).toEqual(before);
    expect((await sh(OWN, 'cat /etc/fstab')).stdout).toBe(fstab);
  });

  it('counts in the fleet version check: another GPU host of the jail with another version makes both refuse', async () => {
    populateExport('jail-op-mixed');
    await tb.reset([OP, OWN]);
    await operatorHost(OP);
    await installFiles(OWN, driverFiles(OLD_DRIVER));
    const inv = inventory([OP, OWN], 'jail-op-mixed');
    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, run.stderr).toBe(1);
    for (const h of [OP, OWN]) {
      const e = resourceEvent(run, h, 'gpu-driver:/mnt/jail');
      expect(e?.status).toBe('failed');
      expect(e?.error).toContain(
        `${OP} ${DRIVER} (libnvidia-ml.so.${DRIVER} under ${ROOT}), ${OWN} ${OLD_DRIVER} (libnvidia-ml.so.${OLD_DRIVER})`,
      );
      expect(await mountsUnder(h, '/mnt/jail')).toEqual([]);
    }
  });
});
