/**
 * Pure logic of the storage playbook: disk facts (parsed from the probe in blockdev.ts), the
 * format decision (blank / keep XFS / refuse), I/O profiles and their clamping to what a device
 * accepts, and the udev rule text. No I/O here: everything is table-tested from facts.
 */
import { sha256 } from '../../util/sha256.ts';
import { ProbeError, Refusal, type Change } from '../../contract/resource.ts';
import { unescapeMountinfo } from '../core/mount-table.ts';

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
  /**
   * Set when the spec does not resolve to one block device (the other fields are then empty), or
   * when it is `blocked`.
   */
  error?: string;
  /**
   * Why its content is not read: a read of it would wait (core/block-ids.ts). Its sysfs, udev and
   * mount facts are read; it holds the mountpath it has (assignMountpoints), refused.
   */
  blocked?: string;
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
  /** sha256 of the raw blkid + wipefs output: apply refuses to format when it moved ('' for XFS: never formatted). */
  fingerprint: string;
  /**
   * false when the disk (or a partition) is mounted: a mounted disk is never formatted, so the
   * probe does not read its signatures (blkid, wipefs, fingerprint stay empty).
   */
  contentProbed: boolean;
  /** Filesystem type of the whole disk's mount, when mounted. */
  mountedFs?: string;
  /** Filesystem UUID of a mounted disk (blkid -p; an unmounted one's is blkid.UUID). */
  fsUuid?: string;
  /** What the data sample read (a content-probed disk without any signature), else undefined. */
  sample?: DataSample;
  /** Signatures blkid finds at the usual partition start offsets (probed only when the sample is not all zeros). */
  offsetSignatures: OffsetSignature[];
  /**
   * The exclusive open (O_EXCL) of the disk, as the kernel answers it: undefined when not tried
   * (a disk mounted in this mount namespace), '' when it opened, else the error (EBUSY: mounted in some mount
   * namespace, held by dm/md/swap, or open exclusively by a process).
   */
  exclusiveOpen?: string;
  /** When the exclusive open failed: mounts of the disk or its partitions in other mount namespaces. */
  nsMounts: Array<{ pid: string; majmin: string; mountpoint: string }>;
  /** When the exclusive open failed: processes that have the disk or a partition open. */
  openBy: Array<{ pid: string; comm: string }>;
  /** Loop devices backed by the disk or one of its partitions (loop/backing_file), with their mounts and holders. */
  loops: LoopUse[];
  /** For a disk that may be formatted: each of its serial/WWN values → the host's disks that carry it. */
  idDisks: Record<string, string[]>;
  /** For an XFS disk (mounted or not): every device of the host that carries its filesystem UUID (itself included). */
  uuidDevices?: UuidDevice[];
  /**
   * Kernel names of the devices stacked with this disk, each transitively: below it (its slaves:
   * a multipath map's path devices, the disk under a dm-linear; the block device a loop disk
   * reads) and above it (its holders: dm devices over it). Read for XFS and mounted disks.
   */
  stack: string[];
  queue: QueueFacts;
}

/** A device that carries a disk's filesystem UUID, as the probe names it. */
export interface UuidDevice {
  /** The path blkid names it by: /dev/NAME, /dev/mapper/NAME for a dm device. */
  path: string;
  /** Its kernel name ('' when the probe could not tell). */
  kname: string;
  /** For a loop device (other than the disk): the kernel name of the block device it reads, else ''. */
  backing: string;
}

export interface DataSample {
  /** Bytes read and bytes meant to be read (less: a read error or a shorter device). */
  read: number;
  want: number;
  /** Per sampled region with non-zero data: its first non-zero byte and the 4 bytes from there (hex). */
  hits: Array<{ offset: number; hex: string }>;
  /** 4 KiB-aligned offsets (not 0) where an XFS superblock magic (XFSB) was read: secondary superblocks. */
  xfsSuperblocks: number[];
  /** A tar header magic (ustar at offset 257). */
  tar: boolean;
}

