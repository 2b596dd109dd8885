/**
 * Pure decisions of the data disks' lifecycle (storage-lifecycle.ts has the resources): the host's
 * record of what racksmith manages (/var/lib/racksmith/storage.json), which disk serves which
 * mountpath (a disk moved to another slot keeps its own), what to prune, and what decommissioning
 * and wiping a disk does. No I/O here: everything is table-tested from facts.
 */
import { Refusal } from '../../contract/resource.ts';
import { identitiesOf, isCleanXfs, serialOf, usesOf, type DiskFacts } from './blockdev-logic.ts';
import { parseEntry, sameTargetKey, type FstabEntry } from '../core/fstab.ts';

export const STORAGE_RECORD = '/var/lib/racksmith/storage.json';

// ---------------------------------------------------------------------------------------------
// The record

/** One mountpath racksmith manages, and the disk that serves it. */
export interface RecordDisk {
  mountpoint: string;
  /** The mountpath's name in storage_disks (/ais/d1: d1). */
  name: string;
  /** The disk's kernel name when it was last recorded (mounts resolve the mountpath's disk from it). */
  kname: string;
  /** Its filesystem UUID (what fstab mounts it by); missing only until its mkfs ran. */
  uuid?: string;
  serial?: string;
}

/**
 * storage.json as racksmith writes it: JSON, one disk per line in mountpoint order, keys in a
 * fixed order (the mounts' probes find their line with a shell `case`, no JSON parser on the host).
 */
export function renderRecord(disks: readonly RecordDisk[]): string {
  const sorted = [...disks].sort((a, b) => (a.mountpoint < b.mountpoint ? -1 : a.mountpoint > b.mountpoint ? 1 : 0));
  const lines = sorted.map((d) =>
    JSON.stringify({ mountpoint: d.mountpoint, name: d.name, kname: d.kname, uuid: d.uuid ?? null, serial: d.serial ?? null }),
  );
  return `{"version":1,"disks":[\n${lines.join(',\n')}\n]}\n`;
}

/** The line prefix of a mountpoint's record line (what a mount's probe looks for). */
export const recordLinePrefix = (mountpoint: string): string => `{"mountpoint":${JSON.stringify(mountpoint)},`;

/** The disks of a record's text ('' or undefined: none). Refusal when it is not a record racksmith wrote. */
export function parseRecord(text: string | undefined, path = STORAGE_RECORD): RecordDisk[] {
  if (text === undefined || text.trim() === '') return [];
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Refusal(`${path} is not valid JSON (${(e as Error).message}); move it aside to start a new record`);
  }
  const disks = (doc as { disks?: unknown }).disks;
  if ((doc as { version?: unknown }).version !== 1 || !Array.isArray(disks)) {
    throw new Refusal(`${path} is not a racksmith storage record (version 1 with a disks list); move it aside to start a new record`);
  }
  return disks.map((d: Record<string, unknown>, i) => {
    if (typeof d?.mountpoint !== 'string' || typeof d.name !== 'string' || typeof d.kname !== 'string')
      throw new Refusal(`${path}: disks[${i}] lacks mountpoint, name or kname`);
    return {
      mountpoint: d.mountpoint,
      name: d.name,
      kname: d.kname,
      uuid: typeof d.uuid === 'string' ? d.uuid : undefined,
      serial: typeof d.serial === 'string' ? d.serial : undefined,
    };
  });
}

/** The record with `disk` as its mountpoint's line (the other lines kept). */
export function withRecordDisk(disks: readonly RecordDisk[], disk: RecordDisk): RecordDisk[] {
  return [...disks.filter((d) => d.mountpoint !== disk.mountpoint), disk];
}

// ---------------------------------------------------------------------------------------------
// Which disk serves which mountpath

export interface ListedDisk {
  /** The storage_disks entry's name and mountpoint. */
  name: string;
  mountpoint: string;
  facts: DiskFacts;
}

/** The filesystem UUID of a disk carrying XFS on the whole device (mounted or not). */
export function xfsUuidOf(f: DiskFacts): string | undefined {
  if (f.error || !isCleanXfs(f)) return undefined;
  return f.contentProbed ? f.blkid.UUID : f.fsUuid;
}

