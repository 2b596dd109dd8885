// Table tests of the storage playbook's pure logic: disk selection from inventory vars, the
// format/refusal decision from disk facts, I/O profile clamping, udev rule text, xattr check,
// and the disk probe run over a fake sysfs tree. The LVM/dm holder refusal is tested here from
// facts (and from a fake /sys holders/ directory) because the test bed's kernel has no
// device-mapper, so no real holder can be created there.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storageHostCtx } from '../../../support/storage-host.ts';
import {
  allowedBy,
  humanSize,
  ioChanges,
  ioTarget,
  mergeProfiles,
  parseDiskFacts,
  parseXattrFacts,
  planFormat,
  profileFor,
  udevGlob,
  udevMatch,
  udevRuleLine,
  xattrDiff,
  type DiskFacts,
  type QueueFacts,
} from '../../../../src/resources/storage/blockdev-logic.ts';
import { diskMount, diskProbe, diskFactsProbe, ioTuning, XATTR_CHECKS, xfsFormat } from '../../../../src/resources/storage/blockdev.ts';
import { Refusal } from '../../../../src/contract/resource.ts';
import { ioRulesContent, ioUdevRules } from '../../../../src/resources/storage/udev.ts';
import { AIS_MOUNT_OPTIONS, storageConfig, storageResources } from '../../../../playbooks/storage.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { recordedDiskMount } from '../../../../src/resources/storage/storage-lifecycle.ts';
import { standaloneProbe } from '../../../../src/engine/probe-set.ts';
import { isInline } from '../../../../src/contract/probe.ts';
import { escapeMountinfo, MOUNTINFO_FN } from '../../../../src/resources/core/mount-table.ts';
import { BLOCK_IDS_FN } from '../../../../src/resources/core/block-ids.ts';
import { presetHostTables } from '../../../support/host-tables.ts';
import { fakeSysfs } from './fake-sysfs.ts';

const GiB = 1024 ** 3;
const loopQueue: QueueFacts = {
  schedulers: ['none', 'mq-deadline', 'kyber', 'bfq'],
  scheduler: 'none',
  nr_requests: 128,
  read_ahead_kb: 128,
  rq_affinity: 1,
  max_sectors_kb: 1280,
  max_hw_sectors_kb: 1280,
  nr_tags: 128,
  caps: {},
};

/** Bytes the data sample reads of a disk over 32 MiB (blockdev.ts SAMPLE_FN). */
const SAMPLED = 1179648 + 4 * 131072 + 15 * 81920 + 1048576;

/** Facts of a blank 20 GiB SATA HDD sdb with serial S1, unless overridden. */
function disk(o: Partial<DiskFacts> = {}): DiskFacts {
  return {
    spec: '/dev/sdb',
    sameAs: [],
    kname: 'sdb',
    majmin: '8:16',
    isPartition: false,
    sizeBytes: 20 * GiB,
    rotational: true,
    readOnly: false,
    udev: { ID_SERIAL: 'ST20000_S1', ID_SERIAL_SHORT: 'S1', ID_WWN: '0x5000c500a1b2c3d4' },
    sysIds: {},
    byId: ['/dev/disk/by-id/ata-ST20000_S1', '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4'],
    partitions: [],
    holders: [],
    mounts: [],
    swaps: [],
    blkid: {},
    blkidCode: 2,
    signatures: [],
    fingerprint: 'f',
    contentProbed: true,
    sample: { read: SAMPLED, want: SAMPLED, hits: [], xfsSuperblocks: [], tar: false },
    offsetSignatures: [],
    exclusiveOpen: '',
    nsMounts: [],
    openBy: [],
    loops: [],
    idDisks: { ST20000_S1: ['sdb'], S1: ['sdb'], '0x5000c500a1b2c3d4': ['sdb'] },
    stack: [],
    queue: { ...loopQueue, scheduler: 'mq-deadline', nr_requests: 256, max_hw_sectors_kb: 32767, max_sectors_kb: 1280, nr_tags: 32 },
    ...o,
  };
}
const ext4 = {
  blkid: { TYPE: 'ext4', UUID: 'u-ext4', USAGE: 'filesystem' },
  blkidCode: 0,
  signatures: [{ offset: '0x438', type: 'ext4', uuid: 'u-ext4' }],
};
const xfs = {
  blkid: { TYPE: 'xfs', UUID: 'u-xfs', USAGE: 'filesystem' },
  blkidCode: 0,
  signatures: [{ offset: '0x0', type: 'xfs', uuid: 'u-xfs' }],
};
/** As the probe reports a mounted disk: its signatures are not read. */
const mountedUnread = (fs: string, mountpoint: string, more: Partial<DiskFacts> = {}): Partial<DiskFacts> => ({
  contentProbed: false,
  mountedFs: fs,
  blkid: {},
  blkidCode: -1,
  fingerprint: '',
  sample: undefined,
  exclusiveOpen: undefined,
  idDisks: {},
  mounts: [{ majmin: '8:16', dev: 'sdb', mountpoint }],
  ...more,
});
const gpt = {
  blkid: { PTTYPE: 'gpt', PTUUID: 'p' },
  blkidCode: 0,
  signatures: [
    { offset: '0x200', type: 'gpt' },
    { offset: '0x4ffffe00', type: 'gpt' },
    { offset: '0x1fe', type: 'PMBR' },
  ],
};
const loop = (o: Partial<DiskFacts> = {}) =>
  disk({ spec: '/dev/loop3', kname: 'loop3', majmin: '7:3', sizeBytes: GiB, udev: {}, byId: [], queue: loopQueue, ...o });

const MP = '/ais/d1';
const plan = (f: DiskFacts, allow: string[] = []) => planFormat(f, { allow, mountpoint: MP });
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(Refusal);
    return (e as Error).message;
  }
  throw new Error('expected a Refusal');
};

const hostCtx = storageHostCtx;
const inputError = (fn: () => unknown): InputError => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return e as InputError;
  }
  throw new Error('expected an InputError');
};

