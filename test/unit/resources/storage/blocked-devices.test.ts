// Devices a read would wait on (core/block-ids.ts): a suspended device-mapper device, a multipath
// map with no running path, a disk whose SCSI device or NVMe controller holds its I/O, a native
// NVMe multipath namespace with no usable path, and what is stacked on one are neither given to
// blkid nor read by a disk, mount or xattr probe, which say why instead of hanging the host's
// run. The test bed's kernel has none of them: the probes run by the local sh over a fake sysfs
// tree laid out as the kernel lays one out (fake-sysfs.ts), blkid and setfattr are stand-ins that
// print what they were given.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BLOCK_IDS_FN } from '../../../../src/resources/core/block-ids.ts';
import { diskProbe, XATTR_CHECKS } from '../../../../src/resources/storage/blockdev.ts';
import { parseDiskFacts, parseXattrFacts, xattrDiff } from '../../../../src/resources/storage/blockdev-logic.ts';
import { mount } from '../../../../src/resources/core/mount.ts';
import { Refusal } from '../../../../src/contract/resource.ts';
import { shq } from '../../../../src/shell/quote.ts';
import { fakeSysfs } from './fake-sysfs.ts';

let root = '';
let bin = '';
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'rs-blocked-'));
  bin = mkdtempSync(join(tmpdir(), 'rs-blocked-bin-'));
  // blkid: one DEVNAME line per device it was given (not its cache file), ALL when given none (its own scan)
  writeFileSync(
    join(bin, 'blkid'),
    '#!/bin/sh\nn=0\nfor a; do case $a in /dev/null) ;; /*) echo "DEVNAME=$a"; n=1 ;; esac; done\n[ "$n" = 1 ] || echo ALL\n',
    {
      mode: 0o755,
    },
  );
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(bin, { recursive: true, force: true });
});

const { blockDev, stack, partition, scsiDisk: path, nvmeNamespace, nvmeMultipath } = fakeSysfs(() => root);

const sh = (body: string) =>
  execFileSync('sh', ['-c', `${BLOCK_IDS_FN}\n${body}`], { encoding: 'utf8', env: { PATH: `${bin}:${process.env.PATH}` } });
const blocked = () =>
  sh(`rs_blk_load ${shq(root)}; printf '%s' "$rs_blk"`)
    .split('\n')
    .filter(Boolean);

/** A multipath map dm-0 over its paths, with an LV dm-1 on it. */
function multipath(states: string[]) {
  const map = blockDev('dm-0', '253:0', { dm: { uuid: 'mpath-3600a0b80', name: 'mpatha' } });
  const paths = states.map((s, i) => path(`sd${'cd'[i]}`, `8:${32 + 16 * i}`, s));
  for (const p of paths) stack(map, p);
  stack(blockDev('dm-1', '253:1', { dm: { uuid: 'LVM-aaaabbbb' } }), map);
  return paths;
}

