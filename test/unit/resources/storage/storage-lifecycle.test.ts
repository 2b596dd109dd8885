// Table tests of the data disks' lifecycle decisions (src/resources/storage/storage-lifecycle-logic.ts):
// which disk serves which mountpath (slot moves, replacements), the prune set, decommission and
// wipe gating; over disk probe answers as the bed's hosts print them (test/unit/fixtures/disk-probes).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDiskFacts, servingRefusal, type DiskFacts } from '../../../../src/resources/storage/blockdev-logic.ts';
import {
  assignMountpoints,
  decommissionPlan,
  foreignFilesystemProblem,
  servingVerdict,
  parseRecord,
  pruneEverythingRefusal,
  pruneSet,
  recordLinePrefix,
  renderRecord,
  wipeNamedBy,
  wipeSelectionProblem,
  withoutLines,
  type RecordDisk,
} from '../../../../src/resources/storage/storage-lifecycle-logic.ts';
import {
  aisStatePurge,
  parseXfsMounts,
  diskDecommission,
  recordedDiskMount,
  storagePrune,
  storageRecordLine,
  storageWipeCheck,
} from '../../../../src/resources/storage/storage-lifecycle.ts';
import { NotApplicable } from '../../../../src/contract/resource.ts';
import { ProbeSet, standaloneProbe } from '../../../../src/engine/probe-set.ts';
import type { Section } from '../../../../src/engine/script.ts';
import { Refusal } from '../../../../src/contract/resource.ts';
import { storageHostCtx } from '../../../support/storage-host.ts';
import { storageConfig, storageResources } from '../../../../playbooks/storage.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { fileWith, absent } from '../../facts.ts';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, '../../fixtures/disk-probes', `${name}.txt`), 'utf8');

/** A recorded answer with its disk renamed (the recordings are of loop26), and lines added. */
function answer(name: string, kname: string, majmin: string, extra: string[] = []): string {
  return fixture(name)
    .replaceAll('loop26', kname)
    .replaceAll('7:26', majmin)
    .replace('end=1', [...extra, 'end=1'].join('\n'));
}

const U1 = '11111111-1111-4111-8111-111111111111';
const U2 = '22222222-2222-4222-8222-222222222222';
const U3 = '33333333-3333-4333-8333-333333333333';

/** loopN carrying XFS with UUID u: mounted at `at`, or not mounted. */
function xfs(kname: string, majmin: string, u: string, at?: string, extra: string[] = []): DiskFacts {
  const text = at
    ? answer('xfs-mounted', kname, majmin, [`fsuuid=${u}`, ...extra]).replace(`/ais/d1`, at)
    : answer('xfs-kept', kname, majmin, extra).replaceAll('5b5fbf8f-ab7a-4bd5-989a-16ad6e386468', u);
  return parseDiskFacts(text);
}
const blank = (kname: string, majmin: string, extra: string[] = []) => parseDiskFacts(answer('blank', kname, majmin, extra));
const serial = (s: string) => [`udev.ID_SERIAL=RS_${s}`, `udev.ID_SERIAL_SHORT=${s}`];

const rec = (mountpoint: string, kname: string, uuid?: string, serial?: string): RecordDisk => ({
  mountpoint,
  name: mountpoint.split('/').pop()!,
  kname,
  uuid,
  serial,
});