describe('disk selection from inventory vars', () => {
  it.each([
    [{ device: '/dev/sdb' }, { device: '/dev/sdb' }, 'sdb', '/ais/sdb'],
    [{ device: '/dev/loop3' }, { device: '/dev/loop3' }, 'loop3', '/ais/loop3'],
    [
      { device: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
      { device: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
      'wwn-0x5000c500a1b2c3d4',
      '/ais/wwn-0x5000c500a1b2c3d4',
    ],
    [{ serial: 'ZL2ABC12' }, { serial: 'ZL2ABC12' }, 'ZL2ABC12', '/ais/ZL2ABC12'],
    [{ device: '/dev/nvme0n1', name: 'n0' }, { device: '/dev/nvme0n1' }, 'n0', '/ais/n0'],
  ])('%j → spec %j, name %s, mountpoint %s', (entry, spec, name, mp) => {
    const c = storageConfig(hostCtx({ storage_disks: [entry] }));
    expect(c.disks).toEqual([expect.objectContaining({ spec, name, mountpoint: mp })]);
    expect(c.options).toEqual(AIS_MOUNT_OPTIONS);
    expect(c.allow).toEqual([]);
  });

  it('defaults: the AIStore options plus nofail, /ais, the 60-racksmith-io rule file', () => {
    const c = storageConfig(hostCtx({ storage_disks: [] }));
    expect(c.options.join(',')).toBe('noatime,nodiratime,logbufs=8,logbsize=256k,largeio,inode64,swalloc,allocsize=131072k,nofail');
    expect(c.prefix).toBe('/ais');
    expect(c.rulesFile).toBe('/etc/udev/rules.d/60-racksmith-io.rules');
    expect(c.disks).toEqual([]);
  });

  it('prefix, options, allow-list and profiles are taken from the vars', () => {
    const c = storageConfig(
      hostCtx({
        storage_disks: [{ device: '/dev/sdc', name: 'x' }],
        storage_mount_prefix: '/data',
        storage_mount_options: ['noatime', 'nofail'],
        format_allow: ['S1'],
        io_profiles: { hdd: { nr_requests: 1024, max_sectors_kb: null }, ssd: { read_ahead_kb: 256 } },
      }),
    );
    expect(c.disks[0].mountpoint).toBe('/data/x');
    expect(c.options).toEqual(['noatime', 'nofail']);
    expect(c.allow).toEqual(['S1']);
    expect(c.profiles.hdd).toEqual({ scheduler: 'mq-deadline', nr_requests: 1024, read_ahead_kb: 4096, rq_affinity: 2 });
    expect(c.profiles.nvme).toEqual({ scheduler: 'none', read_ahead_kb: 128 });
    expect(c.profiles.ssd).toEqual({ scheduler: 'none', read_ahead_kb: 256 });
  });

  it.each([
    ['storage_disks missing ("never all disks")', {}, /storage_disks is not set.*never picks "all disks"$/],
    [
      "storage_disks missing, ais-k8s's ais_devices set: how to say it here",
      { ais_devices: ['sdb', 'sdc', 'nvme0n1', 'nvme1n1'] },
      /storage_disks is not set.*; ais_devices \(ais-k8s's list\) is not read: the same disks at the same \/ais\/<kernel name> mountpoints are storage_mount_name: kernel and storage_disks: \[\{device: \/dev\/sdb\}, \{device: \/dev\/sdc\}, \{device: \/dev\/nvme0n1\}, \.\.\.\]$/,
    ],
    ['both device and serial', { storage_disks: [{ device: '/dev/sdb', serial: 'S' }] }, /exactly one of device or serial/],
    ['neither device nor serial', { storage_disks: [{ name: 'd1' }] }, /exactly one of device or serial/],
    [
      'a duplicate name',
      {
        storage_disks: [
          { device: '/dev/sdb', name: 'd' },
          { device: '/dev/sdc', name: 'd' },
        ],
      },
      /name 'd' is already used/,
    ],
    ['the same device twice', { storage_disks: [{ device: '/dev/sdb' }, { device: '/dev/sdb', name: 'other' }] }, /already listed/],
    ['a device outside /dev', { storage_disks: [{ device: '/tmp/x' }] }, /storage_disks/],
    ['a non-normalised device path', { storage_disks: [{ device: '/dev/../etc/passwd' }] }, /normalised/],
    ['an unknown key', { storage_disks: [{ device: '/dev/sdb', mountpoint: '/x' }] }, /unknown key 'mountpoint'/],
    ['a name with a slash', { storage_disks: [{ device: '/dev/sdb', name: 'a/b' }] }, /storage_disks/],
    ['a bad udev match key', { storage_disks: [{ device: '/dev/sdb', match: { 'RUN{program}': 'x' } }] }, /invalid name 'RUN\{program\}'/],
    ['a quote in a match value', { storage_disks: [{ device: '/dev/sdb', match: { KERNEL: 'sd"b' } }] }, /storage_disks/],
    ['rq_affinity out of range', { storage_disks: [], io_profiles: { hdd: { rq_affinity: 3 } } }, /io_profiles/],
    ['an unknown profile', { storage_disks: [], io_profiles: { tape: {} } }, /unknown key 'tape'/],
    ['a mount option with a comma', { storage_disks: [], storage_mount_options: ['noatime,nofail'] }, /storage_mount_options/],
    ['a relative prefix', { storage_disks: [], storage_mount_prefix: 'ais' }, /storage_mount_prefix/],
  ])('%s → InputError at the variable file:line', (_, vars, msg) => {
    const e = inputError(() => storageConfig(hostCtx(vars)));
    expect(e.message).toMatch(msg);
    if (Object.keys(vars).length) expect(e.message).toMatch(/^inv\.yaml:\d+:5: /m);
  });

  it('xfsprogs and attr first; the formats (after them), the prune; per disk: storage.json line (dependsOn format), mount (dependsOn format) → xattr (dependsOn mount); then io tuning and one udev rule file', () => {
    const rs = storageResources(
      hostCtx({ storage_disks: [{ device: '/dev/loop3', name: 'd1', match: { KERNEL: 'loop3' } }, { serial: 'S2' }] }),
    );
    expect(rs.map((r) => r.id)).toEqual([
      'packages:storage',
      'disk:d1',
      'disk:S2',
      'storage-prune:/var/lib/racksmith/storage.json',
      'storage-record:/ais/d1',
      'mount:/ais/d1',
      'xattr:/ais/d1',
      'storage-record:/ais/S2',
      'mount:/ais/S2',
      'xattr:/ais/S2',
      'io:d1',
      'io:S2',
      'udev-rules:/etc/udev/rules.d/60-racksmith-io.rules',
    ]);
    const byId = new Map(rs.map((r) => [r.id, r]));
    expect(byId.get('disk:d1')!.after).toEqual(['packages:storage']);
    expect(byId.get('mount:/ais/d1')!.dependsOn).toEqual(['disk:d1']);
    expect(byId.get('storage-record:/ais/d1')!.dependsOn).toEqual(['disk:d1']);
    expect(byId.get('xattr:/ais/d1')!.dependsOn).toEqual(['mount:/ais/d1']);
    expect(byId.get('io:d1')!.dependsOn).toEqual([]);
  });
});

describe('format decision (planFormat)', () => {
  it.each<[string, DiskFacts, string[], RegExp]>([
    ['blank disk', disk(), [], /^format \/dev\/sdb \(blank, 20 GiB, serial S1\) as XFS$/],
    ['blank loop disk (no serial)', loop(), [], /^format \/dev\/loop3 \(blank, 1 GiB, no serial\) as XFS$/],
    ['ext4 allowed by serial', disk(ext4), ['S1'], /erasing ext4 signature \(UUID u-ext4\) \(format_allow: S1\)/],
    ['ext4 allowed by by-id path', disk(ext4), ['/dev/disk/by-id/wwn-0x5000c500a1b2c3d4'], /format_allow: \/dev\/disk\/by-id\/wwn/],
    ['ext4 allowed by udev ID_SERIAL', disk(ext4), ['ST20000_S1'], /format_allow: ST20000_S1/],
    ['gpt allowed by WWN', disk(gpt), ['0x5000c500a1b2c3d4'], /erasing gpt partition table; signatures PMBR at 0x1fe/],
    [
      'loop with a partition table allowed by kernel path (no serial, no WWN)',
      loop(gpt),
      ['/dev/loop3'],
      /format \/dev\/loop3 .*gpt partition table/,
    ],
  ])('%s → format', (_, f, allow, summary) => {
    const p = plan(f, allow);
    expect(p.action).toBe('format');
    if (p.action === 'format') expect(p.summary).toMatch(summary);
  });

  it.each<[string, DiskFacts]>([
    ['XFS, not mounted', disk(xfs)],
    ['XFS mounted at its mountpoint', disk({ ...xfs, mounts: [{ majmin: '8:16', dev: 'sdb', mountpoint: MP }] })],
    [
      'XFS mounted at its mountpoint and bind-mounted elsewhere (kubelet)',
      disk({
        ...xfs,
        mounts: [
          { majmin: '8:16', dev: 'sdb', mountpoint: MP },
          { majmin: '8:16', dev: 'sdb', mountpoint: '/var/lib/kubelet/pods/x' },
        ],
      }),
    ],
    ['XFS even when format_allow names it', disk(xfs)],
    ['XFS mounted at its mountpoint, signatures not read (the converged case)', disk(mountedUnread('xfs', MP))],
  ])('%s → keep (never re-formatted)', (_, f) => {
    expect(plan(f, ['S1'])).toEqual({ action: 'keep' });
  });

  it.each<[string, DiskFacts, string[], RegExp]>([
    [
      'ext4, not allowed',
      disk(ext4),
      [],
      /not formatting \/dev\/sdb \(20 GiB, serial S1\): it is not blank: ext4 signature \(UUID u-ext4\).*format_allow/,
    ],
    ['gpt partition table, not allowed', disk(gpt), [], /it is not blank: gpt partition table/],
    [
      'kernel partitions',
      disk({ ...gpt, partitions: [{ name: 'sdb1', majmin: '8:17' }] }),
      [],
      /gpt partition table with 1 partition \(sdb1\)/,
    ],
    ['a serial disk allowed only by kernel path (unstable name)', disk(ext4), ['/dev/sdb'], /not blank: ext4/],
    [
      'LVM physical volume signature',
      disk({ blkid: { TYPE: 'LVM2_member', UUID: 'pv' }, blkidCode: 0, signatures: [{ offset: '0x218', type: 'LVM2_member' }] }),
      [],
      /it is not blank: LVM2 physical volume \(UUID pv\)/,
    ],
    [
      'md RAID member',
      disk({
        blkid: { TYPE: 'linux_raid_member', USAGE: 'raid' },
        blkidCode: 0,
        signatures: [{ offset: '0x1000', type: 'linux_raid_member' }],
      }),
      [],
      /linux_raid_member RAID member/,
    ],
    ['ambivalent probe', disk({ blkidCode: 8 }), [], /unclear probe result \(blkid -p exit 8\)/],
    [
      'mounted ext4, allowed',
      disk({ ...ext4, mounts: [{ majmin: '8:16', dev: 'sdb', mountpoint: '/mnt/data' }] }),
      ['S1'],
      /it is mounted at \/mnt\/data; ext4.*never formatted, even when format_allow names it/,
    ],
    [
      'mounted partition',
      disk({ ...gpt, partitions: [{ name: 'sdb1', majmin: '8:17' }], mounts: [{ majmin: '8:17', dev: 'sdb1', mountpoint: '/srv' }] }),
      ['S1'],
      /partition sdb1 is mounted at \/srv/,
    ],
    [
      'the root disk',
      disk({ ...gpt, partitions: [{ name: 'sdb2', majmin: '8:18' }], mounts: [{ majmin: '8:18', dev: 'sdb2', mountpoint: '/' }] }),
      ['S1'],
      /holds the root filesystem \(\/ on sdb2\)/,
    ],
    [
      'LVM/dm holder on the disk',
      disk({ blkid: { TYPE: 'LVM2_member' }, blkidCode: 0, holders: [{ of: 'sdb', holder: 'dm-0' }] }),
      ['S1'],
      /held by dm-0 \(LVM, md RAID or device-mapper\)/,
    ],
    [
      'md holder on a partition',
      disk({ ...gpt, partitions: [{ name: 'sdb1', majmin: '8:17' }], holders: [{ of: 'sdb1', holder: 'md127' }] }),
      ['S1'],
      /held by md127 \(on sdb1\)/,
    ],
    ['a holder on an otherwise clean XFS disk', disk({ ...xfs, holders: [{ of: 'sdb', holder: 'dm-3' }] }), [], /held by dm-3/],
    ['swap', disk({ blkid: { TYPE: 'swap' }, blkidCode: 0, swaps: ['/dev/sdb'] }), ['S1'], /in use as swap/],
    [
      'XFS mounted elsewhere only',
      disk({ ...xfs, mounts: [{ majmin: '8:16', dev: 'sdb', mountpoint: '/data' }] }),
      [],
      /carries XFS \(UUID u-xfs\) and is mounted at \/data, not at \/ais\/d1/,
    ],
    [
      'mounted ext4, signatures not read',
      disk(mountedUnread('ext4', '/mnt/data')),
      ['S1'],
      /not formatting \/dev\/sdb: it is mounted at \/mnt\/data; ext4 filesystem mounted \(signatures not read\).*never formatted/,
    ],
    [
      'ext4 mounted at the mountpoint, signatures not read',
      disk(mountedUnread('ext4', MP)),
      ['S1'],
      /not formatting \/dev\/sdb.*ext4 filesystem mounted/,
    ],
    [
      'XFS mounted elsewhere only, signatures not read',
      disk(mountedUnread('xfs', '/data')),
      [],
      /^\/dev\/sdb carries XFS and is mounted at \/data, not at \/ais\/d1/,
    ],
    [
      'XFS plus a partition table',
      disk({ ...xfs, blkid: { ...xfs.blkid, PTTYPE: 'dos' } }),
      ['S1'],
      /carries XFS together with other content.*never re-formatted/,
    ],
    [
      'a partition given as the disk',
      disk({ isPartition: true, kname: 'sdb1', spec: '/dev/sdb1' }),
      [],
      /\/dev\/sdb1 is a partition \(sdb1\); storage_disks takes whole disks/,
    ],
    ['a device that does not exist', disk({ error: '/dev/sdz does not exist' }), [], /^\/dev\/sdz does not exist$/],
    ['a serial matching two disks', disk({ error: 'serial S matches several disks: sdb sdc' }), [], /matches several disks/],
    ['a read-only blank disk', disk({ readOnly: true }), [], /read-only/],
    [
      'the same disk listed twice (kernel name and serial)',
      disk({ sameAs: ['serial S1'] }),
      [],
      /^\/dev\/sdb and serial S1 are the same disk \(\/dev\/sdb\); list it once$/,
    ],
  ])('%s → refused', (_, f, allow, msg) => {
    expect(refusal(() => plan(f, allow))).toMatch(msg);
  });

  it('allowedBy: stable names always; the kernel path only for disks without serial and WWN', () => {
    expect(allowedBy(disk(), ['/dev/disk/by-id/ata-ST20000_S1'])).toBe('/dev/disk/by-id/ata-ST20000_S1');
    expect(allowedBy(disk(), ['/dev/sdb'])).toBeUndefined();
    expect(allowedBy(disk({ udev: {}, byId: [], sysIds: { 'device/serial': 'NV1' }, kname: 'nvme0n1' }), ['NV1'])).toBe('NV1');
    expect(allowedBy(loop(), ['/dev/loop3'])).toBe('/dev/loop3');
    expect(allowedBy(loop(), ['/dev/loop4'])).toBeUndefined();
  });

  it.each([
    [GiB, '1 GiB'],
    [20 * GiB, '20 GiB'],
    [1.5 * GiB, '1.5 GiB'],
    [512 * 1024 ** 2, '512 MiB'],
    [4 * 1024 ** 4, '4 TiB'],
    [1000204886016, '931.5 GiB'],
  ])('humanSize(%d) = %s', (b, s) => expect(humanSize(b)).toBe(s));
});

describe('I/O profiles and clamping', () => {
  const hdd = mergeProfiles().hdd;
  const nvme = mergeProfiles().nvme;

  it("the HDD default is ais-k8s's legacy profile as the ais-k8s mapping in docs/storage.md names it; all keys null leaves HDDs alone (current ais-k8s)", () => {
    const mapping = readFileSync(new URL('../../../../docs/storage.md', import.meta.url), 'utf8');
    const row = mapping.split('\n').find((l) => l.startsWith('| legacy HDD profile'))!;
    const named = Object.fromEntries([...row.matchAll(/`(?:queue\/)?(\w+): (\S+?)`/g)].map((m) => [m[1], m[2]]));
    expect(named).toEqual(Object.fromEntries(Object.entries(hdd).map(([k, v]) => [k, String(v)])));
    const off = { scheduler: null, nr_requests: null, read_ahead_kb: null, rq_affinity: null, max_sectors_kb: null };
    expect(mergeProfiles({ hdd: off }).hdd).toEqual({});
  });

  it('profile choice: rotational → hdd, nvme* → nvme, other SSD → ssd, inventory override wins', () => {
    expect(profileFor({ kname: 'sdb', rotational: true })).toBe('hdd');
    expect(profileFor({ kname: 'nvme0n1', rotational: false })).toBe('nvme');
    expect(profileFor({ kname: 'sdc', rotational: false })).toBe('ssd');
    expect(profileFor({ kname: 'loop3', rotational: true }, 'nvme')).toBe('nvme');
  });

  it.each<[string, Parameters<typeof ioTarget>[0], QueueFacts, Array<[string, string]>, Record<string, RegExp>]>([
    [
      'HDD profile on a loop device: max_sectors_kb clamped to max_hw_sectors_kb',
      hdd,
      loopQueue,
      [
        ['scheduler', 'mq-deadline'],
        ['nr_requests', '2048'],
        ['max_sectors_kb', '1280'],
        ['read_ahead_kb', '4096'],
        ['rq_affinity', '2'],
      ],
      { max_sectors_kb: /16383 clamped to max_hw_sectors_kb 1280/ },
    ],
    [
      'HDD profile on a disk taking 32767 KiB',
      hdd,
      { ...loopQueue, max_hw_sectors_kb: 32767 },
      [
        ['scheduler', 'mq-deadline'],
        ['nr_requests', '2048'],
        ['max_sectors_kb', '16383'],
        ['read_ahead_kb', '4096'],
        ['rq_affinity', '2'],
      ],
      {},
    ],
    [
      'nr_requests above the scheduler limit',
      { scheduler: 'mq-deadline', nr_requests: 4096 },
      loopQueue,
      [
        ['scheduler', 'mq-deadline'],
        ['nr_requests', '2048'],
      ],
      { nr_requests: /4096 clamped to the kernel maximum 2048/ },
    ],
    [
      'nr_requests with scheduler none: the hardware queue depth',
      { scheduler: 'none', nr_requests: 1024 },
      loopQueue,
      [
        ['scheduler', 'none'],
        ['nr_requests', '128'],
      ],
      { nr_requests: /clamped to the hardware queue depth 128/ },
    ],
    [
      'nr_requests without a scheduler key: the current scheduler decides',
      { nr_requests: 1024 },
      { ...loopQueue, scheduler: 'kyber' },
      [['nr_requests', '1024']],
      {},
    ],
    [
      'a cap the kernel imposed on an earlier write',
      hdd,
      { ...loopQueue, caps: { nr_requests: 1000 } },
      [
        ['scheduler', 'mq-deadline'],
        ['nr_requests', '1000'],
        ['max_sectors_kb', '1280'],
        ['read_ahead_kb', '4096'],
        ['rq_affinity', '2'],
      ],
      { nr_requests: /largest value the kernel accepted earlier/ },
    ],
    [
      'below the kernel minimum',
      { nr_requests: 1, max_sectors_kb: 2 },
      { ...loopQueue, scheduler: 'mq-deadline' },
      [
        ['nr_requests', '4'],
        ['max_sectors_kb', '4'],
      ],
      { nr_requests: /raised to the kernel minimum 4/ },
    ],
    [
      'NVMe profile',
      nvme,
      loopQueue,
      [
        ['scheduler', 'none'],
        ['read_ahead_kb', '128'],
      ],
      {},
    ],
  ])('%s', (_, profile, q, values, notes) => {
    const t = ioTarget(profile, q);
    expect(t.values).toEqual(values);
    for (const [k, re] of Object.entries(notes)) expect(t.notes[k as keyof typeof t.notes]).toMatch(re);
    if (!Object.keys(notes).length) expect(t.notes).toEqual({});
  });

  it('runtime caps are ignored for the persistent rule (they reset at boot)', () => {
    expect(ioTarget({ nr_requests: 2048 }, { ...loopQueue, scheduler: 'mq-deadline', caps: { nr_requests: 1000 } }, false).values).toEqual([
      ['nr_requests', '2048'],
    ]);
  });

  it('a scheduler the device does not offer is refused', () => {
    expect(refusal(() => ioTarget({ scheduler: 'bfq' }, { ...loopQueue, schedulers: ['none', 'mq-deadline'] }))).toMatch(
      /bfq is not available \(the device offers: none, mq-deadline\)/,
    );
  });

  it('changes: sysfs path, before → after, and why a value was clamped; converged values are not listed', () => {
    const q = { ...loopQueue, read_ahead_kb: 4096 };
    const changes = ioChanges('loop3', ioTarget(hdd, q), q).map((c) => c.summary);
    expect(changes).toEqual([
      '/sys/block/loop3/queue/scheduler: none → mq-deadline',
      '/sys/block/loop3/queue/nr_requests: 128 → 2048',
      '/sys/block/loop3/queue/rq_affinity: 1 → 2',
    ]);
    const done: QueueFacts = { ...loopQueue, scheduler: 'mq-deadline', nr_requests: 2048, read_ahead_kb: 4096, rq_affinity: 2 };
    expect(ioChanges('loop3', ioTarget(hdd, done), done)).toEqual([]);
    const low = { ...done, max_sectors_kb: 512 };
    expect(ioChanges('loop3', ioTarget(hdd, low), low).map((c) => c.summary)).toEqual([
      '/sys/block/loop3/queue/max_sectors_kb: 512 → 1280 (16383 clamped to max_hw_sectors_kb 1280)',
    ]);
  });

  it('apply writes the scheduler first and then every value again (switching it resets nr_requests)', () => {
    const r = ioTuning({ spec: { device: '/dev/loop3' }, name: 'd1' });
    const f = loop({ queue: { ...loopQueue, read_ahead_kb: 4096 } });
    const script = r.apply(f, r.diff(f))[0].script;
    const writes = script.split('\n').filter((l) => l.startsWith('rs_set '));
    expect(writes).toEqual([
      'rs_set scheduler mq-deadline',
      'rs_set nr_requests 2048',
      'rs_set max_sectors_kb 1280',
      'rs_set read_ahead_kb 4096',
      'rs_set rq_affinity 2',
    ]);
    // scheduler already right: only the differing value
    const g = loop({ queue: { ...loopQueue, scheduler: 'mq-deadline', nr_requests: 2048, read_ahead_kb: 4096 } });
    expect(
      r
        .apply(g, r.diff(g))[0]
        .script.split('\n')
        .filter((l) => l.startsWith('rs_set ')),
    ).toEqual(['rs_set rq_affinity 2']);
    // max_sectors_kb differs: read_ahead_kb is written again after it (the kernel raises it to 2x max_sectors_kb)
    const h = loop({
      queue: { ...loopQueue, scheduler: 'mq-deadline', nr_requests: 2048, read_ahead_kb: 4096, rq_affinity: 2, max_sectors_kb: 512 },
    });
    expect(
      r
        .apply(h, r.diff(h))[0]
        .script.split('\n')
        .filter((l) => l.startsWith('rs_set ')),
    ).toEqual(['rs_set max_sectors_kb 1280', 'rs_set read_ahead_kb 4096']);
  });
});

describe('udev rule', () => {
  it.each([
    ['sd*', 'sdb', true],
    ['sd*', 'nvme0n1', false],
    ['loop3', 'loop3', true],
    ['loop3', 'loop31', false],
    ['loop[0-9]', 'loop7', true],
    ['sd?|nvme*', 'nvme1n1', true],
    ['[!s]*', 'sdb', false],
  ])('udevGlob(%s, %s) = %s', (p, v, want) => expect(udevGlob(p, v)).toBe(want));

  it('matches by WWN, else by ID_SERIAL, never by sdX name', () => {
    expect(udevMatch(disk())).toEqual(['ENV{ID_WWN}=="0x5000c500a1b2c3d4"']);
    expect(udevMatch(disk({ udev: { ID_SERIAL: 'ST20000_S1' } }))).toEqual(['ENV{ID_SERIAL}=="ST20000_S1"']);
    expect(refusal(() => udevMatch(loop()))).toMatch(/no ID_WWN or ID_SERIAL for loop3.*storage_disks\[\]\.match/);
  });

  it('an explicit match is checked against the disk where the facts can tell', () => {
    expect(udevMatch(loop(), { KERNEL: 'loop3' })).toEqual(['KERNEL=="loop3"']);
    expect(refusal(() => udevMatch(loop(), { KERNEL: 'loop4' }))).toMatch(/does not match loop3; the udev rule would never apply/);
    expect(udevMatch(disk(), { 'ENV{ID_SERIAL_SHORT}': 'S1' })).toEqual(['ENV{ID_SERIAL_SHORT}=="S1"']);
    expect(refusal(() => udevMatch(disk(), { 'ENV{ID_SERIAL_SHORT}': 'S2' }))).toMatch(/does not match sdb \(ID_SERIAL_SHORT=S1\)/);
    expect(refusal(() => udevMatch(loop(), { 'ENV{ID_SERIAL}': 'X' }))).toMatch(/reports no ID_SERIAL/);
    expect(udevMatch(disk(), { 'ATTRS{model}': 'ST20000*' })).toEqual(['ATTRS{model}=="ST20000*"']);
  });

  it('rule file: one line per disk, clamped deterministic values, scheduler first', () => {
    const profiles = mergeProfiles();
    const text = ioRulesContent(
      [
        { name: 'd1', spec: { device: '/dev/sdb' } },
        { name: 'd2', spec: { device: '/dev/loop3' }, match: { KERNEL: 'loop3' } },
      ],
      [disk(), loop({ rotational: false, queue: { ...loopQueue, caps: { read_ahead_kb: 64 } } })],
      profiles,
    );
    expect(text).toBe(
      [
        '# Managed by racksmith (playbooks/storage.ts): I/O scheduler and queue tuning of the data disks.',
        "# Matched by WWN/serial (or the inventory's storage_disks[].match), never by sdX name. Do not edit.",
        '# d1: hdd profile',
        'ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", ENV{ID_WWN}=="0x5000c500a1b2c3d4", ATTR{queue/scheduler}="mq-deadline", ATTR{queue/nr_requests}="2048", ATTR{queue/max_sectors_kb}="16383", ATTR{queue/read_ahead_kb}="4096", ATTR{queue/rq_affinity}="2"',
        '# d2: ssd profile',
        'ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="loop3", ATTR{queue/scheduler}="none", ATTR{queue/read_ahead_kb}="128"',
        '',
      ].join('\n'),
    );
    expect(udevRuleLine(['KERNEL=="x"'], { values: [], notes: {} })).toBe(
      'ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="x"',
    );
  });

  it('a disk that cannot be matched or found refuses the rule file, naming the disk', () => {
    const profiles = mergeProfiles();
    expect(refusal(() => ioRulesContent([{ name: 'd2', spec: { device: '/dev/loop3' } }], [loop()], profiles))).toMatch(
      /^d2 \(\/dev\/loop3\): udev reports no ID_WWN/,
    );
    expect(
      refusal(() => ioRulesContent([{ name: 'd9', spec: { device: '/dev/sdz' } }], [disk({ error: '/dev/sdz does not exist' })], profiles)),
    ).toMatch(/^d9: \/dev\/sdz does not exist/);
  });

  it('the resource diffs the file and reloads rules tolerating a missing udevd', () => {
    const r = ioUdevRules({ disks: [{ name: 'd1', spec: { device: '/dev/sdb' } }] });
    const facts = { file: { type: 'absent' as const }, disks: [disk()] };
    const changes = r.diff(facts);
    expect(changes[0].summary).toBe('create /etc/udev/rules.d/60-racksmith-io.rules (1 disk)');
    expect(changes[0].diff).toContain('+ACTION=="add|change"');
    const script = r.apply(facts, changes)[0].script;
    expect(script).toContain("udevadm control --reload-rules >/dev/null 2>&1 || echo 'udevd is not running");
  });
});

describe('format steps', () => {
  const r = (allow: string[] = []) => xfsFormat({ spec: { device: '/dev/loop3' }, name: 'd1', mountpoint: MP, allow });
  it('blank: mkfs.xfs without -f, after re-checking fingerprint, mounts and holders', () => {
    const f = loop();
    const script = r().apply(f, r().diff(f))[0].script;
    expect(script).toMatch(/\nmkfs\.xfs -q -p "\$rs_pf" \/dev\/loop3\n/);
    // then the new filesystem's UUID is left where the mountpath's record and mount look for what racksmith made
    expect(script).toMatch(
      /\nrs_mu=\$\(blkid -p -s UUID -o value -- \/dev\/loop3\).*\nmkdir -p \/run\/racksmith\/xfs-made\n: > "\/run\/racksmith\/xfs-made\/\$rs_mu"$/s,
    );
    expect(script).toContain('d--750 0 0');
    expect(script).not.toMatch(/mkfs\.xfs.* -f/);
    expect(script).toContain('changed since it was probed');
    expect(script).toContain('is mounted now; not formatting');
    expect(script).toContain('is held by another device now');
  });
  it('allowed: wipe the signatures, then mkfs.xfs -f', () => {
    const f = loop({ ...ext4 });
    const steps = r(['/dev/loop3']).apply(f, r(['/dev/loop3']).diff(f));
    expect(steps[0].script).toMatch(
      /wipefs -a -q -- \/dev\/loop3[^\n]*\n.*\nmkfs\.xfs -f -q -p "\$rs_pf" \/dev\/loop3\n.*xfs-made\/\$rs_mu"$/s,
    );
  });
  it('XFS already: nothing to do', () => {
    const f = loop(xfs);
    expect(r().diff(f)).toEqual([]);
    expect(r().apply(f, [])).toEqual([]);
  });
});

const hasTool = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;

describe('xattr check', () => {
  it.each([
    ['mounted=1\nset=ok\nremoved=ok\n', true, ''],
    [
      'mounted=1\nset=setfattr: /ais/d1: Operation not supported \nremoved=x\n',
      false,
      /setfattr failed: setfattr: \/ais\/d1: Operation not supported/,
    ],
    ['mounted=1\nset=ok\nremoved=setfattr: /ais/d1: No such attribute\n', false, /set, but not stored: .*No such attribute/],
    [
      'mounted=1\nset=ok\nremoved=setfattr: /ais/d1: Permission denied\n',
      false,
      /could not remove the probe attribute: .*Permission denied/,
    ],
    ['mounted=1\nset=ok\n', false, /could not remove the probe attribute: no output/],
  ])('%j', (out, ok, detail) => {
    const f = parseXattrFacts(out);
    expect(f.ok).toBe(ok);
    if (ok) expect(xattrDiff('/ais/d1', f)).toEqual([]);
    else expect(refusal(() => xattrDiff('/ais/d1', f))).toMatch(detail as RegExp);
  });
  it('not mounted → refused (in a run it is only diffed after its mount converged)', () => {
    expect(refusal(() => xattrDiff('/ais/d1', parseXattrFacts('mounted=0\n')))).toMatch(/not mounted/);
  });

  it('the batch (one setfattr and one setfattr -x for every mount) gives each path its own outcome', () => {
    const out = [
      'mounted=/ais/d1',
      'mounted=/ais/d 2',
      'mounted=/ais/d3',
      '@set',
      'setfattr: /ais/d3: Operation not supported',
      '@rc=1',
      '@removed',
      'setfattr: /ais/d 2: No such attribute',
      'setfattr: /ais/d3: Operation not supported',
      '@rc=1',
      '',
    ].join('\n');
    const facts = XATTR_CHECKS.split(out, ['/ais/d1', '/ais/d 2', '/ais/d3', '/ais/d4']).map((t) => parseXattrFacts(t));
    expect(facts[0]).toEqual({ mounted: true, ok: true, detail: '' });
    expect(facts[1]).toMatchObject({ ok: false, detail: 'set, but not stored: setfattr: /ais/d 2: No such attribute' });
    expect(facts[2]).toMatchObject({ ok: false, detail: 'setfattr failed: setfattr: /ais/d3: Operation not supported' });
    expect(facts[3]).toEqual({ mounted: false, ok: false, detail: 'not mounted' });
    // cut short (the script died): never ok
    expect(parseXattrFacts(XATTR_CHECKS.split('mounted=/ais/d1\n@set\n', ['/ais/d1'])[0]).ok).toBe(false);
    expect(parseXattrFacts(XATTR_CHECKS.split('mounted=/ais/d1\n@set\n@rc=0\n@removed\n', ['/ais/d1'])[0]).ok).toBe(false);
  });

  it("on a real filesystem (the temp dir's): set, then removed, nothing left behind", (ctx) => {
    if (!hasTool('setfattr') || !hasTool('getfattr')) return ctx.skip('setfattr/getfattr (Debian: attr) are not installed here');
    const dir = mkdtempSync(join(tmpdir(), 'rs-xattr-'));
    try {
      const probe = `${MOUNTINFO_FN}\n${BLOCK_IDS_FN}\n${presetHostTables(`36 25 0:1 / ${escapeMountinfo(dir)} rw - tmpfs tmpfs rw`)}\n${XATTR_CHECKS.script([dir])}`;
      const out = execFileSync('/bin/sh', ['-c', probe], { encoding: 'utf8' });
      const f = parseXattrFacts(XATTR_CHECKS.split(out, [dir])[0]);
      if (!f.ok && /not supported/.test(f.detail)) return ctx.skip(`the filesystem of ${tmpdir()} takes no user xattrs (${f.detail})`);
      expect(f).toEqual({ mounted: true, ok: true, detail: '' });
      // nothing left behind
      expect(execFileSync('getfattr', ['-d', '-m', '^user\\.racksmith', '--', dir], { encoding: 'utf8' })).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the batch script finds mounted paths by their mountinfo spelling (spaces escaped), from the mount table walked in the shell', () => {
    // the table as MOUNTINFO_FN would have read it (rs_ht_load sees it loaded); no setfattr is
    // needed for the mounted= lines, which come first
    const table = [
      '36 25 8:1 / /ais/d\\0402 rw,noatime shared:1 - xfs /dev/sdb rw',
      '37 25 8:2 / /ais/d3 rw - xfs /dev/sdc rw',
      '38 25 8:3 / /ais/d1x rw - xfs /dev/sdd rw',
    ].join('\n');
    const script = `${MOUNTINFO_FN}\n${BLOCK_IDS_FN}\n${presetHostTables(table)}\n${XATTR_CHECKS.script(['/ais/d 2', '/ais/d1', '/ais/d3'])}`;
    const out = execFileSync('/bin/sh', ['-c', script], {
      encoding: 'utf8',
      env: { PATH: '/nonexistent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const mounted = out.split('\n').filter((l) => l.startsWith('mounted='));
    expect(mounted).toEqual(['mounted=/ais/d 2', 'mounted=/ais/d3']);
  });
});

describe('mount of a disk given by serial', () => {
  it('the placeholder path is resolved on the host, in the probe and in the mount step', () => {
    const m = diskMount({ spec: { serial: 'ZL2ABC12' }, path: '/ais/ZL2ABC12', fstype: 'xfs', options: ['noatime'] });
    expect(m.id).toBe('mount:/ais/ZL2ABC12');
    const probe = standaloneProbe(m.probe()).script;
    expect(probe).not.toContain('d=/dev/disk/by-serial/ZL2ABC12\n');
    expect(probe).toContain('rs_by_serial ZL2ABC12');
    const facts = m.parse({
      parts: ['target=absent\nmajmin=8:10\nuuid=u1\n', undefined, '', { type: 'absent' }],
      stdout: '',
      code: 0,
      stderr: '',
    });
    const steps = m.apply(facts, m.diff(facts));
    const mountStep = steps.find((s) => s.name.startsWith('mount '))!;
    // (resolved once, into the device the step checks and mounts)
    expect(mountStep.script).toMatch(/^rs_md="\$\(rs_dev=; R=\n/);
    expect(mountStep.script).toContain('\nmount -t xfs -o noatime -- "$rs_md" /ais/ZL2ABC12');
    expect(mountStep.script).toContain('rs_by_serial ZL2ABC12');
    expect(mountStep.script).not.toMatch(/-- \/dev\/disk\/by-serial/);
  });
});

describe('mount of a recorded mountpath', () => {
  // The probe's part that names the device, run by the local sh: rs_bid_dev (the script's one
  // blkid) and rs_target_kind are stand-ins; the record is a real file.
  const dir = mkdtempSync(join(tmpdir(), 'rs-record-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const record = join(dir, 'storage.json');
  const resolveIn = (spec: { device: string } | { serial: string }, helpers = true) => {
    const m = recordedDiskMount({ spec, name: 'd1', path: '/ais/d1', fstype: 'xfs', options: ['noatime'], record });
    const parts = [m.probe()].flat();
    const shells = parts.map((p) => (typeof p === 'object' && 'batch' in p && isInline(p) ? p.arg : ''));
    const part = shells.find((sh) => sh.includes('rs_dev'));
    expect(part).toBeDefined();
    // the record's reader, as the probe's define part gives it (a step's resolver does without)
    const reader = parts.map((p) => (typeof p === 'object' && 'define' in p ? p.define : '')).find((d) => d.includes('rs_rec_uuid'));
    expect(reader).toBeDefined();
    // (u-own: the entry's disk sdb carries it, and so does a copy, sdz, which the lookup names)
    const stubs = [
      'rs_bid_dev() { case $1 in u-moved) rs_bid_v=/dev/sdq ;; u-own) rs_bid_v=/dev/sdz ;; *) rs_bid_v= ;; esac; }',
      'rs_bid_uuid() { case $1 in /dev/sdb) rs_bid_v=u-own ;; *) rs_bid_v= ;; esac; }',
      // (sdw: a disk a read would wait on, core/block-ids.ts)
      "rs_blk_dev() { rs_blk_w=; case $2 in /dev/sdw) rs_blk_w='is a suspended device-mapper device' ;; esac; }",
      'rs_target_kind() { :; }',
    ].join('\n');
    // (echo after the part: a resolver run in a subshell would leave rs_dev unset here)
    const script = `${helpers ? reader : ''}\n${stubs}\n${part}\necho "resolved=$rs_dev"`;
    return execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  };
  it.each([
    ['the recorded filesystem, wherever its disk is now', `{"mountpoint":"/ais/d1","uuid":"u-moved"}\n`, /^resolved=\/dev\/sdq$/m],
    ['its own disk when the recorded filesystem is gone', `{"mountpoint":"/ais/d1","uuid":"u-gone"}\n`, /^resolved=\/dev\/sdb$/m],
    ["its own disk when the record names another mountpath's", `{"mountpoint":"/ais/d10","uuid":"u-moved"}\n`, /^resolved=\/dev\/sdb$/m],
    [
      'the last line of its mountpath among others (a record without a final newline)',
      `{"version":1,"disks":[\n{"mountpoint":"/ais/d10","uuid":"u-gone"},\n{"mountpoint":"/ais/d1","uuid":"u-moved"}\n]}`,
      /^resolved=\/dev\/sdq$/m,
    ],
    ['its own disk when there is no record', undefined, /^resolved=\/dev\/sdb$/m],
    [
      'its own disk when it carries the recorded filesystem, whatever device a lookup by UUID names (a copy of it)',
      `{"mountpoint":"/ais/d1","uuid":"u-own"}\n`,
      /^resolved=\/dev\/sdb$/m,
    ],
  ])("resolves, in the probe's own shell, to %s (with the record's reader, and without it as a step)", (_, text, want) => {
    rmSync(record, { force: true });
    if (text !== undefined) writeFileSync(record, text);
    expect(resolveIn({ device: '/dev/sdb' })).toMatch(want);
    expect(resolveIn({ device: '/dev/sdb' }, false)).toMatch(want);
  });
  it('its own disk when a read of it would wait (a suspended map): not looked for elsewhere, its mount says why', () => {
    writeFileSync(record, `{"mountpoint":"/ais/d1","uuid":"u-moved"}\n`);
    expect(resolveIn({ device: '/dev/sdw' })).toMatch(/^resolved=\/dev\/sdw$/m);
    // (the same record, a disk that can be read: the filesystem is found where it moved)
    expect(resolveIn({ device: '/dev/sdb' })).toMatch(/^resolved=\/dev\/sdq$/m);
  });
  it("as a step (no block-id helpers, set -e): a lookup that finds nothing falls back to the entry's disk instead of ending the script", () => {
    // the record names u-old, the entry's disk now carries u-new, no device carries u-old: blkid -l exits 2
    writeFileSync(record, `{"mountpoint":"/ais/d1","uuid":"u-old"}\n`);
    const m = recordedDiskMount({ spec: { device: '/dev/sdb' }, name: 'd1', path: '/ais/d1', fstype: 'xfs', options: ['noatime'], record });
    const part = [m.probe()]
      .flat()
      .map((p) => (typeof p === 'object' && 'batch' in p && isInline(p) ? p.arg : ''))
      .find((sh) => sh.includes('rs_dev'));
    const bin = mkdtempSync(join(tmpdir(), 'rs-blkid-'));
    writeFileSync(join(bin, 'blkid'), '#!/bin/sh\ncase "$*" in *"-p -s UUID"*) echo u-new ;; *) exit 2 ;; esac\n', { mode: 0o755 });
    try {
      const r = spawnSync('/bin/sh', ['-c', `set -e\nrs_target_kind() { :; }\n${part}\necho "resolved=$rs_dev"`], {
        encoding: 'utf8',
        env: { PATH: `${bin}:${process.env.PATH}` },
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^resolved=\/dev\/sdb$/m);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
  it('a disk given by serial that no disk has resolves to nothing (the placeholder fails safe)', () => {
    writeFileSync(record, '');
    expect(resolveIn({ serial: 'NO_SUCH_SERIAL_1' })).toMatch(/^resolved=$/m);
  });
});

// The real probe, run by the local sh over a fake /sys, /dev, /proc, /run tree.
describe('disk probe over a fake sysfs tree', () => {
  let root = '';
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'rs-storage-'));
    const mk = (p: string, content?: string) => {
      const full = join(root, p);
      if (content === undefined) mkdirSync(full, { recursive: true });
      else {
        mkdirSync(join(full, '..'), { recursive: true });
        writeFileSync(full, content);
      }
    };
    // sdb: a SATA HDD, PV of an active LVM volume (holder dm-0), serial S1 in the udev db
    mk('sys/devices/pci0/host0/block/sdb/holders/dm-0');
    mk('sys/devices/pci0/host0/block/sdb/dev', '8:16\n');
    mk('sys/devices/pci0/host0/block/sdb/size', '41943040\n');
    mk('sys/devices/pci0/host0/block/sdb/ro', '0\n');
    mk('sys/devices/pci0/host0/block/sdb/queue/rotational', '1\n');
    mk('sys/devices/pci0/host0/block/sdb/queue/scheduler', 'none [mq-deadline] kyber bfq\n');
    mk('sys/devices/pci0/host0/block/sdb/queue/nr_requests', '256\n');
    mk('sys/devices/pci0/host0/block/sdb/queue/max_hw_sectors_kb', '32767\n');
    mk('sys/devices/pci0/host0/block/sdb/mq/0/nr_tags', '32\n');
    // sdc: an SSD with a partition sdc1 that is mounted at /srv and holds md127
    mk('sys/devices/pci0/host1/block/sdc/dev', '8:32\n');
    mk('sys/devices/pci0/host1/block/sdc/size', '2097152\n');
    mk('sys/devices/pci0/host1/block/sdc/queue/rotational', '0\n');
    mk('sys/devices/pci0/host1/block/sdc/holders');
    mk('sys/devices/pci0/host1/block/sdc/sdc1/partition', '1\n');
    mk('sys/devices/pci0/host1/block/sdc/sdc1/dev', '8:33\n');
    mk('sys/devices/pci0/host1/block/sdc/sdc1/holders/md127');
    mk('sys/block');
    mk('sys/dev/block');
    symlinkSync('../devices/pci0/host0/block/sdb', join(root, 'sys/block/sdb'));
    symlinkSync('../devices/pci0/host1/block/sdc', join(root, 'sys/block/sdc'));
    symlinkSync('../../devices/pci0/host0/block/sdb', join(root, 'sys/dev/block/8:16'));
    symlinkSync('../../devices/pci0/host1/block/sdc', join(root, 'sys/dev/block/8:32'));
    mk('run/udev/data/b8:16', 'S:disk/by-id/ata-ST20000_S1\nE:ID_SERIAL=ST20000_S1\nE:ID_SERIAL_SHORT=S1\nE:ID_BUS=ata\n');
    mk('run/udev/data/b8:32', 'E:ID_SERIAL=SSD_S2\nE:ID_SERIAL_SHORT=S2\nE:ID_WWN=0x55cd2e40\n');
    mk('run/racksmith/io-caps/sdb.nr_requests', '1000\n');
    mk('dev/sdb', '');
    mk('dev/sdc', '');
    execFileSync('truncate', ['-s', '1M', join(root, 'dev/sdb'), join(root, 'dev/sdc')]);
    mk('dev/disk/by-id');
    symlinkSync('../../sdb', join(root, 'dev/disk/by-id/ata-ST20000_S1'));
    mk('proc/self/mountinfo', '30 1 0:25 / / rw - overlay overlay rw\n41 30 8:33 / /srv\\040data rw,relatime - ext4 /dev/sdc1 rw\n');
    mk('proc/swaps', 'Filename\tType\tSize\tUsed\tPriority\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const probe = (spec: Parameters<typeof diskProbe>[0]) =>
    parseDiskFacts(execFileSync('sh', ['-c', diskProbe(spec, { root })], { encoding: 'utf8' }));

  it('resolves a serial through the udev db and reads identity, holders, queue and caps', () => {
    const f = probe({ serial: 'S1' });
    expect(f.error).toBeUndefined();
    expect(f).toMatchObject({ kname: 'sdb', majmin: '8:16', sizeBytes: 20 * GiB, rotational: true, isPartition: false, blkidCode: 2 });
    expect(f.udev).toMatchObject({ ID_SERIAL: 'ST20000_S1', ID_SERIAL_SHORT: 'S1' });
    expect(f.byId).toEqual(['/dev/disk/by-id/ata-ST20000_S1']);
    expect(f.holders).toEqual([{ of: 'sdb', holder: 'dm-0' }]);
    expect(f.queue).toMatchObject({
      scheduler: 'mq-deadline',
      schedulers: ['none', 'mq-deadline', 'kyber', 'bfq'],
      nr_requests: 256,
      max_hw_sectors_kb: 32767,
      nr_tags: 32,
      caps: { nr_requests: 1000 },
    });
    // the LVM/dm holder refusal, from probed facts (no device-mapper in the test bed's kernel)
    expect(refusal(() => plan(f, ['S1']))).toMatch(/not formatting \/dev\/sdb: it is held by dm-0 \(LVM, md RAID or device-mapper\)/);
  });

  it('a WWN also selects; a partition holder and a mounted partition are found', () => {
    const f = probe({ serial: '0x55cd2e40' });
    expect(f).toMatchObject({ kname: 'sdc', rotational: false, partitions: [{ name: 'sdc1', majmin: '8:33' }] });
    expect(f.holders).toEqual([{ of: 'sdc1', holder: 'md127' }]);
    expect(f.mounts).toEqual([{ majmin: '8:33', dev: 'sdc1', mountpoint: '/srv data' }]);
    expect(refusal(() => plan(f, ['S2']))).toMatch(/held by md127 \(on sdc1\).*partition sdc1 is mounted at \/srv data/);
  });

  it('another entry of the list that is the same disk is reported', () => {
    const disk = diskFactsProbe({ serial: 'S1' }, [{ serial: 'ST20000_S1' }, { serial: 'S2' }, { device: '/dev/sdz' }], { root });
    const sp = standaloneProbe(disk.probe());
    const f = disk.parse(sp.output(execFileSync('sh', ['-c', sp.script], { encoding: 'utf8' })));
    expect(f.kname).toBe('sdb');
    expect(f.majmin).toBe('8:16');
    expect(f.sameAs).toEqual(['serial ST20000_S1']);
  });

  it('an unknown serial and a missing device are reported as facts, not crashes', () => {
    expect(probe({ serial: 'NOPE' }).error).toBe('no disk has serial or WWN NOPE');
    expect(probe({ device: '/dev/sdz' }).error).toBe('/dev/sdz does not exist');
    expect(probe({ device: '/dev/sdb' }).error).toBe('/dev/sdb is not a block device');
  });
});

// The devices stacked with a disk, as sysfs links them (no device-mapper in the test bed's kernel:
// a fake tree as the kernel lays one out): a multipath map dm-0 over the path devices sdc and sdd,
// a dm-linear dm-1 over dm-0, and sdc under dm-0 only. The probe lists them as `stack=` (the
// same disk's devices, which carry its filesystem UUID: never named as clones of it).
describe('disk probe: the devices stacked with a disk, from sysfs slaves and holders', () => {
  let root = '';
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'rs-stack-'));
    const { blockDev, stack } = fakeSysfs(() => root);
    const [sdc, sdd, sde] = (['sdc', 'sdd', 'sde'] as const).map((n, i) => blockDev(n, `8:${32 + 16 * i}`, { parent: 'pci0/host0' }));
    const dm = (n: number, uuid?: string) => blockDev(`dm-${n}`, `253:${n}`, uuid ? { dm: { uuid } } : {});
    const [dm0, dm1] = [dm(0), dm(1)];
    stack(dm0, sdc);
    stack(dm0, sdd);
    stack(dm1, dm0);
    // a data LV dm-2 with a classic LVM snapshot dm-4: the origin reads sde through dm-3
    // (vg-data-real), which the snapshot holds too, beside its copy-on-write store dm-5
    const [dm2, dm3, dm4, dm5] = [dm(2, 'LVM-vgdata'), dm(3, 'LVM-vgdata-real'), dm(4, 'LVM-vgsnap'), dm(5, 'LVM-vgsnap-cow')];
    stack(dm3, sde);
    stack(dm2, dm3);
    stack(dm4, dm3);
    stack(dm4, dm5);
    mkdirSync(join(root, 'proc/self'), { recursive: true });
    writeFileSync(
      join(root, 'proc/self/mountinfo'),
      '20 1 0:25 / / rw - overlay overlay rw\n22 20 253:1 / /ais/d1 rw - xfs /dev/mapper/data rw\n23 20 253:0 / /mnt/m rw - xfs /dev/mapper/mpatha rw\n' +
        '24 20 253:2 / /ais/d2 rw - xfs /dev/mapper/vg-data rw\n25 20 253:4 / /ais/d3 rw - xfs /dev/mapper/vg-snap rw\n',
    );
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const probe = (serial: string) => parseDiskFacts(execFileSync('sh', ['-c', diskProbe({ serial }, { root })], { encoding: 'utf8' }));

  it.each<[string, string, string[]]>([
    ['the dm-linear (mounted): the map below it and its path devices, transitively', 'SER_dm-1', ['dm-0', 'sdc', 'sdd']],
    // (the stack is read of mounted and XFS disks: the fake mounts dm-0 too)
    ['the map: its path devices below it and the dm-linear above it', 'SER_dm-0', ['dm-1', 'sdc', 'sdd']],
    // (its snapshot dm-4 too: a by-uuid mount finds the origin, udev gives the snapshot's link a lower
    // priority; not the snapshot's copy-on-write store, which carries no filesystem)
    ['an LVM data LV with a classic snapshot: its -real layer and the disk below, and the snapshot', 'SER_dm-2', ['dm-3', 'dm-4', 'sde']],
    // (not its origin dm-2: a mount by UUID would find the origin first, so it stays a clone of it)
    [
      'the snapshot given as the data disk: what it reads (the -real layer, the disk, its store), not its origin',
      'SER_dm-4',
      ['dm-3', 'dm-5', 'sde'],
    ],
  ])('%s', (_, serial, stack) => {
    const f = probe(serial);
    expect(f.error).toBeUndefined();
    expect([...f.stack].sort()).toEqual(stack);
  });

  it('the mounted dm-linear with blkid listing the whole stack under its UUID: no clone', () => {
    const f = probe('SER_dm-1');
    expect(f.contentProbed).toBe(false);
    const uuidDevices = [
      { path: '/dev/mapper/data', kname: 'dm-1', backing: '' },
      { path: '/dev/mapper/mpatha', kname: 'dm-0', backing: '' },
      { path: '/dev/sdc', kname: 'sdc', backing: '' },
      { path: '/dev/sdd', kname: 'sdd', backing: '' },
    ];
    expect(planFormat({ ...f, mountedFs: 'xfs', uuidDevices }, { allow: [], mountpoint: '/ais/d1' })).toEqual({ action: 'keep' });
  });
});

// The mount check of every disk of a script: one awk over the mount table, looked up per disk by
// exact maj:min (the format-safety check: a disk with a mounted filesystem is never formatted).
describe('disk probes: mounts from one read of the mount table', () => {
  let root = '';
  let bin = '';
  let awkLog = '';
  const disk = (name: string, majmin: string, parts: Array<[string, string]> = []) => {
    const dir = join(root, 'sys/devices/virtual/block', name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'dev'), `${majmin}\n`);
    writeFileSync(join(dir, 'size'), '2048\n');
    writeFileSync(join(dir, 'ro'), '0\n');
    mkdirSync(join(dir, 'queue'));
    writeFileSync(join(dir, 'queue/rotational'), '1\n');
    for (const [p, pm] of parts) {
      mkdirSync(join(dir, p));
      writeFileSync(join(dir, p, 'partition'), '1\n');
      writeFileSync(join(dir, p, 'dev'), `${pm}\n`);
    }
    symlinkSync(`../../devices/virtual/block/${name}`, join(root, 'sys/dev/block', majmin));
    symlinkSync(`../devices/virtual/block/${name}`, join(root, 'sys/block', name));
    // (a fake /dev holds files, not block devices: the disks are found by serial)
    writeFileSync(join(root, `run/udev/data/b${majmin}`), `E:ID_SERIAL_SHORT=SER_${name}\n`);
    writeFileSync(join(root, 'dev', name), '');
    execFileSync('truncate', ['-s', '1M', join(root, 'dev', name)]);
  };
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'rs-mounts-'));
    for (const d of ['sys/dev/block', 'sys/block', 'run/udev/data', 'dev', 'proc/self', 'bin'])
      mkdirSync(join(root, d), { recursive: true });
    disk('sda', '8:0', [['sda1', '8:1']]);
    disk('sdb', '8:16');
    disk('sdc', '8:32');
    writeFileSync(
      join(root, 'proc/self/mountinfo'),
      [
        '20 1 0:25 / / rw - overlay overlay rw',
        '21 20 8:1 / /boot rw,relatime - ext4 /dev/sda1 rw',
        '22 20 8:16 / /ais/d1 rw,noatime - xfs /dev/sdb rw,inode64',
        // another device whose number ends in 8:32, and one that starts with it: not sdc
        '23 20 18:32 / /other rw - xfs /dev/x rw',
        '24 20 8:321 / /other2 rw - xfs /dev/y rw',
        '25 20 0:30 / /tmp rw - tmpfs tmpfs rw',
        // sdb again, bound at a path with an escaped space and pattern characters
        '26 20 8:16 / /mnt/x\\040* rw,noatime - xfs /dev/sdb rw,inode64',
      ].join('\n') + '\n',
    );
    // awk as the probe finds it on PATH, counting its runs
    bin = join(root, 'bin');
    awkLog = join(root, 'awk.log');
    const awk = execFileSync('sh', ['-c', 'command -v awk'], { encoding: 'utf8' }).trim();
    writeFileSync(join(bin, 'awk'), `#!/bin/sh\necho run >> '${awkLog}'\nexec '${awk}' "$@"\n`, { mode: 0o755 });
    // and grep, logging its arguments (the mount table and udev's database are read with one grep)
    const grep = execFileSync('sh', ['-c', 'command -v grep'], { encoding: 'utf8' }).trim();
    writeFileSync(join(bin, 'grep'), `#!/bin/sh\necho "$*" >> '${awkLog}.grep'\nexec '${grep}' "$@"\n`, { mode: 0o755 });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const sh = (script: string) => {
    writeFileSync(awkLog, '');
    writeFileSync(`${awkLog}.grep`, '');
    const out = execFileSync('sh', ['-c', script], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const lines = (f: string) => readFileSync(f, 'utf8').split('\n').filter(Boolean);
    return {
      out,
      awkRuns: lines(awkLog).length,
      tableReads: lines(`${awkLog}.grep`).filter((l) => l.includes('/proc/self/mountinfo')).length,
      udevReads: lines(`${awkLog}.grep`).filter((l) => l.includes('/run/udev/data/')).length,
      greps: lines(`${awkLog}.grep`).length,
    };
  };

  it("each disk gets exactly its own and its partitions' mounts; an unmounted disk is probed for content", () => {
    const sp = standaloneProbe(diskFactsProbe({ serial: 'SER_sda' }, [{ serial: 'SER_sdb' }, { serial: 'SER_sdc' }], { root }).probe());
    const { out, awkRuns, tableReads, udevReads, greps } = sh(sp.script);
    const [sda, sdb, sdc] = out
      .split(/^(?=spec=)/m)
      .filter((p) => p.startsWith('spec='))
      .map((p) => parseDiskFacts(p));
    expect(sda.mounts).toEqual([{ majmin: '8:1', dev: 'sda1', mountpoint: '/boot' }]);
    expect(sda.mountedFs).toBeUndefined();
    expect(sda.contentProbed).toBe(false);
    expect(sdb.mounts).toEqual([
      { majmin: '8:16', dev: 'sdb', mountpoint: '/ais/d1' },
      { majmin: '8:16', dev: 'sdb', mountpoint: '/mnt/x *' },
    ]);
    expect(sdb.mountedFs).toBe('xfs');
    expect(sdb.contentProbed).toBe(false);
    expect(sdc.mounts).toEqual([]);
    expect(sdc.contentProbed).toBe(true);
    expect(sdc.blkidCode).toBe(2); // read: blank
    // one read of the mount table for the three disks (it was one per disk), one awk for the
    // data sample of the unmounted disk without a signature
    expect(tableReads).toBe(1);
    expect(awkRuns).toBe(1);
    // the three disks found by serial, and each one's udev identity, from one read of udev's database
    expect([sda.kname, sdb.kname, sdc.kname]).toEqual(['sda', 'sdb', 'sdc']);
    expect(sdb.udev).toEqual({ ID_SERIAL_SHORT: 'SER_sdb' });
    expect(udevReads).toBe(1);
    expect(greps).toBe(1); // the same grep: the host tables (core/host-tables.ts)
    expect(sdc.sample).toMatchObject({ read: 1048576, want: 1048576, hits: [] });
  });

  it('a serial two disks carry selects neither, naming both; a serial none carries is said', () => {
    const sdaDb = join(root, 'run/udev/data/b8:0');
    const sdcDb = join(root, 'run/udev/data/b8:32');
    const before = [readFileSync(sdaDb, 'utf8'), readFileSync(sdcDb, 'utf8')];
    try {
      writeFileSync(sdaDb, `${before[0]}E:ID_WWN=0xshared\n`);
      writeFileSync(sdcDb, `E:ID_WWN_WITH_EXTENSION=0xshared\n${before[1]}`);
      const probe = (serial: string) => parseDiskFacts(sh(diskProbe({ serial }, { root })).out);
      expect(probe('0xshared').error).toBe('serial 0xshared matches several disks: sda sdc');
      expect(probe('0xshare').error).toBe('no disk has serial or WWN 0xshare');
      expect(probe('SER_sdc')).toMatchObject({
        kname: 'sdc',
        majmin: '8:32',
        udev: { ID_WWN_WITH_EXTENSION: '0xshared', ID_SERIAL_SHORT: 'SER_sdc' },
      });
    } finally {
      writeFileSync(sdaDb, before[0]);
      writeFileSync(sdcDb, before[1]);
    }
  });

  it('a disk probed on its own reads the table itself', () => {
    const { out, awkRuns, tableReads } = sh(diskProbe({ serial: 'SER_sdb' }, { root }));
    expect(parseDiskFacts(out).mounts.map((m) => m.mountpoint)).toEqual(['/ais/d1', '/mnt/x *']);
    expect(tableReads).toBe(1);
    expect(awkRuns).toBe(0);
    // an inline part before it that left other field separators does not hide the mounts
    const after = sh(`IFS=:\n${diskProbe({ serial: 'SER_sdb' }, { root })}`);
    expect(parseDiskFacts(after.out).mounts.map((m) => m.mountpoint)).toEqual(['/ais/d1', '/mnt/x *']);
  });
});
