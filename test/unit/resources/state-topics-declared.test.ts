// What the families say their steps touch and their probes read (contract/state-topics.ts): the
// engine keeps a later play's answers across an apply only when the two miss each other, so a
// declaration that says too little leaves facts stale. Tables of the steps each family makes,
// and the one pairing the bench's first run relies on: the network play's writes against the
// storage play's reads.
import { describe, expect, it } from 'vitest';
import { absent, fileWith } from '../facts.ts';
import { anyOverlap, BLOCK_DEVICES, fileTopic, KERNEL_MODULES, MOUNTS, SERVICE_UNITS, SYSCTL } from '../../../src/contract/state-topics.ts';
import type { Resource, Step } from '../../../src/contract/resource.ts';
import { managedFile, type ManagedFileOptions } from '../../../src/resources/core/managed-file.ts';
import type { FileFacts } from '../../../src/resources/core/file-common.ts';
import { kmod } from '../../../src/resources/tuning/kmod.ts';
import { limits } from '../../../src/resources/tuning/limits.ts';
import { sysctl } from '../../../src/resources/tuning/sysctl.ts';
import { mount } from '../../../src/resources/core/mount.ts';
import { packages } from '../../../src/resources/core/packages.ts';
import { ioTuning, xattrCheck, xfsFormat } from '../../../src/resources/storage/blockdev.ts';
import { recordedDiskMount, storagePrune, storageRecordLine } from '../../../src/resources/storage/storage-lifecycle.ts';
import { ioUdevRules } from '../../../src/resources/storage/udev.ts';

const P = '/etc/app/x.conf';
const touchesOf = (steps: Step[]) => steps.map((s) => s.touches);

describe("a managed file's steps say what they touch", () => {
  const steps = (o: Partial<ManagedFileOptions<FileFacts>>, f: FileFacts, content = 'new\n') => {
    const mf = managedFile<FileFacts>({ path: P, ...o });
    return mf.steps(mf.changes(f, content));
  };
  it.each<[string, Partial<ManagedFileOptions<FileFacts>>, FileFacts, Array<readonly string[] | undefined>]>([
    ['a new file: the file', {}, absent, [[fileTopic(P)]]],
    ['a rewrite: the file', {}, fileWith('old\n'), [[fileTopic(P)]]],
    ['only its mode: the file', { mode: '600' }, fileWith('new\n', { mode: '644' }), [[fileTopic(P)]]],
    ['a backup beside it: its directory', { backup: true }, fileWith('old\n'), [[fileTopic('/etc/app')]]],
    [
      'a reload after it that says what it touches: both',
      { then: 'reload', thenTouches: [SERVICE_UNITS] },
      absent,
      [[fileTopic(P), SERVICE_UNITS]],
    ],
    ['a reload after it that says nothing: anything', { then: 'reload' }, absent, [undefined]],
    ['listed as sensitive (a record that may be in a home): anything', { sensitive: true }, absent, [undefined]],
  ])('%s', (_, o, f, want) => {
    expect(touchesOf(steps(o, f))).toEqual(want);
  });

  it('a removal: the file', () => {
    const mf = managedFile<FileFacts>({ path: P });
    expect(touchesOf(mf.steps(mf.removal(fileWith('old\n'))))).toEqual([[fileTopic(P)]]);
  });
});