export interface Assigned {
  /** The storage_disks entry whose disk serves the mountpoint. */
  entry: string;
  facts: DiskFacts;
  /**
   * Why: 'mounted' there now, 'recorded' there (storage.json), 'listed' (its own entry), 'free'
   * (the mountpath left free), 'blocked' (a disk a read would wait on holds the mountpath it has,
   * mounted there, recorded there by serial, else its own, never a free one, so that no blank disk
   * takes it meanwhile: refused).
   */
  how: 'mounted' | 'recorded' | 'listed' | 'free' | 'blocked';
}

/**
 * Which listed disk serves each listed mountpoint. A disk keeps the mountpath it has: where it is
 * mounted now, else where storage.json recorded it (by filesystem UUID, else serial); a disk that
 * has none (a blank replacement, a disk racksmith has not seen) takes its own entry's mountpoint,
 * or, when a moved disk holds that one, the mountpoint left free. So a disk moved to another slot
 * (the entries' devices swapped) keeps its data at its mountpath, and a blank disk arriving under
 * a listed name gets that name's mountpath. Disks that did not resolve (errors) serve nothing; a
 * disk whose content cannot be read now (blocked) takes part as far as what is known without its
 * content allows (mounted there, recorded there by serial, its own entry's), never a free one.
 */
export function assignMountpoints(listed: readonly ListedDisk[], record: readonly RecordDisk[]): Map<string, Assigned> {
  const out = new Map<string, Assigned>();
  const active = new Set(listed.map((l) => l.mountpoint));
  // (a blocked disk takes part, where its facts allow: mounted there, recorded by serial, its own; never a free one)
  const todo = listed.filter((l) => (!l.facts.error || l.facts.blocked) && !l.facts.isPartition);
  const take = (l: ListedDisk, mp: string | undefined, how: Assigned['how']) => {
    if (mp === undefined || !active.has(mp) || out.has(mp)) return false;
    out.set(mp, { entry: l.name, facts: l.facts, how: l.facts.blocked ? 'blocked' : how });
    return true;
  };
  const rest = (done: Set<ListedDisk>) => todo.filter((l) => !done.has(l));
  const done = new Set<ListedDisk>();
  for (const l of todo) {
    const live = l.facts.mounts.find((m) => m.majmin === l.facts.majmin && active.has(m.mountpoint));
    if (live && (isCleanXfs(l.facts) || l.facts.blocked) && take(l, live.mountpoint, 'mounted')) done.add(l);
  }
  for (const l of rest(done)) {
    const uuid = xfsUuidOf(l.facts);
    const serial = serialOf(l.facts);
    const r =
      (uuid && record.find((x) => x.uuid === uuid)) ||
      // (the same disk whose filesystem is gone: only when the record's UUID is not another listed disk's)
      (serial && record.find((x) => x.serial === serial && !listed.some((o) => o !== l && xfsUuidOf(o.facts) === x.uuid)));
    if (r && take(l, r.mountpoint, 'recorded')) done.add(l);
  }
  for (const l of rest(done)) if (take(l, l.mountpoint, 'listed')) done.add(l);
  for (const l of rest(done)) {
    if (l.facts.blocked) continue;
    const free = listed.find((x) => !out.has(x.mountpoint));
    if (free && take(l, free.mountpoint, 'free')) done.add(l);
  }
  return out;
}

/** What a mountpath's recorded filesystem and the one that would serve it now are. */
export interface ServingFilesystem {
  mountpoint: string;
  /** The disk that would serve it (/dev/KNAME). */
  dev: string;
  /** The filesystem UUID storage.json records for the mountpoint (none: nothing recorded yet). */
  recorded?: string;
  /** The XFS UUID that disk carries (none: not XFS, e.g. blank until its mkfs). */
  found?: string;
}

/**
 * Whose filesystem may serve a recorded mountpath: 'same' (the recorded one, wherever its disk
 * is), 'unrecorded' (nothing recorded yet, or no XFS to compare: the first run's adoption of
 * ais-k8s mounts, a disk before its mkfs), 'made' (racksmith formatted it on this host: a blank
 * replacement, XFS_MADE_DIR), 'adopted' (storage_adopt names its UUID), else 'foreign': another
 * filesystem (another node's data disk put in the slot), which is never taken unasked.
 */
export function servingVerdict(
  s: ServingFilesystem,
  adopt: readonly string[],
  made: readonly string[],
): 'same' | 'unrecorded' | 'made' | 'adopted' | 'foreign' {
  if (s.recorded === undefined || s.found === undefined) return 'unrecorded';
  const found = s.found.toLowerCase();
  if (found === s.recorded.toLowerCase()) return 'same';
  if (made.includes(found)) return 'made';
  if (adopt.some((a) => a.toLowerCase() === found)) return 'adopted';
  return 'foreign';
}

