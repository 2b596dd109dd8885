import { posix } from 'node:path';
import {
  playbook,
  varsSchema,
  type HostContext,
  mergeProfiles,
  udevGlobError,
  UDEV_MATCH_KEY,
  type IoProfile,
  type IoProfileOverride,
  type ProfileName,
  ioTuning,
  storageRecordLine,
  recordedDiskMount,
  storagePrune,
  diskDecommission,
  storageWipeCheck,
  aisStatePurge,
  specText,
  xattrCheck,
  xfsFormat,
  type DiskSpec,
  checkAbsolutePath,
  type Resource,
  IO_RULES_FILE,
  ioUdevRules,
  InputError,
  prerequisites,
  STORAGE_PACKAGES,
} from '../src/index.ts';

/**
 * Data disks of AIStore storage targets: XFS on whole disks, mounted by UUID under /ais, xattrs
 * checked, I/O scheduler and queue tuned (sysfs now, a udev rule for boots).
 *
 * Hosts: group `storage`; point it at your own group or pattern without editing this file with
 *   racksmith_play_hosts: { storage: ais } (all's vars or -e; docs/playbooks.md "Plays on your groups").
 *
 * Inventory variables (group_vars / host_vars / -e):
 *   storage_disks:          the disks, explicitly (racksmith never picks "all disks"):
 *     - device: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4   # or a kernel name: /dev/sdb
 *       name: d1                                         # mountpoint /ais/d1 (default: from the device / serial)
 *     - serial: ZL2ABC12
 *       match: { KERNEL: loop3 }                         # udev match for disks without serial/WWN
 *       profile: hdd                                     # force a profile (default: rotational → hdd, nvme* → nvme, else ssd)
 *   storage_mount_prefix:   /ais
 *   storage_mount_name:     name (default): mountpoint PREFIX/<name> | kernel: PREFIX/<kernel name>, as ais-k8s
 *                           names them (/ais/sdb; every entry then a kernel path, no name:)
 *   storage_mount_options:  [noatime, nodiratime, logbufs=8, logbsize=256k, largeio, inode64, swalloc, allocsize=131072k, nofail]
 *   format_allow:           [/dev/disk/by-id/..., SERIAL]   disks that may be erased although not blank
 *                           (a kernel path only counts for disks with no serial and no WWN, e.g. loop devices;
 *                           a serial or WWN only when exactly one disk of the host carries it)
 *   storage_mount_mode:     '0750'   mode of each data filesystem's root, enforced (quoted: YAML 1.1
 *                           reads an unquoted 0750 as 488); unset: a filesystem racksmith makes gets
 *                           0750, a kept one is left as it is
 *   io_profiles:            { hdd: {scheduler, nr_requests, read_ahead_kb, rq_affinity, max_sectors_kb}, nvme: {...}, ssd: {...} }
 *                           key-by-key over the defaults; null leaves a key alone
 *   storage_udev_rules_file: /etc/udev/rules.d/60-racksmith-io.rules
 *
 * Lifecycle (the host records which disk serves each mountpath in /var/lib/racksmith/storage.json:
 * kernel name, filesystem UUID, serial; written atomically, one line per mountpath):
 *   - a disk keeps its mountpath: where it is mounted, else where storage.json recorded it, so a
 *     disk moved to another slot (its entry's device now another disk's) keeps its data's mountpath;
 *   - replacement: a blank disk arriving under a listed name is formatted and mounted at that
 *     name's mountpath (its fstab line replaced, not added);
 *   - a recorded mountpath takes no filesystem racksmith did not make (another node's data disk put
 *     in the slot): refused, naming both UUIDs;
 *   storage_adopt:          [UUID, ...] filesystem UUIDs a recorded mountpath may take all the same: the
 *                           foreign filesystem is kept (not formatted), recorded and mounted
 *   storage_prune:          true (default): a recorded mountpath no longer in storage_disks is unmounted and
 *                           the fstab line racksmith wrote removed; its data is kept. false: left as it is.
 *                           storage_disks: [] would prune every one: refused (storage_decommission retires them)
 *   storage_decommission:   [d1, ...] names of storage_disks entries to take out of service: unmounted, every
 *                           fstab line that mounts them and their udev rule line removed (--tags decommission
 *                           runs only this)
 *   storage_wipe:           [SERIAL, /dev/disk/by-id/...] decommissioned disks also erased (never by kernel
 *                           name); only in a plan reviewed with --check --plan-out, then `provision apply`,
 *                           or with --yes; never a disk in use. All disks wiped: /etc/ais/.ais.* removed too.
 *                           An entry naming a disk in service, or one naming no listed disk while a
 *                           decommissioned disk goes unnamed (a mistyped serial), is refused before
 *                           any decommission of the host runs
 *   Existing ais-k8s mounts (XFS by UUID at /ais/<kernel name>) are adopted: kept, not reformatted,
 *   their fstab line rewritten in place (one line per mountpoint).
 *   package_mirror, install_packages: xfsprogs and attr installed where missing (src/plays/prerequisites.ts)
 */