describe('the devices a read would wait on, from sysfs', () => {
  it.for([
    ['both paths running', ['running', 'running'], []],
    ['one path running', ['offline', 'running'], []],
    // (an NVMe path's controller says live)
    ['an NVMe path live', ['live'], []],
    [
      'no path running: the map and the LV on it',
      ['offline', 'transport-offline'],
      [
        'dm-0 253:0 is a multipath map (mpatha) with no running path',
        'dm-1 253:1 is stacked on dm-0, which is a multipath map (mpatha) with no running path',
      ],
    ],
    [
      'no path left at all',
      [],
      [
        'dm-0 253:0 is a multipath map (mpatha) with no running path',
        'dm-1 253:1 is stacked on dm-0, which is a multipath map (mpatha) with no running path',
      ],
    ],
  ] as const)('a multipath map, %s', ([, states, want]) => {
    multipath([...states]);
    expect(blocked()).toEqual(want);
  });

  it('a suspended device-mapper device and what is stacked on it, not what it reads', () => {
    const sde = path('sde', '8:64', 'running');
    const lv = blockDev('dm-2', '253:2', { dm: { uuid: 'LVM-ccccdddd', name: 'vg0-data', suspended: 1 } });
    stack(lv, sde);
    stack(blockDev('dm-3', '253:3', { dm: { uuid: 'CRYPT-LUKS2-x' } }), lv);
    blockDev('dm-4', '253:4', { dm: { uuid: 'LVM-eeeeffff' } });
    expect(blocked()).toEqual([
      'dm-2 253:2 is a suspended device-mapper device (vg0-data)',
      'dm-3 253:3 is stacked on dm-2, which is a suspended device-mapper device (vg0-data)',
    ]);
  });

  it("a partition of a device stacked on one (an md array's), and what is stacked on the partition", () => {
    const dm0 = blockDev('dm-0', '253:0', { dm: { uuid: 'LVM-gggghhhh', name: 'vg1-raid', suspended: 1 } });
    const md0 = blockDev('md0', '9:0');
    stack(md0, dm0);
    const md0p1 = partition(md0, 'md0p1', '259:1');
    blockDev('dm-7', '253:7', { dm: { uuid: 'CRYPT-LUKS2-y' } });
    symlinkSync('../../../../../virtual/block/dm-7', join(md0p1, 'holders/dm-7'));
    expect(blocked()).toEqual([
      'dm-0 253:0 is a suspended device-mapper device (vg1-raid)',
      'md0 9:0 is stacked on dm-0, which is a suspended device-mapper device (vg1-raid)',
      'md0p1 259:1 is a partition of md0, which is stacked on dm-0, which is a suspended device-mapper device (vg1-raid)',
      'dm-7 253:7 is stacked on md0p1, which is a partition of md0, which is stacked on dm-0, which is a suspended device-mapper device (vg1-raid)',
    ]);
  });

  it('a path whose state cannot be read counts as running (as before: read)', () => {
    const map = blockDev('dm-0', '253:0', { dm: { uuid: 'mpath-x' } });
    stack(map, blockDev('dm-9', '253:9', { dm: { uuid: 'LVM-other' } }));
    expect(blocked()).toEqual([]);
  });

  // (a SCSI device's states: drivers/scsi/scsi_sysfs.c; an NVMe controller's: drivers/nvme/host/core.c)
  it.for([
    ['blocked', true],
    ['quiesce', true],
    ['created-blocked', true],
    ['running', false],
    ['offline', false], // (its reads fail at once)
    ['transport-offline', false],
  ] as const)('a SCSI disk in state %s: listed with its partition: %s', ([state, listed]) => {
    partition(path('sdb', '8:16', state), 'sdb1', '8:17');
    expect(blocked()).toEqual(
      listed ? [`sdb 8:16 is a device in state ${state}`, `sdb1 8:17 is a partition of sdb, which is a device in state ${state}`] : [],
    );
  });

  it.for([
    ['connecting', true],
    ['resetting', true],
    ['live', false],
    ['dead', false], // (its reads fail at once)
    ['deleting (no IO)', false],
  ] as const)('an NVMe namespace whose controller is %s: listed: %s', ([state, listed]) => {
    nvmeNamespace('nvme1n1', '259:7', 'nvme1', state);
    expect(blocked()).toEqual(listed ? [`nvme1n1 259:7 is a device in state ${state}`] : []);
  });

  // (drivers/nvme/host/multipath.c: no usable path, the I/O queues while a controller is live,
  // resetting or connecting, and fails at once when none is)
  it.for([
    ['both paths live', ['live', 'live'], false],
    ['one path reconnecting, one live', ['connecting', 'live'], false],
    ['a dual-port SSD on one port, resetting', ['resetting'], true],
    ['one path reconnecting, the other dead', ['connecting', 'dead'], true],
    ['every path dead (reads fail at once)', ['dead', 'deleting (no IO)'], false],
    ['live, ANA inaccessible', ['live/inaccessible'], true],
    ['live, ANA in change, and live non-optimized', ['live/change', 'live/non-optimized'], false],
  ] as const)('native NVMe multipath, %s: the head decides, its hidden paths are never listed', ([, paths, listed]) => {
    nvmeMultipath([...paths]);
    expect(blocked()).toEqual(listed ? ['nvme0n1 259:0 is an NVMe multipath namespace with no usable path'] : []);
  });

  it("native NVMe multipath: a head's paths are its own (nvme1n1's are not nvme10n1's or nvme1n10's)", () => {
    // (its one path dead: were the others' counted, it would be listed as waiting for them)
    nvmeMultipath(['dead'], 'nvme1n1');
    for (const [name, mm, ctrl] of [
      ['nvme10c3n1', '259:20', 'nvme3'],
      ['nvme1c4n10', '259:21', 'nvme4'],
    ])
      nvmeNamespace(name, mm, ctrl, 'connecting');
    expect(blocked()).toEqual([]);
  });

  it('a multipath path blocked: not read itself, nor its partition; its map decides (listed when no other path runs)', () => {
    const [sdc] = multipath(['blocked', 'running']);
    partition(sdc, 'sdc1', '8:33');
    expect(blocked()).toEqual([
      'sdc 8:32 is a device in state blocked',
      'sdc1 8:33 is a partition of sdc, which is a device in state blocked',
    ]);
    // blkid is given the map and the running path, not the blocked path or its partition
    writeFileSync(
      join(root, 'proc/partitions'),
      'major minor  #blocks  name\n\n   8       32    1000 sdc\n   8       33     900 sdc1\n   8       48    1000 sdd\n 253        0    1000 dm-0\n 253        1    1000 dm-1\n',
    );
    expect(sh(`rs_blk_load ${shq(root)}; rs_bid_some ${shq(root)}; printf '%s' "$rs_bid"`)).toBe(
      'DEVNAME=/dev/sdd\nDEVNAME=/dev/dm-0\nDEVNAME=/dev/dm-1',
    );
    rmSync(root, { recursive: true, force: true });
    multipath(['blocked']);
    expect(blocked()).toEqual([
      'dm-0 253:0 is a multipath map (mpatha) with no running path',
      'dm-1 253:1 is stacked on dm-0, which is a multipath map (mpatha) with no running path',
      'sdc 8:32 is a device in state blocked',
    ]);
  });

  it('looked up by maj:min and by path (a link to the device too); the caller keeps its globbing', () => {
    multipath(['offline']);
    symlinkSync('dm-1', join(root, 'dev/link-to-dm-1'));
    mkdirSync(join(root, 'dev/mapper'));
    const r = shq(root);
    expect(sh(`set -f; rs_blk_mm ${r} 253:1; echo "$rs_blk_n|$rs_blk_w"; case $- in *f*) echo noglob ;; esac`)).toBe(
      'dm-1|is stacked on dm-0, which is a multipath map (mpatha) with no running path\nnoglob\n',
    );
    expect(sh(`rs_blk_dev ${r} ${shq(join(root, 'dev/link-to-dm-1'))}; echo "$rs_blk_w"`)).toMatch(/^is stacked on dm-0/);
    expect(sh(`rs_blk_mm ${r} 8:32; echo "[$rs_blk_w]"; rs_blk_dev ${r} ${shq(join(root, 'dev/sdc'))}; echo "[$rs_blk_w]"`)).toBe(
      '[]\n[]\n',
    );
  });
});