/** Why a foreign filesystem does not serve the mountpath, and how to take it deliberately (servingVerdict 'foreign'). */
export function foreignFilesystemProblem(s: ServingFilesystem): string {
  return `${s.dev} carries XFS UUID ${s.found}, not the filesystem storage.json records for ${s.mountpoint} (UUID ${s.recorded}), and racksmith did not make it on this host: another node's data disk? A recorded mountpath takes no other filesystem unasked, so ${s.mountpoint} is neither recorded anew nor mounted. To take this filesystem and its data deliberately, list it in storage_adopt: [${s.found}]; to format the disk as a blank replacement instead, erase it by hand (wipefs -a ${s.dev}) and name it in format_allow`;
}

/** The record line of a mountpoint for the disk that serves it. */
export function recordDiskFor(mountpoint: string, name: string, a: Assigned): RecordDisk {
  return { mountpoint, name, kname: a.facts.kname, uuid: xfsUuidOf(a.facts), serial: serialOf(a.facts) };
}

// ---------------------------------------------------------------------------------------------
// Prune: recorded mountpaths no longer listed

/** An XFS filesystem mounted at a mountpoint that is not a listed one (the prune probe's answer). */
export interface XfsMount {
  majmin: string;
  mountpoint: string;
  source: string;
  uuid?: string;
  /** Why its UUID was not read: its device (named first) is one a read would wait on (core/block-ids.ts). */
  blocked?: string;
}

export interface PruneAction {
  disk: RecordDisk;
  /** Unmount the mountpoint: the recorded filesystem is mounted there. */
  unmount: boolean;
  /** The fstab lines racksmith wrote for it (UUID=<recorded> <mountpoint>), removed. */
  fstabLines: string[];
  /** What is left alone and why (someone else's filesystem mounted there now). */
  note?: string;
}

/**
 * The recorded mountpaths that are no longer in storage_disks (nor being decommissioned, which
 * does its own): each unmounted if the recorded filesystem is mounted there, its fstab line
 * removed if it is the line racksmith wrote, and its record line dropped. Data is never touched.
 */
export function pruneSet(
  record: readonly RecordDisk[],
  keep: ReadonlySet<string>,
  xfsMounts: readonly XfsMount[],
  fstabText: string,
): PruneAction[] {
  return record
    .filter((d) => !keep.has(d.mountpoint))
    .map((d) => {
      const here = xfsMounts.filter((m) => m.mountpoint === d.mountpoint);
      const ours = d.uuid !== undefined && here.some((m) => m.uuid === d.uuid);
      const other = here.find((m) => m.uuid !== d.uuid);
      return {
        disk: d,
        unmount: ours,
        fstabLines:
          d.uuid === undefined
            ? []
            : fstabLinesOf(fstabText, (e) => e.source === `UUID=${d.uuid}` && sameTargetKey(e.target) === d.mountpoint),
        note:
          !ours && other
            ? `${d.mountpoint} has ${other.source} (UUID ${other.uuid ?? '?'}) mounted, not the recorded filesystem: left mounted`
            : undefined,
      };
    });
}

/**
 * Why a prune is refused, if it is: with nothing listed to keep (storage_disks: [], a group's or
 * host's value that overrides the real list, a template that came out empty) every recorded
 * mountpath of the host would be pruned, and the node's storage taken out of service by a value
 * that selects nothing. Retiring every disk is said by name (storage_decommission); leaving them
 * as they are, by storage_prune: false.
 */
export function pruneEverythingRefusal(keep: ReadonlySet<string>, actions: readonly PruneAction[]): string | undefined {
  if (keep.size || !actions.length) return undefined;
  const mounted = actions.filter((a) => a.unmount).map((a) => a.disk.mountpoint);
  return `storage_disks lists no disk of this host: pruning would take every recorded mountpath out of service (${actions
    .map((a) => a.disk.mountpoint)
    .join(
      ', ',
    )}${mounted.length ? `; ${mounted.length} mounted` : ''}); nothing is pruned. List the data disks in storage_disks; to retire them all, list them in storage_disks and storage_decommission; to leave them as they are, set storage_prune: false`;
}