describe('assignMountpoints: which disk serves which mountpath', () => {
  const listed = (a: DiskFacts, b: DiskFacts) => [
    { name: 'd1', mountpoint: '/ais/d1', facts: a },
    { name: 'd2', mountpoint: '/ais/d2', facts: b },
  ];
  const served = (m: ReturnType<typeof assignMountpoints>) => Object.fromEntries([...m].map(([mp, a]) => [mp, `${a.entry} ${a.how}`]));

  it.each([
    {
      case: 'fresh host, both blank: each its own',
      disks: listed(blank('loop1', '7:1'), blank('loop2', '7:2')),
      record: [],
      want: { '/ais/d1': 'd1 listed', '/ais/d2': 'd2 listed' },
    },
    {
      case: 'converged: each mounted at its own',
      disks: listed(xfs('loop1', '7:1', U1, '/ais/d1'), xfs('loop2', '7:2', U2, '/ais/d2')),
      record: [rec('/ais/d1', 'loop1', U1), rec('/ais/d2', 'loop2', U2)],
      want: { '/ais/d1': 'd1 mounted', '/ais/d2': 'd2 mounted' },
    },
    {
      case: 'slot move, still mounted (fstab by UUID): each keeps its mountpath',
      disks: listed(xfs('loop2', '7:2', U2, '/ais/d2'), xfs('loop1', '7:1', U1, '/ais/d1')),
      record: [rec('/ais/d1', 'loop1', U1), rec('/ais/d2', 'loop2', U2)],
      want: { '/ais/d2': 'd1 mounted', '/ais/d1': 'd2 mounted' },
    },
    {
      case: 'slot move, unmounted: by the recorded UUID',
      disks: listed(xfs('loop2', '7:2', U2), xfs('loop1', '7:1', U1)),
      record: [rec('/ais/d1', 'loop1', U1), rec('/ais/d2', 'loop2', U2)],
      want: { '/ais/d2': 'd1 recorded', '/ais/d1': 'd2 recorded' },
    },
    {
      case: 'slot move of a disk whose filesystem is gone: by the recorded serial',
      disks: listed(blank('loop2', '7:2', serial('S2')), xfs('loop1', '7:1', U1, undefined, serial('S1'))),
      record: [rec('/ais/d1', 'loop1', U1, 'S1'), rec('/ais/d2', 'loop2', U2, 'S2')],
      want: { '/ais/d2': 'd1 recorded', '/ais/d1': 'd2 recorded' },
    },
    {
      case: 'replacement: a blank disk under d1 takes /ais/d1 (its recorded UUID is nowhere)',
      disks: listed(blank('loop1', '7:1'), xfs('loop2', '7:2', U2, '/ais/d2')),
      record: [rec('/ais/d1', 'loop1', U1), rec('/ais/d2', 'loop2', U2)],
      want: { '/ais/d1': 'd1 listed', '/ais/d2': 'd2 mounted' },
    },
    {
      case: 'move and replacement together: the blank disk takes the mountpath left free',
      disks: listed(xfs('loop2', '7:2', U2), blank('loop1', '7:1')),
      record: [rec('/ais/d1', 'loop1', U1), rec('/ais/d2', 'loop2', U2)],
      want: { '/ais/d2': 'd1 recorded', '/ais/d1': 'd2 free' },
    },
    {
      case: 'adoption (ais-k8s): XFS mounted at its own, no record',
      disks: listed(xfs('loop1', '7:1', U1, '/ais/d1'), xfs('loop2', '7:2', U2, '/ais/d2')),
      record: [],
      want: { '/ais/d1': 'd1 mounted', '/ais/d2': 'd2 mounted' },
    },
    {
      case: 'a disk mounted at an unlisted mountpoint counts for nothing there',
      disks: listed(xfs('loop1', '7:1', U1, '/mnt/x'), blank('loop2', '7:2')),
      record: [],
      want: { '/ais/d1': 'd1 listed', '/ais/d2': 'd2 listed' },
    },
    {
      case: 'a disk that did not resolve serves nothing; the other keeps its own',
      disks: listed(parseDiskFacts('spec=/dev/loop9\nerror=/dev/loop9 does not exist\n'), blank('loop2', '7:2')),
      record: [],
      want: { '/ais/d2': 'd2 listed' },
    },
  ])('$case', ({ disks, record, want }) => {
    expect(served(assignMountpoints(disks, record))).toEqual(want);
  });

  // A disk a read would wait on (core/block-ids.ts): its content is not read, what sysfs, udev and
  // the mount table say of it is. It keeps the mountpath it has, so that a blank disk arriving
  // meanwhile does not take it (and storage.json name it there) while the disk is only stuck.
  const blocked = (extra: string[] = []) =>
    parseDiskFacts(
      [
        'spec=serial S1',
        'kname=dm-0',
        'majmin=253:0',
        ...serial('S1'),
        ...extra,
        'blocked=is a suspended device-mapper device',
        'error=serial S1 (dm-0) is a suspended device-mapper device: a read of it would wait until that changes; not read',
      ].join('\n'),
    );
  it.each([
    {
      case: 'its own mountpath, which the blank disk left without one (a moved disk holds its own) does not take',
      disks: [...listed(blocked(), blank('loop2', '7:2')), { name: 'd3', mountpoint: '/ais/d3', facts: xfs('loop3', '7:3', U3) }],
      record: [rec('/ais/d2', 'loop9', U3)],
      want: { '/ais/d1': 'd1 blocked', '/ais/d2': 'd3 recorded', '/ais/d3': 'd2 free' },
    },
    {
      case: "where it is recorded by serial (moved), not its own entry's",
      disks: listed(blocked(), blank('loop2', '7:2')),
      record: [rec('/ais/d2', 'dm-0', U1, 'S1')],
      want: { '/ais/d2': 'd1 blocked', '/ais/d1': 'd2 free' },
    },
    {
      case: 'its own only when no disk is mounted there (a disk adopted or moved there keeps it)',
      disks: listed(blocked(), xfs('loop2', '7:2', U1, '/ais/d1')),
      record: [],
      want: { '/ais/d1': 'd2 mounted' },
    },
    {
      case: 'its own only when no disk is recorded there by its filesystem',
      disks: listed(blocked(), xfs('loop2', '7:2', U1)),
      record: [rec('/ais/d1', 'loop2', U1)],
      want: { '/ais/d1': 'd2 recorded' },
    },
    {
      case: 'a blocked partition entry holds nothing',
      disks: listed(blocked(['partition=1']), xfs('loop2', '7:2', U1, '/ais/d1')),
      record: [],
      want: { '/ais/d1': 'd2 mounted' },
    },
    {
      case: 'where it is mounted',
      disks: listed(blocked(['mount=253:0 dm-0 /ais/d2']), blank('loop2', '7:2')),
      record: [],
      want: { '/ais/d2': 'd1 blocked', '/ais/d1': 'd2 free' },
    },
  ])('a blocked disk holds the mountpath it has: $case', ({ disks, record, want }) => {
    expect(served(assignMountpoints(disks, record))).toEqual(want);
  });

  it("a blocked disk's mountpath is not recorded: refused, naming the disk and why", () => {
    const disks = [
      { name: 'd1', mountpoint: '/ais/d1', spec: { serial: 'S1' } },
      { name: 'd2', mountpoint: '/ais/d2', spec: { device: '/dev/loop2' } },
    ];
    const line = storageRecordLine({ mountpoint: '/ais/d1', disks });
    expect(() => line.diff({ file: absent, disks: [blocked(), blank('loop2', '7:2')], made: [] })).toThrow(
      new Refusal(
        'not recording /ais/d1: serial S1 (dm-0) is a suspended device-mapper device: a read of it would wait until that changes; not read',
      ),
    );
  });
});

describe('storage.json', () => {
  it('renders one line per mountpath in mountpoint order, parses back, and each line starts as the mounts look for it', () => {
    const disks = [rec('/ais/d2', 'loop2', U2, 'S2'), rec('/ais/d1', 'loop1')];
    const text = renderRecord(disks);
    expect(text).toBe(
      `{"version":1,"disks":[\n{"mountpoint":"/ais/d1","name":"d1","kname":"loop1","uuid":null,"serial":null},\n{"mountpoint":"/ais/d2","name":"d2","kname":"loop2","uuid":"${U2}","serial":"S2"}\n]}\n`,
    );
    expect(parseRecord(text)).toEqual([rec('/ais/d1', 'loop1'), rec('/ais/d2', 'loop2', U2, 'S2')]);
    expect(text.split('\n')[1].startsWith(recordLinePrefix('/ais/d1'))).toBe(true);
    expect(renderRecord([])).toBe('{"version":1,"disks":[\n\n]}\n');
    expect(parseRecord(renderRecord([]))).toEqual([]);
  });

  it.each([
    ['not JSON', '{"version":1,', /is not valid JSON/],
    ['another version', '{"version":2,"disks":[]}', /not a racksmith storage record/],
    ['a disk without kname', '{"version":1,"disks":[{"mountpoint":"/ais/d1","name":"d1"}]}', /lacks mountpoint, name or kname/],
  ])('refuses a record that is %s', (_, text, err) => {
    expect(() => parseRecord(text)).toThrow(err);
    expect(() => parseRecord(text)).toThrow(Refusal);
  });

  it('the record line of a mountpath names the disk that serves it (a moved disk: under its old name)', () => {
    const r = storageRecordLine({
      mountpoint: '/ais/d2',
      disks: [
        { name: 'd1', mountpoint: '/ais/d1', spec: { device: '/dev/loop2' } },
        { name: 'd2', mountpoint: '/ais/d2', spec: { device: '/dev/loop1' } },
      ],
    });
    const old = renderRecord([rec('/ais/d1', 'loop1', U1), rec('/ais/d2', 'loop2', U2)]);
    const facts = { file: fileWith(old), disks: [xfs('loop2', '7:2', U2, '/ais/d2'), xfs('loop1', '7:1', U1, '/ais/d1')], made: [] };
    expect(r.diff(facts)).toEqual([]);
    // the record lost the line: it is written back as the disk that is mounted there
    const lost = { ...facts, file: fileWith(renderRecord([rec('/ais/d1', 'loop1', U1)])) };
    expect(r.diff(lost).map((c) => c.summary)).toEqual([
      `/var/lib/racksmith/storage.json: record /ais/d2 → /dev/loop2 (UUID ${U2}) (the disk listed as d1, mounted here)`,
    ]);
    expect(r.diff({ ...facts, file: absent }).map((c) => c.summary)).toEqual([
      '/var/lib/racksmith/storage.json: record /ais/d2 → /dev/loop2 (the disk listed as d1, mounted here)',
    ]);
  });
});

