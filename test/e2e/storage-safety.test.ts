// Issue 18 on the test bed: "provably blank" and "in use" as the kernel sees them, format_allow
// that names exactly one disk, cloned XFS UUIDs, the host-side apply lock and the driver caps.
// 2 hosts x 2 loop disks. Every refused disk is hashed before and after: its data must be
// byte-identical.
//
// Test-bed specifics, and how the tests deal with them (test/testbed/README.md):
//  - hosts have no /dev/loop-control: the loop device over a disk is made on the runner (under
//    the bed's loop allocation lock) and given to the host as a device node of its own; the
//    test detaches it at the end. The kernel shows its backing file as the disk's path;
//  - loop devices have no serial: a shared serial is written into the hosts' udev database, as
//    udevd would record it for two NVMe namespaces of one controller;
//  - "open exclusively by another process" is a python3 process of the host holding O_EXCL
//    (python3 is in the bed's rootfs for the ansible baseline; racksmith itself does not use it);
//    "mounted in another mount namespace" is `unshare -m` inside the host.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, recaps, writeInventory, type CliRun } from './helpers.ts';
import { hddSchedulerMissing, needHddScheduler } from './hdd-scheduler.ts';

const HOSTS = ['tb4', 'tb5'];
const [A, B] = HOSTS;
const PB = 'playbooks/storage.ts';
const GATE = 'test/fixtures/playbooks/gate.ts';
const RACE = 'test/fixtures/playbooks/race.ts';

const disks = (h: string) => tb.host(h).disks;
const kname = (dev: string) => dev.replace('/dev/', '');
const why = (run: CliRun) => `exit ${run.code}\n${run.stderr}`;
const resources = (run: CliRun, host: string) =>
  new Map(run.events.filter((e) => e.type === 'resource' && e.host === host).map((e) => [e.id as string, e]));

const sh = async (h: string, cmd: string, input?: string): Promise<string> => {
  const r = await tb.hostExec(h, cmd, { input });
  if (r.code !== 0) throw new Error(`${h}: ${cmd}: exit ${r.code}: ${r.stderr}`);
  return r.stdout;
};
// md5 of the whole device: any byte a format or wipe would change shows (sha256sum of a 1 GiB
// loop disk takes 5x as long on the bed's 2 shared cores)
const devSum = async (h: string, dev: string) => (await sh(h, `md5sum < ${dev}`)).split(' ')[0];
const blkid = async (h: string, dev: string) => (await tb.hostExec(h, `blkid -p -o export ${dev}`)).stdout;