describe('blkid beside a blocked device: the devices of /proc/partitions its own scan would read, but the blocked', () => {
  it('partitions (not an extended one), whole disks without any, no private device-mapper device, maps by their /dev/mapper name', () => {
    multipath(['offline']);
    const sda = blockDev('sda', '8:0', { parent: 'pci0/host1' });
    partition(sda, 'sda1', '8:1');
    partition(sda, 'sda2', '8:2');
    blockDev('sdb', '8:16', { parent: 'pci0/host1' });
    blockDev('dm-5', '253:5', { dm: { uuid: 'LVM-aaaacccc-real' } });
    // (/dev/mapper/vg-data is no block device here: the map keeps its kernel name)
    blockDev('dm-6', '253:6', { dm: { uuid: 'LVM-aaaadddd', name: 'vg-data' } });
    writeFileSync(
      join(root, 'proc/partitions'),
      'major minor  #blocks  name\n\n   8        0    1000 sda\n   8        1     500 sda1\n   8        2       1 sda2\n   8       16    1000 sdb\n' +
        ' 253        0    1000 dm-0\n 253        1    1000 dm-1\n 253        5    1000 dm-5\n 253        6    1000 dm-6\n',
    );
    expect(
      sh(`rs_blk_load ${shq(root)}; set -f; rs_bid_some ${shq(root)}; printf '%s' "$rs_bid"; case $- in *f*) echo noglob ;; esac`),
    ).toBe('DEVNAME=/dev/sda1\nDEVNAME=/dev/sdb\nDEVNAME=/dev/dm-6noglob\n');
  });

  it('its own scan when nothing is blocked, the list when something is, and nothing when every device is', () => {
    const load = (blk: string, some: string) =>
      sh(`rs_blk_load() { rs_blk=${shq(blk)}; }\nrs_bid_some() { ${some}; }\nrs_bid_load; printf '%s' "$rs_bid"`);
    expect(load('', 'rs_bid=SOME')).toBe('ALL');
    expect(load('\ndm-0 253:0 is a suspended device-mapper device', 'rs_bid=SOME')).toBe('SOME');
    // (the list over a root with no device: blkid is not run, which would scan them all)
    mkdirSync(join(root, 'proc'));
    writeFileSync(join(root, 'proc/partitions'), 'major minor  #blocks  name\n\n');
    expect(sh(`rs_blk='\ndm-0 253:0 is a suspended device-mapper device'; rs_bid_some ${shq(root)}; printf '[%s]' "$rs_bid"`)).toBe('[]');
  });
});