describe('a recorded mountpath takes no foreign filesystem', () => {
  const at = (recorded: string | undefined, found: string | undefined) => ({ mountpoint: '/ais/d1', dev: '/dev/loop1', recorded, found });
  it.each([
    { case: 'the recorded filesystem', recorded: U1, found: U1, adopt: [], made: [], want: 'same' },
    { case: 'the recorded filesystem, UUID in upper case', recorded: U1, found: U1.toUpperCase(), adopt: [], made: [], want: 'same' },
    {
      case: 'nothing recorded yet (first run, ais-k8s mounts adopted)',
      recorded: undefined,
      found: U3,
      adopt: [],
      made: [],
      want: 'unrecorded',
    },
    { case: 'no XFS on the disk yet (blank, before its mkfs)', recorded: U1, found: undefined, adopt: [], made: [], want: 'unrecorded' },
    { case: 'a replacement racksmith formatted on this host', recorded: U1, found: U3, adopt: [], made: [U2, U3], want: 'made' },
    { case: 'another filesystem that storage_adopt names', recorded: U1, found: U3, adopt: [U3.toUpperCase()], made: [], want: 'adopted' },
    { case: 'another filesystem, storage_adopt naming another', recorded: U1, found: U3, adopt: [U2], made: [U2], want: 'foreign' },
    { case: 'another filesystem (another node data disk)', recorded: U1, found: U3, adopt: [], made: [], want: 'foreign' },
  ])('$case: $want', ({ recorded, found, adopt, made, want }) => {
    expect(servingVerdict(at(recorded, found), adopt, made)).toBe(want);
  });

  it('says the mountpath, both UUIDs, and how to take it deliberately', () => {
    expect(foreignFilesystemProblem(at(U1, U3))).toBe(
      `/dev/loop1 carries XFS UUID ${U3}, not the filesystem storage.json records for /ais/d1 (UUID ${U1}), and racksmith did not make it on this host: another node's data disk? A recorded mountpath takes no other filesystem unasked, so /ais/d1 is neither recorded anew nor mounted. To take this filesystem and its data deliberately, list it in storage_adopt: [${U3}]; to format the disk as a blank replacement instead, erase it by hand (wipefs -a /dev/loop1) and name it in format_allow`,
    );
  });

  const disks = [
    { name: 'd1', mountpoint: '/ais/d1', spec: { device: '/dev/loop1' } },
    { name: 'd2', mountpoint: '/ais/d2', spec: { device: '/dev/loop2' } },
  ];
  const recorded = fileWith(renderRecord([rec('/ais/d1', 'loop1', U1), rec('/ais/d2', 'loop2', U2)]));
  // d1's disk is gone; its slot holds an unmounted XFS racksmith did not make (U3)
  const foreign = { file: recorded, disks: [xfs('loop1', '7:1', U3), xfs('loop2', '7:2', U2, '/ais/d2')], made: [] as string[] };

  it('the record line refuses it, and takes it when racksmith made it or storage_adopt names it', () => {
    const line = (adopt: string[] = []) => storageRecordLine({ mountpoint: '/ais/d1', disks, adopt });
    expect(() => line().diff(foreign)).toThrow(Refusal);
    expect(() => line().diff(foreign)).toThrow(`not recording /ais/d1 → /dev/loop1: /dev/loop1 carries XFS UUID ${U3}, not the filesystem`);
    expect(
      line([U3])
        .diff(foreign)
        .map((c) => c.summary),
    ).toEqual([`/var/lib/racksmith/storage.json: record /ais/d1 → /dev/loop1 (UUID ${U3}) (storage_adopt, in place of UUID ${U1})`]);
    expect(
      line()
        .diff({ ...foreign, made: [U3] })
        .map((c) => c.summary),
    ).toEqual([`/var/lib/racksmith/storage.json: record /ais/d1 → /dev/loop1 (UUID ${U3})`]);
    // the other mountpath's line is its own: unaffected
    expect(storageRecordLine({ mountpoint: '/ais/d2', disks }).diff(foreign)).toEqual([]);
  });

  it('the record line of a disk whose filesystem is gone and made again elsewhere (its serial recorded) refuses it too', () => {
    const same = { ...foreign, disks: [xfs('loop1', '7:1', U3, undefined, serial('S1')), foreign.disks[1]] };
    const bySerial = { ...same, file: fileWith(renderRecord([rec('/ais/d1', 'loop1', U1, 'S1'), rec('/ais/d2', 'loop2', U2)])) };
    expect(() => storageRecordLine({ mountpoint: '/ais/d1', disks }).diff(bySerial)).toThrow(
      /carries XFS UUID 3333.*records for \/ais\/d1/,
    );
  });

  it('the mount refuses it on its own (it runs where --skip-tags leaves the record line out), and mounts what is made or adopted', () => {
    const mount = (adopt: string[] = []) =>
      recordedDiskMount({ spec: { device: '/dev/loop1' }, name: 'd1', path: '/ais/d1', fstype: 'xfs', options: ['noatime'], adopt });
    const facts = {
      fstab: fileWith(`UUID=${U1} /ais/d1 xfs noatime 0 0\n`),
      target: { kind: 'dir' as const, devIno: '64:1', mode: '755', empty: true, real: '/ais/d1' },
      source: { exists: true, majmin: '7:1', uuid: U3, path: '/dev/loop1' },
      recorded: U1,
      made: [] as string[],
    };
    expect(() => mount().diff(facts)).toThrow(Refusal);
    expect(() => mount().diff(facts)).toThrow(`not mounting /dev/loop1 at /ais/d1: /dev/loop1 carries XFS UUID ${U3}, not the filesystem`);
    const wants = (f: typeof facts, adopt: string[] = []) =>
      mount(adopt)
        .diff(f)
        .map((c) => c.summary);
    const mounts = ['/etc/fstab: update /ais/d1 entry', 'mount /dev/loop1 on /ais/d1 (xfs, noatime)'];
    expect(wants(facts, [U3])).toEqual(mounts);
    expect(wants({ ...facts, made: [U3] })).toEqual(mounts);
    // nothing recorded yet (the first run): mounted as before
    expect(wants({ ...facts, recorded: '' })).toEqual(mounts);
    // the probe: the mount's parts, then the recorded UUID and the made list, read back
    const [own, made] = [mount().probe()].flat().slice(-2) as Array<{ arg: string }>;
    expect(own.arg).toContain('rs_rec_uuid');
    expect(made.arg).toContain('/run/racksmith/xfs-made/*');
  });

  it("lists what racksmith made once per script: the mounts' part is the record lines' word for word", () => {
    const probes = disks.flatMap((d) => [
      storageRecordLine({ mountpoint: d.mountpoint, disks }).probe(),
      recordedDiskMount({ spec: d.spec, name: d.name, path: d.mountpoint, fstype: 'xfs', options: ['noatime'] }).probe(),
    ]);
    const sections: Section[] = [];
    new ProbeSet(sections, probes);
    const script = sections.map((s) => s.body).join('\n');
    expect(script.split('/run/racksmith/xfs-made/*').length - 1).toBe(1);
  });
});