export interface OffsetSignature {
  offset: number;
  type?: string;
  pttype?: string;
  uuid?: string;
  label?: string;
}

export interface LoopUse {
  /** Kernel name of the loop device. */
  name: string;
  /** Its backing file as the kernel shows it (the disk or a partition of it). */
  backing: string;
  mounts: string[];
  holders: string[];
}

const num = (s: string | undefined): number | undefined => (s !== undefined && /^\d+$/.test(s.trim()) ? Number(s.trim()) : undefined);

// Every resource of a disk, and every list that names it (filesystem, mount, queue, udev rule,
// storage record), parses the same answer: ~16 parses of 2 answers per host. The facts of the
// last answers are kept (frozen: shared by all their readers) and parsed once.
const recentFacts = new Map<string, DiskFacts>();
const RECENT_FACTS_MAX = 64;

/** Parse the key=value lines printed by `diskProbe` (blockdev.ts); the facts are frozen. */
export function parseDiskFacts(out: string): DiskFacts {
  let f = recentFacts.get(out);
  if (!f) {
    f = deepFreeze(parseDiskAnswer(out));
    if (recentFacts.size >= RECENT_FACTS_MAX) recentFacts.delete(recentFacts.keys().next().value!);
    recentFacts.set(out, f);
  }
  return f;
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

function parseDiskAnswer(out: string): DiskFacts {
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
    offsetSignatures: [],
    nsMounts: [],
    openBy: [],
    loops: [],
    idDisks: {},
    stack: [],
    queue: { schedulers: [], caps: {} },
  };
  let sawEnd = false;
  const loop = (name: string): LoopUse => {
    let l = f.loops.find((x) => x.name === name);
    if (!l) f.loops.push((l = { name, backing: '', mounts: [], holders: [] }));
    return l;
  };
  const offsetSig = (offset: number): OffsetSignature => {
    let o = f.offsetSignatures.find((x) => x.offset === offset);
    if (!o) f.offsetSignatures.push((o = { offset }));
    return o;
  };
  for (const line of out.split('\n')) {
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const k = line.slice(0, eq);
    const v = line.slice(eq + 1);
    if (k === 'spec') f.spec = v;
    else if (k === 'error') f.error = v;
    else if (k === 'blocked') f.blocked = v;
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
    else if (k === 'fsuuid') f.fsUuid = v || undefined;
    else if (k === 'content') f.contentProbed = v !== 'mounted';
    else if (k.startsWith('blkid.')) f.blkid[k.slice(6)] = v;
    else if (k === 'blkid_rc') f.blkidCode = num(v) ?? -1;
    else if (k === 'sig') {
      const [offset, type, uuid, ...label] = v.split(',');
      f.signatures.push({ offset, type, uuid: uuid || undefined, label: label.join(',') || undefined });
    } else if (k === 'fp') f.fingerprint = v;
    else if (k === 'sample') {
      const [read, want] = v.split(' ').map((x) => num(x) ?? 0);
      f.sample = { read, want, hits: f.sample?.hits ?? [], xfsSuperblocks: f.sample?.xfsSuperblocks ?? [], tar: f.sample?.tar ?? false };
    } else if (k === 'data' || k === 'xfsb' || k === 'tar') {
      f.sample ??= { read: 0, want: -1, hits: [], xfsSuperblocks: [], tar: false };
      const [off, hex] = v.split(' ');
      if (k === 'data') f.sample.hits.push({ offset: num(off) ?? -1, hex: hex ?? '' });
      else if (k === 'xfsb') f.sample.xfsSuperblocks.push(num(off) ?? -1);
      else f.sample.tar = true;
    } else if (k.startsWith('psig.')) {
      // psig.OFFSET.KEY=VALUE: blkid -p -O OFFSET -o export
      const dot = k.indexOf('.', 5);
      const o = offsetSig(num(k.slice(5, dot)) ?? -1);
      const key = k.slice(dot + 1);
      if (key === 'TYPE') o.type = v;
      else if (key === 'PTTYPE') o.pttype = v;
      else if (key === 'UUID') o.uuid = v;
      else if (key === 'LABEL') o.label = v;
    } else if (k === 'excl') f.exclusiveOpen = v === 'ok' ? '' : v;
    else if (k === 'nsmount') {
      const [pid, majmin, ...mp] = v.split(' ');
      f.nsMounts.push({ pid, majmin, mountpoint: unescapeMountinfo(mp.join(' ')) });
    } else if (k === 'openby') {
      const sp = v.indexOf(' ');
      f.openBy.push({ pid: sp < 0 ? v : v.slice(0, sp), comm: sp < 0 ? '' : v.slice(sp + 1) });
    } else if (k === 'loop' || k === 'loopmount' || k === 'loopholder') {
      const sp = v.indexOf(' ');
      const l = loop(sp < 0 ? v : v.slice(0, sp));
      const rest = sp < 0 ? '' : v.slice(sp + 1);
      if (k === 'loop') l.backing = rest;
      else if (k === 'loopmount') l.mounts.push(unescapeMountinfo(rest));
      else l.holders.push(rest);
    } else if (k === 'iddisks') {
      const tab = v.indexOf('\t');
      const id = tab < 0 ? v : v.slice(0, tab);
      f.idDisks[id] = [...new Set([...(f.idDisks[id] ?? []), ...(tab < 0 ? '' : v.slice(tab + 1)).split(' ').filter(Boolean)])];
    } else if (k === 'uuiddev') {
      // PATH<TAB>KNAME<TAB>BACKING (answers recorded before the kernel name: PATH only)
      const [path, kname, backing] = v.split('\t');
      (f.uuidDevices ??= []).push({ path, kname: kname ?? /^\/dev\/([^/]+)$/.exec(path)?.[1] ?? '', backing: backing ?? '' });
    } else if (k === 'stack') f.stack.push(v);
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
  /** Other mountpoints of the host's list: an XFS disk mounted at one is kept as well. */
  alsoAt?: readonly string[];
}

/** What blkid's TYPE is, in words: "ext4 signature", "LVM2 physical volume", "linux_raid_member RAID member". */
function describeType(type: string, usage: string | undefined): string {
  if (type === 'LVM2_member') return 'LVM2 physical volume';
  if (usage === 'raid') return `${type} RAID member`;
  if (usage === 'crypto') return `${type} encrypted volume`;
  return `${type} signature`;
}

const joinIds = (parts: Array<string | undefined>) => parts.filter(Boolean).join(', ');

function describeSignature(f: DiskFacts): string[] {
  if (!f.contentProbed) return [`${f.mountedFs ?? 'a'} filesystem mounted (signatures not read)`];
  const out: string[] = [];
  const seen = new Set<string>();
  if (f.blkid.TYPE) {
    const extra = joinIds([f.blkid.UUID && `UUID ${f.blkid.UUID}`, f.blkid.LABEL && `label ${f.blkid.LABEL}`]);
    out.push(`${describeType(f.blkid.TYPE, f.blkid.USAGE)}${extra ? ` (${extra})` : ''}`);
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
  if (!out.length) out.push(...describeData(f));
  return out;
}

/** A disk without any signature: what its data sample and the partition offsets show. */
function describeData(f: DiskFacts): string[] {
  const s = f.sample;
  if (!s) return ['its data was not sampled'];
  const out: string[] = [];
  if (s.read < s.want || s.want < 0) out.push(`its data could not be read (read ${s.read} of ${s.want} sampled bytes)`);
  const first = s.hits.reduce<DataSample['hits'][number] | undefined>((a, h) => (!a || h.offset < a.offset ? h : a), undefined);
  if (first) {
    const what =
      s.tar && first.offset === 0
        ? ' (a tar archive: ustar header at offset 257)'
        : first.hex.startsWith('58414746')
          ? ' (an XFS allocation group header: the primary superblock sector before it is gone)'
          : '';
    out.push(`non-zero data at offset ${first.offset}${what}`);
  }
  for (const o of f.offsetSignatures) {
    const extra = joinIds([o.uuid && `UUID ${o.uuid}`, o.label && `label ${o.label}`]);
    const name = o.type ? `${o.type} filesystem` : `${o.pttype} partition table`;
    out.push(`${name} at offset ${o.offset}${extra ? ` (${extra})` : ''}, where a partition starts (its partition table is gone)`);
  }
  if (s.xfsSuperblocks.length) {
    out.push(
      `XFS secondary superblock${s.xfsSuperblocks.length > 1 ? 's' : ''} at offset${s.xfsSuperblocks.length > 1 ? 's' : ''} ${s.xfsSuperblocks.join(', ')}: an XFS filesystem whose primary superblock is damaged (xfs_repair can restore it)`,
    );
  }
  return out;
}

/** Is the disk XFS on the whole device, with nothing else on it? */
export function isCleanXfs(f: DiskFacts): boolean {
  if (!f.contentProbed) return f.mountedFs === 'xfs' && f.partitions.length === 0;
  return f.blkid.TYPE === 'xfs' && !f.blkid.PTTYPE && f.partitions.length === 0 && f.signatures.every((s) => s.type === 'xfs');
}

/**
 * Nothing at all on the disk: no signature (whole disk and the usual partition offsets), no
 * partition table, no partitions, and every sampled region read back as zeros.
 */
export function isBlank(f: DiskFacts): boolean {
  const s = f.sample;
  return (
    f.contentProbed &&
    f.blkidCode === 2 &&
    !f.blkid.TYPE &&
    !f.blkid.PTTYPE &&
    f.signatures.length === 0 &&
    f.partitions.length === 0 &&
    s !== undefined &&
    s.want > 0 &&
    s.read === s.want &&
    s.hits.length === 0 &&
    f.offsetSignatures.length === 0
  );
}

/** The exclusive-open answer of a wipefs too old to try it (blockdev.ts): not known, not a use. */
const EXCL_NOT_TRIED = /^wipefs of util-linux before 2\.24/;

/**
 * Who uses the disk, as the kernel and the system show it: the root filesystem, swap, holders
 * (dm, md), loop devices backed by it, and a failed exclusive open (named by the mounts in other
 * mount namespaces and the processes that have it open). Mounts in this namespace are the
 * caller's (whether a mount is a use depends on what is mounted).
 */
export function usesOf(f: DiskFacts): string[] {
  const uses: string[] = [];
  const root = f.mounts.find((m) => m.mountpoint === '/');
  if (root) uses.push(`it holds the root filesystem (/ on ${root.dev})`);
  if (f.swaps.length) uses.push(`it is in use as swap (${f.swaps.join(', ')})`);
  if (f.holders.length) {
    uses.push(
      `it is held by ${f.holders.map((h) => (h.of === f.kname ? h.holder : `${h.holder} (on ${h.of})`)).join(', ')} (LVM, md RAID or device-mapper)`,
    );
  }
  for (const l of f.loops) {
    const how = [...l.mounts.map((m) => `mounted at ${m}`), ...l.holders.map((h) => `held by ${h}`)];
    uses.push(`it backs loop device /dev/${l.name} (backing file ${l.backing}${how.length ? `; ${how.join(', ')}` : ''})`);
  }
  // (a read-only disk cannot be opened for writing at all: that is said as such)
  if (f.exclusiveOpen && !(f.readOnly && /read-only/i.test(f.exclusiveOpen))) {
    const who = [
      ...f.nsMounts
        .filter((m, i) => f.nsMounts.findIndex((x) => x.mountpoint === m.mountpoint) === i)
        .map((m) => `mounted at ${m.mountpoint} in another mount namespace (pid ${m.pid})`),
      ...f.openBy.map((p) => `open by pid ${p.pid}${p.comm ? ` (${p.comm})` : ''}`),
    ];
    // Swap and holders already say why the kernel refuses; anything else is named here.
    if (who.length) uses.push(`the kernel refuses to open it exclusively (${f.exclusiveOpen}): ${who.join(', ')}`);
    else if (!f.swaps.length && !f.holders.length) {
      uses.push(
        /busy/i.test(f.exclusiveOpen)
          ? `the kernel refuses to open it exclusively (${f.exclusiveOpen}): something holds it that racksmith cannot name (no mount, holder or process found)`
          : `it cannot be opened exclusively: ${f.exclusiveOpen}`,
      );
    }
  }
  return uses;
}

/**
 * The devices that carry this disk's filesystem UUID and are another copy of it (clones), by the
 * path blkid names them. Not clones: the disk itself under another name (/dev/mapper/NAME of a dm
 * disk), its partitions, the devices stacked with it (a multipath map's path devices, a dm device
 * over it or under it, the block device a loop disk reads), and a loop device that reads any of
 * those: they all read the disk's own blocks (and `xfs_admin -U` on one of them would rewrite the
 * disk's own superblock). A device whose kernel name the probe could not tell counts as a clone.
 */
export function uuidClones(f: Pick<DiskFacts, 'kname' | 'partitions' | 'stack' | 'uuidDevices'>): string[] {
  const devs = f.uuidDevices ?? [];
  const same = new Set([f.kname, ...f.partitions.map((p) => p.name), ...f.stack]);
  // (a loop over a loop over the disk is the disk too: until nothing more is)
  for (let grew = true; grew;) {
    grew = false;
    for (const d of devs) {
      if (d.kname && d.backing && same.has(d.backing) && !same.has(d.kname)) {
        same.add(d.kname);
        grew = true;
      }
    }
  }
  const own = new Set([`/dev/${f.kname}`, ...f.partitions.map((p) => `/dev/${p.name}`)]);
  return [...new Set(devs.filter((d) => !own.has(d.path) && !(d.kname && same.has(d.kname))).map((d) => d.path))];
}

/**
 * Keep, format, or refuse (throws Refusal naming what was found). Never formats: a disk in use
 * (mounted in any mount namespace, swap, holders such as LVM/md/dm, a loop device over it, open
 * exclusively, the root disk), or one that carries XFS. Formats a blank disk, or a disk with other
 * content only when format_allow names exactly this disk.
 */
export function planFormat(f: DiskFacts, o: FormatOptions): FormatPlan {
  if (f.error) throw new Refusal(f.error);
  const dev = `/dev/${f.kname}`;
  if (f.isPartition) throw new Refusal(`${f.spec} is a partition (${f.kname}); storage_disks takes whole disks`);
  if (f.sameAs.length) throw new Refusal(`${f.spec} and ${f.sameAs.join(', ')} are the same disk (${dev}); list it once`);

  const inUse = usesOf(f);
  const root = f.mounts.find((m) => m.mountpoint === '/');
  const listed = new Set([o.mountpoint, ...(o.alsoAt ?? [])]);
  const atTarget = f.mounts.some((m) => m.majmin === f.majmin && listed.has(m.mountpoint));
  const elsewhere = f.mounts.filter((m) => m !== root && !(m.majmin === f.majmin && listed.has(m.mountpoint)));

  const fsid = f.contentProbed ? f.blkid.UUID : f.fsUuid;
  const uuid = fsid ? ` (UUID ${fsid})` : '';
  // (a wipefs that cannot open a disk exclusively, util-linux before 2.24, has no answer: a kept
  // XFS disk is not refused for that, as one that might be formatted is)
  const xfsUses =
    f.exclusiveOpen !== undefined && EXCL_NOT_TRIED.test(f.exclusiveOpen) ? usesOf({ ...f, exclusiveOpen: undefined }) : inUse;
  if (isCleanXfs(f) && xfsUses.length) {
    // Someone else's filesystem: mounted in another mount namespace (a container), held, open
    // exclusively. A second mount would share it with them; it is neither formatted nor taken.
    throw new Refusal(
      `${dev} carries XFS${uuid} and is in use: ${xfsUses.join('; ')}; it is not mounted at ${o.mountpoint} (nor ever formatted) while anything else uses it`,
    );
  }
  if (isCleanXfs(f)) {
    // Converged, or a kept XFS disk waiting to be mounted. Extra mounts beside the target are
    // bind mounts of it (e.g. kubelet volumes) and fine; mounted only elsewhere is not ours.
    if (!atTarget && elsewhere.length) {
      throw new Refusal(
        `${dev} carries XFS${uuid} and is mounted at ${elsewhere.map((m) => m.mountpoint).join(', ')}, not at ${o.mountpoint}; unmount it first`,
      );
    }
    const clones = uuidClones(f);
    if (clones.length) {
      throw new Refusal(
        `${dev} carries XFS${uuid} and so does ${clones.join(', ')} (a cloned filesystem): fstab mounts by UUID, so either could end up at ${o.mountpoint}; give the copy a new UUID first (xfs_admin -U generate DEVICE, unmounted)`,
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
  if (f.blkid.TYPE === 'xfs' || f.signatures.some((s) => s.type === 'xfs')) {
    throw new Refusal(
      `not formatting ${dev}: it carries XFS together with other content (${found.join('; ')}); an XFS disk is never re-formatted, clean it up by hand`,
    );
  }
  // Only the kernel knows every user (another mount namespace, an exclusive open): never format unasked.
  if (f.exclusiveOpen === undefined) throw new Refusal(`not formatting ${dev}: the probe did not try to open it exclusively`);
  if (isBlank(f)) return { action: 'format', blank: true, summary: `format ${dev} (blank, ${about}) as XFS` };
  const allowed = allowedBy(f, o.allow, f.spec);
  if (!allowed) {
    throw new Refusal(
      `not formatting ${dev} (${about}): it is not blank: ${found.join('; ')}. To erase it, list its by-id path or serial in format_allow`,
    );
  }
  // A serial or WWN names one disk only if no other disk of the host carries it (the namespaces
  // of one NVMe controller share its serial).
  if (!allowed.startsWith('/')) {
    const carriers = f.idDisks[allowed];
    if (!carriers || carriers.length !== 1) {
      throw new Refusal(
        `not formatting ${dev} (${about}): format_allow entry ${allowed} is ambiguous: ${
          carriers
            ? `${carriers.length} disks of this host carry it (${carriers.join(', ')})`
            : 'the probe could not count the disks that carry it'
        }; name the disk by a /dev/disk/by-id path or an identifier only it has (its WWN)`,
      );
    }
  }
  return {
    action: 'format',
    blank: false,
    allowedBy: allowed,
    summary: `format ${dev} (${about}) as XFS, erasing ${found.join('; ')} (format_allow: ${allowed})`,
  };
}

/**
 * Why a disk carrying XFS may not serve `mountpoint` as it is, or undefined: the refusals of the
 * format decision for a disk it would keep (in use, mounted only elsewhere, a cloned UUID, XFS
 * beside other content). The record line and the mount ask it too: with `--tags mount` (the
 * format skipped, which counts as satisfied) they are what stands between such a disk and the
 * mountpath. A disk without XFS is left to the mount (nothing to mount: no filesystem UUID).
 */
export function servingRefusal(f: DiskFacts, mountpoint: string, alsoAt: readonly string[]): string | undefined {
  const xfs = f.contentProbed ? f.blkid.TYPE === 'xfs' || f.signatures.some((s) => s.type === 'xfs') : f.mountedFs === 'xfs';
  if (f.error || !xfs) return undefined;
  try {
    planFormat(f, { allow: [], mountpoint, alsoAt });
    return undefined;
  } catch (e) {
    if (e instanceof Refusal) return e.message;
    throw e;
  }
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

/**
 * udev's glob (*, ?, [...] with ranges and ! negation, | between alternatives) as a RegExp.
 * Throws an Error saying what is wrong: an empty alternative, a [ without its ], an empty set,
 * a range written backwards. The inventory's patterns are checked with it when they are read.
 */
export function udevGlobRegExp(pattern: string): RegExp {
  const alts = pattern.split('|');
  const res = alts.map((alt) => {
    if (!alt) throw new Error(`an empty alternative in ${JSON.stringify(pattern)}`);
    let re = '';
    for (let i = 0; i < alt.length; i++) {
      const c = alt[i];
      if (c === '*') re += '.*';
      else if (c === '?') re += '.';
      else if (c === '[') {
        // (a ] right after [ or [! belongs to the set, as in fnmatch)
        const from = alt[i + 1] === '!' ? i + 2 : i + 1;
        const end = alt.indexOf(']', from + 1);
        if (end < 0) throw new Error(`a [ without a closing ] in ${JSON.stringify(pattern)}`);
        const set = alt.slice(from, end);
        for (let j = 0; j + 2 < set.length; j++) {
          if (set[j + 1] === '-' && set[j] > set[j + 2])
            throw new Error(`the range ${set.slice(j, j + 3)} is backwards in ${JSON.stringify(pattern)}`);
        }
        re += `[${alt[i + 1] === '!' ? '^' : ''}${set.replace(/[\\\]^]/g, '\\$&')}]`;
        i = end;
      } else re += c.replace(/[.+^${}()|\\[\]]/g, '\\$&');
    }
    return re;
  });
  return new RegExp(`^(?:${res.join('|')})$`);
}

/** Why a udev match pattern is not a valid glob, or undefined when it is. */
export function udevGlobError(pattern: string): string | undefined {
  try {
    udevGlobRegExp(pattern);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** udev's glob: *, ?, [...] and | alternatives. */
export function udevGlob(pattern: string, value: string): boolean {
  return udevGlobRegExp(pattern).test(value);
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
  /** Why its filesystem was not checked: its device (named first) is one a read would wait on (core/block-ids.ts). */
  blocked?: string;
}

export function parseXattrFacts(out: string): XattrFacts {
  const kv = new Map<string, string>();
  for (const l of out.split('\n')) {
    const eq = l.indexOf('=');
    if (eq > 0) kv.set(l.slice(0, eq), l.slice(eq + 1));
  }
  const mounted = kv.get('mounted') === '1';
  if (!mounted) return { mounted, ok: false, detail: 'not mounted' };
  const blocked = kv.get('blocked');
  if (blocked !== undefined) return { mounted, ok: false, detail: '', blocked };
  const set = kv.get('set') ?? '';
  const removed = kv.get('removed') ?? '';
  if (set !== 'ok') return { mounted, ok: false, detail: `setfattr failed: ${set || 'no output'}` };
  // (the removal of what was just set is the read-back: ENODATA means it was not stored)
  if (/No such attribute|No data available/.test(removed)) return { mounted, ok: false, detail: `set, but not stored: ${removed}` };
  if (removed !== 'ok') return { mounted, ok: false, detail: `could not remove the probe attribute: ${removed || 'no output'}` };
  return { mounted, ok: true, detail: '' };
}

export const XATTR_NAME = 'user.racksmith.probe';

/** Throws Refusal when the mount has no working user xattrs (AIStore needs them). */
export function xattrDiff(path: string, f: XattrFacts): Change[] {
  if (!f.mounted) throw new Refusal(`${path} is not mounted, so its extended attributes cannot be checked`);
  if (f.blocked) throw new Refusal(`${path}: its device ${f.blocked}: a check would wait until that changes; not checked`);
  if (!f.ok) throw new Refusal(`extended attributes do not work on ${path} (${XATTR_NAME}: ${f.detail}); AIStore needs user xattrs`);
  return [];
}

export { sha256 as sha256Hex };