export const AIS_MOUNT_OPTIONS = [
  'noatime',
  'nodiratime',
  'logbufs=8',
  'logbsize=256k',
  'largeio',
  'inode64',
  'swalloc',
  'allocsize=131072k',
  'nofail',
];

const DEVICE = '^/dev/[A-Za-z0-9._:+@/-]+$';
/** A filesystem UUID as blkid prints an XFS one. */
const FS_UUID = '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
const nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] });
const profileSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    scheduler: nullable({ type: 'string', pattern: '^[a-z0-9_-]+$' }),
    nr_requests: nullable({ type: 'integer', minimum: 1, maximum: 1048576 }),
    read_ahead_kb: nullable({ type: 'integer', minimum: 0, maximum: 1048576 }),
    rq_affinity: nullable({ type: 'integer', minimum: 0, maximum: 2 }),
    max_sectors_kb: nullable({ type: 'integer', minimum: 4, maximum: 1048576 }),
  },
};

export const validateStorageVars = varsSchema({
  properties: {
    storage_disks: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          device: { type: 'string', pattern: DEVICE },
          serial: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:+-]*$', maxLength: 128 },
          name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$', maxLength: 64 },
          match: {
            type: 'object',
            minProperties: 1,
            propertyNames: { pattern: UDEV_MATCH_KEY.source },
            additionalProperties: { type: 'string', pattern: '^[^"\\\\\\x00-\\x1f\\x7f]+$', maxLength: 1024 },
          },
          profile: { enum: ['hdd', 'nvme', 'ssd'] },
        },
      },
    },
    storage_mount_prefix: { type: 'string', pattern: '^/' },
    storage_mount_options: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^[^\\s,]+$' } },
    format_allow: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 1024, pattern: '^[^\\s]+$' } },
    storage_mount_mode: { type: 'string', pattern: '^0?[0-7]{3}$' },
    io_profiles: {
      type: 'object',
      additionalProperties: false,
      properties: { hdd: profileSchema, nvme: profileSchema, ssd: profileSchema },
    },
    storage_udev_rules_file: { type: 'string', pattern: '^/etc/udev/rules\\.d/[^/]+\\.rules$' },
    storage_mount_name: { enum: ['name', 'kernel'] },
    storage_prune: { type: 'boolean' },
    storage_decommission: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$', maxLength: 64 } },
    storage_wipe: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 1024, pattern: '^[^\\s]+$' } },
    storage_adopt: { type: 'array', items: { type: 'string', pattern: FS_UUID } },
  },
});

export interface StorageDisk {
  spec: DiskSpec;
  name: string;
  mountpoint: string;
  match?: Record<string, string>;
  profile?: ProfileName;
}

export interface StorageConfig {
  disks: StorageDisk[];
  prefix: string;
  options: string[];
  allow: string[];
  /** storage_mount_mode: enforced on every data mount when set. */
  mountMode?: string;
  profiles: Record<ProfileName, IoProfile>;
  rulesFile: string;
  /** storage_prune: recorded mountpaths no longer listed are unmounted. */
  prune: boolean;
  /** storage_decommission: the entries taken out of service (the others are `active`). */
  decommission: StorageDisk[];
  active: StorageDisk[];
  /** storage_wipe: disks (serial, WWN, by-id path) erased once decommissioned. */
  wipe: string[];
  /** storage_adopt: filesystem UUIDs (lower case) a recorded mountpath may take although racksmith did not make them. */
  adopt: string[];
}

interface DiskVar {
  device?: string;
  serial?: string;
  name?: string;
  match?: Record<string, string>;
  profile?: ProfileName;
}

