/**
 * Pure logic of the storage playbook: disk facts (parsed from the probe in blockdev.ts), the
 * format decision (blank / keep XFS / refuse), I/O profiles and their clamping to what a device
 * accepts, and the udev rule text. No I/O here: everything is table-tested from facts.
 */
import { createHash } from 'node:crypto';
import { ProbeError, Refusal, type Change } from '../contract/resource.ts';
import { unescapeMountinfo } from './mount-table.ts';

// ---------------------------------------------------------------------------------------------
// Disk facts

export interface Signature {
  offset: string;
  type: string;
  uuid?: string;
  label?: string;
}

export interface MountRef {
  /** maj:min of the mounted device (the disk or one of its partitions). */
  majmin: string;
  /** Kernel name of that device (the disk or the partition). */
  dev: string;
  mountpoint: string;
}

export interface QueueFacts {
  /** Schedulers the device offers, e.g. ['none', 'mq-deadline', 'kyber', 'bfq']. */
  schedulers: string[];
  /** The active one (in brackets in sysfs). */
  scheduler?: string;
  nr_requests?: number;
  read_ahead_kb?: number;
  rq_affinity?: number;
  max_sectors_kb?: number;
  max_hw_sectors_kb?: number;
  /** Smallest hardware tag depth over the device's hardware queues (`mq/N/nr_tags`). */
  nr_tags?: number;
  /** Values the kernel settled on below what racksmith wrote earlier (driver caps, /run/racksmith/io-caps). */
  caps: Record<string, number>;
}

export interface DiskFacts {
  /** What the inventory asked for: `/dev/sdb`, `/dev/disk/by-id/...` or `serial S`. */
  spec: string;
  /** Set when the spec does not resolve to one block device; the other fields are then empty. */
  error?: string;
  /** Other entries of the host's disk list that resolve to this same disk. */
  sameAs: string[];
  kname: string;
  /** Decimal maj:min. */
  majmin: string;
  isPartition: boolean;
  sizeBytes: number;
  rotational: boolean;
  readOnly: boolean;
  /** udev properties of the disk (ID_SERIAL, ID_SERIAL_SHORT, ID_WWN, ...), when udev knows it. */
  udev: Record<string, string>;
  /** sysfs identity files (device/serial, serial, device/wwid, wwid), trimmed. */
  sysIds: Record<string, string>;
  /** /dev/disk/by-id links that resolve to this disk. */
  byId: string[];
  partitions: Array<{ name: string; majmin: string }>;
  /** `owner holder`: `sdb dm-0` (the disk itself) or `sdb1 md0` (a partition). */
  holders: Array<{ of: string; holder: string }>;
  mounts: MountRef[];
  swaps: string[];
  /** `blkid -p -o export` of the whole disk (TYPE, PTTYPE, UUID, ...) and its exit code. */
  blkid: Record<string, string>;
  blkidCode: number;
  /** `wipefs -n` of the whole disk. */
  signatures: Signature[];
  /** sha256 of the raw blkid + wipefs output: apply refuses to format when it moved. */
  fingerprint: string;
  /**
   * false when the disk (or a partition) is mounted: a mounted disk is never formatted, so the
   * probe does not read its signatures (blkid, wipefs, fingerprint stay empty).
   */
  contentProbed: boolean;
  /** Filesystem type of the whole disk's mount, when mounted. */
  mountedFs?: string;
  queue: QueueFacts;
}

const num = (s: string | undefined): number | undefined => (s !== undefined && /^\d+$/.test(s.trim()) ? Number(s.trim()) : undefined);