describe('a filesystem UUID looked up beside a blocked device', () => {
  it("udev's link names a device blkid was not given: that device (whose reader says why), not a path under it", () => {
    const links = join(root, 'by-uuid');
    mkdirSync(links);
    writeFileSync(join(root, 'dm-0'), '');
    writeFileSync(join(root, 'sdc'), '');
    symlinkSync('../dm-0', join(links, 'U1'));
    const body = (blk: string) =>
      [
        `rs_bid_done=1; rs_bid_links=${shq(links)}; rs_blk=${shq(blk)}`,
        `rs_bid=${shq(`DEVNAME=${join(root, 'sdc')}\nUUID=U1\nTYPE=xfs`)}`,
        `rs_blk_dev() { rs_blk_w=; rs_blk_n=; [ "$2" -ef ${shq(join(root, 'dm-0'))} ] && { rs_blk_n=dm-0; rs_blk_w='is a suspended device-mapper device'; }; :; }`,
        'rs_bid_dev U1; printf %s "$rs_bid_v"',
      ].join('\n');
    expect(sh(body('\ndm-0 253:0 is a suspended device-mapper device'))).toBe('/dev/dm-0');
    // (nothing blocked: the first device that carries it, as before)
    expect(sh(body(''))).toBe(join(root, 'sdc'));
  });
});

