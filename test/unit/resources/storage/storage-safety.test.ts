// Table tests of the blankness and in-use decisions (planFormat) over the disk probe's real
// answers, recorded on the test bed (test/unit/fixtures/disk-probes/record.ts makes them again),
// plus the cases the bed cannot make (device-mapper, swap) from facts, and the udev glob check.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HostContext } from '../../../../src/contract/playbook.ts';
import { Refusal } from '../../../../src/contract/resource.ts';
import type { Host } from '../../../../src/inventory/model.ts';
import {
  isBlank,
  parseDiskFacts,
  planFormat,
  udevGlob,
  udevGlobError,
  usesOf,
  uuidClones,
  type DiskFacts,
  type UuidDevice,
} from '../../../../src/resources/storage/blockdev-logic.ts';
import { storageConfig } from '../../../../playbooks/storage.ts';
import { InputError } from '../../../../src/util/errors.ts';

const fixtureText = (name: string): string => readFileSync(join(import.meta.dirname, '../../fixtures/disk-probes', `${name}.txt`), 'utf8');
const fixture = (name: string): DiskFacts => parseDiskFacts(fixtureText(name));
const MP = '/ais/d1';
const decide = (f: DiskFacts, allow: string[]) => {
  try {
    return planFormat(f, { allow, mountpoint: MP });
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    return { action: 'refuse' as const, message: e.message };
  }
};