/** Parse the key=value lines printed by `diskProbe` (blockdev.ts). */
export function parseDiskFacts(out: string): DiskFacts {
  const f: DiskFacts = {
    spec: '',
    sameAs: [],
    kname: '',
    majmin: '',
    isPartition: false,
    sizeBytes: 0,
    rotational: false,
    readOnly: false,
    udev: {},
    sysIds: {},
    byId: [],
    partitions: [],
    holders: [],
    mounts: [],
    swaps: [],
    blkid: {},
    blkidCode: -1,
    signatures: [],
    fingerprint: '',
    contentProbed: true,
    queue: { schedulers: [], caps: {} },
  };
  let sawEnd = false;
  for (const line of out.split('\n')) {
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const k = line.slice(0, eq);
    const v = line.slice(eq + 1);
    if (k === 'spec') f.spec = v;
    else if (k === 'error') f.error = v;
    else if (k === 'same') f.sameAs.push(v);
    else if (k === 'kname') f.kname = v;
    else if (k === 'majmin') f.majmin = v;
    else if (k === 'partition') f.isPartition = v === '1';
    else if (k === 'size') f.sizeBytes = (num(v) ?? 0) * 512;
    else if (k === 'rotational') f.rotational = v.trim() === '1';
    else if (k === 'ro') f.readOnly = v.trim() === '1';
    else if (k.startsWith('udev.')) f.udev[k.slice(5)] = v;
    else if (k.startsWith('sys.')) {
      if (v.trim()) f.sysIds[k.slice(4)] = v.trim();
    } else if (k === 'byid') f.byId.push(v);
    else if (k === 'part') {
      const [name, majmin] = v.split(' ');
      f.partitions.push({ name, majmin });
    } else if (k === 'holder') {
      const [of, holder] = v.split(' ');
      f.holders.push({ of, holder });
    } else if (k === 'mount') {
      const [majmin, dev, ...mp] = v.split(' ');
      f.mounts.push({ majmin, dev, mountpoint: unescapeMountinfo(mp.join(' ')) });
    } else if (k === 'swap') f.swaps.push(v);
    else if (k === 'mountfs') f.mountedFs = v;
    else if (k === 'content') f.contentProbed = v !== 'mounted';
    else if (k.startsWith('blkid.')) f.blkid[k.slice(6)] = v;
    else if (k === 'blkid_rc') f.blkidCode = num(v) ?? -1;
    else if (k === 'sig') {
      const [offset, type, uuid, ...label] = v.split(',');
      f.signatures.push({ offset, type, uuid: uuid || undefined, label: label.join(',') || undefined });
    } else if (k === 'fp') f.fingerprint = v;
    else if (k === 'q.scheduler') {
      const words = v.trim().split(/\s+/).filter(Boolean);
      f.queue.schedulers = words.map((w) => w.replace(/^\[|\]$/g, ''));
      const cur = words.find((w) => w.startsWith('['));
      f.queue.scheduler = cur ? cur.slice(1, -1) : words.length === 1 ? words[0] : undefined;
    } else if (k.startsWith('q.')) {
      const key = k.slice(2) as keyof QueueFacts;
      const n = num(v);
      if (n !== undefined) (f.queue as unknown as Record<string, number>)[key] = n;
    } else if (k.startsWith('cap.')) {
      const n = num(v);
      if (n !== undefined) f.queue.caps[k.slice(4)] = n;
    } else if (k === 'end') sawEnd = true;
  }
  if (!f.error && !sawEnd) throw new ProbeError(`disk probe did not complete: ${out.slice(-300)}`);
  return f;
}

/** The stable serial of a disk: udev's ID_SERIAL_SHORT, else the sysfs serial. */
export function serialOf(f: DiskFacts): string | undefined {
  return f.udev.ID_SERIAL_SHORT || f.sysIds['device/serial'] || f.sysIds.serial || f.udev.ID_SERIAL || undefined;
}

export function wwnOf(f: DiskFacts): string | undefined {
  return f.udev.ID_WWN || f.sysIds['device/wwid'] || f.sysIds.wwid || undefined;
}

/**
 * Everything that names this disk stably: by-id links, serials, WWNs. A disk with neither a
 * serial nor a WWN (loop devices, some virtual disks) has no stable name, so its kernel path
 * stands in for one.
 */