/** The default disk name: the kernel name for /dev/sdb, the link name for by-id paths, the serial. */
export function defaultDiskName(d: { device?: string; serial?: string }): string {
  const raw = d.device !== undefined ? posix.basename(d.device) : d.serial!;
  return raw.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** Validate and normalise the storage variables of a host (InputError at the variable's file:line). */
export function storageConfig(host: HostContext): StorageConfig {
  host.validate(validateStorageVars);
  const raw = host.var<DiskVar[] | undefined>('storage_disks', undefined);
  if (raw === undefined) {
    // an inventory brought from ais-k8s lists them as ais_devices (bare kernel names), which no play reads
    const ais = host.var<unknown>('ais_devices', undefined);
    const names = Array.isArray(ais) ? ais.filter((d): d is string => typeof d === 'string' && /^[A-Za-z0-9._-]+$/.test(d)) : [];
    const hint =
      ais === undefined
        ? ''
        : `; ais_devices (ais-k8s's list) is not read: the same disks at the same /ais/<kernel name> mountpoints are storage_mount_name: kernel and storage_disks: [${(names.length
            ? names
            : ['sdb']
          )
            .slice(0, 3)
            .map((d) => `{device: /dev/${d}}`)
            .join(', ')}${names.length > 3 ? ', ...' : ''}]`;
    throw host.error(
      ais === undefined ? 'storage_disks' : 'ais_devices',
      `storage_disks is not set: list the data disks explicitly (by /dev/disk/by-id path, kernel name or serial); racksmith never picks "all disks"${hint}`,
    );
  }
  let prefix: string;
  try {
    prefix = checkAbsolutePath(host.var('storage_mount_prefix', '/ais'), 'storage_mount_prefix');
  } catch (e) {
    throw host.error('storage_mount_prefix', (e as InputError).detail ?? (e as Error).message);
  }
  if (prefix === '/') throw host.error('storage_mount_prefix', 'storage_mount_prefix must not be /');
  const kernelNames = host.var<'name' | 'kernel'>('storage_mount_name', 'name') === 'kernel';
  const disks: StorageDisk[] = [];
  const names = new Map<string, number>();
  const specs = new Map<string, number>();
  raw.forEach((d, i) => {
    const where = `storage_disks[${i}]`;
    if ((d.device === undefined) === (d.serial === undefined))
      throw host.error('storage_disks', `${where}: give exactly one of device or serial`);
    if (d.device !== undefined) {
      try {
        checkAbsolutePath(d.device, `${where}.device`);
      } catch (e) {
        throw host.error('storage_disks', (e as InputError).detail);
      }
    }
    const spec: DiskSpec = d.device !== undefined ? { device: d.device } : { serial: d.serial! };
    if (kernelNames && (d.name !== undefined || !/^\/dev\/[^/]+$/.test(d.device ?? ''))) {
      throw host.error(
        'storage_disks',
        `${where}: storage_mount_name: kernel names each mountpoint after the disk's kernel name: give device: /dev/<kernel name> (e.g. /dev/sdb) and no name:`,
      );
    }
    const name = d.name ?? defaultDiskName(d);
    const prevName = names.get(name);
    if (prevName !== undefined)
      throw host.error('storage_disks', `${where}: name '${name}' is already used by storage_disks[${prevName}] (mountpoints must differ)`);
    for (const [key, pattern] of Object.entries(d.match ?? {})) {
      const bad = udevGlobError(pattern);
      if (bad) throw host.error('storage_disks', `${where}.match.${key}: not a udev glob: ${bad}`);
    }
    const prevSpec = specs.get(specText(spec));
    if (prevSpec !== undefined)
      throw host.error('storage_disks', `${where}: ${specText(spec)} is already listed as storage_disks[${prevSpec}]`);
    names.set(name, i);
    specs.set(specText(spec), i);
    disks.push({ spec, name, mountpoint: `${prefix}/${name}`, match: d.match, profile: d.profile });
  });
  const decommissionNames = host.var<string[]>('storage_decommission', []);
  for (const n of decommissionNames)
    if (!names.has(n)) throw host.error('storage_decommission', `storage_decommission: ${n} is not the name of a storage_disks entry`);
  const wipe = host.var<string[]>('storage_wipe', []);
  for (const w of wipe) {
    if (w.startsWith('/') && !w.startsWith('/dev/disk/by-id/'))
      throw host.error('storage_wipe', `storage_wipe: ${w}: name a disk by serial, WWN or /dev/disk/by-id path, never by kernel name`);
  }
  if (wipe.length && !decommissionNames.length)
    throw host.error('storage_wipe', 'storage_wipe erases decommissioned disks only: list them in storage_decommission');
  const gone = new Set(decommissionNames);
  return {
    disks,
    active: disks.filter((d) => !gone.has(d.name)),
    decommission: disks.filter((d) => gone.has(d.name)),
    prune: host.var('storage_prune', true),
    wipe,
    adopt: host.var<string[]>('storage_adopt', []).map((u) => u.toLowerCase()),
    prefix,
    options: host.var('storage_mount_options', AIS_MOUNT_OPTIONS),
    allow: host.var<string[]>('format_allow', []),
    mountMode: host.var<string | undefined>('storage_mount_mode', undefined),
    profiles: mergeProfiles(host.var<Partial<Record<ProfileName, IoProfileOverride>>>('io_profiles', {})),
    rulesFile: host.var('storage_udev_rules_file', IO_RULES_FILE),
  };
}

export function storageResources(host: HostContext): Resource[] {
  const c = storageConfig(host);
  // mkfs.xfs and setfattr first: the same wave, the format's steps after the install
  const out: Resource[] = prerequisites(host, 'storage', STORAGE_PACKAGES);
  const after = out.map((r) => r.id);
  const mountpoints = c.active.map((d) => d.mountpoint);
  const formats = c.active.map((d) =>
    xfsFormat({
      spec: d.spec,
      name: d.name,
      mountpoint: d.mountpoint,
      alsoAt: mountpoints.filter((m) => m !== d.mountpoint),
      allow: c.allow,
      others: c.active.filter((x) => x !== d).map((x) => x.spec),
      after,
      rootMode: c.mountMode,
      tags: ['mkfs'],
    }),
  );
  out.push(...formats);
  // Out of service first: what is pruned or decommissioned is unmounted before the others are recorded.
  if (c.prune) out.push(storagePrune({ keep: c.disks.map((d) => d.mountpoint), tags: ['prune'] }));
  // storage_wipe names disks this host decommissions (a mistyped serial is refused, not silent):
  // the decommissions wait for it
  const wipeCheck = c.wipe.length
    ? storageWipeCheck({
        disks: c.disks.map((d) => ({ name: d.name, spec: d.spec, decommissioned: c.decommission.includes(d) })),
        wipe: c.wipe,
        tags: ['decommission'],
      })
    : undefined;
  if (wipeCheck) out.push(wipeCheck);
  const retired = c.decommission.map((d) =>
    diskDecommission({
      spec: d.spec,
      name: d.name,
      mountpoint: d.mountpoint,
      wipe: c.wipe,
      after: wipeCheck ? [wipeCheck.id] : undefined,
      tags: ['decommission'],
    }),
  );
  out.push(...retired);
  // every data disk decommissioned, and storage_wipe naming each (the purge checks that on the host)
  if (c.wipe.length && c.decommission.length === c.disks.length)
    out.push(
      aisStatePurge({
        disks: c.decommission.map((d) => d.spec),
        wipe: c.wipe,
        dependsOn: retired.map((r) => r.id),
        tags: ['decommission'],
      }),
    );
  const entries = c.active.map((d) => ({ name: d.name, mountpoint: d.mountpoint, spec: d.spec }));
  for (const [i, d] of c.active.entries()) {
    const fmt = formats[i];
    // Which disk serves the mountpath (a moved disk keeps its own), recorded once its mkfs ran;
    // the mount finds that disk by the recorded filesystem UUID.
    const rec = storageRecordLine({
      mountpoint: d.mountpoint,
      disks: entries,
      adopt: c.adopt,
      dependsOn: [fmt.id],
      tags: ['mkfs', 'mount'],
    });
    // The root mode of a filesystem racksmith makes is set by mkfs; a kept one's only when asked.
    const mnt = recordedDiskMount({
      spec: d.spec,
      name: d.name,
      path: d.mountpoint,
      fstype: 'xfs',
      options: c.options,
      mode: c.mountMode,
      adopt: c.adopt,
      disks: entries,
      dependsOn: [fmt.id],
      tags: ['mount'],
    });
    out.push(rec, mnt, xattrCheck({ path: d.mountpoint, dependsOn: [mnt.id], tags: ['xattr'] }));
  }
  for (const d of c.active) out.push(ioTuning({ spec: d.spec, name: d.name, profiles: c.profiles, profile: d.profile, tags: ['io'] }));
  out.push(
    ioUdevRules({
      path: c.rulesFile,
      disks: c.active.map((d) => ({ name: d.name, spec: d.spec, match: d.match, profile: d.profile })),
      profiles: c.profiles,
      // (a decommissioned disk's line goes with `--tags decommission` too, and only once its
      // decommission went through: a refused one keeps its disk's tuning at the next boot)
      tags: c.decommission.length ? ['io', 'decommission'] : ['io'],
      after: retired.length ? retired.map((r) => r.id) : undefined,
    }),
  );
  return out;
}

export default playbook({
  name: 'storage',
  hosts: 'storage',
  tags: ['storage'],
  resources: storageResources,
});