describe('blankness and in-use, from recorded probe answers', () => {
  it.each<[string, string[], string, RegExp]>([
    ['blank', [], 'format', /^format \/dev\/loop26 \(blank, 1 GiB, no serial\) as XFS$/],
    [
      'ext4-in-wiped-partition',
      [],
      'refuse',
      /^not formatting \/dev\/loop26 \(1 GiB, no serial\): it is not blank: non-zero data at offset 440; ext4 filesystem at offset 1048576 \(UUID [0-9a-f-]+\), where a partition starts \(its partition table is gone\)\. To erase it/,
    ],
    [
      'ext4-in-wiped-partition',
      ['/dev/loop26'],
      'format',
      /erasing non-zero data at offset 440; ext4 filesystem at offset 1048576 .* \(format_allow: \/dev\/loop26\)$/,
    ],
    ['tar', [], 'refuse', /it is not blank: non-zero data at offset 0 \(a tar archive: ustar header at offset 257\)\./],
    [
      'xfs-primary-zeroed',
      [],
      'refuse',
      /non-zero data at offset 512 \(an XFS allocation group header: the primary superblock sector before it is gone\); XFS secondary superblocks at offsets 268435456, 536870912, 805306368: an XFS filesystem whose primary superblock is damaged \(xfs_repair can restore it\)/,
    ],
    ['xfs-primary-zeroed', ['/dev/loop26'], 'format', /erasing non-zero data at offset 512/],
    ['one-byte-at-2mib', [], 'refuse', /it is not blank: non-zero data at offset 2097160\. To erase it/],
    ['xfs-kept', [], 'keep', /^$/],
    ['xfs-mounted', [], 'keep', /^$/],
    // someone else's XFS (a container's mount): a second mount would share it with them
    [
      'xfs-mounted-in-other-namespace',
      ['/dev/loop26'],
      'refuse',
      /^\/dev\/loop26 carries XFS \(UUID [0-9a-f-]+\) and is in use: the kernel refuses to open it exclusively \(Device or resource busy\): mounted at \/mnt\/ns in another mount namespace \(pid \d+\); it is not mounted at \/ais\/d1 \(nor ever formatted\) while anything else uses it$/,
    ],
    [
      'xfs-cloned',
      [],
      'refuse',
      /^\/dev\/loop26 carries XFS \(UUID [0-9a-f-]+\) and so does \/dev\/loop27 \(a cloned filesystem\): fstab mounts by UUID/,
    ],
    [
      'mounted-in-other-namespace',
      ['/dev/loop27'],
      'refuse',
      /^not formatting \/dev\/loop27: the kernel refuses to open it exclusively \(Device or resource busy\): mounted at \/mnt\/ns in another mount namespace \(pid 332\); ext4 signature .*even when format_allow names it$/,
    ],
    [
      'held-open-exclusively',
      [],
      'refuse',
      /^not formatting \/dev\/loop27: the kernel refuses to open it exclusively \(Device or resource busy\): open by pid 353 \(python3\)\. A disk in use/,
    ],
    [
      'backs-mounted-loop',
      ['/dev/loop27'],
      'refuse',
      /^not formatting \/dev\/loop27: it backs loop device \/dev\/loop148 \(backing file \/dev\/loop27; mounted at \/mnt\/lp\); ext4 signature/,
    ],
    [
      'shared-serial',
      ['SHARED1'],
      'refuse',
      /^not formatting \/dev\/loop27 \(1 GiB, serial SHARED1\): format_allow entry SHARED1 is ambiguous: 2 disks of this host carry it \(loop26, loop27\); name the disk by a \/dev\/disk\/by-id path/,
    ],
    ['shared-serial', ['RS_SHARED_NVME'], 'refuse', /format_allow entry RS_SHARED_NVME is ambiguous: 2 disks/],
    // a kernel path never names a disk that has a serial
    ['shared-serial', ['/dev/loop27'], 'refuse', /it is not blank: ext4 signature .*To erase it, list its by-id path or serial/],
  ])('%s, format_allow %j → %s', (name, allow, action, text) => {
    const d = decide(fixture(name), allow);
    expect(d.action).toBe(action);
    expect('message' in d ? d.message : 'summary' in d ? d.summary : '').toMatch(text);
  });

  it('a kept XFS disk with a wipefs too old to open it exclusively (util-linux before 2.24): kept, not refused as in use; a blank one is refused', () => {
    const old = (f: DiskFacts): DiskFacts => ({ ...f, exclusiveOpen: 'wipefs of util-linux before 2.24 cannot open a disk exclusively' });
    expect(decide(old(fixture('xfs-kept')), [])).toEqual({ action: 'keep' });
    expect(decide(old(fixture('blank')), [])).toMatchObject({
      action: 'refuse',
      message: expect.stringMatching(/cannot be opened exclusively/),
    });
  });

  it('what each answer says about blankness', () => {
    expect(isBlank(fixture('blank'))).toBe(true);
    for (const n of ['ext4-in-wiped-partition', 'tar', 'xfs-primary-zeroed', 'one-byte-at-2mib', 'held-open-exclusively', 'xfs-kept'])
      expect(isBlank(fixture(n)), n).toBe(n === 'held-open-exclusively'); // blank, but in use
    expect(fixture('blank').sample).toEqual({ read: 3981312, want: 3981312, hits: [], xfsSuperblocks: [], tar: false });
    // a mounted disk is neither read nor sampled
    const mounted = fixture('xfs-mounted');
    expect([mounted.contentProbed, mounted.sample, mounted.exclusiveOpen]).toEqual([false, undefined, undefined]);
  });
});

/** A blank disk's facts as the probe reports them, for what the bed cannot make. */
function blank(o: Partial<DiskFacts> = {}): DiskFacts {
  return { ...fixture('blank'), ...o };
}

