// Issue "Jail" and #24 acceptance on the test bed. The kernel here has no NFS server or client, so
// each shared jail export is a directory on the runner (.testbed/shared/jail*) that the test bed
// binds into every host at /srv/shared; the playbook mounts it with fstype `none` (a bind, without
// jail_options), the code path an NFS source takes except for the fstype. An export is a hard-linked copy of the
// bed's Debian rootfs with the populated marker.
//
// Test doubles (no GPU here, said so): fake NVIDIA driver files are real ELF shared objects built
// with gcc, with the driver's sonames, so that ldconfig inside the jail indexes them; the running
// driver's /proc/driver/nvidia/version is a file on a tmpfs mounted over the host's /proc/driver;
// `nvidia-container-cli` is a script printing a recorded `list` output (the format of
// libnvidia-container's src/cli/list.c: one path per line, devices, binaries, libraries, IPC,
// firmware); an aarch64 host is one whose `uname -m` (a wrapper earlier in PATH) and
// /proc/sys/kernel/arch (a file bound over it) say aarch64;
// the jail's ldconfig is wrapped by a slow one to hold the lock while another host waits.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, recaps, writeInventory, type CliRun } from './helpers.ts';
import {
  DRIVER,
  driverFiles,
  elf,
  exportDir,
  fakeProcVersion,
  installFiles,
  LIB,
  mountsAt,
  OLD_DRIVER,
  populateExport,
  ROOTFS,
  smi,
} from './jail-fixtures.ts';

const PB = 'playbooks/jail.ts';
const ARM_LIB = '/usr/lib/aarch64-linux-gnu';
const MARKER = 'racksmith gpu placeholder\n';

/**
 * The main fleet: two GPU hosts found by globs, one by a fake nvidia-container-cli, one CPU host
 * (not tb6/tb7: storage.test.ts may use those on the same bed meanwhile). The other cases reuse
 * these hosts, each set up afresh, and the fleet is set up again when a test needs it after them.
 */
const GLOB_GPU = ['tb8', 'tb9'];
const CLI_GPU = 'tb5';
const CPU = 'tb10';
const FLEET = [CLI_GPU, ...GLOB_GPU, CPU];
let fleetReady = false;

const vars = (exp: string) => ({
  jail_source: `${tb.sharedMount}/${exp}`,
  jail_fstype: 'none', // binds without jail_options: [bind]
  jail_submounts: [{ path: '/mnt/scratch', source: 'tmpfs', fstype: 'tmpfs', options: ['size=16m', 'mode=1777'] }],
  jail_bind_files: ['/etc/hosts', '/etc/resolv.conf'],
  jail_bind_dirs: ['/var/spool/slurmd'],
});
const inventory = (
  hosts: string[],
  exp: string,
  extra: Record<string, unknown> = {},
  hostVars: Record<string, Record<string, unknown>> = {},
) => writeInventory({ hosts, groups: { jail: { hosts } }, vars: { ...vars(exp), ...extra }, hostVars });
const fleetInventory = (extra: Record<string, unknown> = {}) => inventory(FLEET, 'jail', extra, { [CPU]: { jail_gpu: false } });
const sh = (h: string, cmd: string) => tb.hostExec(h, cmd);
const inJail = (h: string, cmd: string) => sh(h, `chroot /mnt/jail /bin/sh -c '${cmd.replace(/'/g, `'\\''`)}'`);

// ---- fake driver files --------------------------------------------------------------------------

/** A recorded `nvidia-container-cli list` (libcuda where only the CLI knows it; a video library that compute,utility leave out). */
const CLI_LIST = `/dev/nvidiactl
/dev/nvidia-uvm
/dev/nvidia-uvm-tools
/dev/nvidia-modeset
/dev/nvidia0
/usr/bin/nvidia-smi
/usr/bin/nvidia-debugdump
/usr/bin/nvidia-persistenced
/usr/bin/nvidia-cuda-mps-control
/usr/bin/nvidia-cuda-mps-server
${LIB}/libnvidia-ml.so.${DRIVER}
/opt/nvidia/lib/libcuda.so.${DRIVER}
${LIB}/libnvcuvid.so.${DRIVER}
/run/nvidia-persistenced/socket
/lib/firmware/nvidia/${DRIVER}/gsp_ga10x.bin
`;
const cliHostFiles = (): Record<string, string> => ({
  [`${LIB}/libnvidia-ml.so.${DRIVER}`]: elf('libnvidia-ml.so.1'),
  [`/opt/nvidia/lib/libcuda.so.${DRIVER}`]: elf('libcuda.so.1'),
  [`${LIB}/libnvcuvid.so.${DRIVER}`]: elf('libnvcuvid.so.1'),
  '/usr/bin/nvidia-smi': smi(),
  [`/lib/firmware/nvidia/${DRIVER}/gsp_ga10x.bin`]: Buffer.alloc(4096, 7).toString('base64'),
  '/usr/local/bin/nvidia-container-cli': Buffer.from(
    `#!/bin/sh\n# test double: a recorded nvidia-container-cli list\n[ "$1" = list ] || { echo "fake nvidia-container-cli: only list" >&2; exit 1; }\ncat <<'EOF'\n${CLI_LIST}EOF\n`,
  ).toString('base64'),
});