/** Poll `cmd` on a host until it exits 0 (an event, not a fixed sleep). */
async function until(h: string, cmd: string, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if ((await tb.hostExec(h, cmd)).code === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${h}: timed out waiting for ${what}`);
}

/** Start a long-lived process in a host (its own session, no stdio): its pid, for `kill`. */
async function spawnIn(h: string, cmd: string): Promise<string> {
  return (await sh(h, `setsid sh -c ${JSON.stringify(cmd)} </dev/null >/dev/null 2>&1 & echo $!`)).trim();
}

/** Inventory: each host's loop disks as d1, d2 (udev matched by kernel name). */
function inventory(hostVars: Record<string, Record<string, unknown>> = {}, vars: Record<string, unknown> = {}): string {
  const hv: Record<string, Record<string, unknown>> = {};
  for (const h of HOSTS) {
    hv[h] = {
      storage_disks: disks(h).map((d, i) => ({ device: d.dev, name: `d${i + 1}`, match: { KERNEL: kname(d.dev) } })),
      ...hostVars[h],
    };
  }
  return writeInventory({ hosts: HOSTS, vars, hostVars: hv, groups: { storage: { hosts: HOSTS } } });
}

/** A DOS partition table with one Linux partition at 1 MiB (sfdisk is not in the bed's rootfs). */
function mbr(): Buffer {
  const b = Buffer.alloc(512);
  b.writeUInt32LE(0x12345678, 440);
  Buffer.from([0x00, 0x00, 0x02, 0x00, 0x83, 0xfe, 0xff, 0xff]).copy(b, 446);
  b.writeUInt32LE(2048, 454);
  b.writeUInt32LE(204800, 458);
  b[510] = 0x55;
  b[511] = 0xaa;
  return b;
}

/** Every /ais line of a host's fstab (none may appear for refused disks). */
const aisFstab = async (h: string) => (await sh(h, 'cat /etc/fstab 2>/dev/null || true')).split('\n').filter((l) => l.includes(' /ais/'));

describe('data that is not a signature is refused, byte for byte intact', () => {
  const sums = new Map<string, string>();
  let wipedPt = '';
  let tar = '';
  let zeroedXfs = '';
  let backsLoop = '';
  let loopDev = '';

  /** A loop device on the runner over `dev` (the host's disk, by its runner path). */
  function loopOver(dev: string): string {
    const r = spawnSync('flock', [process.env.TB_LOOP_LOCK ?? '/run/racksmith-testbed-loop.lock', 'losetup', '-f', '--show', dev], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`losetup over ${dev}: ${r.stderr}`);
    return r.stdout.trim();
  }

  beforeAll(async () => {
    await tb.reset(HOSTS);
    [wipedPt, tar] = disks(A).map((d) => d.dev);
    [zeroedXfs, backsLoop] = disks(B).map((d) => d.dev);
    // A d1: ext4 in a partition at 1 MiB whose partition table was then wiped (wipefs erases the
    // table's magic: blkid of the disk finds nothing; blkid -O 1048576 still finds the ext4)
    await sh(A, `base64 -d | dd of=${wipedPt} bs=512 count=1 conv=notrunc,fsync status=none`, mbr().toString('base64'));
    await sh(A, `mkfs.ext4 -q -F -E offset=1048576 ${wipedPt} 65536 && wipefs -a -q ${wipedPt}`);
    expect((await tb.hostExec(A, `blkid -p ${wipedPt}`)).code).toBe(2);
    expect((await tb.hostExec(A, `blkid -p -O 1048576 -o export ${wipedPt}`)).stdout).toContain('TYPE=ext4');
    // A d2: a tar archive written to the raw disk
    await sh(A, `tar -cf ${tar} -C /etc passwd group hostname && sync`);
    // B d1: XFS whose primary superblock sector was zeroed (xfs_repair -n finds a secondary one)
    await sh(B, `mkfs.xfs -q ${zeroedXfs} && dd if=/dev/zero of=${zeroedXfs} bs=512 count=1 conv=notrunc,fsync status=none`);
    expect((await tb.hostExec(B, `blkid -p ${zeroedXfs}`)).code).toBe(2);
    // B d2: backs a loop device whose ext4 is mounted (the loop claims nothing on the disk)
    loopDev = loopOver(backsLoop);
    const minor = loopDev.replace('/dev/loop', '');
    await sh(
      B,
      `mknod /tmp/rs-loop b 7 ${minor} && mkfs.ext4 -q /tmp/rs-loop && mkdir -p /mnt/lp && mount /tmp/rs-loop /mnt/lp && echo data > /mnt/lp/f && sync`,
    );
    for (const [h, d] of [
      [A, wipedPt],
      [A, tar],
      [B, zeroedXfs],
    ])
      sums.set(d, await devSum(h, d));
  });

  afterAll(async () => {
    if (!loopDev) return;
    await tb.hostExec(B, 'umount /mnt/lp; rm -f /tmp/rs-loop');
    spawnSync('losetup', ['-d', loopDev]);
  });

  const intact = async () => {
    expect(await devSum(A, wipedPt)).toBe(sums.get(wipedPt));
    expect(await devSum(A, tar)).toBe(sums.get(tar));
    expect(await devSum(B, zeroedXfs)).toBe(sums.get(zeroedXfs));
    expect(await sh(B, 'cat /mnt/lp/f')).toBe('data\n');
    expect((await sh(B, 'findmnt -rn -o TARGET /mnt/lp')).trim()).toBe('/mnt/lp');
    for (const h of HOSTS) expect(await aisFstab(h)).toEqual([]);
  };

  // format_allow names the loop-backed disk: only the in-use check stands between it and mkfs
  const inv = () => inventory({ [B]: { format_allow: [backsLoop] } });

  const expectRefusals = (run: CliRun) => {
    const a = resources(run, A);
    const b = resources(run, B);
    expect(a.get('disk:d1')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(
        new RegExp(
          `^refused: not formatting ${wipedPt} \\(1 GiB, no serial\\): it is not blank: non-zero data at offset 440; ext4 filesystem at offset 1048576 \\(UUID [0-9a-f-]+\\), where a partition starts \\(its partition table is gone\\)\\. To erase it`,
        ),
      ),
    });
    expect(a.get('disk:d2')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(
        /it is not blank: non-zero data at offset 0 \(a tar archive: ustar header at offset 257\)\. To erase it/,
      ),
    });
    expect(b.get('disk:d1')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(
        /it is not blank: non-zero data at offset 512 \(an XFS allocation group header: .*\); XFS secondary superblocks at offsets 268435456, 536870912, 805306368: an XFS filesystem whose primary superblock is damaged/,
      ),
    });
    expect(b.get('disk:d2')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(
        new RegExp(
          `^refused: not formatting ${backsLoop}: it backs loop device ${loopDev} \\(backing file ${backsLoop}; mounted at /mnt/lp\\); ext4 signature .*A disk in use is never formatted, even when format_allow names it`,
        ),
      ),
    });
    for (const h of HOSTS) for (const d of ['d1', 'd2']) expect(resources(run, h).get(`mount:/ais/${d}`)!.status).toBe('skipped');
  };

  it('--check: each case refused with what was found; nothing changes', async () => {
    const run = await provision([PB, '-i', inv(), '--check', '--json']);
    expect(run.code, why(run)).toBe(1);
    expectRefusals(run);
    await intact();
  });

  it('apply: the same refusals, no disk formatted, exit 1; a second run changes nothing either', async () => {
    for (let k = 0; k < 2; k++) {
      const run = await provision([PB, '-i', inv(), '--json']);
      expect(run.code, why(run)).toBe(1);
      expectRefusals(run);
      // only the I/O tuning and its udev rule (the disks' queues are tuned whatever they hold)
      expect(changedResources(run).filter((c) => c.id.startsWith('disk:') || c.id.startsWith('mount:'))).toEqual([]);
    }
    await intact();
  });
});

describe('in use as the kernel sees it: another mount namespace, an exclusive open', () => {
  let ns = '';
  let held = '';
  let pids: string[] = [];
  const sums = new Map<string, string>();

  beforeAll(async () => {
    await tb.reset([A]);
    [ns, held] = disks(A).map((d) => d.dev);
    // d1: ext4 mounted only in a mount namespace of its own; d2: blank, open O_EXCL by a process
    await sh(A, `mkfs.ext4 -q ${ns}`);
    pids = [
      await spawnIn(A, `mkdir -p /mnt/ns && exec unshare -m sh -c 'mount ${ns} /mnt/ns && echo x > /mnt/ns/f && exec sleep 600'`),
      await spawnIn(A, `exec python3 -c 'import os, time; os.open("${held}", os.O_RDONLY | os.O_EXCL); time.sleep(600)'`),
    ];
    await until(A, `grep -qs ' ${(await sh(A, `cat /sys/block/${kname(ns)}/dev`)).trim()} ' /proc/[0-9]*/mountinfo`, 'the namespace mount');
    await until(A, tb.holdsOpenScript(pids[1], held), 'the exclusive open');
    sums.set(held, await devSum(A, held));
  });

  afterAll(async () => {
    for (const p of pids) await tb.hostExec(A, `kill ${p}`);
  });

  it('each refused naming what holds it, in --check and in apply, even with format_allow', async () => {
    const inv = inventory({ [A]: { format_allow: [ns, held] } });
    for (const mode of [['--check'], []]) {
      const run = await provision([PB, '-i', inv, '-l', A, '--json', ...mode]);
      expect(run.code, why(run)).toBe(1);
      const rs = resources(run, A);
      expect(rs.get('disk:d1')!.error).toMatch(
        new RegExp(
          `^refused: not formatting ${ns}: the kernel refuses to open it exclusively \\(Device or resource busy\\): mounted at /mnt/ns in another mount namespace \\(pid \\d+\\); ext4 signature`,
        ),
      );
      expect(rs.get('disk:d2')!.error).toMatch(
        new RegExp(
          `^refused: not formatting ${held}: the kernel refuses to open it exclusively \\(Device or resource busy\\): open by pid ${pids[1]} \\(python3\\)\\. A disk in use is never formatted, even when format_allow names it$`,
        ),
      );
      expect(changedResources(run).filter((c) => c.id.startsWith('disk:') || c.id.startsWith('mount:'))).toEqual([]);
    }
    expect(await devSum(A, held)).toBe(sums.get(held));
    expect(await blkid(A, ns)).toContain('TYPE=ext4');
    expect(await aisFstab(A)).toEqual([]);
  });

  it('once the holders are gone, the blank disk is formatted (format_allow does the ext4 one); the next run changes nothing', async () => {
    for (const p of pids) await sh(A, `kill ${p}`);
    await until(
      A,
      `LOCK_BLOCK_DEVICE=no wipefs -n -q -t x -a ${held} && LOCK_BLOCK_DEVICE=no wipefs -n -q -t x -a ${ns}`,
      'the holders to go',
    );
    pids = [];
    const inv = inventory({ [A]: { format_allow: [ns] } });
    const run = await provision([PB, '-i', inv, '-l', A, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(resources(run, A).get('disk:d2')!.changes[0].summary).toBe(`format ${held} (blank, 1 GiB, no serial) as XFS`);
    for (const d of [ns, held]) expect(await blkid(A, d)).toContain('TYPE=xfs');
    const again = await provision([PB, '-i', inv, '-l', A, '--json']);
    expect(again.code, why(again)).toBe(0);
    expect(recaps(again)[A]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });
});

describe("an XFS disk mounted in another mount namespace (a container's) is not taken", () => {
  let theirs = '';
  let blankDisk = '';
  let pid = '';
  let uuid = '';

  beforeAll(async () => {
    await tb.reset([A]);
    [theirs, blankDisk] = disks(A).map((d) => d.dev);
    await sh(A, `mkfs.xfs -q ${theirs}`);
    uuid = (await sh(A, `blkid -p -s UUID -o value ${theirs}`)).trim();
    pid = await spawnIn(
      A,
      `mkdir -p /mnt/ns && exec unshare -m sh -c 'mount ${theirs} /mnt/ns && echo x > /mnt/ns/theirs && exec sleep 600'`,
    );
    await until(
      A,
      `grep -qs ' ${(await sh(A, `cat /sys/block/${kname(theirs)}/dev`)).trim()} ' /proc/[0-9]*/mountinfo`,
      'the namespace mount',
    );
  });

  afterAll(async () => {
    if (pid) await tb.hostExec(A, `kill ${pid}`);
  });

  it('refused naming the mount, in --check and apply: nothing mounted, recorded or written to fstab for it; the other disk converges', async () => {
    const inv = inventory();
    for (const mode of [['--check'], []]) {
      const run = await provision([PB, '-i', inv, '-l', A, '--json', ...mode]);
      expect(run.code, why(run)).toBe(1);
      expect(resources(run, A).get('disk:d1')!.error).toMatch(
        new RegExp(
          `^refused: ${theirs} carries XFS \\(UUID ${uuid}\\) and is in use: the kernel refuses to open it exclusively \\(Device or resource busy\\): mounted at /mnt/ns in another mount namespace \\(pid \\d+\\); it is not mounted at /ais/d1`,
        ),
      );
      expect(changedResources(run).map((c) => c.id)).not.toContain('mount:/ais/d1');
    }
    expect((await tb.hostExec(A, 'findmnt -rn -o SOURCE --mountpoint /ais/d1')).stdout).toBe('');
    expect(await aisFstab(A)).toEqual([expect.stringMatching(/ \/ais\/d2 xfs /)]);
    expect(await sh(A, 'cat /var/lib/racksmith/storage.json')).not.toContain('/ais/d1');
    expect(await blkid(A, blankDisk)).toContain('TYPE=xfs');
  });

  it('once their mount is gone, the same XFS is kept (not formatted) and mounted at its mountpath', async () => {
    await sh(A, `kill ${pid}`);
    pid = '';
    await until(A, `LOCK_BLOCK_DEVICE=no wipefs -n -q -t x -a ${theirs}`, 'the namespace mount to go');
    const run = await provision([PB, '-i', inventory(), '-l', A, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(resources(run, A).get('disk:d1')!.changes).toEqual([]);
    expect((await sh(A, 'cat /ais/d1/theirs')).trim()).toBe('x');
    expect((await sh(A, `blkid -p -s UUID -o value ${theirs}`)).trim()).toBe(uuid);
  });
});

describe('an fstab line written by hand for a mountpoint spelled another way (/ais/d1/)', () => {
  it("is the mountpoint's line: replaced by racksmith's, so that mount -a (a boot) mounts the recorded filesystem there", async () => {
    await tb.reset([B]);
    const [d1, d2] = disks(B).map((d) => d.dev);
    await sh(B, `mkfs.xfs -q ${d2} && printf '%s\\n' '${d2} /ais/d1/ xfs defaults,nofail 0 0' >> /etc/fstab`);
    const run = await provision([PB, '-i', inventory(), '-l', B, '--json']);
    expect(run.code, why(run)).toBe(0);
    const uuid = (await sh(B, `blkid -p -s UUID -o value ${d1}`)).trim();
    const lines = await aisFstab(B);
    expect(lines.filter((l) => / \/ais\/d1\/? /.test(l))).toEqual([expect.stringMatching(new RegExp(`^UUID=${uuid} /ais/d1 xfs `))]);
    // as at boot: only the recorded filesystem is mounted at /ais/d1
    await sh(B, 'umount /ais/d1 /ais/d2 && mount -a');
    expect((await sh(B, 'findmnt -rn -o SOURCE --mountpoint /ais/d1')).trim().split('\n')).toEqual([d1]);
    const again = await provision([PB, '-i', inventory(), '-l', B, '--json']);
    expect(recaps(again)[B]).toMatchObject({ changed: 0, failed: 0 });
  });
});

describe('format_allow by serial names exactly one disk; a cloned XFS is never mounted', () => {
  const sums = new Map<string, string>();

  beforeAll(async () => {
    await tb.reset(HOSTS);
    // A: both disks carry ext4 and the same serial (as two NVMe namespaces of one controller do)
    for (const d of disks(A)) {
      const mm = (await sh(A, `cat /sys/block/${kname(d.dev)}/dev`)).trim();
      await sh(A, `mkfs.ext4 -q ${d.dev} && printf 'E:ID_SERIAL=RS_SHARED_NVME\\nE:ID_SERIAL_SHORT=SHARED1\\n' >> /run/udev/data/b${mm}`);
      sums.set(d.dev, await devSum(A, d.dev));
    }
    // B: d2 is a block-for-block copy of d1's XFS (same UUID)
    const [d1, d2] = disks(B).map((d) => d.dev);
    await sh(B, `mkfs.xfs -q ${d1} && dd if=${d1} of=${d2} bs=1M conv=sparse,fsync status=none`);
    for (const d of [d1, d2]) sums.set(d, await devSum(B, d));
  });

  const inv = () => inventory({ [A]: { format_allow: ['SHARED1'] } });

  it('both refused, naming the other disk; nothing formatted or mounted; the same in check mode and on a second run', async () => {
    const [a1, a2] = disks(A).map((d) => d.dev);
    const [b1, b2] = disks(B).map((d) => d.dev);
    const uuid = /^UUID=(.+)$/m.exec(await blkid(B, b1))![1];
    for (const mode of [['--check'], [], []]) {
      const run = await provision([PB, '-i', inv(), '--json', ...mode]);
      expect(run.code, why(run)).toBe(1);
      const a = resources(run, A);
      for (const [name, dev] of [
        ['d1', a1],
        ['d2', a2],
      ]) {
        expect(a.get(`disk:${name}`)!.error).toMatch(
          new RegExp(
            `^refused: not formatting ${dev} \\(1 GiB, serial SHARED1\\): format_allow entry SHARED1 is ambiguous: 2 disks of this host carry it \\(${kname(a1)}, ${kname(a2)}\\)`,
          ),
        );
      }
      const b = resources(run, B);
      expect(b.get('disk:d1')!.error).toBe(
        `refused: ${b1} carries XFS (UUID ${uuid}) and so does ${b2} (a cloned filesystem): fstab mounts by UUID, so either could end up at /ais/d1; give the copy a new UUID first (xfs_admin -U generate DEVICE, unmounted)`,
      );
      expect(b.get('disk:d2')!.error).toMatch(new RegExp(`^refused: ${b2} carries XFS \\(UUID ${uuid}\\) and so does ${b1} `));
      for (const h of HOSTS) {
        for (const d of ['d1', 'd2']) expect(resources(run, h).get(`mount:/ais/${d}`)!.status).toBe('skipped');
        expect(await aisFstab(h)).toEqual([]);
        expect((await sh(h, 'findmnt -rn -o TARGET | grep "^/ais" || true')).trim()).toBe('');
      }
    }
    for (const [h, d] of [
      [A, a1],
      [A, a2],
      [B, b1],
      [B, b2],
    ])
      expect(await devSum(h, d)).toBe(sums.get(d));
  });

  // -t mount leaves the format out (a skipped dependency counts as satisfied): the record line
  // and the mount check the clone themselves
  it('-t mount: the clone is neither recorded nor mounted either', async () => {
    const [b1, b2] = disks(B).map((d) => d.dev);
    for (const mode of [['--check'], []]) {
      const run = await provision([PB, '-i', inv(), '-l', B, '-t', 'mount', '--json', ...mode]);
      expect(run.code, why(run)).toBe(1);
      const b = resources(run, B);
      for (const [name, dev, other] of [
        ['d1', b1, b2],
        ['d2', b2, b1],
      ]) {
        expect(b.get(`storage-record:/ais/${name}`)!.error).toMatch(
          new RegExp(
            `^refused: not recording /ais/${name} → ${dev}: ${dev} carries XFS \\(UUID [0-9a-f-]+\\) and so does ${other} \\(a cloned`,
          ),
        );
        expect(b.get(`mount:/ais/${name}`)!.error).toMatch(
          new RegExp(
            `^refused: not mounting ${dev} at /ais/${name}: ${dev} carries XFS \\(UUID [0-9a-f-]+\\) and so does ${other} \\(a cloned`,
          ),
        );
      }
      expect(await aisFstab(B)).toEqual([]);
      expect((await sh(B, 'findmnt -rn -o TARGET | grep "^/ais" || true')).trim()).toBe('');
      expect((await tb.hostExec(B, 'cat /var/lib/racksmith/storage.json')).code).not.toBe(0);
    }
  });
});

/** A loop device on the runner over block device `dev` (under the beds' loop allocation lock), read-only: its /dev path. */
function runnerLoopOver(dev: string): string {
  const r = spawnSync('flock', [process.env.TB_LOOP_LOCK ?? '/run/racksmith-testbed-loop.lock', 'losetup', '-r', '-f', '--show', dev], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`losetup over ${dev}: ${r.stderr}`);
  return r.stdout.trim();
}

// A data disk copied while it is mounted: the copy carries its UUID, and fstab mounts by UUID.
// Only unmounted disks were asked about copies: the mounted one was kept without a word, and the
// mount's lookup of the recorded UUID could find the copy (`/ais/d1 already has /dev/loopA
// mounted, not /dev/loopB`); after a reboot the copy could be mounted there. Devices that read the
// disk's own blocks (a loop device over it here; a multipath map's path devices, a dm device over
// it, where the kernel has device-mapper) carry its UUID as well, and are the disk, not a copy.
describe('a clone of a mounted data disk is named; a device reading the disk itself is not a clone', () => {
  const H = B;
  const one = () => {
    const d = disks(H)[0].dev;
    return inventory({ [H]: { storage_disks: [{ device: d, name: 'd1', match: { KERNEL: kname(d) } }] } });
  };
  const uuidOf = async (dev: string) => (await sh(H, `blkid -p -s UUID -o value ${dev}`)).trim();
  const mountedAt = async () => (await sh(H, 'findmnt -rn -o SOURCE --mountpoint /ais/d1 || true')).trim();
  /** Mount `dev` at /ais/d1 by its path, with the options of the fstab line (which names the UUID: mount -a could take either copy). */
  const mountByPath = (dev: string) => `mount -o "$(findmnt --fstab -n -o OPTIONS --target /ais/d1)" ${dev} /ais/d1`;
  /** A block-for-block copy of d1 on d2 (d1 unmounted for the copy; d2 emptied first: a sparse copy skips zeros). */
  const copy = (d1: string, d2: string) =>
    `umount /ais/d1 && blkdiscard -f ${d2} && dd if=${d1} of=${d2} bs=1M conv=sparse,fsync status=none`;
  const converge = async () => {
    const run = await provision([PB, '-i', one(), '-l', H, '--json']);
    expect(run.code, why(run)).toBe(0);
    return run;
  };
  let loop = '';

  beforeEach((ctx) => needHddScheduler(ctx));
  beforeAll(async () => {
    await tb.reset([H]);
    if (!hddSchedulerMissing()) await converge();
  });
  afterAll(async () => {
    if (!loop) return;
    await tb.hostExec(H, `rm -f ${loop} /sys/block/${kname(loop)}`);
    spawnSync('losetup', ['-d', loop]);
  });

  it('a copy made while it is mounted is named by the disk, its record line and its mount, in --check and apply; nothing changes; a new UUID on the copy converges', async () => {
    const [d1, d2] = disks(H).map((d) => d.dev);
    const uuid = await uuidOf(d1);
    // the mounted filesystem copied block for block (unmounted for the copy, mounted again by device)
    await sh(H, `${copy(d1, d2)} && ${mountByPath(d1)}`);
    expect(await uuidOf(d2)).toBe(uuid);
    const fstab = await aisFstab(H);
    const sum = await devSum(H, d2);
    const clone = `${d1} carries XFS (UUID ${uuid}) and so does ${d2} (a cloned filesystem): fstab mounts by UUID, so either could end up at /ais/d1; give the copy a new UUID first (xfs_admin -U generate DEVICE, unmounted)`;
    for (const mode of [['--check'], []]) {
      const run = await provision([PB, '-i', one(), '-l', H, '--json', ...mode]);
      expect(run.code, why(run)).toBe(1);
      const r = resources(run, H);
      expect(r.get('disk:d1')!.error).toBe(`refused: ${clone}`);
      expect(r.get('mount:/ais/d1')!.status).toBe('skipped');
    }
    // -t mount leaves the format out: the record line and the mount name the copy themselves
    for (const mode of [['--check'], []]) {
      const run = await provision([PB, '-i', one(), '-l', H, '-t', 'mount', '--json', ...mode]);
      expect(run.code, why(run)).toBe(1);
      const r = resources(run, H);
      expect(r.get('storage-record:/ais/d1')!.error).toBe(`refused: not recording /ais/d1 → ${d1}: ${clone}`);
      expect(r.get('mount:/ais/d1')!.error).toBe(`refused: /ais/d1 (${d1} mounted there): ${clone}`);
    }
    expect(await mountedAt()).toBe(d1);
    expect(await aisFstab(H)).toEqual(fstab);
    expect(await devSum(H, d2)).toBe(sum);
    // as the refusal says: the copy gets a new UUID; the host is then as converged as before
    await sh(H, `xfs_admin -U generate ${d2} >/dev/null`);
    expect(recaps(await converge())[H]).toMatchObject({ changed: 0, failed: 0 });
    expect(await mountedAt()).toBe(d1);
  });

  it('the copy mounted at the mountpath in its place (as a reboot may): refused naming it; once it has a new UUID the disk is mounted again', async () => {
    const [d1, d2] = disks(H).map((d) => d.dev);
    const uuid = await uuidOf(d1);
    await sh(H, `${copy(d1, d2)} && ${mountByPath(d2)}`);
    const clone = `${d1} carries XFS (UUID ${uuid}) and so does ${d2} (a cloned filesystem)`;
    const full = await provision([PB, '-i', one(), '-l', H, '--json']);
    expect(full.code, why(full)).toBe(1);
    expect(resources(full, H).get('disk:d1')!.error).toMatch(new RegExp(`^refused: ${clone.replace(/[()]/g, '\\$&')}`));
    for (const mode of [['--check'], []]) {
      const run = await provision([PB, '-i', one(), '-l', H, '-t', 'mount', '--json', ...mode]);
      expect(run.code, why(run)).toBe(1);
      expect(resources(run, H).get('mount:/ais/d1')!.error).toMatch(
        new RegExp(`^refused: /ais/d1 \\(${d2} mounted there\\): ${clone.replace(/[()]/g, '\\$&')}`),
      );
    }
    expect(await mountedAt()).toBe(d2);
    // the copy unmounted and given a new UUID: the disk's filesystem is mounted there again (the
    // mount step checks, on the host, that the device it mounts carries the recorded UUID)
    await sh(H, `umount /ais/d1 && xfs_admin -U generate ${d2} >/dev/null`);
    const run = await converge();
    expect(changedResources(run).map((c) => c.id)).toEqual(['mount:/ais/d1']);
    expect(await mountedAt()).toBe(d1);
    expect(await uuidOf(d1)).toBe(uuid);
  });

  it('a loop device over the mounted disk carries its UUID too: the disk itself, not a clone (converged, in --check and apply)', async () => {
    const [d1] = disks(H).map((d) => d.dev);
    const uuid = await uuidOf(d1);
    loop = runnerLoopOver(d1);
    const minor = loop.replace('/dev/loop', '');
    // the host sees it as its own disks (blkid lists the devices of /sys/block that have a /dev node)
    await sh(H, `mknod ${loop} b 7 ${minor} && ln -s ../devices/virtual/block/loop${minor} /sys/block/loop${minor}`);
    expect((await sh(H, `blkid -c /dev/null -o device -t UUID=${uuid}`)).trim().split('\n').sort()).toEqual([d1, loop].sort());
    for (const mode of [['--check'], []]) {
      const run = await provision([PB, '-i', one(), '-l', H, '--json', ...mode]);
      expect(run.code, why(run)).toBe(0);
      expect(recaps(run)[H]).toMatchObject({ changed: 0, failed: 0 });
    }
    expect(await mountedAt()).toBe(d1);
  });

  // A dm-linear over a disk reads its blocks from offset 0: blkid lists the dm device
  // (/dev/mapper/NAME) and the disk under it with one UUID, as a multipath map and its path
  // devices. The kernel of this machine may have no device-mapper: then the test says so.
  it('a dm-linear data disk (the disk under it carries its UUID): formatted, mounted, and converged without a clone named', async (ctx) => {
    const misc = readFileSync('/proc/misc', 'utf8');
    if (!/\bdevice-mapper\b/.test(misc))
      return ctx.skip('the kernel has no device-mapper (/proc/misc lists none): a dm-linear cannot be made here');
    if (spawnSync('dmsetup', ['version']).status !== 0) return ctx.skip('dmsetup cannot reach the kernel device-mapper on the runner');
    const [, d2] = disks(H).map((d) => d.dev);
    await sh(H, `wipefs -a -q ${d2}`);
    const name = `rs-s1-stack-${process.pid}`;
    const sectors = (await sh(H, `blockdev --getsz ${d2}`)).trim();
    const mm = (await sh(H, `cat /sys/block/${kname(d2)}/dev`)).trim();
    const made = spawnSync('dmsetup', ['create', name, '--table', `0 ${sectors} linear ${mm} 0`], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`dmsetup create: ${made.stderr}`);
    let dm = '';
    try {
      const dmMm = spawnSync('dmsetup', ['info', '-c', '--noheadings', '-o', 'major,minor', name], { encoding: 'utf8' })
        .stdout.trim()
        .split(':');
      dm = `/dev/dm-${dmMm[1]}`;
      await sh(
        H,
        `mknod ${dm} b ${dmMm[0]} ${dmMm[1]} && mkdir -p /dev/mapper && ln -sf ../dm-${dmMm[1]} /dev/mapper/${name} && ln -s ../devices/virtual/block/dm-${dmMm[1]} /sys/block/dm-${dmMm[1]}`,
      );
      const inv = inventory({ [H]: { storage_disks: [{ device: dm, name: 'd2', match: { KERNEL: `dm-${dmMm[1]}` } }] } });
      // (the I/O tuning is left out: a host's /sys/block lists its own loop disks only)
      const tags = ['-t', 'mkfs,mount,xattr'];
      const first = await provision([PB, '-i', inv, '-l', H, '--json', ...tags]);
      expect(first.code, why(first)).toBe(0);
      const uuid = (await sh(H, `blkid -p -s UUID -o value ${dm}`)).trim();
      expect((await sh(H, `blkid -c /dev/null -o device -t UUID=${uuid}`)).trim().split('\n').sort()).toEqual(
        [`/dev/mapper/${name}`, d2].sort(),
      );
      for (const mode of [['--check'], []]) {
        const run = await provision([PB, '-i', inv, '-l', H, '--json', ...tags, ...mode]);
        expect(run.code, why(run)).toBe(0);
        expect(recaps(run)[H]).toMatchObject({ changed: 0, failed: 0 });
      }
      // unmounted, as before a reboot's mount: kept, not refused as a clone of the disk under it
      await sh(H, 'umount /ais/d2');
      const again = await provision([PB, '-i', inv, '-l', H, '--json', ...tags]);
      expect(again.code, why(again)).toBe(0);
    } finally {
      if (dm) await tb.hostExec(H, `umount /ais/d2 2>/dev/null; rm -f ${dm} /dev/mapper/${name} /sys/block/${kname(dm)}`);
      spawnSync('dmsetup', ['remove', name]);
    }
  });
});

describe('one run at a time applies on a host (the apply lock)', () => {
  const HOST = B;
  const untune = async () => {
    const [d1, d2] = disks(HOST).map((d) => `/sys/block/${kname(d.dev)}/queue`);
    await sh(
      HOST,
      `echo none > ${d1}/scheduler; echo 64 > ${d1}/nr_requests; echo 512 > ${d1}/read_ahead_kb; echo 1 > ${d1}/rq_affinity; echo 512 > ${d2}/read_ahead_kb; rm -rf /run/racksmith/io-caps`,
    );
  };
  const queue = async (dev: string, key: string) => (await sh(HOST, `cat /sys/block/${kname(dev)}/queue/${key}`)).trim();
  // the scheduler the disk runs (sysfs brackets it): which others a kernel offers is its build's choice
  const scheduler = async (dev: string) => /\[([^\]]+)\]/.exec(await queue(dev, 'scheduler'))?.[1];
  const inv = () => inventory();
  /** Let a gate.ts run go (also when the test failed before it did: it would hold the lock for the next test). */
  const openGate = async (...runs: Array<Promise<CliRun>>) => {
    await tb.hostExec(HOST, 'touch /run/rs-gate-go');
    return await Promise.all(runs);
  };

  // the HDD profile's scheduler: a kernel built without it cannot show the lock keeping it right
  beforeEach((ctx) => needHddScheduler(ctx));

  beforeAll(async () => {
    await tb.reset([HOST]);
    const first = await provision([PB, '-i', inv(), '-l', HOST, '--json']);
    expect(first.code, why(first)).toBe(0);
  });

  // A test that timed out goes on running: the next one waits for it to stop (it stops at its
  // next iteration) rather than have the host changed under it.
  let inFlight: Promise<unknown> = Promise.resolve();
  beforeEach(async () => {
    await inFlight;
  });

  it('two runs started together, 10 times: one waits (or fails naming the other), no wrong value, no cap recorded; the next run changes nothing', async ({
    signal,
  }) => {
    const body = raceTenTimes(signal);
    inFlight = body.catch(() => undefined);
    await body;
  }, 360_000);

  async function raceTenTimes(signal: AbortSignal): Promise<void> {
    const [d1, d2] = disks(HOST).map((d) => d.dev);
    for (let i = 0; i < 10 && !signal.aborted; i++) {
      await untune();
      // both runs read the host before either changes it, and the first to apply holds the lock
      // until the other is seen waiting for it (race.ts pins that overlap)
      await sh(HOST, 'rm -rf /run/rs-race && mkdir /run/rs-race');
      const runs = await Promise.all([0, 1].map(() => provision([RACE, '-i', inv(), '-l', HOST, '--json'])));
      await sh(HOST, 'rm -rf /run/rs-race');
      let met = 0;
      for (const r of runs) {
        const rec = recaps(r)[HOST];
        const failures = r.events.filter((e) => e.type === 'resource' && e.status === 'failed').map((e) => e.error as string);
        // a run fails only because the other held the lock, and then says whose it was
        for (const f of failures) expect(f).toMatch(/^not applied: the apply lock \/run\/racksmith\/apply\.lock is held by run \S+:\d+:/);
        expect(r.code === 0 || failures.length > 0, why(r)).toBe(true);
        if (rec.lockWaits?.length || failures.length) met++;
      }
      // both had changes to make: one made them, the other met its lock
      expect(met, `iteration ${i}: ${runs.map((r) => `${JSON.stringify(recaps(r)[HOST])}\n${why(r)}`).join('\n')}`).toBe(1);
      expect(await scheduler(d1)).toBe('mq-deadline');
      expect(await queue(d1, 'nr_requests')).toBe('2048');
      expect(await queue(d1, 'read_ahead_kb')).toBe('4096');
      expect(await queue(d1, 'rq_affinity')).toBe('2');
      expect(await queue(d2, 'read_ahead_kb')).toBe('128');
      expect((await sh(HOST, 'ls /run/racksmith/io-caps 2>/dev/null | wc -l')).trim()).toBe('0');
      const next = await provision([PB, '-i', inv(), '-l', HOST, '--json']);
      expect(next.code, why(next)).toBe(0);
      expect(recaps(next)[HOST]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    }
  }

  it('a run that meets the lock of another run waits, reads the host again, and applies only what is still to do', async () => {
    await sh(HOST, 'rm -f /run/rs-gate-go /run/rs-gate-done /run/rs-gate-waiting');
    // run 1 applies, then holds the lock in its second play until the test lets it go
    const first = provision([GATE, '-i', inv(), '-l', HOST, '--json']);
    let second: Promise<CliRun> | undefined;
    let holder: string | undefined;
    try {
      await until(HOST, 'test -e /run/rs-gate-waiting', 'run 1 to hold the lock');
      holder = (await sh(HOST, 'cat /run/racksmith/apply.holder')).split(' ')[0];
      second = provision([GATE, '-i', inv(), '-l', HOST, '--json']);
      await until(HOST, 'pgrep -x flock >/dev/null', 'run 2 to wait for the lock');
    } finally {
      await openGate(first, ...(second ? [second] : []));
    }
    const [r1, r2] = await Promise.all([first, second!]);
    expect(r1.code, why(r1)).toBe(0);
    expect(r2.code, why(r2)).toBe(0);
    expect(recaps(r2)[HOST].lockWaits).toEqual([holder]);
    // it read the host again after the wait: run 1 had done it all, so run 2 changed nothing
    expect(changedResources(r2)).toEqual([]);
  });

  it('--lock-timeout: a run gives up on a lock held by another run, naming it, and changes nothing', async () => {
    await sh(HOST, 'rm -f /run/rs-gate-go /run/rs-gate-done /run/rs-gate-waiting');
    const first = provision([GATE, '-i', inv(), '-l', HOST, '--json']);
    let holder: string | undefined;
    let second: CliRun;
    try {
      await until(HOST, 'test -e /run/rs-gate-waiting', 'run 1 to hold the lock');
      holder = (await sh(HOST, 'cat /run/racksmith/apply.holder')).split(' ')[0];
      await untune();
      second = await provision([PB, '-i', inv(), '-l', HOST, '--json', '--lock-timeout', '1']);
      // (the scheduler the held lock kept second from setting, read while the lock is still held)
      expect(await scheduler(disks(HOST)[0].dev)).toBe('none');
    } finally {
      await openGate(first);
    }
    expect(second.code).toBe(1);
    const failed = second.events.filter((e) => e.type === 'resource' && e.status === 'failed');
    expect(failed.length).toBeGreaterThan(0);
    for (const f of failed)
      expect(f.error).toBe(
        `not applied: the apply lock /run/racksmith/apply.lock is held by run ${holder}; gave up after 1 s (--lock-timeout)`,
      );
    expect((await first).code).toBe(0);
    const after = await provision([PB, '-i', inv(), '-l', HOST, '--json']);
    expect(after.code, why(after)).toBe(0);
    expect(await scheduler(disks(HOST)[0].dev)).toBe('mq-deadline');
  });
});

describe('the root mode of a kept data filesystem', () => {
  beforeAll(async () => {
    await tb.reset([A]);
    const [d1] = disks(A).map((d) => d.dev);
    // d1: an XFS made elsewhere, root mode 0711; d2: blank (racksmith makes it: 0750)
    await sh(A, `mkfs.xfs -q ${d1} && mkdir -p /mnt/k && mount ${d1} /mnt/k && chmod 0711 /mnt/k && umount /mnt/k`);
  });

  it('is left as it was unless storage_mount_mode is set; then every data root gets it', async () => {
    const run = await provision([PB, '-i', inventory(), '-l', A, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect((await sh(A, 'stat -c %a /ais/d1 /ais/d2')).split('\n').slice(0, 2)).toEqual(['711', '750']);
    const again = await provision([PB, '-i', inventory(), '-l', A, '--json']);
    expect(recaps(again)[A]).toMatchObject({ changed: 0, execs: 1 });
    const moded = inventory({ [A]: { storage_mount_mode: '0755' } });
    const check = await provision([PB, '-i', moded, '-l', A, '--check', '--json']);
    expect(check.code).toBe(2);
    // (the xattr checks wait for their mounts' change: pending in check mode)
    expect(changedResources(check).map((c) => c.id)).toEqual(['mount:/ais/d1', 'xattr:/ais/d1', 'mount:/ais/d2', 'xattr:/ais/d2']);
    expect(
      resources(check, A)
        .get('mount:/ais/d1')!
        .changes.map((c: { summary: string }) => c.summary),
    ).toEqual(['/ais/d1: mode 711 → 755']);
    expect((await sh(A, 'stat -c %a /ais/d1 /ais/d2')).split('\n').slice(0, 2)).toEqual(['711', '750']);
    const set = await provision([PB, '-i', moded, '-l', A, '--json']);
    expect(set.code, why(set)).toBe(0);
    expect((await sh(A, 'stat -c %a /ais/d1 /ais/d2')).split('\n').slice(0, 2)).toEqual(['755', '755']);
    const last = await provision([PB, '-i', moded, '-l', A, '--json']);
    expect(recaps(last)[A]).toMatchObject({ changed: 0, execs: 1 });
  });
});