describe('blankness and in-use, from facts', () => {
  it.each<[string, Partial<DiskFacts>, boolean]>([
    ['sampled, all zeros', {}, true],
    ['not sampled', { sample: undefined }, false],
    ['a short read', { sample: { read: 1000, want: 3981312, hits: [], xfsSuperblocks: [], tar: false } }, false],
    ['a signature at a partition offset only', { offsetSignatures: [{ offset: 1048576, type: 'ext4' }] }, false],
    [
      'non-zero data in one region',
      { sample: { read: 1, want: 1, hits: [{ offset: 4096, hex: '01' }], xfsSuperblocks: [], tar: false } },
      false,
    ],
    ['kernel partitions without a table', { partitions: [{ name: 'loop26p1', majmin: '259:0' }] }, false],
  ])('isBlank: %s → %s', (_, o, want) => {
    expect(isBlank(blank(o))).toBe(want);
  });

  it('a read that came back short is said so', () => {
    const d = decide(blank({ sample: { read: 1000, want: 3981312, hits: [], xfsSuperblocks: [], tar: false } }), []);
    expect(d).toMatchObject({
      action: 'refuse',
      message: expect.stringMatching(/its data could not be read \(read 1000 of 3981312 sampled bytes\)/),
    });
  });

  it.each<[string, Partial<DiskFacts>, string[]]>([
    ['nothing', {}, []],
    [
      'dm holder: the failed exclusive open is not named again',
      { exclusiveOpen: 'Device or resource busy', holders: [{ of: 'loop26', holder: 'dm-0' }] },
      ['it is held by dm-0 (LVM, md RAID or device-mapper)'],
    ],
    ['swap: the same', { exclusiveOpen: 'Device or resource busy', swaps: ['/dev/loop26'] }, ['it is in use as swap (/dev/loop26)']],
    [
      'busy, nobody found',
      { exclusiveOpen: 'Device or resource busy' },
      [
        'the kernel refuses to open it exclusively (Device or resource busy): something holds it that racksmith cannot name (no mount, holder or process found)',
      ],
    ],
    ['another error', { exclusiveOpen: 'Permission denied' }, ['it cannot be opened exclusively: Permission denied']],
    [
      'a namespace mount seen by many processes is named once',
      {
        exclusiveOpen: 'Device or resource busy',
        nsMounts: [
          { pid: '10', majmin: '7:26', mountpoint: '/data' },
          { pid: '11', majmin: '7:26', mountpoint: '/data' },
        ],
        openBy: [{ pid: '12', comm: 'dd' }],
      },
      [
        'the kernel refuses to open it exclusively (Device or resource busy): mounted at /data in another mount namespace (pid 10), open by pid 12 (dd)',
      ],
    ],
    [
      'a loop device over it, held by device-mapper',
      { loops: [{ name: 'loop9', backing: '/dev/loop26', mounts: [], holders: ['dm-2'] }] },
      ['it backs loop device /dev/loop9 (backing file /dev/loop26; held by dm-2)'],
    ],
  ])('usesOf: %s', (_, o, want) => {
    expect(usesOf(blank(o))).toEqual(want);
  });

  it('a read-only disk is refused as read-only (its exclusive open for writing fails with EROFS)', () => {
    expect(decide(blank({ readOnly: true, exclusiveOpen: 'Read-only file system' }), [])).toMatchObject({
      action: 'refuse',
      message: '/dev/loop26 is read-only',
    });
  });

  it('a disk whose probe did not try the exclusive open is never formatted', () => {
    expect(decide(blank({ exclusiveOpen: undefined }), [])).toMatchObject({
      action: 'refuse',
      message: 'not formatting /dev/loop26: the probe did not try to open it exclusively',
    });
  });

  it('format_allow by serial: exactly one disk of the host must carry it', () => {
    const ext4 = fixture('shared-serial');
    expect(decide({ ...ext4, idDisks: { SHARED1: ['loop27'], RS_SHARED_NVME: ['loop27'] } }, ['SHARED1'])).toMatchObject({
      action: 'format',
      allowedBy: 'SHARED1',
    });
    expect(decide({ ...ext4, idDisks: {} }, ['SHARED1'])).toMatchObject({
      action: 'refuse',
      message: expect.stringMatching(/format_allow entry SHARED1 is ambiguous: the probe could not count the disks that carry it/),
    });
  });
});