// ---- jail exports -------------------------------------------------------------------------------

/** Hosts fresh, their driver files (or none) installed, node-local spool directories made. */
async function freshHosts(hosts: string[], drivers: Record<string, Record<string, string>>) {
  fleetReady = false;
  await tb.reset(hosts);
  for (const h of hosts) {
    const r = await sh(h, `mkdir -p /var/spool/slurmd && echo ${h} > /var/spool/slurmd/who`);
    expect(r.code, r.stderr).toBe(0);
    if (drivers[h]) await installFiles(h, drivers[h]);
  }
}

async function freshFleet() {
  populateExport('jail');
  await freshHosts(FLEET, { [CLI_GPU]: cliHostFiles(), ...Object.fromEntries(GLOB_GPU.map((h) => [h, driverFiles(DRIVER)])) });
  fleetReady = true;
}

/** The fleet converged (set up afresh unless the test before left it as it was). */
async function convergedFleet() {
  if (!fleetReady) await freshFleet();
  const run = await provision([PB, '-i', fleetInventory(), '--json']);
  expect(run.code, run.stderr).toBe(0);
}

const resourceEvent = (run: CliRun, host: string, id: string) =>
  run.events.find((e) => e.type === 'resource' && e.host === host && e.id === id);
const summaries = (run: CliRun, host: string, id: string): string[] =>
  (resourceEvent(run, host, id)?.changes ?? []).map((c: { summary: string }) => c.summary);
const jailMounts = async (h: string) => (await sh(h, 'findmnt -rn -o TARGET | grep -c ^/mnt/jail || true')).stdout.trim();

/** Every path `ldconfig -p` lists inside the host's jail that does not lead to an ELF object. */
async function danglingCacheEntries(h: string): Promise<string[]> {
  const r = await inJail(
    h,
    `ldconfig -p | sed -n 's/.* => //p' | while read -r p; do [ "$(head -c 4 "$p" 2>/dev/null | od -An -c | tr -d ' ')" = 177ELF ] || echo "$p"; done`,
  );
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.split('\n').filter(Boolean);
}

beforeAll(async () => {
  await tb.reset(FLEET);
}, 300_000);

afterAll(async () => {
  await tb.reset(FLEET); // drop the jail mounts before the exports go away
  for (const e of ['jail', 'jail-2v', 'jail-mixed', 'jail-arm', 'jail-race']) rmSync(exportDir(e), { recursive: true, force: true });
}, 300_000);