export function identitiesOf(f: DiskFacts, spec?: string): string[] {
  const ids = new Set<string>(f.byId);
  for (const v of [f.udev.ID_SERIAL, f.udev.ID_SERIAL_SHORT, f.udev.ID_WWN, f.udev.ID_WWN_WITH_EXTENSION, ...Object.values(f.sysIds)])
    if (v) ids.add(v);
  if (!serialOf(f) && !wwnOf(f)) {
    ids.add(`/dev/${f.kname}`);
    if (spec?.startsWith('/dev/')) ids.add(spec);
  }
  return [...ids];
}

/** The format_allow entry that names this disk, if any. */
export function allowedBy(f: DiskFacts, allow: readonly string[], spec?: string): string | undefined {
  const ids = new Set(identitiesOf(f, spec));
  return allow.find((a) => ids.has(a));
}

/** 1 GiB, 1.5 GiB, 931.5 GiB, 20 TiB, 512 MiB. */
export function humanSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  const s = Number.isInteger(v) ? String(v) : v.toFixed(1).replace(/\.0$/, '');
  return `${s} ${units[i]}`;
}

// ---------------------------------------------------------------------------------------------
// Format decision

export type FormatPlan = { action: 'keep' } | { action: 'format'; blank: boolean; allowedBy?: string; summary: string };

export interface FormatOptions {
  /** format_allow: by-id paths or serials (kernel paths only for disks without serial/WWN). */
  allow: readonly string[];
  /** Where this disk is to be mounted: an XFS disk mounted there is converged. */
  mountpoint: string;
}

function describeSignature(f: DiskFacts): string[] {
  if (!f.contentProbed) return [`${f.mountedFs ?? 'a'} filesystem mounted (signatures not read)`];
  const out: string[] = [];
  const seen = new Set<string>();
  if (f.blkid.TYPE) {
    const extra = [f.blkid.UUID ? `UUID ${f.blkid.UUID}` : '', f.blkid.LABEL ? `label ${f.blkid.LABEL}` : ''].filter(Boolean).join(', ');
    out.push(
      `${f.blkid.TYPE} ${f.blkid.USAGE === 'raid' ? 'RAID member' : f.blkid.USAGE === 'crypto' ? 'encrypted volume' : 'signature'}${extra ? ` (${extra})` : ''}`,
    );
    seen.add(f.blkid.TYPE);
  }
  if (f.blkid.PTTYPE || f.partitions.length) {
    const pt = f.blkid.PTTYPE ?? 'unknown';
    const parts = f.partitions.length
      ? ` with ${f.partitions.length} partition${f.partitions.length > 1 ? 's' : ''} (${f.partitions.map((p) => p.name).join(', ')})`
      : '';
    out.push(`${pt} partition table${parts}`);
    seen.add(pt);
  }
  const others = f.signatures.filter((s) => !seen.has(s.type));
  if (others.length) out.push(`signatures ${others.map((s) => `${s.type} at ${s.offset}`).join(', ')}`);
  if (f.blkidCode !== 0 && f.blkidCode !== 2 && !out.length) out.push(`an unclear probe result (blkid -p exit ${f.blkidCode})`);
  return out;
}

/** Is the disk XFS on the whole device, with nothing else on it? */
export function isCleanXfs(f: DiskFacts): boolean {
  if (!f.contentProbed) return f.mountedFs === 'xfs' && f.partitions.length === 0;
  return f.blkid.TYPE === 'xfs' && !f.blkid.PTTYPE && f.partitions.length === 0 && f.signatures.every((s) => s.type === 'xfs');
}

/** Nothing at all on the disk: no signature, no partition table, no partitions. */
export function isBlank(f: DiskFacts): boolean {
  return f.contentProbed && f.blkidCode === 2 && !f.blkid.TYPE && !f.blkid.PTTYPE && f.signatures.length === 0 && f.partitions.length === 0;
}

/**
 * Keep, format, or refuse (throws Refusal naming what was found). Never formats: a disk in use
 * (mounted, swap, holders such as LVM/md/dm, the root disk), or one that carries XFS. Formats a
 * blank disk, or a disk with other content only when format_allow names it.
 */