/** The fstab lines (as written) whose entry matches. */
export function fstabLinesOf(text: string, match: (e: FstabEntry) => boolean): string[] {
  return text.split('\n').filter((l) => {
    const e = parseEntry(l);
    return e !== undefined && match(e);
  });
}

/** fstab without these exact lines. */
export function withoutLines(text: string, lines: readonly string[]): string {
  if (!lines.length) return text;
  const drop = new Set(lines);
  const kept = (text === '' ? [] : text.replace(/\n$/, '').split('\n')).filter((l) => !drop.has(l));
  return kept.length ? kept.join('\n') + '\n' : '';
}

// ---------------------------------------------------------------------------------------------
// Decommission and wipe

export interface DecommissionPlan {
  /** Where the disk is mounted (its mountpath and any other of its mounts): unmounted. */
  unmount: string[];
  /** Every fstab line that mounts this disk (by its UUID, kernel path or a path naming it). */
  fstabLines: string[];
  /** The record lines of this disk (or of its listed mountpoint). */
  recordLines: string[];
  /** The wipe, when storage_wipe names this disk: the entry that does. */
  wipe?: { by: string; kname: string; mountpoints: string[] };
}

export interface DecommissionOptions {
  /** The mountpoint of the disk's storage_disks entry. */
  mountpoint: string;
  /** storage_wipe: serials, WWNs and /dev/disk/by-id paths of disks to erase. */
  wipe: readonly string[];
}

/** What a storage_wipe entry may name a disk by: its serials, WWNs and by-id paths (never a kernel path). */
const wipeIdentities = (f: DiskFacts): Set<string> =>
  new Set(identitiesOf(f).filter((i) => !i.startsWith('/dev/') || i.startsWith('/dev/disk/by-id/')));

/** The storage_wipe entry that names this disk exactly (by-id path, or a serial/WWN only it carries), if any. */
export function wipeNamedBy(f: DiskFacts, wipe: readonly string[]): string | undefined {
  const ids = wipeIdentities(f);
  const by = wipe.find((w) => ids.has(w));
  if (by === undefined || by.startsWith('/')) return by;
  const carriers = f.idDisks[by];
  if (!carriers || carriers.length !== 1) {
    throw new Refusal(
      `not wiping /dev/${f.kname}: storage_wipe entry ${by} is ambiguous: ${
        carriers
          ? `${carriers.length} disks of this host carry it (${carriers.join(', ')})`
          : 'the probe could not count the disks that carry it'
      }; name the disk by a /dev/disk/by-id path or an identifier only it has`,
    );
  }
  return by;
}

/** A storage_disks entry as the storage_wipe check reads it. */
export interface WipeListDisk {
  /** Its storage_disks name. */
  name: string;
  facts: DiskFacts;
  /** Listed in storage_decommission. */
  decommissioned: boolean;
}

/**
 * Whether storage_wipe selects what it was meant to on this host; undefined when it does, else
 * why not (a Refusal: the host's decommissions wait for a list that makes sense). A wipe is only
 * ever done by a decommission that an entry names (wipeNamedBy), so what goes wrong here is
 * silence: an entry naming a disk still in service (it is never wiped, and the two lists disagree
 * about which disk is retired), and a decommissioned disk that no entry names while an entry names
 * no listed disk of this host (a mistyped serial: the disk would be decommissioned, not wiped).
 * An entry naming no disk here is fine when every decommissioned disk is named or was not meant to
 * be (another host's disk, in a list shared by a group). Disks the probe could not find are left
 * to their own resources.
 */
export function wipeSelectionProblem(disks: readonly WipeListDisk[], wipe: readonly string[]): string | undefined {
  const found = disks.filter((d) => !d.facts.error).map((d) => ({ ...d, ids: wipeIdentities(d.facts) }));
  const about = (d: (typeof found)[number]) => {
    const serial = serialOf(d.facts);
    return `${d.name} (/dev/${d.facts.kname}${serial ? `, serial ${serial}` : ''})`;
  };
  for (const w of wipe) {
    const live = found.find((d) => !d.decommissioned && d.ids.has(w));
    if (live)
      return `storage_wipe entry ${w} names ${about(live)}, which is in service: only decommissioned disks are wiped. List ${live.name} in storage_decommission to retire it, or correct the entry; nothing is decommissioned on this host until the lists agree`;
  }
  const unknown = wipe.filter((w) => !found.some((d) => d.ids.has(w)));
  const unnamed = found.filter((d) => d.decommissioned && !wipe.some((w) => d.ids.has(w)));
  if (unknown.length && unnamed.length)
    return `storage_wipe ${unknown.join(', ')} ${unknown.length > 1 ? 'name' : 'names'} no listed disk of this host, and names none of the decommissioned ${unnamed
      .map(about)
      .join(
        ', ',
      )}: ${unnamed.length > 1 ? 'they' : 'it'} would be decommissioned but not wiped. Name each disk to erase by its serial, WWN or /dev/disk/by-id path (a mistyped serial?); nothing is decommissioned on this host until then`;
  return undefined;
}