describe('jail', () => {
  it('--check lists each mount and fstab entry that would be added, changes nothing, exit 2', async () => {
    await freshFleet();
    const fstab = (await sh(CPU, 'cat /etc/fstab')).stdout;
    const lib = join(exportDir('jail'), LIB.slice(1));
    const before = execFileSync('ls', ['-a', lib], { encoding: 'utf8' });
    const run = await provision([PB, '-i', fleetInventory(), '--check', '--diff']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`mount ${tb.sharedMount}/jail on /mnt/jail`);
    expect(run.stderr).toContain('+/srv/shared/jail /mnt/jail none bind 0 0');
    expect(run.stderr).toMatch(/depends on a pending change of mount:\/mnt\/jail/);
    for (const h of FLEET) {
      expect((await sh(h, 'findmnt -rn /mnt/jail')).stdout).toBe('');
      expect((await sh(h, 'ls /var/lib/racksmith 2>/dev/null')).stdout).toBe('');
    }
    expect((await sh(CPU, 'cat /etc/fstab')).stdout).toBe(fstab);
    expect(execFileSync('ls', ['-a', lib], { encoding: 'utf8' })).toBe(before); // no placeholder made
  });

  it('first run mounts everything on every host, says where each file set came from, second run changes nothing', async () => {
    await freshFleet();
    const first = await provision([PB, '-i', fleetInventory(), '--json']);
    expect(first.code, first.stderr).toBe(0);
    for (const h of FLEET) {
      const mounts = (await sh(h, 'findmnt -rn -o TARGET | grep ^/mnt/jail | sort')).stdout.split('\n');
      for (const p of ['/mnt/jail', '/mnt/jail/tmp', '/mnt/jail/run', '/mnt/jail/proc', '/mnt/jail/sys', '/mnt/jail/dev'])
        expect(mounts).toContain(p);
      for (const p of ['/mnt/jail/var/log', '/mnt/jail/etc/hosts', '/mnt/jail/mnt/scratch', '/mnt/jail/var/spool/slurmd'])
        expect(mounts).toContain(p);
      const fstab = (await sh(h, 'cat /etc/fstab')).stdout;
      expect(fstab).toContain('/run /mnt/jail/run none rbind,x-systemd.requires-mounts-for=/mnt/jail 0 0');
      expect(fstab).toContain('/var/spool/slurmd /mnt/jail/var/spool/slurmd none bind,x-systemd.requires-mounts-for=/mnt/jail 0 0');
      expect(fstab.indexOf(' /mnt/jail none ')).toBeLessThan(fstab.indexOf(' /mnt/jail/tmp '));
      // a bound file whose source may be missing at boot, and every GPU or stand-in bind, may fail alone
      expect(fstab).toContain('/etc/resolv.conf /mnt/jail/etc/resolv.conf none bind,x-systemd.requires-mounts-for=/mnt/jail,nofail 0 0');
      expect(fstab).toMatch(
        new RegExp(
          `^\\S+ /mnt/jail\\S*/libnvidia-ml\\.so\\.${DRIVER.replace(/\./g, '\\.')} none bind,ro,x-systemd\\.requires-mounts-for=/mnt/jail,nofail 0 0$`,
          'm',
        ),
      );
      // the jail is local here (a bind): nothing waits for the network
      expect(fstab).not.toContain('_netdev');
    }
    // the source of each host's file set, in the run's output and in its fstab block
    for (const h of GLOB_GPU) {
      expect(summaries(first, h, 'gpu-binds:/mnt/jail')).toContain(
        `/etc/fstab: GPU bind entries (driver ${DRIVER} from libnvidia-ml.so.${DRIVER}, files from globs)`,
      );
      expect((await sh(h, 'cat /etc/fstab')).stdout).toContain(
        `# driver ${DRIVER} (libnvidia-ml.so.${DRIVER}); files from globs, capabilities compute,utility`,
      );
    }
    expect(summaries(first, CLI_GPU, 'gpu-binds:/mnt/jail')).toContain(
      `/etc/fstab: GPU bind entries (driver ${DRIVER} from libnvidia-ml.so.${DRIVER}, files from nvidia-container-cli list)`,
    );
    expect(summaries(first, CPU, 'gpu-standins:/mnt/jail')).toContain('/etc/fstab: GPU stand-in entries');
    const second = await provision([PB, '-i', fleetInventory(), '--json']);
    expect(second.code, second.stderr).toBe(0);
    for (const h of FLEET) expect(recaps(second)[h]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    const check = await provision([PB, '-i', fleetInventory(), '--check', '--json']);
    expect(check.code, check.stderr).toBe(0);
  });

  it('chroot /mnt/jail: own /tmp and spool per host, shared files everywhere, GPU files on GPU hosts', async () => {
    await convergedFleet();
    for (const h of FLEET) expect((await inJail(h, `echo ${h} > /tmp/who`)).code).toBe(0);
    for (const h of FLEET) expect((await inJail(h, 'cat /tmp/who /var/spool/slurmd/who')).stdout).toBe(`${h}\n${h}\n`);
    expect(existsSync(join(exportDir('jail'), 'tmp/who'))).toBe(false); // node-local, not on the shared export
    writeFileSync(join(exportDir('jail'), 'etc/shared-note'), 'written on the export\n');
    for (const h of FLEET) expect((await inJail(h, 'cat /etc/shared-note')).stdout).toBe('written on the export\n');

    const want = Buffer.from(elf('libnvidia-ml.so.1'), 'base64');
    for (const h of [...GLOB_GPU, CLI_GPU]) {
      const lib = await sh(h, `base64 -w0 /mnt/jail${LIB}/libnvidia-ml.so.${DRIVER}`);
      expect(Buffer.from(lib.stdout, 'base64').equals(want)).toBe(true);
      expect((await inJail(h, 'ldconfig -p')).stdout).toMatch(/libnvidia-ml\.so\.1 .*=> \S*\/x86_64-linux-gnu\/libnvidia-ml\.so\.1/);
      expect((await inJail(h, 'nvidia-smi')).stdout).toBe(`fake nvidia-smi on ${h}\n`);
      expect((await sh(h, `findmnt -rn -o OPTIONS /mnt/jail${LIB}/libcuda.so.${DRIVER}`)).stdout).toMatch(/^ro,/);
      expect(await danglingCacheEntries(h)).toEqual([]);
    }
    // placeholders on the shared export carry the marker, never 0 bytes
    for (const f of [`libnvidia-ml.so.${DRIVER}`, `libcuda.so.${DRIVER}`])
      expect(readFileSync(join(exportDir('jail'), LIB.slice(1), f), 'utf8')).toBe(MARKER);
  });

  it('a fake nvidia-container-cli drives the file set on its host; the globs drive it elsewhere', async () => {
    await convergedFleet();
    const src = (h: string, t: string) => sh(h, `findmnt -rn -o SOURCE /mnt/jail${t}`).then((r) => r.stdout.trim());
    // libcuda where only the CLI lists it; the video library it lists is left out (compute,utility)
    expect(await src(CLI_GPU, `${LIB}/libcuda.so.${DRIVER}`)).toMatch(
      new RegExp(`\\[/opt/nvidia/lib/libcuda\\.so\\.${DRIVER.replace(/\./g, '\\.')}\\]$`),
    );
    expect(await src(GLOB_GPU[0], `${LIB}/libcuda.so.${DRIVER}`)).toMatch(
      new RegExp(`\\[${LIB}/libcuda\\.so\\.${DRIVER.replace(/\./g, '\\.')}\\]$`),
    );
    expect(
      (await sh(CLI_GPU, `findmnt -rn /mnt/jail${LIB}/libnvcuvid.so.${DRIVER}; ls /mnt/jail${LIB}/libnvcuvid.so.${DRIVER} 2>&1`)).stdout,
    ).toMatch(/No such file/);
    // firmware goes to its own path, through the jail's /lib -> usr/lib link
    const fw = `/usr/lib/firmware/nvidia/${DRIVER}/gsp_ga10x.bin`;
    expect((await sh(CLI_GPU, `findmnt -rn -o TARGET /mnt/jail${fw}`)).stdout.trim()).toBe(`/mnt/jail${fw}`);
    expect((await sh(CLI_GPU, 'cat /etc/fstab')).stdout).toContain('files from nvidia-container-cli list, capabilities compute,utility');
    expect((await sh(GLOB_GPU[0], `findmnt -rn /mnt/jail${fw}`)).stdout).toBe('');
  });

  it('a CPU node binds the stand-in over the placeholders: the shared ld.so.cache has no dangling entry there', async () => {
    await convergedFleet();
    const lib = `/mnt/jail${LIB}/libnvidia-ml.so.${DRIVER}`;
    expect((await sh(CPU, `findmnt -rn -o SOURCE,OPTIONS ${lib}`)).stdout).toMatch(
      /^\S*\[\/var\/lib\/racksmith\/jail-gpu-standin\.so\] ro,/,
    );
    expect((await inJail(CPU, 'ldconfig -p')).stdout).toMatch(/libnvidia-ml\.so\.1 .*=> /);
    expect(await danglingCacheEntries(CPU)).toEqual([]);
    // what a tool in the jail does with it: dlopen works (and finds no NVML in it)
    const py = await inJail(CPU, `python3 -c 'import ctypes; l = ctypes.CDLL("libnvidia-ml.so.1"); print(hasattr(l, "nvmlInit_v2"))'`);
    expect(py.stdout, py.stderr).toBe('False\n');
    // without the stand-in the same cache leads to the placeholder: a dangling entry (the check can fail)
    expect((await sh(CPU, `umount ${lib}`)).code).toBe(0);
    expect(await danglingCacheEntries(CPU)).toEqual([expect.stringMatching(/\/x86_64-linux-gnu\/libnvidia-ml\.so\.1$/)]);
    const run = await provision([PB, '-i', fleetInventory(), '-l', CPU, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(changedResources(run)).toEqual([{ host: CPU, id: 'gpu-standins:/mnt/jail' }]);
    expect(await danglingCacheEntries(CPU)).toEqual([]);
  });

  it('the stand-in rewritten by rename: its binds follow it, the old ones unmounted, not left under', async () => {
    await convergedFleet();
    fleetReady = false; // the stand-in file changes identity
    const S = '/var/lib/racksmith/jail-gpu-standin.so';
    const targets = (await sh(CPU, `findmnt -rn -o TARGET,SOURCE | grep '\\[${S}\\]' | cut -d' ' -f1`)).stdout.split('\n').filter(Boolean);
    expect(targets.length).toBeGreaterThan(0);
    expect(await mountsAt(CPU, targets)).toEqual(targets.map(() => 1));
    expect((await sh(CPU, `cp -p ${S} ${S}.new && mv ${S}.new ${S}`)).code).toBe(0);
    const run = await provision([PB, '-i', fleetInventory(), '-l', CPU, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(changedResources(run)).toEqual([{ host: CPU, id: 'gpu-standins:/mnt/jail' }]);
    expect(summaries(run, CPU, 'gpu-standins:/mnt/jail').filter((c) => c.endsWith(', in place of the stale bind there'))).toHaveLength(
      targets.length,
    );
    expect(await mountsAt(CPU, targets)).toEqual(targets.map(() => 1));
    for (const t of targets) expect((await sh(CPU, `[ ${t} -ef ${S} ]`)).code, t).toBe(0);
    expect(await danglingCacheEntries(CPU)).toEqual([]);
    const again = await provision([PB, '-i', fleetInventory(), '-l', CPU, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(changedResources(again)).toEqual([]);
  });

  it('a bind unmounted by hand is restored, nothing else changes', async () => {
    await convergedFleet();
    await sh('tb9', 'umount /mnt/jail/tmp');
    const run = await provision([PB, '-i', fleetInventory(), '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(changedResources(run)).toEqual([{ host: 'tb9', id: 'mount:/mnt/jail/tmp' }]);
  });

  // Ansible's copy and template, `sed -i` and dhclient rewrite a file by rename; a service makes
  // its runtime directory again: a bind keeps showing the deleted one until it is bound again.
  it('a bound file rewritten by rename and a bound directory made again are bound again, nothing else changes; the dry run first', async () => {
    await convergedFleet();
    fleetReady = false; // this host's /etc/hosts and spool change
    const h = CPU;
    const replace = await sh(
      h,
      "cp /etc/hosts /etc/hosts.new && echo '10.9.9.9 replaced' >> /etc/hosts.new && mv /etc/hosts.new /etc/hosts && rm -r /var/spool/slurmd && mkdir /var/spool/slurmd && echo again > /var/spool/slurmd/who",
    );
    expect(replace.code, replace.stderr).toBe(0);
    const seen = async () => (await inJail(h, 'cat /etc/hosts /var/spool/slurmd/who 2>&1')).stdout;
    expect(await seen()).not.toMatch(/replaced|again/); // the jail still shows the deleted ones
    const check = await provision([PB, '-i', fleetInventory(), '-l', h, '--check']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain(
      're-bind /etc/hosts on /mnt/jail/etc/hosts: /etc/hosts was replaced since it was bound there (the bind still shows the deleted one)',
    );
    // (a later mount of the jail reads the mount table the first re-bind changes: pending on it)
    expect(check.stderr).toMatch(/mount:\/mnt\/jail\/var\/spool\/slurmd {2}\[tb10\]\n +depends on a pending change/);
    expect(await seen()).not.toMatch(/replaced|again/);
    const run = await provision([PB, '-i', fleetInventory(), '-l', h, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(changedResources(run)).toEqual([
      { host: h, id: 'mount:/mnt/jail/etc/hosts' },
      { host: h, id: 'mount:/mnt/jail/var/spool/slurmd' },
    ]);
    expect(await seen()).toMatch(/10\.9\.9\.9 replaced\n(.*\n)*again\n$/);
    // the stale binds are gone, not hidden under the new ones
    expect(await mountsAt(h, ['/mnt/jail/etc/hosts', '/mnt/jail/var/spool/slurmd'])).toEqual([1, 1]);
    expect((await sh(h, 'cat /proc/self/mountinfo')).stdout).not.toContain('//deleted');
    const again = await provision([PB, '-i', fleetInventory(), '-l', h, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(changedResources(again)).toEqual([]);
  });

  it('survives a reboot: fstab brings the same layout back in order, directory binds included', async () => {
    await convergedFleet();
    await tb.reboot(['tb8', CPU]);
    for (const h of ['tb8', CPU]) {
      expect((await inJail(h, 'cat /var/spool/slurmd/who')).stdout).toBe(`${h}\n`);
      expect((await sh(h, 'findmnt -rn -o TARGET /mnt/jail/var/spool/slurmd')).stdout.trim()).toBe('/mnt/jail/var/spool/slurmd');
    }
    expect(await danglingCacheEntries(CPU)).toEqual([]);
    const run = await provision([PB, '-i', fleetInventory(), '-l', `tb8,${CPU}`, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(changedResources(run)).toEqual([]);
  });

  it('boot options: an older racksmith’s fstab lines, and a jail said to be on the network, change in fstab only (a dry run first, then once), never the live mounts', async () => {
    await convergedFleet();
    const hosts = ['tb8', CPU];
    const jailLines = async (h: string) => (await sh(h, 'cat /etc/fstab')).stdout.split('\n').filter((l) => / \/mnt\/jail(\/| )/.test(l));
    /** The jail's mounts as the kernel lists them: a re-mount or an unmount and mount would show (IDs, options). */
    const live = (h: string) => sh(h, "grep ' /mnt/jail' /proc/self/mountinfo").then((r) => r.stdout);
    // as racksmith wrote them before: no nofail, no _netdev
    for (const h of hosts) expect((await sh(h, `sed -i -e '/ \\/mnt\\/jail/s/,nofail 0 0$/ 0 0/' /etc/fstab`)).code).toBe(0);
    const old = Object.fromEntries(await Promise.all(hosts.map(async (h) => [h, (await sh(h, 'cat /etc/fstab')).stdout])));
    expect(old[CPU]).not.toContain('nofail');
    const mounted = Object.fromEntries(await Promise.all(hosts.map(async (h) => [h, await live(h)])));

    for (const [label, extra] of [
      ['older lines', {}],
      ['jail_options: [_netdev]', { jail_options: ['_netdev'] }],
    ] as const) {
      const inv = fleetInventory(extra);
      const before = Object.fromEntries(await Promise.all(hosts.map(async (h) => [h, (await sh(h, 'cat /etc/fstab')).stdout])));
      const dry = await provision([PB, '-i', inv, '-l', hosts.join(','), '--check', '--diff']);
      expect(dry.code, `${label}: ${dry.stderr}`).toBe(2);
      for (const h of hosts) expect((await sh(h, 'cat /etc/fstab')).stdout, label).toBe(before[h]);
      const run = await provision([PB, '-i', inv, '-l', hosts.join(','), '--json']);
      expect(run.code, run.stderr).toBe(0);
      // every change is a line of /etc/fstab: nothing mounted, re-mounted or unmounted
      const made = run.events.filter((e) => e.type === 'resource' && e.status === 'changed');
      expect(made.length, label).toBeGreaterThan(0);
      for (const e of made) for (const c of e.changes ?? []) expect(c.summary, label).toMatch(/^\/etc\/fstab: /);
      for (const h of hosts) expect(await live(h), label).toBe(mounted[h]);
      if (label === 'older lines') {
        expect(dry.stderr).toContain('-/etc/hosts /mnt/jail/etc/hosts none bind,x-systemd.requires-mounts-for=/mnt/jail 0 0');
        expect(dry.stderr).toContain('+/etc/hosts /mnt/jail/etc/hosts none bind,x-systemd.requires-mounts-for=/mnt/jail,nofail 0 0');
        expect(changedResources(run)).toEqual(
          expect.arrayContaining([
            { host: 'tb8', id: 'gpu-binds:/mnt/jail' },
            { host: CPU, id: 'gpu-standins:/mnt/jail' },
            { host: CPU, id: 'mount:/mnt/jail/etc/resolv.conf' },
          ]),
        );
        for (const h of hosts) for (const l of await jailLines(h)) if (/ bind,ro,/.test(l)) expect(l).toMatch(/,nofail 0 0$/);
      } else {
        expect(dry.stderr).toContain('+/srv/shared/jail /mnt/jail none bind,_netdev 0 0');
        // the jail waits for the network: so does every entry under it, the busy jail left mounted
        for (const h of hosts) {
          const lines = await jailLines(h);
          expect(lines.length).toBeGreaterThan(10);
          for (const l of lines) expect(l, h).toMatch(/,_netdev(,nofail)? 0 0$/);
        }
      }
      const again = await provision([PB, '-i', inv, '-l', hosts.join(','), '--json']);
      expect(again.code, again.stderr).toBe(0);
      for (const h of hosts) expect(recaps(again)[h], label).toMatchObject({ changed: 0, failed: 0 });
      const check = await provision([PB, '-i', inv, '-l', hosts.join(','), '--check', '--json']);
      expect(check.code, `${label}: ${check.stderr}`).toBe(0);
    }
  });

  it('two driver versions on one host: only the running one is bound', async () => {
    populateExport('jail-2v');
    await freshHosts(['tb9'], { tb9: { ...driverFiles(OLD_DRIVER), ...driverFiles(DRIVER) } });
    const inv = inventory(['tb9'], 'jail-2v');
    // without the kernel module's answer the two cannot be told apart: refused, nothing mounted
    const blind = await provision([PB, '-i', inv, '--json']);
    expect(blind.code).toBe(1);
    expect(resourceEvent(blind, 'tb9', 'gpu-driver:/mnt/jail')?.error).toMatch(
      new RegExp(`driver versions ${OLD_DRIVER.replace(/\./g, '\\.')} and ${DRIVER.replace(/\./g, '\\.')} are installed`),
    );
    expect(await jailMounts('tb9')).toBe('0');
    await fakeProcVersion('tb9', DRIVER);
    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const bound = (await sh('tb9', `findmnt -rn -o TARGET | grep '^/mnt/jail${LIB}/' | sort`)).stdout;
    expect(bound).toBe(`/mnt/jail${LIB}/libcuda.so.${DRIVER}\n/mnt/jail${LIB}/libnvidia-ml.so.${DRIVER}\n`);
    expect(existsSync(join(exportDir('jail-2v'), LIB.slice(1), `libcuda.so.${OLD_DRIVER}`))).toBe(false); // no placeholder for it
    expect((await sh('tb9', 'cat /etc/fstab')).stdout).toContain(`# driver ${DRIVER} (/proc/driver/nvidia/version)`);
    const again = await provision([PB, '-i', inv, '--json']);
    expect(recaps(again)['tb9']).toMatchObject({ changed: 0, failed: 0 });
  });

  it('two GPU hosts sharing a jail with different driver versions: refused on both, nothing mounted', async () => {
    populateExport('jail-mixed');
    await freshHosts(['tb8', 'tb9'], { tb8: driverFiles(DRIVER), tb9: driverFiles(OLD_DRIVER) });
    const inv = inventory(['tb8', 'tb9'], 'jail-mixed');
    const fstab = (await sh('tb8', 'cat /etc/fstab')).stdout;
    for (const mode of [['--check'], []]) {
      const run = await provision([PB, '-i', inv, '--json', ...mode]);
      expect(run.code, run.stderr).toBe(1);
      for (const h of ['tb8', 'tb9']) {
        const e = resourceEvent(run, h, 'gpu-driver:/mnt/jail');
        expect(e?.status).toBe('failed');
        expect(e?.error).toContain(`tb8 ${DRIVER} (libnvidia-ml.so.${DRIVER}), tb9 ${OLD_DRIVER} (libnvidia-ml.so.${OLD_DRIVER})`);
        expect(resourceEvent(run, h, 'mount:/mnt/jail')?.status).toBe('skipped');
        expect(await jailMounts(h)).toBe('0');
      }
    }
    expect((await sh('tb8', 'cat /etc/fstab')).stdout).toBe(fstab);
    expect(readFileSync(join(exportDir('jail-mixed'), 'etc/ld.so.cache')).equals(readFileSync(join(ROOTFS, 'etc/ld.so.cache')))).toBe(true);
  });

  it('an aarch64 host uses aarch64-linux-gnu, from its own answer', async () => {
    // the jail of aarch64 nodes is an aarch64 rootfs; here the x86 rootfs with the aarch64 directory in its ld.so.conf
    populateExport('jail-arm', (dir) => writeFileSync(join(dir, 'etc/ld.so.conf.d/aarch64-linux-gnu.conf'), `${ARM_LIB}\n`));
    await freshHosts(['tb10'], {
      tb10: {
        ...driverFiles(DRIVER, ARM_LIB),
        '/usr/local/bin/uname': Buffer.from(
          '#!/bin/sh\n# test double: an aarch64 machine\n[ "$1" = -m ] && { echo aarch64; exit 0; }\nexec /usr/bin/uname "$@"\n',
        ).toString('base64'),
      },
    });
    // the kernel's own answer, which the probe reads before uname where the kernel has it
    // (Linux 6.1+): the same double, bound over it (a reset host starts without the mount)
    const arch = await sh(
      'tb10',
      '[ ! -e /proc/sys/kernel/arch ] || { echo aarch64 > /run/tb-arch && mount --bind /run/tb-arch /proc/sys/kernel/arch; }',
    );
    expect(arch.code, arch.stderr).toBe(0);
    const inv = inventory(['tb10'], 'jail-arm');
    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const bound = (await sh('tb10', `findmnt -rn -o TARGET | grep -- '-linux-gnu/' | sort`)).stdout;
    expect(bound).toBe(`/mnt/jail${ARM_LIB}/libcuda.so.${DRIVER}\n/mnt/jail${ARM_LIB}/libnvidia-ml.so.${DRIVER}\n`);
    expect((await inJail('tb10', 'ldconfig -p')).stdout).toMatch(/libnvidia-ml\.so\.1 .*=> \S*\/aarch64-linux-gnu\/libnvidia-ml\.so\.1/);
    const again = await provision([PB, '-i', inv, '--json']);
    expect(recaps(again)['tb10']).toMatchObject({ changed: 0, failed: 0 });
  });

  it('two hosts whose GPU steps overlap: the second waits on the lock, one consistent ld.so.cache', async () => {
    const race = exportDir('jail-race');
    // the jail's ldconfig, slowed: a cache-writing run holds the lock until the runner says go
    populateExport('jail-race', (dir) => {
      execFileSync('mv', [join(dir, 'usr/sbin/ldconfig'), join(dir, 'usr/sbin/ldconfig.real')]);
      writeFileSync(
        join(dir, 'usr/sbin/ldconfig'),
        `#!/bin/sh\n# test double: a slow ldconfig\ncase " $* " in *" -p "*) exec /usr/sbin/ldconfig.real "$@" ;; esac\necho "start $(hostname)" >> /etc/rs-ldconfig.log\ni=0; while [ ! -e /etc/rs-go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\necho "end $(hostname)" >> /etc/rs-ldconfig.log\nexec /usr/sbin/ldconfig.real "$@"\n`,
        { mode: 0o755 },
      );
    });
    await freshHosts(['tb8', 'tb9'], { tb8: driverFiles(DRIVER), tb9: driverFiles(DRIVER) });
    const inv = inventory(['tb8', 'tb9'], 'jail-race');
    const runs = Promise.all(['tb8', 'tb9'].map((h) => provision([PB, '-i', inv, '-l', h, '--json'])));
    // the event: one host holds the ldconfig lock while the other is blocked on it (/proc/locks)
    const lock = join(race, 'etc/complement_jail_ldconfig.lock');
    const waiting = await pollUntil(() => {
      if (!existsSync(lock)) return false;
      const ino = statSync(lock).ino;
      return new RegExp(`-> FLOCK .* [0-9a-f]+:[0-9a-f]+:${ino} `).test(readFileSync('/proc/locks', 'utf8'));
    }, 60_000);
    writeFileSync(join(race, 'etc/rs-go'), '');
    const done = await runs;
    expect(waiting, 'the two hosts never met at the lock').toBe(true);
    for (const r of done) expect(r.code, r.stderr).toBe(0);
    // serialised: each start is followed by its own end
    const log = readFileSync(join(race, 'etc/rs-ldconfig.log'), 'utf8').trim().split('\n');
    expect(log.length).toBeGreaterThanOrEqual(2);
    for (let i = 0; i < log.length; i += 2) expect(log[i + 1]).toBe(log[i].replace('start', 'end'));
    for (const h of ['tb8', 'tb9']) {
      const p = await inJail(h, 'ldconfig -p');
      expect(p.stdout).toMatch(/libnvidia-ml\.so\.1 /);
      expect(p.stdout).toMatch(/libcuda\.so\.1 /);
    }
    expect(execFileSync('sh', ['-c', `ls -a ${race}/etc | grep -c racksmith-new || true`], { encoding: 'utf8' }).trim()).toBe('0');
    const again = await provision([PB, '-i', inv, '--json']);
    expect(changedResources(again)).toEqual([]);
  });

  it('a held jail lock: the host fails after jail_lock_timeout, naming the lock', async () => {
    populateExport('jail-race');
    await freshHosts(['tb8'], { tb8: driverFiles(DRIVER) });
    const lock = join(exportDir('jail-race'), 'etc/complement_jail_ldconfig.lock');
    // another node (the runner stands in) holds Soperator's ldconfig lock until we let go
    const holder = spawn('flock', [lock, 'sh', '-c', 'echo held; cat >/dev/null'], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise<void>((res) => holder.stdout.once('data', () => res()));
    try {
      const t0 = Date.now();
      const run = await provision([PB, '-i', inventory(['tb8'], 'jail-race', { jail_lock_timeout: 2 }), '--json']);
      expect(run.code).toBe(1);
      const e = resourceEvent(run, 'tb8', 'gpu-binds:/mnt/jail');
      expect(e?.status).toBe('failed');
      expect(e?.error).toContain('timed out after 2 s waiting for the lock /mnt/jail/etc/complement_jail_ldconfig.lock');
      expect(Date.now() - t0).toBeGreaterThanOrEqual(2000);
    } finally {
      holder.stdin.end();
    }
    const run = await provision([PB, '-i', inventory(['tb8'], 'jail-race'), '--json']);
    expect(run.code, run.stderr).toBe(0);
  });

  it('a jail mount that fails is under Problems, not under "Changes made"', async () => {
    populateExport('jail-badfs');
    await freshHosts([CPU], {});
    const run = await provision([
      PB,
      '-i',
      inventory([CPU], 'jail-badfs', { jail_fstype: 'rsnosuchfs', jail_options: ['defaults'], jail_bind_dirs: [], jail_gpu: false }),
      '-l',
      CPU,
    ]);
    expect(run.code, run.stderr).toBe(1);
    const made = run.stderr.split('Changes made:')[1]?.split('Problems:')[0] ?? '';
    expect(made).toContain('● directory:/var/lib/racksmith/jail-tmp'); // what was made is listed
    expect(made).not.toContain('mount:/mnt/jail');
    expect(run.stderr).toMatch(/Problems:[\s\S]*mount:\/mnt\/jail: FAILED: step "mount \/mnt\/jail" exit/);
    expect(await jailMounts(CPU)).toBe('0');
    rmSync(exportDir('jail-badfs'), { recursive: true, force: true });
  });

  it('a jail without its populated marker: that host fails with a clear message, nothing mounted', async () => {
    await freshHosts([CPU], {});
    const empty = exportDir('jail-empty');
    execFileSync('mkdir', ['-p', join(empty, 'etc')]);
    const fstab = (await sh(CPU, 'cat /etc/fstab')).stdout;
    const run = await provision([PB, '-i', inventory([CPU], 'jail-empty', { jail_bind_dirs: [], jail_gpu: false }), '-l', CPU, '--json']);
    expect(run.code).toBe(1);
    const root = resourceEvent(run, CPU, 'mount:/mnt/jail');
    expect(root?.status, run.stderr).toBe('failed');
    expect(root?.error).toMatch(/not populated: marker etc\/soperator-jail-populated is missing/);
    expect(await jailMounts(CPU)).toBe('0');
    expect((await sh(CPU, 'cat /etc/fstab')).stdout).toBe(fstab);
    rmSync(empty, { recursive: true, force: true });
  });
});

/** Poll `cond` until it holds or `ms` passed (an event, not a fixed wait); whether it held. */
async function pollUntil(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}