export function planFormat(f: DiskFacts, o: FormatOptions): FormatPlan {
  if (f.error) throw new Refusal(f.error);
  const dev = `/dev/${f.kname}`;
  if (f.isPartition) throw new Refusal(`${f.spec} is a partition (${f.kname}); storage_disks takes whole disks`);
  if (f.sameAs.length) throw new Refusal(`${f.spec} and ${f.sameAs.join(', ')} are the same disk (${dev}); list it once`);

  const inUse: string[] = [];
  const root = f.mounts.find((m) => m.mountpoint === '/');
  if (root) inUse.push(`it holds the root filesystem (/ on ${root.dev})`);
  const atTarget = f.mounts.some((m) => m.majmin === f.majmin && m.mountpoint === o.mountpoint);
  const elsewhere = f.mounts.filter((m) => m !== root && !(m.majmin === f.majmin && m.mountpoint === o.mountpoint));
  if (f.swaps.length) inUse.push(`it is in use as swap (${f.swaps.join(', ')})`);
  if (f.holders.length) {
    inUse.push(
      `it is held by ${f.holders.map((h) => (h.of === f.kname ? h.holder : `${h.holder} (on ${h.of})`)).join(', ')} (LVM, md RAID or device-mapper)`,
    );
  }

  if (isCleanXfs(f) && !root && !f.swaps.length && !f.holders.length) {
    // Converged, or a kept XFS disk waiting to be mounted. Extra mounts beside the target are
    // bind mounts of it (e.g. kubelet volumes) and fine; mounted only elsewhere is not ours.
    if (!atTarget && elsewhere.length) {
      throw new Refusal(
        `${dev} carries XFS (UUID ${f.blkid.UUID ?? '?'}) and is mounted at ${elsewhere.map((m) => m.mountpoint).join(', ')}, not at ${o.mountpoint}; unmount it first`,
      );
    }
    return { action: 'keep' };
  }
  // Not a clean XFS disk: any mount is a use, the target mountpoint too (someone else's filesystem there).
  const mounted = f.mounts.filter((m) => m !== root);
  if (mounted.length) {
    inUse.push(
      `${[...new Set(mounted.map((m) => (m.dev === f.kname ? `it is mounted at ${m.mountpoint}` : `partition ${m.dev} is mounted at ${m.mountpoint}`)))].join(', ')}`,
    );
  }

  const serial = serialOf(f);
  const about = `${humanSize(f.sizeBytes)}, ${serial ? `serial ${serial}` : 'no serial'}`;
  const found = describeSignature(f);
  if (inUse.length) {
    throw new Refusal(
      `not formatting ${dev}: ${[...inUse, ...found].join('; ')}. A disk in use is never formatted, even when format_allow names it`,
    );
  }
  if (f.readOnly) throw new Refusal(`${dev} is read-only`);
  if (isBlank(f)) return { action: 'format', blank: true, summary: `format ${dev} (blank, ${about}) as XFS` };
  if (f.blkid.TYPE === 'xfs' || f.signatures.some((s) => s.type === 'xfs')) {
    throw new Refusal(
      `not formatting ${dev}: it carries XFS together with other content (${found.join('; ')}); an XFS disk is never re-formatted, clean it up by hand`,
    );
  }
  const allowed = allowedBy(f, o.allow, f.spec);
  if (!allowed) {
    throw new Refusal(
      `not formatting ${dev} (${about}): it is not blank: ${found.join('; ')}. To erase it, list its by-id path or serial in format_allow`,
    );
  }
  return {
    action: 'format',
    blank: false,
    allowedBy: allowed,
    summary: `format ${dev} (${about}) as XFS, erasing ${found.join('; ')} (format_allow: ${allowed})`,
  };
}

// ---------------------------------------------------------------------------------------------
// I/O profiles

export const IO_KEYS = ['scheduler', 'nr_requests', 'max_sectors_kb', 'read_ahead_kb', 'rq_affinity'] as const;
export type IoKey = (typeof IO_KEYS)[number];
export interface IoProfile {
  scheduler?: string;
  nr_requests?: number;
  read_ahead_kb?: number;
  rq_affinity?: number;
  max_sectors_kb?: number;
}
export type ProfileName = 'hdd' | 'nvme' | 'ssd';
/** User overrides: a key set to null is left alone (not written). */
export type IoProfileOverride = { [K in IoKey]?: IoProfile[K] | null };