describe('pruneSet: recorded mountpaths no longer listed', () => {
  const record = [rec('/ais/d1', 'loop1', U1), rec('/ais/d3', 'loop3', U3)];
  const fstab = `# static\nUUID=${U1} /ais/d1 xfs noatime 0 0\nUUID=${U3} /ais/d3 xfs noatime 0 0\n/dev/sdz /ais/d3 xfs defaults 0 0\n`;
  const mounted3 = { majmin: '7:3', mountpoint: '/ais/d3', source: '/dev/loop3', uuid: U3 };
  it.each([
    {
      case: 'listed: nothing',
      keep: ['/ais/d1', '/ais/d3'],
      mounts: [mounted3],
      want: [],
    },
    {
      case: 'no longer listed, mounted: unmount, remove only the line racksmith wrote',
      keep: ['/ais/d1'],
      mounts: [mounted3],
      want: [{ mp: '/ais/d3', unmount: true, lines: [`UUID=${U3} /ais/d3 xfs noatime 0 0`], note: undefined }],
    },
    {
      case: 'no longer listed, already unmounted: the fstab line and record line only',
      keep: ['/ais/d1'],
      mounts: [],
      want: [{ mp: '/ais/d3', unmount: false, lines: [`UUID=${U3} /ais/d3 xfs noatime 0 0`], note: undefined }],
    },
    {
      case: 'another filesystem mounted there now: left mounted, said so',
      keep: ['/ais/d1'],
      mounts: [{ ...mounted3, uuid: U2, source: '/dev/loop7' }],
      want: [
        {
          mp: '/ais/d3',
          unmount: false,
          lines: [`UUID=${U3} /ais/d3 xfs noatime 0 0`],
          note: `/ais/d3 has /dev/loop7 (UUID ${U2}) mounted, not the recorded filesystem: left mounted`,
        },
      ],
    },
  ])('$case', ({ keep, mounts, want }) => {
    const got = pruneSet(record, new Set(keep), mounts, fstab).map((a) => ({
      mp: a.disk.mountpoint,
      unmount: a.unmount,
      lines: a.fstabLines,
      note: a.note,
    }));
    expect(got).toEqual(want);
  });

  it('the fstab keeps every other line byte for byte', () => {
    expect(withoutLines(fstab, [`UUID=${U3} /ais/d3 xfs noatime 0 0`])).toBe(
      `# static\nUUID=${U1} /ais/d1 xfs noatime 0 0\n/dev/sdz /ais/d3 xfs defaults 0 0\n`,
    );
  });

  it('reads the XFS mounts the probe prints (escaped mountpoints)', () => {
    expect(parseXfsMounts(`xfs=7:3 ${U3} /dev/loop3 /ais/my\\040d3\nxfs=7:4  /dev/loop4 /x\n`)).toEqual([
      { majmin: '7:3', uuid: U3, source: '/dev/loop3', mountpoint: '/ais/my d3' },
      { majmin: '7:4', uuid: undefined, source: '/dev/loop4', mountpoint: '/x' },
    ]);
  });

  it('a mount on a device a read would wait on (core/block-ids.ts): named, its UUID not read; a prune that would act there is refused', () => {
    expect(parseXfsMounts('xfsblocked=/dev/mapper/mpatha /ais/d3 dm-0 is a multipath map with no running path\n')).toEqual([
      { majmin: '', source: '/dev/mapper/mpatha', mountpoint: '/ais/d3', blocked: 'dm-0 is a multipath map with no running path' },
    ]);
    const p = storagePrune({ keep: ['/ais/d1'] });
    const stuck = {
      majmin: '',
      source: '/dev/mapper/mpatha',
      mountpoint: '/ais/d3',
      blocked: 'dm-0 is a multipath map with no running path',
    };
    expect(() => p.diff({ record: fileWith(renderRecord(record)), fstab: fileWith(fstab), xfs: [stuck] })).toThrow(
      new Refusal(
        '/ais/d3 (/dev/mapper/mpatha mounted there): its device dm-0 is a multipath map with no running path: a read of it would wait until that changes; nothing is pruned',
      ),
    );
    // (at a mountpath that stays: nothing to decide there)
    expect(
      p.diff({ record: fileWith(renderRecord(record)), fstab: fileWith(fstab), xfs: [mounted3, { ...stuck, mountpoint: '/ais/d1' }] })
        .length,
    ).toBe(3);
  });

  it("the prune's probe gives blkid no mount on a device a read would wait on", () => {
    const script = standaloneProbe(storagePrune({ keep: ['/ais/d1'] }).probe()).script;
    const at = script.indexOf('rs_xk=');
    expect(at).toBeGreaterThan(0);
    const stubs = [
      'rs_mi_each() { "$2" 36 25 253:0 / /ais/d3 rw - xfs /dev/mapper/mpatha rw; "$2" 37 25 7:4 / /ais/d4 rw - xfs /dev/loop4 rw; }',
      'rs_blk_mm() { rs_blk_w=; rs_blk_n=; [ "$2" = 253:0 ] && { rs_blk_n=dm-0; rs_blk_w=\'is a suspended device-mapper device\'; }; :; }',
      'blkid() { echo "U-$7"; }',
    ].join('\n');
    const walk = "rs_mi_each '' rs_x_line ' - xfs '";
    const part = script.slice(at, script.indexOf(walk, at) + walk.length);
    const out = execFileSync('sh', ['-c', `${stubs}\n${part}`], { encoding: 'utf8' });
    expect(parseXfsMounts(out)).toEqual([
      { majmin: '', source: '/dev/mapper/mpatha', mountpoint: '/ais/d3', blocked: 'dm-0 is a suspended device-mapper device' },
      { majmin: '7:4', uuid: 'U-/dev/loop4', source: '/dev/loop4', mountpoint: '/ais/d4' },
    ]);
  });

  it('the prune resource: unmount, fstab, record in that order; nothing when nothing was recorded', () => {
    const p = storagePrune({ keep: ['/ais/d1'] });
    const f = { record: fileWith(renderRecord(record)), fstab: fileWith(fstab), xfs: [mounted3] };
    const changes = p.diff(f);
    expect(changes.map((c) => c.summary)).toEqual([
      `unmount /ais/d3 (d3, UUID ${U3}: no longer in storage_disks; its data is kept)`,
      '/etc/fstab: remove the line of pruned /ais/d3',
      '/var/lib/racksmith/storage.json: forget /ais/d3 (no longer in storage_disks)',
    ]);
    expect(p.apply(f, changes).map((s) => s.name)).toEqual([
      'unmount /ais/d3',
      'fstab: remove pruned mountpaths',
      'record in /var/lib/racksmith/storage.json',
    ]);
    expect(p.diff({ ...f, record: absent })).toEqual([]);
  });

  // storage_disks: [] (a host's or group's value overriding the real list, a template that came
  // out empty) selects nothing: it would prune every recorded mountpath of the host.
  it.each([
    {
      case: 'nothing kept, two recorded, one mounted',
      keep: [],
      mounts: [mounted3],
      want: /^storage_disks lists no disk of this host: pruning would take every recorded mountpath out of service \(\/ais\/d1, \/ais\/d3; 1 mounted\); nothing is pruned\. .*set storage_prune: false$/,
    },
    {
      case: 'nothing kept, none mounted (fstab and record lines only)',
      keep: [],
      mounts: [],
      want: /\(\/ais\/d1, \/ais\/d3\); nothing is pruned/,
    },
    { case: 'one kept: the other is pruned as usual', keep: ['/ais/d1'], mounts: [mounted3], want: undefined },
    { case: 'everything kept', keep: ['/ais/d1', '/ais/d3'], mounts: [mounted3], want: undefined },
  ])('pruneEverythingRefusal: $case', ({ keep, mounts, want }) => {
    const got = pruneEverythingRefusal(new Set(keep), pruneSet(record, new Set(keep), mounts, fstab));
    if (want === undefined) expect(got).toBeUndefined();
    else expect(got).toMatch(want);
  });

  it('nothing recorded and nothing listed: nothing to refuse', () => {
    expect(pruneEverythingRefusal(new Set(), pruneSet([], new Set(), [], ''))).toBeUndefined();
    const p = storagePrune({ keep: [] });
    expect(p.diff({ record: fileWith(renderRecord([])), fstab: fileWith(''), xfs: [] })).toEqual([]);
    expect(() => p.diff({ record: fileWith(renderRecord(record)), fstab: fileWith(fstab), xfs: [mounted3] })).toThrow(Refusal);
  });
});

