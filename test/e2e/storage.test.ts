// Issue "Storage playbook" acceptance on the test bed: 2 hosts x 2 loop disks (disk 1
// rotational = HDD profile, disk 2 non-rotational = SSD/NVMe profile).
//
// Test-bed specifics, and how the tests deal with them (shared/reference/testbed.md §2, §6):
//  - loop devices have no serial and no WWN and there is no udevd (no /dev/disk/by-id), so
//    the udev rule matches them by kernel name (storage_disks[].match: {KERNEL: loopN}) and
//    format_allow names them by kernel path, which racksmith accepts only for disks that have
//    no serial and no WWN (a real disk must be named by by-id path or serial);
//  - without udevd, rules are verified with `udevadm test --action=change /sys/block/loopN`,
//    which applies ATTR{queue/...}; `udevadm control --reload-rules` fails and is tolerated;
//  - the kernel has no device-mapper, so the LVM/dm holder refusal is covered by the unit
//    tests (test/unit/resources/storage/storage-logic.test.ts, from facts and from a fake /sys holders/ tree);
//  - sfdisk is not in the rootfs: the partition-table case writes an MBR with dd.
import { readFileSync, writeFileSync } from 'node:fs';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, recaps, writeInventory, type CliRun } from './helpers.ts';
import { needHddScheduler } from './hdd-scheduler.ts';

// tb6 and tb7: the other e2e files that use them (foundation, network) are done with them by the time
// this file runs, and the jail tests (tb8-tb10) run concurrently during development.
const HOSTS = ['tb6', 'tb7'];
const [A, B] = HOSTS;
const PB = 'playbooks/storage.ts';
const OPTIONS = 'noatime,nodiratime,logbufs=8,logbsize=256k,largeio,inode64,swalloc,allocsize=131072k,nofail';

const disks = (h: string) => tb.host(h).disks;
const kname = (dev: string) => dev.replace('/dev/', '');

/** Inventory: each host's two loop disks as d1 (HDD) and d2 (SSD), matched by kernel name in udev. */
function inventory(vars: Record<string, unknown> = {}, hostVars: Record<string, Record<string, unknown>> = {}, format?: 'yaml'): string {
  const hv: Record<string, Record<string, unknown>> = {};
  for (const h of HOSTS) {
    hv[h] = {
      storage_disks: disks(h).map((d, i) => ({ device: d.dev, name: `d${i + 1}`, match: { KERNEL: kname(d.dev) } })),
      ...hostVars[h],
    };
  }
  return writeInventory({ hosts: HOSTS, vars, hostVars: hv, groups: { storage: { hosts: HOSTS } }, format });
}

const sh = async (h: string, cmd: string): Promise<string> => {
  const r = await tb.hostExec(h, cmd);
  if (r.code !== 0) throw new Error(`${h}: ${cmd}: exit ${r.code}: ${r.stderr}`);
  return r.stdout;
};
const blkid = async (h: string, dev: string) => await tb.hostExec(h, `blkid -p -o export ${dev}`);
const queue = async (h: string, dev: string, key: string) => (await sh(h, `cat /sys/block/${kname(dev)}/queue/${key}`)).trim();
/**
 * The scheduler a device runs (sysfs brackets it). Never the whole line: which schedulers a
 * kernel offers is its build's choice (bfq is an option; one kernel of this machine kind lists
 * `none mq-deadline kyber`).
 */
const scheduler = async (h: string, dev: string) => /\[([^\]]+)\]/.exec(await queue(h, dev, 'scheduler'))?.[1];
/** The schedulers a device offers, read from sysfs. */
const offered = async (h: string, dev: string) => (await queue(h, dev, 'scheduler')).split(/\s+/).map((w) => w.replace(/^\[|\]$/g, ''));
const resources = (run: CliRun, host: string) =>
  new Map(run.events.filter((e) => e.type === 'resource' && e.host === host).map((e) => [e.id as string, e]));
const why = (run: CliRun) => `exit ${run.code}\n${run.stderr}`;

/**
 * `reset` keeps the same loop devices, and with them the queue settings earlier runs left (only
 * the scheduler goes back to none): put every tuned value back to an untuned one.
 */
async function untune(hosts: string[]): Promise<void> {
  for (const h of hosts) {
    const [d1, d2] = disks(h).map((d) => `/sys/block/${kname(d.dev)}/queue`);
    await sh(
      h,
      `echo none > ${d1}/scheduler; m=$(cat ${d1}/max_hw_sectors_kb); echo $((m < 512 ? m : 512)) > ${d1}/max_sectors_kb; echo 512 > ${d1}/read_ahead_kb; echo 1 > ${d1}/rq_affinity; echo none > ${d2}/scheduler; echo 512 > ${d2}/read_ahead_kb`,
    );
  }
}