// Which devices carrying a disk's filesystem UUID are clones of it (fstab mounts by UUID: a clone
// may be mounted in its place after a reboot), and which read the disk's own blocks: the disk under
// another name, the devices stacked with it (a multipath map's path devices, dm devices over or
// under it), a loop device over any of those. Those are the same disk: never named as a clone
// (the advice, xfs_admin -U on the copy, would rewrite the disk's own superblock).
describe('cloned filesystem UUIDs: a clone is named, the disk itself under another name or stack is not', () => {
  const dev = (path: string, kname = path.replace(/^\/dev\//, ''), backing = ''): UuidDevice => ({ path, kname, backing });
  it.each<[string, { kname: string; partitions?: string[]; stack?: string[] }, UuidDevice[], string[]]>([
    ['only the disk', { kname: 'sdb' }, [dev('/dev/sdb')], []],
    ['a block-for-block copy on another disk', { kname: 'sdb' }, [dev('/dev/sdb'), dev('/dev/sdc')], ['/dev/sdc']],
    ['two copies', { kname: 'sdb' }, [dev('/dev/sdc'), dev('/dev/sdb'), dev('/dev/sdd')], ['/dev/sdc', '/dev/sdd']],
    ['a copy in a partition of another disk', { kname: 'sdb' }, [dev('/dev/sdb'), dev('/dev/sdc1')], ['/dev/sdc1']],
    // blkid names a dm device /dev/mapper/NAME: its kernel name tells it is the disk itself
    ['a dm disk named by its mapper path (LVM volume, dm-linear)', { kname: 'dm-3' }, [dev('/dev/mapper/vg-data', 'dm-3')], []],
    [
      'a multipath map and its path devices (slaves, same UUID at offset 0)',
      { kname: 'dm-0', stack: ['sdc', 'sdd'] },
      [dev('/dev/mapper/mpatha', 'dm-0'), dev('/dev/sdc'), dev('/dev/sdd')],
      [],
    ],
    [
      'a multipath map with a clone of it on another LUN',
      { kname: 'dm-0', stack: ['sdc', 'sdd'] },
      [dev('/dev/mapper/mpatha', 'dm-0'), dev('/dev/sdc'), dev('/dev/sdd'), dev('/dev/mapper/mpathb', 'dm-1')],
      ['/dev/mapper/mpathb'],
    ],
    ['a dm-linear over the disk (a holder)', { kname: 'sdb', stack: ['dm-2'] }, [dev('/dev/sdb'), dev('/dev/mapper/lin', 'dm-2')], []],
    [
      'a dm-linear stacked on a multipath map: both levels',
      { kname: 'dm-5', stack: ['dm-0', 'sdc', 'sdd'] },
      [dev('/dev/mapper/data', 'dm-5'), dev('/dev/mapper/mpatha', 'dm-0'), dev('/dev/sdc'), dev('/dev/sdd')],
      [],
    ],
    ['a loop device over the disk', { kname: 'sdb' }, [dev('/dev/sdb'), dev('/dev/loop9', 'loop9', 'sdb')], []],
    [
      'a loop device over a loop device over the disk',
      { kname: 'sdb' },
      [dev('/dev/loop9', 'loop9', 'loop8'), dev('/dev/loop8', 'loop8', 'sdb')],
      [],
    ],
    ['a loop device over a path device of the map', { kname: 'dm-0', stack: ['sdc'] }, [dev('/dev/loop9', 'loop9', 'sdc')], []],
    [
      'a loop device over the clone is a clone too',
      { kname: 'sdb' },
      [dev('/dev/sdc'), dev('/dev/loop9', 'loop9', 'sdc')],
      ['/dev/sdc', '/dev/loop9'],
    ],
    [
      'a loop disk reading a block device (the disk under it)',
      { kname: 'loop5', stack: ['sdb'] },
      [dev('/dev/loop5'), dev('/dev/sdb')],
      [],
    ],
    // a device whose kernel name the probe could not tell: refused rather than assumed the same
    ['a path the probe could not resolve', { kname: 'dm-0', stack: ['sdc'] }, [dev('/dev/mapper/gone', '')], ['/dev/mapper/gone']],
    // answers recorded before the kernel name was printed: PATH only, /dev/NAME read as NAME
    ['the same device listed twice', { kname: 'sdb' }, [dev('/dev/sdc'), dev('/dev/sdc')], ['/dev/sdc']],
  ])('%s', (_, d, devices, clones) => {
    const f = {
      kname: d.kname,
      partitions: (d.partitions ?? []).map((name) => ({ name, majmin: '' })),
      stack: d.stack ?? [],
      uuidDevices: devices,
    };
    expect(uuidClones(f)).toEqual(clones);
  });

  it('the probe answer: PATH<TAB>KNAME<TAB>BACKING, and PATH alone in older answers', () => {
    const f = parseDiskFacts(
      fixtureText('xfs-mounted').replace(
        'end=1',
        'uuiddev=/dev/mapper/mpatha\tdm-0\t\nuuiddev=/dev/loop9\tloop9\tloop26\nuuiddev=/dev/sdc\nstack=sdc\nend=1',
      ),
    );
    expect(f.uuidDevices).toEqual([dev('/dev/mapper/mpatha', 'dm-0'), dev('/dev/loop9', 'loop9', 'loop26'), dev('/dev/sdc')]);
    expect(f.stack).toEqual(['sdc']);
    expect(fixture('xfs-cloned').uuidDevices).toEqual([dev('/dev/loop27'), dev('/dev/loop26')]);
  });

  // A mounted disk was not asked about clones: a copy made while it was mounted went unnamed, and
  // the mount of its recorded UUID found the copy instead (`/ais/d1 already has /dev/loop26
  // mounted, not /dev/loop27`). Its UUID is the one read from the mounted disk (fsuuid).
  it('a mounted disk with a clone is refused naming it, with the mounted filesystem UUID; without one it is kept', () => {
    const U = '5b5fbf8f-ab7a-4bd5-989a-16ad6e386468';
    const mounted = (lines: string[]) =>
      parseDiskFacts(fixtureText('xfs-mounted').replace('end=1', [`fsuuid=${U}`, ...lines, 'end=1'].join('\n')));
    expect(decide(mounted(['uuiddev=/dev/loop26\tloop26\t']), [])).toEqual({ action: 'keep' });
    expect(decide(mounted(['uuiddev=/dev/loop27\tloop27\t', 'uuiddev=/dev/loop26\tloop26\t']), [])).toEqual({
      action: 'refuse',
      message: `/dev/loop26 carries XFS (UUID ${U}) and so does /dev/loop27 (a cloned filesystem): fstab mounts by UUID, so either could end up at /ais/d1; give the copy a new UUID first (xfs_admin -U generate DEVICE, unmounted)`,
    });
    // a loop device reading the mounted disk, and the disk's path devices, are the disk itself
    expect(
      decide(mounted(['uuiddev=/dev/loop26\tloop26\t', 'uuiddev=/dev/loop9\tloop9\tloop26', 'uuiddev=/dev/sdc\tsdc\t', 'stack=sdc']), []),
    ).toEqual({ action: 'keep' });
  });
});

describe('udev match globs', () => {
  it.each<[string, string | undefined]>([
    ['loop3', undefined],
    ['sd[a-z]|nvme*n1', undefined],
    ['[!a]?', undefined],
    ['[]x]', undefined],
    ['loop[3', 'a [ without a closing ] in "loop[3"'],
    ['a||b', 'an empty alternative in "a||b"'],
    ['|sda', 'an empty alternative in "|sda"'],
    ['sd[z-a]', 'the range z-a is backwards in "sd[z-a]"'],
  ])('%s → %s', (pattern, error) => {
    expect(udevGlobError(pattern)).toBe(error);
  });

  it.each<[string, string, boolean]>([
    ['sd[a-z]|nvme*n1', 'sdc', true],
    ['sd[a-z]|nvme*n1', 'nvme0n1', true],
    ['sd[a-z]|nvme*n1', 'nvme0n2', false],
    ['[!a]?', 'ba', true],
    ['[!a]?', 'ab', false],
    ['[]x]', ']', true],
    ['loop.3', 'loopx3', false],
  ])('%s matches %s: %s', (pattern, value, want) => {
    expect(udevGlob(pattern, value)).toBe(want);
  });

  it('a bad glob in storage_disks[].match is an input error at the variable file:line, when the vars are read', () => {
    const vars = { storage_disks: [{ device: '/dev/sdb', match: { KERNEL: 'sd[b' } }] };
    const host: Host = {
      name: 'h1',
      vars,
      varSources: { storage_disks: { file: 'inv.yaml', line: 12, col: 5 } },
      templated: {},
      groups: ['all', 'storage'],
      connection: { kind: 'ssh', address: 'h1' },
      pos: { file: 'inv.yaml', line: 1 },
    };
    let err: unknown;
    try {
      storageConfig(new HostContext(host));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect(String((err as InputError).message)).toMatch(
      /inv\.yaml:12:5: .*storage_disks\[0\]\.match\.KERNEL: not a udev glob: a \[ without a closing \] in "sd\[b"/,
    );
  });
});