/** The legacy AIStore HDD profile (tags nvidiastd/iosched) and the current NVMe default. */
export const DEFAULT_IO_PROFILES: Record<'hdd' | 'nvme', IoProfile> = {
  hdd: { scheduler: 'mq-deadline', nr_requests: 2048, read_ahead_kb: 4096, rq_affinity: 2, max_sectors_kb: 16383 },
  nvme: { scheduler: 'none', read_ahead_kb: 128 },
};

/** Kernel limit of nr_requests when an I/O scheduler is active (MAX_SCHED_RQ = 16 * 128). */
export const MAX_SCHED_RQ = 2048;
/** Kernel floor of nr_requests (BLKDEV_MIN_RQ). */
export const MIN_NR_REQUESTS = 4;

function overlay(base: IoProfile, o: IoProfileOverride | undefined): IoProfile {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(o ?? {})) {
    if (v === null) delete out[k];
    else if (v !== undefined) out[k] = v;
  }
  return out as IoProfile;
}

/**
 * Effective profiles: each given profile overrides the defaults key by key (null drops a key);
 * `ssd` (non-rotational, not NVMe) falls back to the effective `nvme` profile.
 */
export function mergeProfiles(user: Partial<Record<ProfileName, IoProfileOverride>> = {}): Record<ProfileName, IoProfile> {
  const hdd = overlay(DEFAULT_IO_PROFILES.hdd, user.hdd);
  const nvme = overlay(DEFAULT_IO_PROFILES.nvme, user.nvme);
  const ssd = user.ssd ? overlay(nvme, user.ssd) : nvme;
  return { hdd, nvme, ssd };
}

/** hdd for rotational disks, nvme for nvme*, ssd for other non-rotational ones (unless the inventory says). */
export function profileFor(f: Pick<DiskFacts, 'kname' | 'rotational'>, override?: ProfileName): ProfileName {
  if (override) return override;
  if (f.rotational) return 'hdd';
  return f.kname.startsWith('nvme') ? 'nvme' : 'ssd';
}

export interface IoTarget {
  /**
   * Values to write, in write order: scheduler first (switching it resets nr_requests), and
   * max_sectors_kb before read_ahead_kb (writing max_sectors_kb raises read_ahead_kb to twice it).
   */
  values: Array<[IoKey, string]>;
  /** Why a value differs from the profile: "16383 clamped to max_hw_sectors_kb 1280". */
  notes: Partial<Record<IoKey, string>>;
}

/**
 * What to write for `profile` on a device with these queue facts: each value clamped to what the
 * device accepts. `runtimeCaps` also applies caps the kernel imposed on an earlier write (they
 * reset at boot, so the persistent udev rule is computed without them). Throws Refusal when the
 * device does not offer the wanted scheduler.
 */