beforeAll(async () => {
  await tb.reset(HOSTS);
  await untune(HOSTS);
});
beforeEach((ctx) => needHddScheduler(ctx));

describe('storage playbook on fresh hosts', () => {
  // The tests after the first run start from its converged hosts; run alone, each converges them first.
  let convergedOnce = false;
  // a test that fails may leave its hosts anywhere (a disk unmounted, the tuning undone by hand):
  // the next one converges them again rather than start from that
  beforeEach(({ onTestFailed }) => onTestFailed(() => void (convergedOnce = false)));
  const converged = async () => {
    if (convergedOnce) return;
    const run = await provision([PB, '-i', inventory(), '--json']);
    expect(run.code, why(run)).toBe(0);
    convergedOnce = true;
  };

  it('--check: exit 2, shows format / sysfs before → after / udev rule diff; disks stay blank, fstab unchanged', async () => {
    const fstabBefore = await Promise.all(HOSTS.map((h) => sh(h, 'sha256sum /etc/fstab 2>/dev/null || echo none')));
    // the queue's defaults are the kernel's (loop's hardware queue depth is a module parameter): read first
    const nrBefore = await Promise.all(HOSTS.map((h) => queue(h, disks(h)[0].dev, 'nr_requests')));
    const maxBefore = await Promise.all(HOSTS.map((h) => queue(h, disks(h)[0].dev, 'max_sectors_kb')));
    const run = await provision([PB, '-i', inventory(), '--check', '--diff', '--json']);
    expect(run.code, why(run)).toBe(2);
    for (const h of HOSTS) {
      const [d1, d2] = disks(h);
      const rs = resources(run, h);
      expect(rs.get('disk:d1')!.changes[0].summary).toBe(`format ${d1.dev} (blank, 1 GiB, no serial) as XFS`);
      expect(rs.get('disk:d2')!.changes[0].summary).toBe(`format ${d2.dev} (blank, 1 GiB, no serial) as XFS`);
      // the mount needs the UUID mkfs will create: reported as pending, never guessed
      expect(rs.get('mount:/ais/d1')!.pending).toBe('disk:d1');
      expect(rs.get('xattr:/ais/d1')!.pending).toBe('mount:/ais/d1');
      const io1 = rs.get('io:d1')!.changes.map((c: { summary: string }) => c.summary);
      expect(io1).toContain(`/sys/block/${kname(d1.dev)}/queue/scheduler: none → mq-deadline`);
      expect(io1).toContain(`/sys/block/${kname(d1.dev)}/queue/nr_requests: ${nrBefore[HOSTS.indexOf(h)]} → 2048`);
      expect(io1).toContain(`/sys/block/${kname(d1.dev)}/queue/read_ahead_kb: 512 → 4096`);
      const hw = Number(await queue(h, d1.dev, 'max_hw_sectors_kb'));
      expect(io1).toContain(
        `/sys/block/${kname(d1.dev)}/queue/max_sectors_kb: ${maxBefore[HOSTS.indexOf(h)]} → ${Math.min(hw, 16383)}${hw < 16383 ? ` (16383 clamped to max_hw_sectors_kb ${hw})` : ''}`,
      );
      expect(rs.get('io:d2')!.changes.map((c: { summary: string }) => c.summary)).toEqual([
        `/sys/block/${kname(d2.dev)}/queue/read_ahead_kb: 512 → 128`,
      ]);
      const udev = rs.get('udev-rules:/etc/udev/rules.d/60-racksmith-io.rules')!.changes[0];
      expect(udev.diff).toContain(
        `+ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="${kname(d1.dev)}", ATTR{queue/scheduler}="mq-deadline"`,
      );
    }
    expect(run.stderr).toContain('Changes that would be made');
    // the human view folds the hosts' formats into one line, each host's device a value of its slot
    const formatLine = /format \/dev\/(‹\d›|loop\d+) \(blank, 1 GiB, no serial\) as XFS/;
    expect(run.stderr).toMatch(formatLine);
    for (const h of HOSTS) expect(run.stderr).toContain(kname(disks(h)[0].dev));
    // nothing happened
    for (const [i, h] of HOSTS.entries()) {
      for (const d of disks(h)) {
        const b = await blkid(h, d.dev);
        expect(b.code, `${h} ${d.dev}: ${b.stdout}`).toBe(2);
        expect(b.stdout).toBe('');
        expect(await scheduler(h, d.dev)).toBe('none');
      }
      expect(await sh(h, 'sha256sum /etc/fstab 2>/dev/null || echo none')).toBe(fstabBefore[i]);
      expect((await tb.hostExec(h, 'ls /ais /etc/udev/rules.d/60-racksmith-io.rules')).code).not.toBe(0);
    }
  });

  it('first run formats, mounts by UUID with the AIStore options, tunes sysfs, writes the udev rule', async () => {
    const run = await provision([PB, '-i', inventory(), '--json']);
    expect(run.code, why(run)).toBe(0);
    for (const h of HOSTS) {
      // changed: 2 disks, 2 storage.json lines, 2 mounts, 2 io, the udev rule; ok: packages:storage
      // (xfsprogs, attr installed), the prune (nothing recorded yet), the 2 xattr checks
      expect(recaps(run)[h]).toMatchObject({ failed: 0, changed: 9, ok: 4, unreachable: false });
      const rs = resources(run, h);
      expect(rs.get('xattr:/ais/d1')!.status).toBe('ok');
      expect(rs.get('xattr:/ais/d2')!.status).toBe('ok');
      const fstab = await sh(h, 'cat /etc/fstab');
      for (const [i, d] of disks(h).entries()) {
        const b = (await blkid(h, d.dev)).stdout;
        expect(b).toContain('TYPE=xfs');
        const uuid = /^UUID=(.+)$/m.exec(b)![1];
        expect(fstab).toContain(`UUID=${uuid} /ais/d${i + 1} xfs ${OPTIONS} 0 0\n`);
        const live = (await sh(h, `findmnt -rn -o SOURCE,FSTYPE,OPTIONS --mountpoint /ais/d${i + 1}`)).trim().split(' ');
        expect(live[0]).toBe(d.dev);
        expect(live[1]).toBe('xfs');
        // the change names the device by that path (it exists on the host), not by a placeholder
        const mounted = rs.get(`mount:/ais/d${i + 1}`)!.changes.map((c: { summary: string }) => c.summary);
        expect(mounted).toContain(`mount ${d.dev} on /ais/d${i + 1} (xfs, ${OPTIONS})`);
        for (const opt of ['noatime', 'nodiratime', 'logbufs=8', 'logbsize=256k', 'largeio', 'inode64', 'swalloc', 'allocsize=131072k'])
          expect(live[2].split(',')).toContain(opt);
        expect((await sh(h, `stat -c '%a %U %G' /ais/d${i + 1}`)).trim()).toBe('750 root root');
      }
    }
    expect(run.stderr).not.toContain('by-storage-record');
    convergedOnce = true;
  });

  it('xattrs work on each mount (set, read back, remove)', async () => {
    await converged();
    for (const h of HOSTS) {
      for (const m of ['/ais/d1', '/ais/d2']) {
        const out = await sh(
          h,
          `f=${m}/xattr-test; touch $f && setfattr -n user.ais.test -v ttt $f && getfattr --only-values -n user.ais.test $f && rm $f`,
        );
        expect(out).toBe('ttt');
        // the playbook's own probe attribute is gone again
        expect((await tb.hostExec(h, `getfattr -n user.racksmith.probe ${m}`)).code).not.toBe(0);
      }
    }
  });

  it('scheduler and queue values read back from sysfs: HDD profile on the rotational disk, NVMe/SSD profile on the other', async () => {
    await converged();
    for (const h of HOSTS) {
      const [d1, d2] = disks(h);
      expect(await queue(h, d1.dev, 'rotational')).toBe('1');
      expect(await scheduler(h, d1.dev)).toBe('mq-deadline');
      expect(await queue(h, d1.dev, 'nr_requests')).toBe('2048');
      expect(await queue(h, d1.dev, 'read_ahead_kb')).toBe('4096');
      expect(await queue(h, d1.dev, 'rq_affinity')).toBe('2');
      // 16383 clamped to what the loop device takes
      const hw = Number(await queue(h, d1.dev, 'max_hw_sectors_kb'));
      expect(Number(await queue(h, d1.dev, 'max_sectors_kb'))).toBe(Math.min(16383, hw));
      expect(await queue(h, d2.dev, 'rotational')).toBe('0');
      expect(await scheduler(h, d2.dev)).toBe('none');
      expect(await queue(h, d2.dev, 'read_ahead_kb')).toBe('128');
    }
  });

  it('the udev rule exists, matches each disk, and `udevadm test` re-applies the values', async () => {
    await converged();
    for (const h of HOSTS) {
      const [d1, d2] = disks(h);
      const rules = await sh(h, 'cat /etc/udev/rules.d/60-racksmith-io.rules');
      expect(rules).toContain(
        `KERNEL=="${kname(d1.dev)}", ATTR{queue/scheduler}="mq-deadline", ATTR{queue/nr_requests}="2048", ATTR{queue/max_sectors_kb}=`,
      );
      expect(rules).toContain(`ATTR{queue/read_ahead_kb}="4096", ATTR{queue/rq_affinity}="2"\n`);
      expect(rules).toContain(`KERNEL=="${kname(d2.dev)}", ATTR{queue/scheduler}="none", ATTR{queue/read_ahead_kb}="128"`);
      // undo the tuning by hand, then let udev apply the rule
      await sh(
        h,
        `q=/sys/block/${kname(d1.dev)}/queue; echo none > $q/scheduler; echo 512 > $q/read_ahead_kb; echo 1 > $q/rq_affinity; echo 512 > /sys/block/${kname(d2.dev)}/queue/read_ahead_kb`,
      );
      expect(await scheduler(h, d1.dev)).toBe('none');
      for (const d of [d1, d2]) {
        const t = await tb.hostExec(h, `udevadm test --action=change /sys/block/${kname(d.dev)} 2>&1`);
        expect(t.stdout).toContain(`60-racksmith-io.rules`);
      }
      expect(await scheduler(h, d1.dev)).toBe('mq-deadline');
      expect(await queue(h, d1.dev, 'nr_requests')).toBe('2048');
      expect(await queue(h, d1.dev, 'read_ahead_kb')).toBe('4096');
      expect(await queue(h, d1.dev, 'rq_affinity')).toBe('2');
      expect(await queue(h, d2.dev, 'read_ahead_kb')).toBe('128');
    }
  });

  it('second run: 0 changes, one round trip per host', async () => {
    await converged();
    const run = await provision([PB, '-i', inventory(), '--json']);
    expect(run.code, why(run)).toBe(0);
    // (13: packages, prune, and per disk its format, storage.json line, mount, xattr check, I/O tuning; the udev rule)
    for (const h of HOSTS) expect(recaps(run)[h]).toMatchObject({ ok: 13, changed: 0, failed: 0, execs: 1 });
  });

  it('a data disk unmounted by hand is mounted again, and nothing else changes', async () => {
    await converged();
    const [d1] = disks(A);
    await sh(A, 'umount /ais/d1');
    const run = await provision([PB, '-i', inventory(), '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(changedResources(run)).toEqual([{ host: A, id: 'mount:/ais/d1' }]);
    expect((await sh(A, 'findmnt -rn -o SOURCE --mountpoint /ais/d1')).trim()).toBe(d1.dev);
    expect(resources(run, A).get('xattr:/ais/d1')!.status).toBe('ok');
  });

  it('after a reboot, fstab and the udev rule restore mounts and tuning: the next run changes nothing', async () => {
    await converged();
    await tb.reboot([B]);
    const [d1] = disks(B);
    expect(await scheduler(B, d1.dev)).toBe('mq-deadline');
    expect((await sh(B, 'findmnt -rn -o TARGET | grep ^/ais/ | sort')).trim()).toBe('/ais/d1\n/ais/d2');
    const run = await provision([PB, '-i', inventory(), '-l', B, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(changedResources(run)).toEqual([]);
  });
});

/** A DOS partition table with one Linux partition (sfdisk is not in the test bed's rootfs). */
function mbr(): Buffer {
  const b = Buffer.alloc(512);
  b.writeUInt32LE(0x12345678, 440); // disk signature
  Buffer.from([0x00, 0x00, 0x02, 0x00, 0x83, 0xfe, 0xff, 0xff]).copy(b, 446);
  b.writeUInt32LE(2048, 454); // first LBA
  b.writeUInt32LE(204800, 458); // sectors
  b[510] = 0x55;
  b[511] = 0xaa;
  return b;
}

describe('storage playbook refuses disks that are not blank', () => {
  const sums = new Map<string, string>();
  const devSum = async (h: string, dev: string) => (await sh(h, `sha256sum < ${dev}`)).split(' ')[0];
  let ext4A = '';
  let ptA = '';
  let mountedB = '';
  let blankB = '';

  beforeAll(async () => {
    await tb.reset(HOSTS);
    await untune(HOSTS);
    [ext4A, ptA] = disks(A).map((d) => d.dev);
    [mountedB, blankB] = disks(B).map((d) => d.dev);
    // A d1: ext4 with a file; A d2: a partition table; B d1: ext4 mounted at /mnt/data; B d2: blank
    await sh(
      A,
      `mkfs.ext4 -q ${ext4A} && mkdir -p /mnt/x && mount ${ext4A} /mnt/x && head -c 1M /dev/urandom > /mnt/x/data && umount /mnt/x`,
    );
    await tb.hostExec(A, `base64 -d | dd of=${ptA} bs=512 count=1 conv=notrunc,fsync status=none`, { input: mbr().toString('base64') });
    expect((await blkid(A, ptA)).stdout).toContain('PTTYPE=dos');
    await sh(
      B,
      `mkfs.ext4 -q ${mountedB} && mkdir -p /mnt/data && mount ${mountedB} /mnt/data && head -c 1M /dev/urandom > /mnt/data/data && sync`,
    );
    sums.set(ext4A, await devSum(A, ext4A));
    sums.set(ptA, await devSum(A, ptA));
    sums.set(mountedB, (await sh(B, 'sha256sum < /mnt/data/data')) + (await blkid(B, mountedB)).stdout);
  });

  const intact = async () => {
    expect(await devSum(A, ext4A)).toBe(sums.get(ext4A));
    expect(await devSum(A, ptA)).toBe(sums.get(ptA));
    expect((await sh(B, 'sha256sum < /mnt/data/data')) + (await blkid(B, mountedB)).stdout).toBe(sums.get(mountedB));
    expect((await sh(B, 'findmnt -rn -o SOURCE --mountpoint /mnt/data')).trim()).toBe(mountedB);
  };

  it('ext4, a partition table and a mounted disk are each refused naming the reason; data intact; exit 1', async () => {
    const run = await provision([PB, '-i', inventory(), '--json']);
    expect(run.code, why(run)).toBe(1);
    const a = resources(run, A);
    const b = resources(run, B);
    expect(a.get('disk:d1')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(
        new RegExp(
          `^refused: not formatting ${ext4A} \\(1 GiB, no serial\\): it is not blank: ext4 signature \\(UUID [0-9a-f-]+\\)\\. To erase it, list its by-id path or serial in format_allow`,
        ),
      ),
    });
    expect(a.get('disk:d2')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^refused: not formatting .*: it is not blank: dos partition table/),
    });
    expect(b.get('disk:d1')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(
        new RegExp(
          `^refused: not formatting ${mountedB}: it is mounted at /mnt/data; ext4 filesystem mounted \\(signatures not read\\)\\. A disk in use is never formatted`,
        ),
      ),
    });
    // what depends on a refused disk does not run; the blank disk is formatted and mounted
    expect(a.get('mount:/ais/d1')!.status).toBe('skipped');
    expect(b.get('mount:/ais/d1')!.status).toBe('skipped');
    expect(b.get('disk:d2')!.status).toBe('changed');
    // the next fstab writer is ordered after the skipped mount, not blocked by it
    expect(b.get('mount:/ais/d2')!.status).toBe('changed');
    expect((await sh(B, 'findmnt -rn -o TARGET --mountpoint /ais/d2')).trim()).toBe('/ais/d2');
    expect(recaps(run)[A]).toMatchObject({ failed: 2 });
    expect(recaps(run)[B]).toMatchObject({ failed: 1 });
    expect((await blkid(B, blankB)).stdout).toContain('TYPE=xfs');
    expect(run.stderr).toContain('not blank: ext4 signature');
    await intact();
    expect(await sh(A, 'cat /etc/fstab 2>/dev/null || true')).not.toContain('/ais/');
  });

  it('--check reports the same refusals and changes nothing', async () => {
    const run = await provision([PB, '-i', inventory(), '--check', '--json']);
    expect(run.code).toBe(1);
    expect(resources(run, A).get('disk:d1')!.error).toMatch(/not blank: ext4/);
    await intact();
  });

  it('format_allow naming the disks: ext4 and the partition table are erased and formatted, the mounted disk never is', async () => {
    const allow = { [A]: { format_allow: [ext4A, ptA] }, [B]: { format_allow: [mountedB] } };
    const check = await provision([PB, '-i', inventory({}, allow), '--check', '--json']);
    expect(check.code).toBe(1);
    expect(resources(check, A).get('disk:d1')!.changes[0].summary).toMatch(
      new RegExp(
        `^format ${ext4A} \\(1 GiB, no serial\\) as XFS, erasing ext4 signature \\(UUID [0-9a-f-]+\\) \\(format_allow: ${ext4A}\\)$`,
      ),
    );
    expect(resources(check, A).get('disk:d2')!.changes[0].summary).toMatch(/erasing dos partition table \(format_allow: /);
    await intact(); // check mode: still nothing done

    const run = await provision([PB, '-i', inventory({}, allow), '--json']);
    expect(run.code, why(run)).toBe(1);
    expect(recaps(run)[A]).toMatchObject({ failed: 0 });
    for (const d of [ext4A, ptA]) {
      const b = (await blkid(A, d)).stdout;
      expect(b).toContain('TYPE=xfs');
      expect(b).not.toContain('PTTYPE');
    }
    expect((await sh(A, 'findmnt -rn -o TARGET | grep ^/ais/ | sort')).trim()).toBe('/ais/d1\n/ais/d2');
    expect(resources(run, B).get('disk:d1')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/it is mounted at \/mnt\/data.*never formatted, even when format_allow names it/),
    });
    expect((await sh(B, 'sha256sum < /mnt/data/data')) + (await blkid(B, mountedB)).stdout).toBe(sums.get(mountedB));

    // converged A: a second run with the allow-list still set formats nothing again
    const again = await provision([PB, '-i', inventory({}, allow), '-l', A, '--json']);
    expect(again.code, why(again)).toBe(0);
    expect(changedResources(again)).toEqual([]);
  });
});