describe('decommission and wipe', () => {
  const record = [rec('/ais/d1', 'loop1', U1, 'S1'), rec('/ais/d2', 'loop2', U2, 'S2')];
  const fstab = `UUID=${U1} /ais/d1 xfs noatime 0 0\nUUID=${U2} /ais/d2 xfs noatime 0 0\n/dev/loop1 /old xfs defaults 0 0\n`;
  const d1 = (extra: string[] = [], at: string | undefined = '/ais/d1') => xfs('loop1', '7:1', U1, at, [...serial('S1'), ...extra]);
  const o = (wipe: string[] = []) => ({ mountpoint: '/ais/d1', wipe });

  it.each([
    {
      case: 'mounted: unmount, every fstab line that mounts it, its record line; no wipe unless named',
      facts: d1(),
      wipe: [],
      want: {
        unmount: ['/ais/d1'],
        fstabLines: [`UUID=${U1} /ais/d1 xfs noatime 0 0`, '/dev/loop1 /old xfs defaults 0 0'],
        recordLines: ['/ais/d1'],
      },
    },
    {
      case: 'named by its serial (only it carries it): wiped',
      facts: d1(['iddisks=S1\tloop1', 'iddisks=RS_S1\tloop1']),
      wipe: ['S1'],
      want: {
        unmount: ['/ais/d1'],
        fstabLines: [`UUID=${U1} /ais/d1 xfs noatime 0 0`, '/dev/loop1 /old xfs defaults 0 0'],
        recordLines: ['/ais/d1'],
        wipe: { by: 'S1', kname: 'loop1', mountpoints: ['/ais/d1'] },
      },
    },
    {
      case: 'another serial named: not wiped',
      facts: d1(['iddisks=S1\tloop1']),
      wipe: ['S9'],
      want: {
        unmount: ['/ais/d1'],
        fstabLines: [`UUID=${U1} /ais/d1 xfs noatime 0 0`, '/dev/loop1 /old xfs defaults 0 0'],
        recordLines: ['/ais/d1'],
      },
    },
    {
      case: 'already decommissioned (unmounted, lines gone): nothing left but the disk',
      facts: xfs('loop1', '7:1', U1, undefined, serial('S1')),
      wipe: [],
      want: {
        unmount: [],
        fstabLines: [`UUID=${U1} /ais/d1 xfs noatime 0 0`, '/dev/loop1 /old xfs defaults 0 0'],
        recordLines: ['/ais/d1'],
      },
    },
  ])('$case', ({ facts, wipe, want }) => {
    expect(decommissionPlan(facts, record, fstab, o(wipe))).toEqual(want);
  });

  it.each([
    [
      'its serial is shared (NVMe namespaces)',
      d1(['iddisks=S1\tloop1 loop5']),
      ['S1'],
      /storage_wipe entry S1 is ambiguous: 2 disks of this host carry it \(loop1, loop5\)/,
    ],
    ['the disk count is unknown', d1(), ['S1'], /the probe could not count the disks that carry it/],
    [
      'it backs a loop device',
      d1(['iddisks=S1\tloop1', 'loop=loop9 /dev/loop1', 'loopmount=loop9 /mnt/x']),
      ['S1'],
      /not wiping \/dev\/loop1: it backs loop device \/dev\/loop9.*A disk in use is never wiped/,
    ],
    ['it is swap', d1(['iddisks=S1\tloop1', 'swap=/dev/loop1']), ['S1'], /it is in use as swap/],
    ['it holds the root filesystem', d1([], '/'), [], /holds the root filesystem; it is never decommissioned/],
  ])('refuses to wipe when %s', (_, facts, wipe, err) => {
    expect(() => decommissionPlan(facts, record, fstab, o(wipe))).toThrow(err);
  });

  // The entry's device names another mountpath's disk (a disk moved slots; the mounts keep each
  // disk at its recorded mountpath): decommissioning it would take that other mountpath's data
  // out of service and leave the entry's own mounted.
  it.each([
    {
      case: "mounted at the other entry's mountpath, recorded there",
      facts: xfs('loop2', '7:2', U2, '/ais/d2', serial('S2')),
      err: `not decommissioning /dev/loop2: the entry's device (/dev/loop2) is the disk of /ais/d2 (storage.json), not of /ais/d1, whose recorded filesystem is UUID=${U1}: a disk moved to another slot? Nothing is decommissioned; name the entry's disk by serial or /dev/disk/by-id path, or point the entry at the disk of /ais/d1`,
    },
    {
      case: 'unmounted, recorded at the other mountpath by UUID',
      facts: xfs('loop2', '7:2', U2),
      err: /^not decommissioning \/dev\/loop2: the entry's device \(\/dev\/loop2\) is the disk of \/ais\/d2 /,
    },
    {
      case: 'recorded at the other mountpath by serial (its filesystem remade by hand)',
      facts: xfs('loop2', '7:2', U3, undefined, serial('S2')),
      err: /is the disk of \/ais\/d2 \(storage.json\), not of \/ais\/d1/,
    },
  ])('refuses to decommission a disk that serves another mountpath: $case', ({ facts, err }) => {
    expect(() => decommissionPlan(facts, record, fstab, o())).toThrow(err);
    expect(() => decommissionPlan(facts, record, fstab, o(['S2']))).toThrow(err);
  });

  it.each([
    ['its own disk, recorded at its mountpath', d1()],
    ['no record line for its mountpath, mounted there only', xfs('loop1', '7:1', U3, '/ais/d1')],
    ['mounted outside the recorded mountpaths too', d1(['mount=7:1 loop1 /mnt/extra'])],
  ])('decommissions %s', (_, facts) => {
    expect(() => decommissionPlan(facts, record, fstab, o())).not.toThrow();
  });

  // The AIS node state goes only when storage_wipe names every (decommissioned) data disk.
  it.each([
    ['both named: removed', ['S1', 'S2'], 'remove the AIS node state /etc/ais/{.ais.smap}'],
    ['one named: kept, said', ['S1'], new NotApplicable('/etc/ais/.ais.* kept: storage_wipe does not name /dev/loop2')],
    ['one by its by-id path, one by serial: removed', ['/dev/disk/by-id/wwn-0x2', 'S1'], 'remove the AIS node state /etc/ais/{.ais.smap}'],
    [
      'an entry two disks carry names neither: kept',
      ['SHARED'],
      new NotApplicable('/etc/ais/.ais.* kept: storage_wipe does not name /dev/loop1, /dev/loop2'),
    ],
  ])('AIS node state purge, %s', (_, wipe, want) => {
    const r = aisStatePurge({ disks: [{ device: '/dev/loop1' }, { device: '/dev/loop2' }], wipe });
    const disks = [
      blank('loop1', '7:1', [...serial('S1'), 'sys.wwid=SHARED', 'iddisks=S1\tloop1', 'iddisks=SHARED\tloop1 loop2']),
      blank('loop2', '7:2', [
        ...serial('S2'),
        'sys.wwid=SHARED',
        'iddisks=S2\tloop2',
        'iddisks=SHARED\tloop1 loop2',
        'byid=/dev/disk/by-id/wwn-0x2',
      ]),
    ];
    const diff = () => r.diff({ names: ['.ais.smap'], disks });
    if (want instanceof NotApplicable) expect(diff).toThrow(want);
    else expect(diff().map((c) => c.summary)).toEqual([want]);
    expect(r.diff({ names: [], disks })).toEqual([]);
  });

  it('AIS node state purge: a disk whose content cannot be read (blocked) is named by nothing: kept', () => {
    const r = aisStatePurge({ disks: [{ device: '/dev/loop1' }], wipe: ['S1'] });
    const stuck = parseDiskFacts(
      [
        'spec=/dev/loop1',
        'kname=loop1',
        'majmin=7:1',
        ...serial('S1'),
        'iddisks=S1\tloop1',
        'blocked=is a suspended device-mapper device',
        'error=/dev/loop1 is stuck',
      ].join('\n'),
    );
    expect(() => r.diff({ names: ['.ais.smap'], disks: [stuck] })).toThrow(
      new NotApplicable('/etc/ais/.ais.* kept: storage_wipe does not name /dev/loop1'),
    );
  });

  // storage_wipe is checked against the host's listed disks before any decommission: what it
  // selects on this host, said where that is not what was meant (a wipe is silent otherwise).
  describe('wipeSelectionProblem: what storage_wipe selects on this host', () => {
    const disk = (kname: string, majmin: string, s: string, extra: string[] = []) =>
      blank(kname, majmin, [...serial(s), `iddisks=${s}\t${kname}`, ...extra]);
    const disks = (decommissioned: string[]) =>
      [
        { name: 'd1', facts: disk('loop1', '7:1', 'S1') },
        { name: 'd2', facts: disk('loop2', '7:2', 'S2', ['byid=/dev/disk/by-id/wwn-0x2']) },
        { name: 'd3', facts: disk('loop3', '7:3', 'S3') },
      ].map((d) => ({ ...d, decommissioned: decommissioned.includes(d.name) }));
    const missing = { name: 'd4', decommissioned: true, facts: parseDiskFacts('error=serial S4: no such disk on this host') };

    it.each([
      { case: 'the decommissioned disk named by serial', retired: ['d2'], wipe: ['S2'], want: undefined },
      { case: 'the decommissioned disk named by its by-id path', retired: ['d2'], wipe: ['/dev/disk/by-id/wwn-0x2'], want: undefined },
      {
        case: 'one of two decommissioned disks named, no other entry: the other kept on purpose',
        retired: ['d2', 'd3'],
        wipe: ['S2'],
        want: undefined,
      },
      {
        case: "a group's list naming another host's disk too, every decommissioned disk named",
        retired: ['d2'],
        wipe: ['S2', 'OTHERHOST9'],
        want: undefined,
      },
      {
        case: 'a mistyped serial: the decommissioned disk would be decommissioned, not wiped',
        retired: ['d2'],
        wipe: ['S9'],
        want: 'storage_wipe S9 names no listed disk of this host, and names none of the decommissioned d2 (/dev/loop2, serial S2): it would be decommissioned but not wiped. Name each disk to erase by its serial, WWN or /dev/disk/by-id path (a mistyped serial?); nothing is decommissioned on this host until then',
      },
      {
        case: 'two decommissioned, one named, one entry naming nothing',
        retired: ['d2', 'd3'],
        wipe: ['S2', 'S33', 'S34'],
        want: /^storage_wipe S33, S34 name no listed disk of this host, and names none of the decommissioned d3 \(\/dev\/loop3, serial S3\): it would be/,
      },
      {
        case: 'an entry naming a disk in service',
        retired: ['d2'],
        wipe: ['S2', 'S1'],
        want: 'storage_wipe entry S1 names d1 (/dev/loop1, serial S1), which is in service: only decommissioned disks are wiped. List d1 in storage_decommission to retire it, or correct the entry; nothing is decommissioned on this host until the lists agree',
      },
      {
        case: 'an entry naming a disk in service, the decommissioned one unnamed',
        retired: ['d2'],
        wipe: ['S1'],
        want: /^storage_wipe entry S1 names d1 /,
      },
    ])('$case', ({ retired, wipe, want }) => {
      const got = wipeSelectionProblem(disks(retired), wipe);
      if (want instanceof RegExp) expect(got).toMatch(want);
      else expect(got).toBe(want);
    });

    it('a disk the probe did not find is left to its own resources', () => {
      expect(wipeSelectionProblem([...disks(['d2']), missing], ['S2'])).toBeUndefined();
      expect(wipeSelectionProblem([...disks(['d2']), missing], ['S2', 'S4'])).toBeUndefined();
    });

    it('the playbook checks storage_wipe before the decommissions, only when it is set', () => {
      const build = (vars: Record<string, unknown>) =>
        storageResources(
          storageHostCtx({
            storage_disks: [
              { device: '/dev/loop1', name: 'd1' },
              { device: '/dev/loop2', name: 'd2' },
            ],
            storage_decommission: ['d2'],
            ...vars,
          }),
        );
      const withWipe = build({ storage_wipe: ['S2'] });
      const check = withWipe.find((r) => r.id === 'storage-wipe-check')!;
      expect(check.tags).toEqual(['decommission']);
      expect(withWipe.find((r) => r.id === 'decommission:d2')!.after).toEqual(['storage-wipe-check']);
      expect(withWipe.indexOf(check)).toBeLessThan(withWipe.findIndex((r) => r.id === 'decommission:d2'));
      // the udev rule drops a decommissioned disk's line only once its decommission went through
      expect(withWipe.find((r) => r.id.startsWith('udev-rules:'))!.after).toEqual(['decommission:d2']);
      const r = storageWipeCheck({
        disks: [
          { name: 'd1', spec: { device: '/dev/loop1' }, decommissioned: false },
          { name: 'd2', spec: { device: '/dev/loop2' }, decommissioned: true },
        ],
        wipe: ['S9'],
      });
      const facts = { disks: [disk('loop1', '7:1', 'S1'), disk('loop2', '7:2', 'S2')] };
      expect(() => r.diff(facts)).toThrow(Refusal);
      expect(() => r.diff(facts)).toThrow(/storage_wipe S9 names no listed disk of this host/);
      const without = build({});
      expect(without.find((r) => r.id === 'storage-wipe-check')).toBeUndefined();
      expect(without.find((r) => r.id === 'decommission:d2')!.after).toBeUndefined();
      expect(without.find((r) => r.id.startsWith('udev-rules:'))!.after).toEqual(['decommission:d2']);
      expect(build({ storage_decommission: [] }).find((r) => r.id.startsWith('udev-rules:'))!.after).toBeUndefined();
    });
  });

  it('a kernel name never names a disk to wipe; a by-id path does', () => {
    const f = parseDiskFacts(answer('xfs-kept', 'sdb', '8:16', ['byid=/dev/disk/by-id/wwn-0x5000']));
    expect(wipeNamedBy(f, ['/dev/sdb'])).toBeUndefined();
    expect(wipeNamedBy(f, ['/dev/disk/by-id/wwn-0x5000'])).toBe('/dev/disk/by-id/wwn-0x5000');
    expect(() => diskDecommission({ spec: { device: '/dev/sdb' }, name: 'd1', mountpoint: '/ais/d1', wipe: ['/dev/sdb'] })).toThrow(
      InputError,
    );
  });

  it('the wipe change needs confirmation; a disk without signatures is wiped already', () => {
    const r = diskDecommission({ spec: { device: '/dev/loop1' }, name: 'd1', mountpoint: '/ais/d1', wipe: ['S1'] });
    const f = { disk: d1(['iddisks=S1\tloop1']), record: fileWith(renderRecord(record)), fstab: fileWith(fstab) };
    const changes = r.diff(f);
    expect(changes.map((c) => c.summary)).toEqual([
      'unmount /ais/d1 (/dev/loop1, decommissioned d1)',
      `/etc/fstab: remove UUID=${U1} /ais/d1 xfs noatime 0 0; /dev/loop1 /old xfs defaults 0 0`,
      '/var/lib/racksmith/storage.json: forget /ais/d1 (decommissioned d1)',
      'wipe /dev/loop1 (storage_wipe: S1): erase its signatures and data, AIS metadata included',
    ]);
    expect(changes.filter((c) => c.confirm).map((c) => c.confirm)).toEqual(['erases the disk']);
    expect(r.apply(f, changes).map((s) => s.name)).toEqual([
      'unmount /ais/d1',
      'fstab: remove the lines of decommissioned d1',
      'record in /var/lib/racksmith/storage.json',
      'wipe /dev/loop1',
    ]);
    const wiped = {
      disk: blank('loop1', '7:1', [...serial('S1'), 'iddisks=S1\tloop1']),
      record: fileWith(renderRecord([record[1]])),
      fstab: fileWith(`UUID=${U2} /ais/d2 xfs noatime 0 0\n`),
    };
    expect(r.diff(wiped)).toEqual([]);
  });
});