describe('the tuning families say what their steps touch', () => {
  const mem = { memTotalKb: 24 * 2 ** 20, pageSize: 4096 };
  it('a sysctl drop-in: its file, then the live values', () => {
    const r = sysctl({ file: '/etc/sysctl.d/90-t.conf', values: { 'net.core.somaxconn': 65535 } });
    const f = { file: absent, live: { 'net.core.somaxconn': '4096' }, memory: mem };
    expect(touchesOf(r.apply(f, r.diff(f)))).toEqual([[fileTopic('/etc/sysctl.d/90-t.conf')], [SYSCTL]]);
  });

  it('kernel modules: the modules-load file, then the modules', () => {
    const r = kmod({ modules: ['br_netfilter'] });
    const f = { file: absent, loaded: { br_netfilter: false } };
    expect(touchesOf(r.apply(f, r.diff(f)))).toEqual([[fileTopic('/etc/modules-load.d/racksmith.conf')], [KERNEL_MODULES]]);
  });

  it("limits: each drop-in's file, and the systemd ones the units systemd reloads", () => {
    const touches = limits({ nofile: 1048576 }).map((r) => {
      const f = { file: absent, applicable: true };
      return touchesOf((r as Resource<typeof f>).apply(f, r.diff(f)));
    });
    expect(touches).toEqual([
      [[fileTopic('/etc/security/limits.d/90-racksmith.conf')]],
      [[fileTopic('/etc/systemd/system.conf.d/90-racksmith-nofile.conf'), SERVICE_UNITS]],
      [[fileTopic('/etc/systemd/system/containerd.service.d/90-racksmith-nofile.conf'), SERVICE_UNITS]],
    ]);
  });
});

describe("the storage play's families say what their probes read", () => {
  const spec = { device: '/dev/sdb' };
  const disk = { spec, name: 'd1', mountpoint: '/ais/d1' };
  const storagePlay: Resource[] = [
    packages({ name: 'storage', packages: ['xfsprogs'] }),
    xfsFormat(disk) as Resource,
    ioTuning({ spec, name: 'd1' }) as Resource,
    xattrCheck({ path: '/ais/d1' }) as Resource,
    storageRecordLine({ mountpoint: '/ais/d1', disks: [disk] }) as Resource,
    storagePrune({ keep: ['/ais/d1'] }) as Resource,
    ioUdevRules({ disks: [disk] }) as Resource,
    recordedDiskMount({ spec, name: 'd1', path: '/ais/d1', fstype: 'xfs', options: ['noatime'] }) as Resource,
  ];

  it('every one of them declares what it reads', () => {
    for (const r of storagePlay) expect(r.reads, r.id).toBeDefined();
  });

  // what the network play's steps touch on a first run (its drop-ins, live sysctls, a reload)
  const networkWrites = [
    fileTopic('/etc/sysctl.d/99-zz-racksmith-network.conf'),
    SYSCTL,
    fileTopic('/etc/security/limits.d/90-racksmith.conf'),
    fileTopic('/etc/systemd/system.conf.d/90-racksmith-nofile.conf'),
    SERVICE_UNITS,
    fileTopic('/etc/modules-load.d/racksmith.conf'),
  ];
  it("none of them reads what the network play's steps touch", () => {
    for (const r of storagePlay) expect(anyOverlap(networkWrites, r.reads!), r.id).toBe(false);
  });

  it.each<[string, string[]]>([
    ['a module loaded (it can bring devices)', [KERNEL_MODULES]],
    ['the mount table', [MOUNTS]],
    ['a disk formatted', [BLOCK_DEVICES]],
    ['fstab written', [fileTopic('/etc/fstab')]],
    ['the storage record written', [fileTopic('/var/lib/racksmith/storage.json')]],
  ])('what does change their facts is read by the ones it changes: %s', (_, touched) => {
    expect(storagePlay.some((r) => anyOverlap(touched, r.reads!))).toBe(true);
  });

  it('a mount reads its fstab, target, bind source and `within`, and what is under them', () => {
    const m = mount({ path: '/mnt/jail/tmp', fstype: 'none', source: '/var/lib/jt', options: ['bind'], within: '/mnt/jail' });
    for (const t of ['/etc/fstab', '/mnt/jail/tmp', '/var/lib/jt/x', '/mnt', '/mnt/jail'].map(fileTopic))
      expect(anyOverlap([t], m.reads!), t).toBe(true);
    expect(anyOverlap([fileTopic('/var/lib/other')], m.reads!)).toBe(false);
  });
});
