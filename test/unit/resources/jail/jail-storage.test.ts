// The jail's storage choices (issue #38): mount options by filesystem type with jail_nfs's
// tuning, the client package of each type, and what the jail playbook derives from them.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import jail, { NFS_JAIL_OPTIONS } from '../../../../playbooks/jail.ts';
import { prepare } from '../../../../src/engine/run.ts';
import { loadInventory } from '../../../../src/inventory/load.ts';
import { fsClientPackages, jailNfsUsed, jailStorageOptions, nfsMountOptions, NFS_DEFAULTS } from '../../../../src/plays/jail-storage.ts';
import type { MountFacts } from '../../../../src/resources/core/mount.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { fileWith } from '../../facts.ts';

const NFS_REST = 'rsize=1048576,wsize=1048576,timeo=150,retrans=2';
const NFS_TAIL = 'proto=tcp,noresvport,noatime,nodiratime,noacl,_netdev';

describe('nfsMountOptions', () => {
  it.each<[string, Parameters<typeof nfsMountOptions>[0], string]>([
    ['the defaults: Soperator’s NFS chart', {}, `nconnect=16,vers=4.2,hard,${NFS_REST},actimeo=30,${NFS_TAIL}`],
    [
      'fewer connections, no attribute cache (files written from many nodes)',
      { nconnect: 4, actimeo: 0 },
      `nconnect=4,vers=4.2,hard,${NFS_REST},actimeo=0,${NFS_TAIL}`,
    ],
    ['soft, NFSv3 (a number from YAML)', { hard: false, vers: 3 }, `nconnect=16,vers=3,soft,${NFS_REST},actimeo=30,${NFS_TAIL}`],
  ])('%s', (_, tuning, options) => expect(nfsMountOptions(tuning).join(',')).toBe(options));

  it('the documented defaults are the jail playbook’s', () => {
    expect(NFS_DEFAULTS).toEqual({ nconnect: 16, actimeo: 30, hard: true, vers: '4.2' });
    expect(NFS_JAIL_OPTIONS).toEqual(nfsMountOptions());
  });
});

describe('jailStorageOptions', () => {
  it.each<[string, string, string[] | undefined, boolean, string]>([
    ['nfs root', 'nfs', undefined, true, nfsMountOptions({ nconnect: 8 }).join(',')],
    ['nfs4 submount: NFS’s too', 'nfs4', undefined, false, nfsMountOptions({ nconnect: 8 }).join(',')],
    ['given options win', 'nfs', ['vers=4.1'], true, 'vers=4.1'],
    ['a shared filesystem root waits for the network', 'virtiofs', undefined, true, 'defaults,_netdev'],
    ['a submount of another type: defaults', 'virtiofs', undefined, false, 'defaults'],
    ['none binds', 'none', undefined, false, 'bind'],
    ['none with options: bind first', 'none', ['ro'], false, 'bind,ro'],
  ])('%s', (_, fstype, given, root, options) => expect(jailStorageOptions(fstype, given, { nconnect: 8 }, root).join(',')).toBe(options));
});

describe('jailNfsUsed', () => {
  it.each<[string, Parameters<typeof jailNfsUsed>[0], boolean]>([
    ['an NFS root without options', [{ fstype: 'nfs' }], true],
    ['an NFS root with its own options', [{ fstype: 'nfs', options: ['vers=4.1'] }], false],
    ['an nfs4 submount without options under a virtiofs root', [{ fstype: 'virtiofs' }, { fstype: 'nfs4' }], true],
    ['no NFS at all', [{ fstype: 'virtiofs' }, { fstype: 'glusterfs' }], false],
  ])('%s: %s', (_, mounts, used) => expect(jailNfsUsed(mounts)).toBe(used));
});

describe('fsClientPackages', () => {
  const NFS = { apt: 'nfs-common', dnf: 'nfs-utils' };
  it.each<[string[], unknown[]]>([
    [['nfs'], [NFS]],
    [['nfs4', 'nfs'], [NFS]], // once
    [['virtiofs', 'none', 'xfs', 'tmpfs'], []], // the kernel mounts these alone
    [
      ['nfs', 'glusterfs', 'ceph', 'cifs'],
      [
        NFS,
        { apt: 'glusterfs-client', dnf: 'glusterfs-fuse' },
        { apt: 'ceph-common', dnf: 'ceph-common' },
        { apt: 'cifs-utils', dnf: 'cifs-utils' },
      ],
    ],
    [['lustre'], []], // a vendor's client: not racksmith's to install
  ])('%j', (types, packages) => expect(fsClientPackages(types)).toEqual(packages));
});