describe('storage playbook variables of the lifecycle', () => {
  const ctx = storageHostCtx;
  const two = [
    { device: '/dev/sdb', name: 'd1' },
    { device: '/dev/sdc', name: 'd2' },
  ];

  it('storage_mount_name: kernel names mountpoints after the kernel name, and wants kernel paths without name:', () => {
    const c = storageConfig(ctx({ storage_mount_name: 'kernel', storage_disks: [{ device: '/dev/sdb' }, { device: '/dev/nvme0n1' }] }));
    expect(c.disks.map((d) => d.mountpoint)).toEqual(['/ais/sdb', '/ais/nvme0n1']);
    expect(() => storageConfig(ctx({ storage_mount_name: 'kernel', storage_disks: [{ device: '/dev/sdb', name: 'd1' }] }))).toThrow(
      /storage_mount_name: kernel/,
    );
    expect(() => storageConfig(ctx({ storage_mount_name: 'kernel', storage_disks: [{ serial: 'S1' }] }))).toThrow(
      /device: \/dev\/<kernel name>/,
    );
    expect(() => storageConfig(ctx({ storage_mount_name: 'kernel', storage_disks: [{ device: '/dev/disk/by-id/wwn-1' }] }))).toThrow(
      InputError,
    );
  });

  it.each([
    [{ storage_adopt: ['not-a-uuid'] }, /storage_adopt/],
    [{ storage_decommission: ['d3'] }, /d3 is not the name of a storage_disks entry/],
    [{ storage_decommission: ['d1'], storage_wipe: ['/dev/sdb'] }, /never by kernel name/],
    [{ storage_wipe: ['S1'] }, /erases decommissioned disks only/],
    [{ storage_prune: 'no' }, /storage_prune/],
  ])('bad lifecycle input is exit 3 at the variable: %j', (vars, err) => {
    expect(() => storageConfig(ctx({ storage_disks: two, ...vars }))).toThrow(err);
    expect(() => storageConfig(ctx({ storage_disks: two, ...vars }))).toThrow(InputError);
  });

  it('storage_adopt reaches the record line and the mount of every listed disk (UUIDs in lower case)', () => {
    const c = storageConfig(ctx({ storage_disks: two, storage_adopt: [U3.toUpperCase()] }));
    expect(c.adopt).toEqual([U3]);
    expect(storageConfig(ctx({ storage_disks: two })).adopt).toEqual([]);
  });

  it('a decommissioned disk has no format, mount, record, I/O tuning or udev line; prune keeps its mountpoint', () => {
    const ids = storageResources(ctx({ storage_disks: two, storage_decommission: ['d2'] })).map((r) => r.id);
    expect(ids.filter((i) => i.includes('d2'))).toEqual(['decommission:d2']);
    expect(ids).toContain('storage-prune:/var/lib/racksmith/storage.json');
    expect(ids).toContain('storage-record:/ais/d1');
    const all = storageResources(ctx({ storage_disks: two, storage_decommission: ['d1', 'd2'], storage_wipe: ['S1'] })).map((r) => r.id);
    expect(all).toContain('ais-state-purge:/etc/ais');
    expect(storageResources(ctx({ storage_disks: two, storage_prune: false })).map((r) => r.id)).not.toContain(
      'storage-prune:/var/lib/racksmith/storage.json',
    );
  });
});