/**
 * What decommissioning a disk does: unmount it wherever it is mounted, remove the fstab lines
 * that mount it and its record lines; and, when storage_wipe names it, erase it. Refused: the
 * root disk, and a wipe of a disk in use in any way besides its own mounts (swap, holders, loop
 * devices over it, mounts in other mount namespaces). The apply checks again, after the
 * unmount, with an exclusive open: a disk still in use is never wiped.
 */
export function decommissionPlan(f: DiskFacts, record: readonly RecordDisk[], fstabText: string, o: DecommissionOptions): DecommissionPlan {
  if (f.error) throw new Refusal(f.error);
  const dev = `/dev/${f.kname}`;
  if (f.isPartition) throw new Refusal(`${f.spec} is a partition (${f.kname}); storage_disks takes whole disks`);
  if (f.mounts.some((m) => m.mountpoint === '/')) throw new Refusal(`${dev} holds the root filesystem; it is never decommissioned`);
  const uuid = f.fsUuid ?? (f.contentProbed ? f.blkid.UUID : undefined);
  const serial = serialOf(f);
  const isThisDisk = (r: RecordDisk) => (uuid !== undefined && r.uuid === uuid) || (serial !== undefined && r.serial === serial);
  // The entry's device names the disk of another mountpath (kernel names after a disk moved
  // slots, a by-path link): the mounts keep each disk at its recorded mountpath, so taking this
  // disk out would unmount that other mountpath's data and leave the entry's own in service.
  const here = record.find((r) => r.mountpoint === o.mountpoint);
  const servesHere = here !== undefined && isThisDisk(here);
  const elsewhere = [
    ...new Set([
      ...record.filter((r) => r.mountpoint !== o.mountpoint && isThisDisk(r)).map((r) => r.mountpoint),
      ...f.mounts
        .filter((m) => m.mountpoint !== o.mountpoint && record.some((r) => r.mountpoint === m.mountpoint))
        .map((m) => m.mountpoint),
    ]),
  ];
  if (elsewhere.length && !servesHere) {
    throw new Refusal(
      `not decommissioning ${dev}: the entry's device (${f.spec}) is the disk of ${elsewhere.join(', ')} (storage.json), not of ${o.mountpoint}${
        here?.uuid ? `, whose recorded filesystem is UUID=${here.uuid}` : ''
      }: a disk moved to another slot? Nothing is decommissioned; name the entry's disk by serial or /dev/disk/by-id path, or point the entry at the disk of ${o.mountpoint}`,
    );
  }
  const names = new Set([dev, f.spec, ...f.byId, ...(uuid ? [`UUID=${uuid}`] : [])]);
  const unmount = [...new Set(f.mounts.map((m) => m.mountpoint))];
  const fstabLines = fstabLinesOf(fstabText, (e) => names.has(e.source));
  const recordLines = record.filter((r) => isThisDisk(r) || r.mountpoint === o.mountpoint).map((r) => r.mountpoint);
  const by = wipeNamedBy(f, o.wipe);
  if (by === undefined) return { unmount, fstabLines, recordLines };
  const uses = usesOf({ ...f, exclusiveOpen: undefined }).concat(
    f.nsMounts
      .filter((m) => !unmount.includes(m.mountpoint))
      .map((m) => `mounted at ${m.mountpoint} in another mount namespace (pid ${m.pid})`),
  );
  if (uses.length) throw new Refusal(`not wiping ${dev}: ${uses.join('; ')}. A disk in use is never wiped`);
  if (f.readOnly) throw new Refusal(`not wiping ${dev}: it is read-only`);
  return { unmount, fstabLines, recordLines, wipe: { by, kname: f.kname, mountpoints: unmount } };
}