describe('storage playbook with disks selected by serial', () => {
  // Loop devices have no serial. The test writes what udevd would have recorded for them into
  // the host's udev database (/run/udev/data/b7:N: E:ID_SERIAL / E:ID_SERIAL_SHORT, the test
  // bed's recorded serials RSTBnDm), which is where racksmith reads udev's view of a disk.
  // (`udevadm test` rewrites that database without them, so the ENV{ID_SERIAL} rule itself is
  // checked as text here, not applied.)
  beforeAll(async () => {
    await tb.reset([A]);
    await untune([A]);
    for (const d of disks(A)) {
      const minor = (await sh(A, `cat /sys/block/${kname(d.dev)}/dev`)).trim();
      await sh(A, `printf 'E:ID_SERIAL=RS_LOOP_%s\\nE:ID_SERIAL_SHORT=%s\\n' ${d.serial} ${d.serial} >> /run/udev/data/b${minor}`);
    }
    await sh(A, `mkfs.ext4 -q ${disks(A)[1].dev}`);
  });

  const serialInventory = (allow: string[]) =>
    inventory({}, { [A]: { storage_disks: disks(A).map((d) => ({ serial: d.serial })), format_allow: allow } });

  it('format_allow by kernel path does not count for a disk that has a serial; by serial it does', async () => {
    const [d1, d2] = disks(A);
    const byPath = await provision([PB, '-i', serialInventory([d2.dev]), '-l', A, '--json']);
    expect(byPath.code, why(byPath)).toBe(1);
    const rs = resources(byPath, A);
    expect(rs.get(`disk:${d2.serial}`)!.error).toMatch(
      new RegExp(`not formatting ${d2.dev} \\(1 GiB, serial ${d2.serial}\\): it is not blank: ext4`),
    );
    expect(rs.get(`disk:${d1.serial}`)!.changes[0].summary).toBe(`format ${d1.dev} (blank, 1 GiB, serial ${d1.serial}) as XFS`);
    expect((await sh(A, `findmnt -rn -o SOURCE --mountpoint /ais/${d1.serial}`)).trim()).toBe(d1.dev);
    const rules = await sh(A, 'cat /etc/udev/rules.d/60-racksmith-io.rules');
    expect(rules).toContain(`ENV{ID_SERIAL}=="RS_LOOP_${d1.serial}", ATTR{queue/scheduler}="mq-deadline"`);
    expect(rules).toContain(`ENV{ID_SERIAL}=="RS_LOOP_${d2.serial}", ATTR{queue/scheduler}="none"`);
    expect((await blkid(A, d2.dev)).stdout).toContain('TYPE=ext4');

    const bySerial = await provision([PB, '-i', serialInventory([d2.serial]), '-l', A, '--json']);
    expect(bySerial.code, why(bySerial)).toBe(0);
    expect(resources(bySerial, A).get(`disk:${d2.serial}`)!.changes[0].summary).toMatch(
      new RegExp(`erasing ext4 signature .* \\(format_allow: ${d2.serial}\\)$`),
    );
    const fstab = await sh(A, 'cat /etc/fstab');
    for (const d of [d1, d2]) {
      const uuid = /^UUID=(.+)$/m.exec((await blkid(A, d.dev)).stdout)![1];
      expect(fstab).toContain(`UUID=${uuid} /ais/${d.serial} xfs ${OPTIONS} 0 0\n`);
      expect((await sh(A, `findmnt -rn -o SOURCE --mountpoint /ais/${d.serial}`)).trim()).toBe(d.dev);
    }

    const again = await provision([PB, '-i', serialInventory([d2.serial]), '-l', A, '--json']);
    expect(again.code, why(again)).toBe(0);
    expect(recaps(again)[A]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it('a serial that names no disk is a clear failure of that host', async () => {
    const run = await provision([
      PB,
      '-i',
      inventory({}, { [A]: { storage_disks: [{ serial: 'NO_SUCH_SERIAL', name: 'x' }] } }),
      '-l',
      A,
      '--json',
    ]);
    expect(run.code).toBe(1);
    expect(resources(run, A).get('disk:x')!.error).toBe('refused: no disk has serial or WWN NO_SUCH_SERIAL');
  });
});

describe('storage playbook with I/O profiles overridden per group and host', () => {
  beforeAll(async () => {
    await tb.reset([B]);
    await untune([B]);
    await sh(B, `echo 64 > /sys/block/${kname(disks(B)[1].dev)}/queue/nr_requests`);
  });

  it('group and host overrides apply key by key; nr_requests is clamped to what the device takes and read back', async () => {
    const [d1, d2] = disks(B);
    // group storage: SSD profile asks nr_requests 1024 with scheduler none (the loop device's
    // hardware queue depth is 128); host B: HDD read-ahead 8192, max_sectors_kb left alone
    const inv = writeInventory({
      hosts: HOSTS,
      hostVars: {
        [B]: {
          storage_disks: disks(B).map((d, i) => ({ device: d.dev, name: `d${i + 1}`, match: { KERNEL: kname(d.dev) } })),
          io_profiles: { hdd: { read_ahead_kb: 8192, max_sectors_kb: null }, ssd: { nr_requests: 1024, read_ahead_kb: 256 } },
        },
      },
      groups: { storage: { hosts: HOSTS, vars: { io_profiles: { ssd: { nr_requests: 1024 } } } } },
    });
    const depth = await sh(B, `cat /sys/block/${kname(d2.dev)}/mq/*/nr_tags | sort -n | head -n 1`);
    const maxSectors = await queue(B, d1.dev, 'max_sectors_kb');
    const check = await provision([PB, '-i', inv, '-l', B, '--check', '--json']);
    expect(check.code, why(check)).toBe(2);
    expect(
      resources(check, B)
        .get('io:d2')!
        .changes.map((c: { summary: string }) => c.summary),
    ).toContain(
      `/sys/block/${kname(d2.dev)}/queue/nr_requests: 64 → ${depth.trim()} (1024 clamped to the hardware queue depth ${depth.trim()} (scheduler none))`,
    );
    const run = await provision([PB, '-i', inv, '-l', B, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(await queue(B, d1.dev, 'read_ahead_kb')).toBe('8192');
    expect(await queue(B, d1.dev, 'max_sectors_kb')).toBe(maxSectors); // left alone (null)
    expect(await scheduler(B, d1.dev)).toBe('mq-deadline');
    expect(await queue(B, d2.dev, 'nr_requests')).toBe(depth.trim());
    expect(await queue(B, d2.dev, 'read_ahead_kb')).toBe('256');
    const rules = await sh(B, 'cat /etc/udev/rules.d/60-racksmith-io.rules');
    expect(rules).toContain(
      `KERNEL=="${kname(d2.dev)}", ATTR{queue/scheduler}="none", ATTR{queue/nr_requests}="${depth.trim()}", ATTR{queue/read_ahead_kb}="256"`,
    );
    expect(rules).not.toContain('max_sectors_kb');
    const again = await provision([PB, '-i', inv, '-l', B, '--json']);
    expect(again.code, why(again)).toBe(0);
    expect(changedResources(again)).toEqual([]);
  });
  it('a scheduler the device does not offer: that disk fails naming what it offers, the rest applies', async () => {
    await tb.reset([B]);
    await untune([B]);
    const [d1, d2] = disks(B);
    const has = await offered(B, d1.dev);
    // the scheduler one kernel build of this machine kind lacks (bfq), or a name no kernel has
    const absent = ['bfq', 'racksmith-no-such-scheduler'].find((x) => !has.includes(x))!;
    const inv = inventory({}, { [B]: { io_profiles: { hdd: { scheduler: absent } } } });
    const run = await provision([PB, '-i', inv, '-l', B, '--json']);
    expect(run.code, why(run)).toBe(1);
    const failed = run.events.filter((e) => e.type === 'resource' && e.status === 'failed').map((e) => [e.id, e.error]);
    expect(failed).toEqual([
      ['io:d1', `refused: I/O scheduler ${absent} is not available (the device offers: ${has.join(', ')})`],
      ['udev-rules:/etc/udev/rules.d/60-racksmith-io.rules', expect.stringContaining(`I/O scheduler ${absent} is not available`)],
    ]);
    expect(await scheduler(B, d1.dev)).toBe('none');
    expect(await queue(B, d2.dev, 'read_ahead_kb')).toBe('128');
    expect((await sh(B, 'findmnt -rn -o TARGET | grep ^/ais/ | sort')).trim()).toBe('/ais/d1\n/ais/d2');
  });
});

describe('storage playbook keeps an XFS disk and checks its input', () => {
  beforeAll(async () => {
    await tb.reset([A]);
  });

  it('a disk that already carries XFS is kept (same UUID); check mode shows the fstab diff', async () => {
    const [d1] = disks(A);
    await sh(A, `mkfs.xfs -q ${d1.dev}`);
    const uuid = /^UUID=(.+)$/m.exec((await blkid(A, d1.dev)).stdout)![1];
    const check = await provision([PB, '-i', inventory(), '-l', A, '--check', '--diff', '--json']);
    expect(check.code).toBe(2);
    const rs = resources(check, A);
    expect(rs.get('disk:d1')!.status).toBe('ok');
    const fstab = rs.get('mount:/ais/d1')!.changes.find((c: { diff?: string }) => c.diff);
    expect(fstab.diff).toContain(`+UUID=${uuid} /ais/d1 xfs ${OPTIONS} 0 0`);
    expect(check.stderr).toContain(`+UUID=${uuid} /ais/d1 xfs ${OPTIONS} 0 0`);
    const run = await provision([PB, '-i', inventory(), '-l', A, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(resources(run, A).get('disk:d1')!.status).toBe('ok');
    expect((await blkid(A, d1.dev)).stdout).toContain(`UUID=${uuid}`);
  });

  it.each([
    ['no storage_disks at all', { [A]: { storage_disks: null } }, /storage_disks is not set/],
    [
      "ais-k8s's ais_devices instead (said how racksmith lists the same disks)",
      { [A]: { storage_disks: null, ais_devices: ['loop0', 'loop1'] } },
      /storage_disks is not set.*; ais_devices \(ais-k8s's list\) is not read: the same disks at the same \/ais\/<kernel name> mountpoints are storage_mount_name: kernel and storage_disks: \[\{device: \/dev\/loop0\}, \{device: \/dev\/loop1\}\]/,
    ],
    [
      'device and serial on one disk',
      { [A]: { storage_disks: [{ device: '/dev/loop0', serial: 'X' }] } },
      /exactly one of device or serial/,
    ],
    ['an unknown profile key', { [A]: { io_profiles: { hdd: { scheduler: 'mq-deadline', elevator: 'x' } } } }, /unknown key 'elevator'/],
    [
      'a udev match that is not a glob',
      { [A]: { storage_disks: [{ device: '/dev/loop0', match: { KERNEL: 'loop[0' } }] } },
      /storage_disks\[0\]\.match\.KERNEL: not a udev glob: a \[ without a closing \] in "loop\[0"/,
    ],
  ])(
    '%s → exit 3 naming the inventory file:line, before any host is touched',
    async (_, hostVars: Record<string, Record<string, unknown>>, msg) => {
      // the key is dropped from the YAML text below: that case is written as YAML
      let inv = inventory({}, hostVars, hostVars[A].storage_disks === null ? 'yaml' : undefined);
      if (hostVars[A].storage_disks === null) {
        // drop the key entirely: missing, not null
        const text = readFileSync(inv, 'utf8');
        expect(text).toMatch(/storage_disks: null\n/);
        inv = inv.replace(/inventory\.yaml$/, 'inventory-missing.yaml');
        writeFileSync(inv, text.replace(/\s*storage_disks: null\n/, '\n'));
      }
      const before = await sh(A, 'cat /etc/fstab; ls /etc/udev/rules.d/');
      const run = await provision([PB, '-i', inv]);
      expect(run.code, why(run)).toBe(3);
      expect(run.stderr).toMatch(msg);
      // a variable that is set is located at its file:line; a missing one can only be named
      if (hostVars[A].storage_disks === null) expect(run.stderr).toContain(`${A}: storage_disks is not set`);
      else expect(run.stderr).toContain(`${inv}:`);
      expect(await sh(A, 'cat /etc/fstab; ls /etc/udev/rules.d/')).toBe(before);
    },
  );

  it("ais-k8s's names for racksmith's variables (ais_fs_mount_options, mpath_prefix) are warned about at their file:line, not left to lose silently", async () => {
    const inv = inventory({}, { [A]: { ais_fs_mount_options: 'noatime,nofail', mpath_prefix: '/ais' } });
    const run = await provision([PB, '-i', inv, '-l', A, '--check']);
    expect([0, 2]).toContain(run.code);
    for (const [foreign, ours] of [
      ['ais_fs_mount_options', 'storage_mount_options'],
      ['mpath_prefix', 'storage_mount_prefix'],
    ])
      expect(run.stderr).toMatch(
        new RegExp(
          `warning: ${inv.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: ${foreign} is read by no play: it is ais-k8s's name; racksmith's is ${ours} `,
        ),
      );
  });
});