describe('the probes of a blocked device say why and read nothing of it', () => {
  it('a data disk (by serial): an error naming the map, none for the path under it', () => {
    multipath(['offline', 'blocked']);
    writeFileSync(
      join(root, 'proc/self/mountinfo'),
      '20 1 0:25 / / rw - overlay overlay rw\n22 20 253:0 / /ais/d1 rw - xfs /dev/mapper/mpatha rw\n',
    );
    const probe = (serial: string) =>
      parseDiskFacts(
        execFileSync('sh', ['-c', diskProbe({ serial }, { root })], { encoding: 'utf8', env: { PATH: `${bin}:${process.env.PATH}` } }),
      );
    expect(probe('SER_dm-0').error).toBe(
      'serial SER_dm-0 (dm-0) is a multipath map (mpatha) with no running path: a read of it would wait until that changes; not read',
    );
    expect(probe('SER_dm-1').error).toMatch(/^serial SER_dm-1 \(dm-1\) is stacked on dm-0, which is a multipath map/);
    expect(probe('SER_sdc').error).toBeUndefined();
    // (what sysfs, udev and the mount table say of it is read: the mountpath it holds)
    const f = probe('SER_dm-0');
    expect(f).toMatchObject({
      blocked: 'is a multipath map (mpatha) with no running path',
      kname: 'dm-0',
      majmin: '253:0',
      udev: { ID_SERIAL_SHORT: 'SER_dm-0' },
    });
    expect(f.mounts.map((m) => m.mountpoint)).toEqual(['/ais/d1']);
  });

  it('the xattr check: its mount not given to setfattr, refused saying why; the others checked', () => {
    writeFileSync(join(bin, 'setfattr'), `#!/bin/sh\necho "$*" >> ${shq(join(bin, 'setfattr.log'))}\n`, { mode: 0o755 });
    const stubs = [
      // the mount table's walk: /ais/d1 on dm-1, /ais/d2 on sdb
      'rs_mi_each() { "$2" 36 25 253:1 / /ais/d1 rw; "$2" 37 25 8:16 / /ais/d2 rw; }',
      'rs_blk_mm() { rs_blk_w=; rs_blk_n=; [ "$2" = 253:1 ] && { rs_blk_n=dm-1; rs_blk_w=\'is a suspended device-mapper device\'; }; :; }',
    ].join('\n');
    const out = sh(`${stubs}\n${XATTR_CHECKS.script(['/ais/d1', '/ais/d2'])}`);
    const [d1, d2] = XATTR_CHECKS.split(out, ['/ais/d1', '/ais/d2']).map((t) => parseXattrFacts(t));
    expect(d2).toEqual({ mounted: true, ok: true, detail: '' });
    expect(() => xattrDiff('/ais/d1', d1)).toThrow(
      new Refusal('/ais/d1: its device dm-1 is a suspended device-mapper device: a check would wait until that changes; not checked'),
    );
    expect(execFileSync('cat', [join(bin, 'setfattr.log')], { encoding: 'utf8' })).not.toContain('/ais/d1');
  });

  it.for([
    ['the top mount on the blocked device', ['8:16', '253:1'], true],
    ['the top mount on a device read', ['253:1', '8:16'], false],
  ] as const)('a mountpoint mounted over: the top mount decides (%s)', ([, order, isBlocked]) => {
    writeFileSync(join(bin, 'setfattr'), `#!/bin/sh\necho "$*" >> ${shq(join(bin, 'setfattr.log'))}\n`, { mode: 0o755 });
    const stubs = [
      `rs_mi_each() { "$2" 36 25 ${order[0]} / /ais/d1 rw; "$2" 37 36 ${order[1]} / /ais/d1 rw; }`,
      'rs_blk_mm() { rs_blk_w=; rs_blk_n=; [ "$2" = 253:1 ] && { rs_blk_n=dm-1; rs_blk_w=\'is a suspended device-mapper device\'; }; :; }',
    ].join('\n');
    const out = sh(`${stubs}\n${XATTR_CHECKS.script(['/ais/d1'])}`);
    const f = parseXattrFacts(XATTR_CHECKS.split(out, ['/ais/d1'])[0]);
    expect(f.blocked !== undefined).toBe(isBlocked);
    expect(existsSync(join(bin, 'setfattr.log'))).toBe(!isBlocked);
  });

  it('a mount of the device: refused saying why (its UUID is not read)', () => {
    const m = mount({ device: '/dev/mapper/mpatha', path: '/ais/d1', fstype: 'xfs', options: ['noatime'] });
    const facts = m.parse({
      parts: [
        'target=dir\ndev=/dev/mapper/mpatha\nmajmin_dec=253:0\nblocked=is a multipath map (mpatha) with no running path\n',
        undefined,
        '',
        { type: 'absent' },
      ],
      stdout: '',
      code: 0,
      stderr: '',
    });
    expect(() => m.diff(facts)).toThrow(
      new Refusal(
        '/dev/mapper/mpatha is a multipath map (mpatha) with no running path: a read of it would wait until that changes; not read',
      ),
    );
  });
});