describe('the jail playbook: NFS root, shared-filesystem submount', () => {
  function build(vars: string) {
    const dir = mkdtempSync(join(tmpdir(), 'rs-jailfs-'));
    const file = join(dir, 'hosts.yaml');
    writeFileSync(file, `all:\n  children:\n    jail:\n      vars:\n        jail_gpu: false\n${vars}\n      hosts:\n        n1: {}\n`);
    return () => prepare(loadInventory(file), [jail], {})[0].hosts[0].resources;
  }
  const entry = (resources: ReturnType<ReturnType<typeof build>>, id: string) => {
    const r = resources.find((x) => x.id === id)!;
    const facts: MountFacts = { fstab: fileWith(''), target: { kind: 'dir', empty: true }, source: { exists: true }, marker: true };
    return r.diff(facts).find((c) => c.summary.startsWith('/etc/fstab: add'))!.summary;
  };
  const SOPERATOR = `        jail_source: nfs.rack:/export/jail
        jail_nfs: { nconnect: 8, actimeo: 0 }
        jail_submounts:
          - { path: /home, source: 'nfs.rack:/export/home', fstype: nfs4 }
          - { path: /mnt/data, source: datafs, fstype: virtiofs }
          - { path: /mnt/scratch, source: 'gluster.rack:/scratch', fstype: glusterfs, options: [defaults, _netdev] }`;

  it('jail_nfs reaches the root and every NFS submount without options; other types keep their own', () => {
    const resources = build(SOPERATOR)();
    const tuned = nfsMountOptions({ nconnect: 8, actimeo: 0 }).join(',');
    expect(entry(resources, 'mount:/mnt/jail')).toBe(`/etc/fstab: add nfs.rack:/export/jail /mnt/jail nfs ${tuned} 0 0`);
    expect(entry(resources, 'mount:/mnt/jail/home')).toBe(
      `/etc/fstab: add nfs.rack:/export/home /mnt/jail/home nfs4 ${tuned},x-systemd.requires-mounts-for=/mnt/jail 0 0`,
    );
    expect(entry(resources, 'mount:/mnt/jail/mnt/data')).toBe(
      // under the NFS jail: it waits for the network at boot as the jail does (jail-boot.test.ts)
      '/etc/fstab: add datafs /mnt/jail/mnt/data virtiofs defaults,x-systemd.requires-mounts-for=/mnt/jail,_netdev 0 0',
    );
  });

  it('the prerequisites install each type’s client once', () => {
    const pkgs = build(SOPERATOR)().find((r) => r.kind === 'packages')!;
    expect(pkgs.id).toBe('packages:jail');
    expect(JSON.stringify(pkgs.probe())).toContain('nfs-common');
    expect(JSON.stringify(pkgs.probe())).toContain('glusterfs-client');
  });

  it.each([
    ['nconnect above the kernel’s 16', '        jail_source: n:/j\n        jail_nfs: { nconnect: 32 }'],
    ['an unknown key', '        jail_source: n:/j\n        jail_nfs: { timeo: 5 }'],
    ['an unknown version', '        jail_source: n:/j\n        jail_nfs: { vers: 5 }'],
    [
      'no mount takes it: the NFS root has its own options',
      '        jail_source: n:/j\n        jail_options: [vers=4.1]\n        jail_nfs: { nconnect: 8 }',
    ],
    [
      'no mount takes it: a shared-filesystem root, its one submount not NFS',
      '        jail_source: datafs\n        jail_fstype: virtiofs\n        jail_nfs: { actimeo: 0 }\n        jail_submounts: [{ path: /d, source: d2, fstype: virtiofs }]',
    ],
  ])('%s: exit 3 at the variable', (_, vars) => {
    expect(build(vars)).toThrow(InputError);
    expect(build(vars)).toThrow(/jail_nfs/);
  });
});