// `--tags mount` leaves the format out (a skipped dependency counts as satisfied): the record line
// and the mount then check the disk they take as the format checks a disk it keeps.
describe('the record line and the mount refuse what the format would not keep (--tags mount)', () => {
  const disks = [
    { name: 'd1', mountpoint: '/ais/d1', spec: { device: '/dev/loop1' } },
    { name: 'd2', mountpoint: '/ais/d2', spec: { device: '/dev/loop2' } },
  ];
  const twins = ['uuiddev=/dev/loop1', 'uuiddev=/dev/loop2'];
  const cloned = [xfs('loop1', '7:1', U1, undefined, twins), xfs('loop2', '7:2', U1, undefined, twins)];
  const inUse = [xfs('loop1', '7:1', U1, undefined, ['excl=Device or resource busy', 'nsmount=99 7:1 /mnt/ns']), blank('loop2', '7:2')];
  const kept = [xfs('loop1', '7:1', U1), blank('loop2', '7:2')];
  const mount = () =>
    recordedDiskMount({ spec: { device: '/dev/loop1' }, name: 'd1', path: '/ais/d1', fstype: 'xfs', options: ['noatime'], disks });
  const mountFacts = (listed: DiskFacts[]) => ({
    fstab: absent,
    target: { kind: 'absent' as const, empty: false },
    source: { exists: true, majmin: '7:1', uuid: U1, path: '/dev/loop1' },
    recorded: '',
    made: [] as string[],
    disks: listed,
  });
  const line = (listed: DiskFacts[]) => storageRecordLine({ mountpoint: '/ais/d1', disks }).diff({ file: absent, disks: listed, made: [] });

  it.each([
    ['a cloned XFS', cloned, /\/dev\/loop1 carries XFS \(UUID 1{8}-.*\) and so does \/dev\/loop2 \(a cloned filesystem\)/],
    [
      'an XFS mounted in another mount namespace',
      inUse,
      /\/dev\/loop1 carries XFS .* and is in use: .*mounted at \/mnt\/ns in another mount namespace \(pid 99\)/,
    ],
  ])('%s: neither recorded nor mounted', (_, listed, why) => {
    expect(() => line(listed)).toThrow(new RegExp(`^not recording /ais/d1 → /dev/loop1: ${why.source}`));
    expect(() => mount().diff(mountFacts(listed))).toThrow(new RegExp(`^not mounting /dev/loop1 at /ais/d1: ${why.source}`));
  });

  it('a kept XFS nothing else uses is recorded and mounted as before', () => {
    expect(line(kept).map((c) => c.summary)).toEqual(['/var/lib/racksmith/storage.json: record /ais/d1 → /dev/loop1']);
    expect(
      mount()
        .diff(mountFacts(kept))
        .map((c) => c.summary),
    ).toEqual([
      'create mountpoint /ais/d1',
      `/etc/fstab: add UUID=${U1} /ais/d1 xfs noatime 0 0`,
      'mount /dev/loop1 on /ais/d1 (xfs, noatime)',
    ]);
  });

  // A copy of d1 made while d1 was mounted (loop9, not listed): the mount's lookup of the recorded
  // UUID may find the copy, or the copy may be what a reboot mounted there. Either way the listed
  // disk carrying that UUID is checked, so the refusal names the copy (it said `/ais/d1 already
  // has /dev/loop1 mounted, not /dev/loop9`, or nothing at all).
  describe('a clone of a mounted disk', () => {
    const live = (source: string, majmin: string) => ({ source, fstype: 'xfs', options: ['rw', 'noatime'], majmin });
    const converged = {
      fstab: fileWith(`UUID=${U1} /ais/d1 xfs noatime 0 0\n`),
      target: { kind: 'dir' as const, empty: false, mode: '750' },
      recorded: U1,
      made: [] as string[],
    };
    const clone = ['uuiddev=/dev/loop9\tloop9\t', 'uuiddev=/dev/loop1\tloop1\t'];
    const said = `/dev/loop1 carries XFS \\(UUID ${U1}\\) and so does /dev/loop9 \\(a cloned filesystem\\)`;
    it.each<[string, Parameters<ReturnType<typeof mount>['diff']>[0], RegExp]>([
      [
        'the lookup found the copy, d1 is mounted there',
        {
          ...converged,
          live: live('/dev/loop1', '7:1'),
          source: { exists: true, majmin: '7:9', uuid: U1, path: '/dev/loop9' },
          disks: [xfs('loop1', '7:1', U1, '/ais/d1', clone), blank('loop2', '7:2')],
        },
        new RegExp(`^/ais/d1 \\(/dev/loop1 mounted there\\): ${said}`),
      ],
      [
        'the lookup found d1 itself, mounted there',
        {
          ...converged,
          live: live('/dev/loop1', '7:1'),
          source: { exists: true, majmin: '7:1', uuid: U1, path: '/dev/loop1' },
          disks: [xfs('loop1', '7:1', U1, '/ais/d1', clone), blank('loop2', '7:2')],
        },
        new RegExp(`^/ais/d1 \\(/dev/loop1 mounted there\\): ${said}`),
      ],
      [
        'a reboot mounted the copy there (d1 unmounted)',
        {
          ...converged,
          live: live('/dev/loop9', '7:9'),
          source: { exists: true, majmin: '7:9', uuid: U1, path: '/dev/loop9' },
          disks: [xfs('loop1', '7:1', U1, undefined, clone), blank('loop2', '7:2')],
        },
        new RegExp(`^/ais/d1 \\(/dev/loop9 mounted there\\): ${said}`),
      ],
      [
        'not mounted yet, the lookup found the copy',
        {
          ...converged,
          live: undefined,
          target: { kind: 'dir', empty: true },
          source: { exists: true, majmin: '7:9', uuid: U1, path: '/dev/loop9' },
          disks: [xfs('loop1', '7:1', U1, undefined, clone), blank('loop2', '7:2')],
        },
        new RegExp(`^not mounting /dev/loop9 at /ais/d1: ${said}`),
      ],
      [
        'both copies listed, the mount found the second (d2 is /dev/loop2 here): the device found is the one refused',
        {
          ...converged,
          live: undefined,
          target: { kind: 'dir', empty: true },
          source: { exists: true, majmin: '7:2', uuid: U1, path: '/dev/loop2' },
          disks: [
            xfs('loop1', '7:1', U1, undefined, ['uuiddev=/dev/loop1\tloop1\t', 'uuiddev=/dev/loop2\tloop2\t']),
            xfs('loop2', '7:2', U1, undefined, ['uuiddev=/dev/loop1\tloop1\t', 'uuiddev=/dev/loop2\tloop2\t']),
          ],
        },
        new RegExp(`^not mounting /dev/loop2 at /ais/d1: /dev/loop2 carries XFS \\(UUID ${U1}\\) and so does /dev/loop1 \\(a cloned`),
      ],
    ])('%s: refused naming the copy', (_, f, want) => {
      expect(() => mount().diff(f)).toThrow(want);
    });

    it('a device that reads d1 itself (a loop over it, a path device below it) is no clone: converged', () => {
      const same = ['uuiddev=/dev/loop1\tloop1\t', 'uuiddev=/dev/loop9\tloop9\tloop1', 'uuiddev=/dev/sdc\tsdc\t', 'stack=sdc'];
      const f = {
        ...converged,
        live: live('/dev/loop1', '7:1'),
        source: { exists: true, majmin: '7:1', uuid: U1, path: '/dev/loop1' },
        disks: [xfs('loop1', '7:1', U1, '/ais/d1', same), blank('loop2', '7:2')],
      };
      expect(mount().diff(f)).toEqual([]);
    });
  });

  it('servingRefusal leaves a disk without XFS to the mount (nothing to mount there)', () => {
    expect(servingRefusal(blank('loop2', '7:2'), '/ais/d2', [])).toBeUndefined();
    expect(servingRefusal(kept[0], '/ais/d1', ['/ais/d2'])).toBeUndefined();
  });
});