export function ioTarget(profile: IoProfile, q: QueueFacts, runtimeCaps = true): IoTarget {
  const values: Array<[IoKey, string]> = [];
  const notes: IoTarget['notes'] = {};
  const cap = (key: IoKey, want: number, limits: Array<[number | undefined, string]>): number => {
    let v = want;
    let why = '';
    for (const [lim, what] of limits) {
      if (lim !== undefined && v > lim) {
        v = lim;
        why = what;
      }
    }
    if (runtimeCaps && q.caps[key] !== undefined && v > q.caps[key]) {
      v = q.caps[key];
      why = 'the largest value the kernel accepted earlier';
    }
    if (v !== want) notes[key] = `${want} clamped to ${why}`;
    return v;
  };
  let sched = q.scheduler;
  if (profile.scheduler !== undefined) {
    if (!q.schedulers.includes(profile.scheduler)) {
      throw new Refusal(
        `I/O scheduler ${profile.scheduler} is not available (the device offers: ${q.schedulers.join(', ') || 'none listed'})`,
      );
    }
    sched = profile.scheduler;
    values.push(['scheduler', profile.scheduler]);
  }
  if (profile.nr_requests !== undefined) {
    // Without a scheduler the hardware tag depth is the limit; with one, MAX_SCHED_RQ.
    const lim: number | undefined = sched === 'none' ? q.nr_tags : MAX_SCHED_RQ;
    let v = cap('nr_requests', profile.nr_requests, [
      [lim, sched === 'none' ? `the hardware queue depth ${lim} (scheduler none)` : `the kernel maximum ${MAX_SCHED_RQ} with a scheduler`],
    ]);
    if (v < MIN_NR_REQUESTS) {
      notes.nr_requests = `${profile.nr_requests} raised to the kernel minimum ${MIN_NR_REQUESTS}`;
      v = MIN_NR_REQUESTS;
    }
    values.push(['nr_requests', String(v)]);
  }
  // max_sectors_kb before read_ahead_kb: writing it makes the kernel raise read_ahead_kb.
  if (profile.max_sectors_kb !== undefined) {
    let v = cap('max_sectors_kb', profile.max_sectors_kb, [[q.max_hw_sectors_kb, `max_hw_sectors_kb ${q.max_hw_sectors_kb}`]]);
    if (v < 4) {
      notes.max_sectors_kb = `${profile.max_sectors_kb} raised to the kernel minimum 4`;
      v = 4;
    }
    values.push(['max_sectors_kb', String(v)]);
  }
  if (profile.read_ahead_kb !== undefined) values.push(['read_ahead_kb', String(cap('read_ahead_kb', profile.read_ahead_kb, []))]);
  if (profile.rq_affinity !== undefined) values.push(['rq_affinity', String(Math.min(Math.max(profile.rq_affinity, 0), 2))]);
  return { values, notes };
}

function currentValue(q: QueueFacts, key: IoKey): string | undefined {
  if (key === 'scheduler') return q.scheduler;
  const v = q[key];
  return v === undefined ? undefined : String(v);
}

/** The keys whose live value differs from the target, in write order. */
export function ioDiffKeys(t: IoTarget, q: QueueFacts): IoKey[] {
  return t.values.filter(([k, v]) => currentValue(q, k) !== v).map(([k]) => k);
}

/** What an I/O tuning change writes: the whole target, and the key that differs. */
export interface IoChange {
  target: IoTarget;
  key: IoKey;
}

/** One change per differing sysfs value: `/sys/block/sdb/queue/scheduler: none → mq-deadline`. */
export function ioChanges(kname: string, t: IoTarget, q: QueueFacts): Change<IoChange>[] {
  return ioDiffKeys(t, q).map((k) => {
    const want = t.values.find(([key]) => key === k)![1];
    const note = t.notes[k] ? ` (${t.notes[k]})` : '';
    return {
      summary: `/sys/block/${kname}/queue/${k}: ${currentValue(q, k) ?? '(unreadable)'} → ${want}${note}`,
      data: { target: t, key: k },
    };
  });
}

// ---------------------------------------------------------------------------------------------
// udev rule

/** Match keys accepted in storage_disks[].match. */
export const UDEV_MATCH_KEY = /^(KERNEL|ENV\{[A-Z0-9_]+\}|ATTRS?\{[A-Za-z0-9_/]+\})$/;

/** udev's glob: *, ?, [...] and | alternatives. */
export function udevGlob(pattern: string, value: string): boolean {
  return pattern.split('|').some((alt) => {
    let re = '';
    for (let i = 0; i < alt.length; i++) {
      const c = alt[i];
      if (c === '*') re += '.*';
      else if (c === '?') re += '.';
      else if (c === '[') {
        const end = alt.indexOf(']', i + 1);
        if (end < 0) re += '\\[';
        else {
          re += `[${alt
            .slice(i + 1, end)
            .replace(/^!/, '^')
            .replace(/\\/g, '\\\\')}]`;
          i = end;
        }
      } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
    }
    return new RegExp(`^${re}$`).test(value);
  });
}

/**
 * The match part of a disk's rule. Default: ENV{ID_WWN}, else ENV{ID_SERIAL}, as udev itself
 * reports them (never the sdX name, which changes between boots). An explicit `match` is checked
 * against the facts where they can tell, so a rule that would not match the disk is refused.
 */
export function udevMatch(f: DiskFacts, match?: Record<string, string>): string[] {
  if (match && Object.keys(match).length) {
    for (const [k, v] of Object.entries(match)) {
      if (k === 'KERNEL' && !udevGlob(v, f.kname))
        throw new Refusal(`match KERNEL=="${v}" does not match ${f.kname}; the udev rule would never apply`);
      const env = /^ENV\{(.+)\}$/.exec(k);
      if (env) {
        const have = f.udev[env[1]];
        if (have === undefined)
          throw new Refusal(`match ${k}=="${v}": udev reports no ${env[1]} for ${f.kname}; the udev rule would never apply`);
        if (!udevGlob(v, have))
          throw new Refusal(`match ${k}=="${v}" does not match ${f.kname} (${env[1]}=${have}); the udev rule would never apply`);
      }
    }
    return Object.entries(match).map(([k, v]) => `${k}=="${v}"`);
  }
  if (f.udev.ID_WWN) return [`ENV{ID_WWN}=="${f.udev.ID_WWN}"`];
  if (f.udev.ID_SERIAL) return [`ENV{ID_SERIAL}=="${f.udev.ID_SERIAL}"`];
  throw new Refusal(
    `udev reports no ID_WWN or ID_SERIAL for ${f.kname}, so the I/O tuning cannot be persisted by a stable name; set storage_disks[].match (e.g. {KERNEL: ${f.kname}}) for disks without one`,
  );
}

export function udevRuleLine(match: string[], t: IoTarget): string {
  const attrs = t.values.map(([k, v]) => `ATTR{queue/${k}}="${v}"`);
  return ['ACTION=="add|change"', 'SUBSYSTEM=="block"', 'ENV{DEVTYPE}=="disk"', ...match, ...attrs].join(', ');
}

export interface UdevEntry {
  name: string;
  profile: ProfileName;
  line?: string;
}

export function udevRulesFile(entries: UdevEntry[]): string {
  const lines = [
    '# Managed by racksmith (playbooks/storage.ts): I/O scheduler and queue tuning of the data disks.',
    "# Matched by WWN/serial (or the inventory's storage_disks[].match), never by sdX name. Do not edit.",
  ];
  for (const e of entries) {
    if (!e.line) continue;
    lines.push(`# ${e.name}: ${e.profile} profile`, e.line);
  }
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------
// xattr check

export interface XattrFacts {
  mounted: boolean;
  ok: boolean;
  detail: string;
}

export function parseXattrFacts(out: string): XattrFacts {
  const kv = new Map<string, string>();
  for (const l of out.split('\n')) {
    const eq = l.indexOf('=');
    if (eq > 0) kv.set(l.slice(0, eq), l.slice(eq + 1));
  }
  const mounted = kv.get('mounted') === '1';
  if (!mounted) return { mounted, ok: false, detail: 'not mounted' };
  const set = kv.get('set') ?? '';
  const want = kv.get('want') ?? '';
  const got = kv.get('got') ?? '';
  const removed = kv.get('removed') ?? '';
  if (set !== 'ok') return { mounted, ok: false, detail: `setfattr failed: ${set || 'no output'}` };
  if (got !== want) return { mounted, ok: false, detail: `read back ${JSON.stringify(got)}, wrote ${JSON.stringify(want)}` };
  if (removed !== 'ok') return { mounted, ok: false, detail: `could not remove the probe attribute: ${removed}` };
  return { mounted, ok: true, detail: '' };
}

export const XATTR_NAME = 'user.racksmith.probe';

/** Throws Refusal when the mount has no working user xattrs (AIStore needs them). */
export function xattrDiff(path: string, f: XattrFacts): Change[] {
  if (!f.mounted) throw new Refusal(`${path} is not mounted, so its extended attributes cannot be checked`);
  if (!f.ok) throw new Refusal(`extended attributes do not work on ${path} (${XATTR_NAME}: ${f.detail}); AIStore needs user xattrs`);
  return [];
}

export function sha256Hex(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}
