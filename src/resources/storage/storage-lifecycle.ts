/**
 * The data disks' lifecycle, beside their format and mount (blockdev.ts):
 *  - storageRecordLine: a mountpath's line in /var/lib/racksmith/storage.json (which disk serves
 *    it: kernel name, filesystem UUID, serial), written atomically; a disk moved to another slot
 *    keeps its mountpath;
 *  - recordedDiskMount: the mount of the disk that storage.json names for a mountpath;
 *    both refuse a filesystem racksmith did not make at a recorded mountpath unless storage_adopt names it;
 *  - storagePrune: recorded mountpaths no longer in storage_disks: unmounted, racksmith's fstab
 *    line removed, data untouched;
 *  - diskDecommission: a listed disk taken out of service: unmounted, its fstab lines and record
 *    lines removed, and with storage_wipe erased (a change that needs a reviewed plan or --yes);
 *  - storageWipeCheck: storage_wipe names disks the host decommissions, before any of them runs;
 *  - aisStatePurge: the AIS node state (/etc/ais/.ais.*) once every data disk was wiped.
 * Decisions live in storage-lifecycle-logic.ts.
 */
import { define, inline, probed } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { BLOCK_DEVICES, fileTopic, MOUNTS, PACKAGES } from '../../contract/state-topics.ts';
import { InputError } from '../../util/errors.ts';
import { parseDiskFacts, servingRefusal, type DiskFacts } from './blockdev-logic.ts';
import {
  DISK_READS,
  diskHelpers,
  diskUsersParts,
  diskProbeBody,
  parseMadeList,
  resolvedMount,
  serialResolver,
  specText,
  wipeGuardScript,
  XFS_MADE_DIR,
  XFS_MADE_LIST,
  type DiskSpec,
} from './blockdev.ts';
import { checkAbsolutePath, contentText, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite } from '../core/managed-file.ts';
import type { MountFacts, MountOptions } from '../core/mount.ts';
import { escapeMountinfo, MOUNTINFO, unescapeMountinfo } from '../core/mount-table.ts';
import { BLOCK_IDS, READ_WOULD_WAIT } from '../core/block-ids.ts';
import {
  assignMountpoints,
  decommissionPlan,
  foreignFilesystemProblem,
  parseRecord,
  pruneEverythingRefusal,
  pruneSet,
  recordDiskFor,
  recordLinePrefix,
  renderRecord,
  servingVerdict,
  STORAGE_RECORD,
  withoutLines,
  withRecordDisk,
  type DecommissionPlan,
  type PruneAction,
  type RecordDisk,
  type XfsMount,
  wipeNamedBy,
  wipeSelectionProblem,
  xfsUuidOf,
} from './storage-lifecycle-logic.ts';
import {
  common,
  NotApplicable,
  Refusal,
  type Change,
  type CommonOptions,
  type FileSlot,
  type Resource,
  type Step,
} from '../../contract/resource.ts';

const recordFile = <F>(path: string, get: (f: F) => FileFacts, set: (f: F, file: FileFacts) => F) =>
  managedFile<F>({ path, get, set, mode: '644', owner: 0, group: 0, stepName: `record in ${path}` });

const fstabFileOf = <F>(path: string, get: (f: F) => FileFacts, set: (f: F, file: FileFacts) => F, what: string) =>
  managedFile<F>({
    path,
    get,
    set,
    backup: true,
    stepName: `fstab: ${what}`,
  });

/** A listed disk, as the record and the mounts see it. */
export interface StorageEntry {
  name: string;
  mountpoint: string;
  spec: DiskSpec;
}

// ---------------------------------------------------------------------------------------------
// storage.json: one line per mountpath

export interface StorageRecordLineOptions extends CommonOptions {
  /** The mountpath this line is for (one of `disks`). */
  mountpoint: string;
  /** Every listed (not decommissioned) disk of the host: which one serves the mountpath is decided over all. */
  disks: readonly StorageEntry[];
  /** storage_adopt: filesystem UUIDs a recorded mountpath may take although racksmith did not make them. */
  adopt?: readonly string[];
  path?: string;
}

interface RecordLineFacts {
  file: FileFacts;
  disks: DiskFacts[];
  /** The UUIDs of the filesystems racksmith made on this host since boot (XFS_MADE_DIR). */
  made: string[];
}

/**
 * The line of storage.json for one mountpath: the disk that serves it (assignMountpoints: the one
 * mounted there, else recorded there, else its own entry's, else the free one). Each mountpath's
 * line is its own resource: a disk that is refused holds up only its own mountpath. A recorded
 * mountpath takes another filesystem only when racksmith made it or storage_adopt names it
 * (servingVerdict): a foreign XFS in the slot is refused, never recorded in the old one's place.
 */
export function storageRecordLine(o: StorageRecordLineOptions): Resource<RecordLineFacts, FileWrite> {
  const path = checkAbsolutePath(o.path ?? STORAGE_RECORD, 'storage record path');
  const self = o.disks.find((d) => d.mountpoint === o.mountpoint);
  if (!self) throw new InputError(`storage record: ${o.mountpoint} is not the mountpoint of a listed disk`);
  const mf = recordFile<RecordLineFacts>(
    path,
    (f) => f.file,
    (f, file) => ({ ...f, file }),
  );
  return {
    ...common('storage-record', `storage-record:${o.mountpoint}`, o),
    verifiable: true,
    reads: [fileTopic(path), fileTopic(XFS_MADE_DIR), ...DISK_READS],
    files: [mf],
    // The disks' parts are their format resources' probes word for word: they run once per script.
    ...probed(
      () => ({ file: mf.probe(), helpers: diskHelpers(), disks: o.disks.map((d) => diskProbeBody(d.spec)), made: inline(XFS_MADE_LIST) }),
      ({ file, disks, made }): RecordLineFacts => ({
        file: fileFacts(file),
        disks: disks.map((p) => parseDiskFacts(p)),
        made: parseMadeList(made),
      }),
    ),
    diff(f) {
      if (f.file.type !== 'file' && f.file.type !== 'absent') throw new Refusal(`${path} is a ${f.file.type}, not a file`);
      const record = parseRecord(f.file.type === 'file' ? contentText(f.file) : undefined, path);
      const listed = o.disks.map((d, i) => ({ name: d.name, mountpoint: d.mountpoint, facts: f.disks[i] }));
      const a = assignMountpoints(listed, record).get(o.mountpoint);
      if (!a) {
        const err = f.disks[o.disks.indexOf(self)];
        throw new Refusal(`no disk for ${o.mountpoint}: ${err.error ?? `${specText(self.spec)} serves another mountpath`}`);
      }
      if (a.how === 'blocked') throw new Refusal(`not recording ${o.mountpoint}: ${a.facts.error}`);
      const line = recordDiskFor(o.mountpoint, self.name, a);
      const why = servingRefusal(
        a.facts,
        o.mountpoint,
        o.disks.filter((d) => d !== self).map((d) => d.mountpoint),
      );
      if (why) throw new Refusal(`not recording ${o.mountpoint} → /dev/${line.kname}: ${why}`);
      const serving = {
        mountpoint: o.mountpoint,
        dev: `/dev/${line.kname}`,
        recorded: record.find((r) => r.mountpoint === o.mountpoint)?.uuid,
        found: xfsUuidOf(a.facts),
      };
      const verdict = servingVerdict(serving, o.adopt ?? [], f.made);
      if (verdict === 'foreign') throw new Refusal(`not recording ${o.mountpoint} → ${serving.dev}: ${foreignFilesystemProblem(serving)}`);
      const want = renderRecord(withRecordDisk(record, line));
      const moved = a.entry !== self.name ? ` (the disk listed as ${a.entry}, ${a.how} here)` : '';
      const adopted = verdict === 'adopted' ? ` (storage_adopt, in place of UUID ${serving.recorded})` : '';
      return mf.changes(f, want, {
        create: `${path}: record ${o.mountpoint} → /dev/${line.kname}${moved}`,
        update: `${path}: record ${o.mountpoint} → /dev/${line.kname}${line.uuid ? ` (UUID ${line.uuid})` : ''}${moved}${adopted}`,
      });
    },
    apply: (_, changes) => mf.steps(changes),
  };
}

// ---------------------------------------------------------------------------------------------
// The mount of a recorded mountpath

/**
 * The record read once per script (a probe's define part): `rs_rec_uuid PATH PREFIX` sets rs_u to
 * the uuid of PATH's last line that starts with PREFIX. Every recorded mountpath's probe looks
 * itself up there; reading the file in each of them (the shell's `read` takes a system call per
 * byte) would grow with the square of a storage node's disks.
 */
const RECORD_SH = `rs_rec_path=
rs_rec_load() {
  [ "$rs_rec_path" = "=$1" ] && return 0
  rs_rec_path="=$1"; rs_rec=
  [ -r "$1" ] || return 0
  while IFS= read -r rs_l || [ -n "$rs_l" ]; do rs_rec="$rs_rec
$rs_l"; done < "$1"
}
rs_rec_uuid() {
  rs_rec_load "$1"; rs_u=
  case $rs_rec in *"
$2"*) ;; *) return 0 ;; esac
  rs_t=\${rs_rec##*"
$2"}; rs_t=\${rs_t%%"
"*}
  case $rs_t in *'"uuid":"'*) rs_u=\${rs_t#*'"uuid":"'}; rs_u=\${rs_u%%'"'*} ;; esac
}`;
const RECORD_FN = define(RECORD_SH);

/**
 * Shell that sets rs_dev to the device of the filesystem UUID storage.json records for
 * `mountpoint` (the record read by RECORD_FN, once per script in a probe): the mountpath's own
 * entry's disk (`fallback`: shell setting rs_dev) when it carries that UUID, else the device the
 * UUID is found on (in a probe from the script's one blkid of the host's devices:
 * core/block-ids.ts; in a step udev's by-uuid link, else blkid's lookup), else the entry's disk
 * (a fresh host, a replaced disk whose recorded filesystem is gone). A UUID moves with its disk,
 * so a disk moved to another slot is found at its mountpath whatever its kernel name is now. The
 * entry's own disk first: where several devices carry the UUID (a copy of the disk, a loop device
 * or a multipath path device reading it) a lookup by UUID may name any of them.
 */
function recordResolver(path: string, mountpoint: string, fallback: string): string {
  const prefix = shq(recordLinePrefix(mountpoint));
  // (a step's script may hold no probe, so no define part: it defines the reader itself)
  return `command -v rs_rec_uuid >/dev/null || {
${RECORD_SH}
}
rs_rec_uuid ${shq(path)} ${prefix}
rs_dev=
${fallback}
if [ -n "$rs_u" ]; then
  rs_own=$rs_dev; rs_ou=
  rs_on=
  # shellcheck disable=SC2154 # rs_bid_v, rs_bid_n: set by rs_bid_uuid and rs_bid_dev (core/block-ids.ts) where the script defines them
  if [ -n "$rs_own" ]; then
    if command -v rs_bid_uuid >/dev/null; then
      # (a disk a read would wait on is its own mount's, which says so: not looked for elsewhere)
      rs_blk_dev '' "$rs_own"
      if [ -n "$rs_blk_w" ]; then rs_ou=$rs_u; else rs_bid_uuid "$rs_own"; rs_ou=$rs_bid_v; rs_on=$rs_bid_n; fi
    else rs_ou=$(blkid -p -s UUID -o value -- "$rs_own" 2>/dev/null) || rs_ou=; fi
  fi
  # (a lookup that finds nothing fails: a step runs under set -e, which a command substitution keeps)
  if [ "$rs_ou" != "$rs_u" ]; then
    rs_dev=
    if command -v rs_bid_dev >/dev/null; then rs_bid_dev "$rs_u"; rs_dev=$rs_bid_v
    elif [ -b "/dev/disk/by-uuid/$rs_u" ]; then rs_dev=$(readlink -f -- "/dev/disk/by-uuid/$rs_u") || rs_dev=
    else rs_dev=$(blkid -l -o device -t "UUID=$rs_u" 2>/dev/null) || rs_dev=; fi
    [ -n "$rs_dev" ] || rs_dev=$rs_own
  elif [ -n "$rs_on" ]; then
    # (blkid's name of the entry's own disk, /dev/sdX, not the by-id link it was given as: no stat for it later)
    rs_dev=$rs_on
  fi
fi`;
}

export interface RecordedDiskMountOptions extends Omit<MountOptions, 'device' | 'source'> {
  /** The mountpath's storage_disks entry: its disk serves the mountpath unless storage.json names another. */
  spec: DiskSpec;
  /** Its storage_disks name (the placeholder device in messages). */
  name: string;
  /** storage.json (default /var/lib/racksmith/storage.json). */
  record?: string;
  /** storage_adopt: filesystem UUIDs a recorded mountpath may take although racksmith did not make them. */
  adopt?: readonly string[];
  /**
   * Every listed disk of the host (the record line's list): the one the mount finds is checked as
   * the format checks a disk it keeps (servingRefusal), which `--tags mount` does not run.
   */
  disks?: readonly StorageEntry[];
}

/** A recorded mountpath's mount facts, with what storage.json records there and what racksmith made. */
export interface RecordedMountFacts extends MountFacts {
  /** The filesystem UUID storage.json records for the mountpoint ('' when none). */
  recorded: string;
  /** The UUIDs of the filesystems racksmith made on this host since boot (XFS_MADE_DIR). */
  made: string[];
  /** The listed disks (RecordedDiskMountOptions.disks), in their order. */
  disks?: DiskFacts[];
}

/**
 * The mount of the disk that serves a mountpath: the filesystem storage.json records there (a
 * disk moved to another slot keeps its mountpath), else the entry's own disk. The mount itself
 * is mount.ts's: by UUID in fstab, verified live by maj:min. A filesystem other than the recorded
 * one is mounted only when racksmith made it or storage_adopt names it (servingVerdict): the
 * storage record's line refuses it too, but this mount also runs where --skip-tags leaves that out.
 */
export function recordedDiskMount(o: RecordedDiskMountOptions): Resource<RecordedMountFacts> {
  const { spec, name, record, adopt = [], disks = [], ...rest } = o;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) throw new InputError(`recorded disk mount: invalid name ${JSON.stringify(name)}`);
  const path = checkAbsolutePath(record ?? STORAGE_RECORD, 'storage record path');
  const mountpoint = checkAbsolutePath(o.path, 'mount path');
  let fallback: string;
  if (spec.device !== undefined) fallback = `rs_dev=${shq(checkAbsolutePath(spec.device, 'device'))}`;
  else {
    if (/[/\s]/.test(spec.serial)) throw new InputError(`serial ${JSON.stringify(spec.serial)} cannot contain '/' or spaces`);
    fallback = serialResolver(spec.serial);
  }
  const m = resolvedMount({ ...rest, device: `/dev/disk/by-storage-record/${name}` }, recordResolver(path, mountpoint, fallback), [
    RECORD_FN,
  ]);
  // After the mount's own parts: the recorded UUID (the record read once per script), and what
  // racksmith made: the record lines' part word for word, so the script lists it once.
  const identity = inline(`rs_rec_uuid ${shq(path)} ${shq(recordLinePrefix(mountpoint))}
printf 'recorded=%s\\n' "$rs_u"`);
  const made = inline(XFS_MADE_LIST);
  // (the disks' parts are their format resources' probes word for word: they run once per script)
  const diskParts = disks.length ? [...diskHelpers(), ...disks.map((d) => diskProbeBody(d.spec))] : [];
  const alsoAt = disks.filter((d) => d.mountpoint !== mountpoint).map((d) => d.mountpoint);
  return {
    ...m,
    // (its device is resolved from the record: the mount's reads and the record's)
    reads: m.reads && [...m.reads, fileTopic(path), fileTopic(XFS_MADE_DIR)],
    // (the fstab slot sets its file as {...facts, fstab}: the fields added here stay)
    files: m.files as readonly FileSlot<RecordedMountFacts>[] | undefined,
    useFleet: undefined, // (a mount is no fleet resource)
    probe: () => [m.probe()].flat().concat(identity, made, diskParts),
    parse(out): RecordedMountFacts {
      const tail = 2 + disks.length;
      const [own, madeList, ...diskAnswers] = out.parts.slice(-tail).map((p) => String(p ?? ''));
      return {
        ...m.parse({ ...out, parts: out.parts.slice(0, -tail) }),
        recorded: /^recorded=(.*)$/m.exec(own)?.[1] ?? '',
        made: parseMadeList(madeList),
        disks: diskAnswers.map((a) => parseDiskFacts(a)),
      };
    },
    diff(f) {
      const serving = { mountpoint, dev: f.source.path ?? specText(spec), recorded: f.recorded || undefined, found: f.source.uuid };
      if (servingVerdict(serving, adopt, f.made) === 'foreign')
        throw new Refusal(`not mounting ${serving.dev} at ${mountpoint}: ${foreignFilesystemProblem(serving)}`);
      // The listed disk the mount found (stat's hex maj:min), and any listed disk carrying the
      // filesystem UUID it found (the device found may be a clone of it, or the clone may be what
      // is mounted here): each checked as the format checks a disk it keeps.
      const mm = f.source.majmin
        ?.split(':')
        .map((h) => parseInt(h, 16))
        .join(':');
      const listed = (f.disks ?? []).filter((d) => !d.error);
      const found = listed.filter((d) => d.majmin === mm);
      const carriers = [
        ...found,
        ...listed.filter((d) => d.majmin !== mm && f.source.uuid !== undefined && xfsUuidOf(d) === f.source.uuid),
      ];
      for (const disk of carriers) {
        const why = servingRefusal(disk, mountpoint, alsoAt);
        if (!why) continue;
        // (already mounted there: what is refused is keeping it so, not a mount)
        if (f.live) throw new Refusal(`${mountpoint} (${f.live.source} mounted there): ${why}`);
        const dev = found.includes(disk) ? `/dev/${disk.kname}` : (f.source.path ?? `/dev/${disk.kname}`);
        throw new Refusal(`not mounting ${dev} at ${mountpoint}: ${why}`);
      }
      return m.diff(f);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Prune

export interface StoragePruneOptions extends CommonOptions {
  /** Mountpoints that stay (the listed and the decommissioned disks'): every other recorded one is pruned. */
  keep: readonly string[];
  path?: string;
  fstabFile?: string;
}

interface PruneFacts {
  record: FileFacts;
  fstab: FileFacts;
  xfs: XfsMount[];
}

type PruneData = FileWrite | { unmount: string };

/**
 * Shell (an inline part, after MOUNTINFO) that prints the XFS filesystems mounted at a mountpoint
 * not in `keep`: `xfs=MAJ:MIN UUID SOURCE MOUNTPOINT` (escaped as mountinfo has them). The mount
 * table the script's inline shell read once, walked with builtins; blkid only for mounts that are
 * not listed (none on a converged host).
 */
function xfsMountsProbe(keep: readonly string[]): string {
  return `rs_xk=${shq(keep.map(escapeMountinfo).join('\n'))}
rs_x_line() {
  [ $# -ge 7 ] || return 0
  rs_x_mm=$3; rs_x_mp=$5; shift 6
  while [ $# -gt 0 ] && [ "$1" != - ]; do shift; done
  [ "\${2-}" = xfs ] || return 0
  case "
$rs_xk
" in *"
$rs_x_mp
"*) return 0 ;; esac
  # (a device a read would wait on, core/block-ids.ts: named, not read)
  rs_blk_mm '' "$rs_x_mm"
  if [ -n "$rs_blk_w" ]; then printf 'xfsblocked=%s %s %s\\n' "\${3-}" "$rs_x_mp" "$rs_blk_n $rs_blk_w"; return 0; fi
  printf 'xfs=%s %s %s %s\\n' "$rs_x_mm" "$(blkid -p -s UUID -o value -- "\${3-}" 2>/dev/null)" "\${3-}" "$rs_x_mp"
}
rs_mi_each '' rs_x_line ' - xfs '`;
}

export function parseXfsMounts(out: string): XfsMount[] {
  const mounts: XfsMount[] = [];
  for (const l of out.split('\n')) {
    if (l.startsWith('xfsblocked=')) {
      const [source, mp, ...why] = l.slice(11).split(' ');
      mounts.push({ majmin: '', source, mountpoint: unescapeMountinfo(mp), blocked: why.join(' ') });
      continue;
    }
    if (!l.startsWith('xfs=')) continue;
    const [majmin, uuid, source, ...mp] = l.slice(4).split(' ');
    mounts.push({ majmin, uuid: uuid || undefined, source, mountpoint: unescapeMountinfo(mp.join(' ')) });
  }
  return mounts;
}

/**
 * Recorded mountpaths that are no longer listed: unmounted when the recorded filesystem is
 * mounted there, the fstab line racksmith wrote removed, the record line dropped. Data untouched.
 */
export function storagePrune(o: StoragePruneOptions): Resource<PruneFacts, PruneData> {
  const path = checkAbsolutePath(o.path ?? STORAGE_RECORD, 'storage record path');
  const fstabFile = checkAbsolutePath(o.fstabFile ?? '/etc/fstab', 'fstabFile');
  const keep = new Set(o.keep.map((k) => checkAbsolutePath(k, 'kept mountpoint')));
  const rec = recordFile<PruneFacts>(
    path,
    (f) => f.record,
    (f, record) => ({ ...f, record }),
  );
  const fstab = fstabFileOf<PruneFacts>(
    fstabFile,
    (f) => f.fstab,
    (f, file) => ({ ...f, fstab: file }),
    'remove pruned mountpaths',
  );
  return {
    ...common('storage-prune', `storage-prune:${path}`, o),
    verifiable: true,
    reads: [fileTopic(path), fileTopic(fstabFile), MOUNTS, BLOCK_DEVICES, PACKAGES],
    files: [rec, fstab],
    ...probed(
      () => ({ record: rec.probe(), fstab: fstab.probe(), mountinfo: MOUNTINFO, ids: BLOCK_IDS, xfs: inline(xfsMountsProbe([...keep])) }),
      (a): PruneFacts => ({ record: fileFacts(a.record), fstab: fileFacts(a.fstab), xfs: parseXfsMounts(a.xfs) }),
    ),
    diff(f) {
      if (f.record.type !== 'file') return []; // nothing recorded: nothing of racksmith's to prune
      const record = parseRecord(contentText(f.record), path);
      const fstabText = f.fstab.type === 'file' ? contentText(f.fstab) : '';
      const actions = pruneSet(record, keep, f.xfs, fstabText);
      if (!actions.length) return [];
      // (whether the recorded filesystem is what is mounted there cannot be read, and an unmount would wait too)
      const stuck = f.xfs.find((m) => m.blocked && actions.some((a) => a.disk.mountpoint === m.mountpoint));
      if (stuck)
        throw new Refusal(
          `${stuck.mountpoint} (${stuck.source} mounted there): its device ${stuck.blocked}: ${READ_WOULD_WAIT}; nothing is pruned`,
        );
      const everything = pruneEverythingRefusal(keep, actions);
      if (everything) throw new Refusal(everything);
      const changes: Change<PruneData>[] = [];
      for (const a of actions) {
        if (a.unmount) changes.push({ summary: pruneSummary(a, 'unmount'), data: { unmount: a.disk.mountpoint } });
      }
      const lines = actions.flatMap((a) => a.fstabLines);
      if (lines.length) {
        changes.push(
          ...fstab.changes(f, withoutLines(fstabText, lines), {
            update: `${fstabFile}: remove ${lines.length === 1 ? `the line of pruned ${actions.find((a) => a.fstabLines.length)!.disk.mountpoint}` : `${lines.length} lines of pruned mountpaths`}`,
          }),
        );
      }
      const gone = new Set(actions.map((a) => a.disk.mountpoint));
      const notes = actions.filter((a) => a.note).map((a) => `; ${a.note}`);
      changes.push(
        ...rec.changes(f, renderRecord(record.filter((d) => !gone.has(d.mountpoint))), {
          update: `${path}: forget ${[...gone].join(', ')} (no longer in storage_disks${notes.join('')})`,
        }),
      );
      return changes;
    },
    apply(_, changes): Step[] {
      const steps: Step[] = [];
      for (const c of changes) {
        const d = c.data;
        if (d && 'unmount' in d) steps.push(unmountStep(d.unmount));
      }
      return [...steps, ...fstab.steps(changes), ...rec.steps(changes)];
    },
  };
}

const pruneSummary = (a: PruneAction, what: 'unmount') =>
  `${what} ${a.disk.mountpoint} (${a.disk.name}, UUID ${a.disk.uuid}: no longer in storage_disks; its data is kept)`;

/** umount, then remove the mountpoint if it is an empty directory (never its content). */
function unmountStep(mp: string): Step {
  return { name: `unmount ${mp}`, script: `umount -- ${shq(mp)}\nrmdir -- ${shq(mp)} 2>/dev/null || :` };
}

// ---------------------------------------------------------------------------------------------
// Decommission (and wipe)

export interface DiskDecommissionOptions extends CommonOptions {
  spec: DiskSpec;
  /** Its storage_disks name (ids: `decommission:NAME`). */
  name: string;
  /** The mountpoint of its storage_disks entry. */
  mountpoint: string;
  /** storage_wipe: serials/WWNs and /dev/disk/by-id paths of disks to erase (never kernel names). */
  wipe?: readonly string[];
  path?: string;
  fstabFile?: string;
}

interface DecommissionFacts {
  disk: DiskFacts;
  record: FileFacts;
  fstab: FileFacts;
}

type DecommissionData = FileWrite | { unmount: string } | { wipe: DecommissionPlan['wipe'] & object };

/**
 * A listed disk taken out of service (storage_decommission): unmounted wherever it is mounted,
 * the fstab lines that mount it and its storage.json lines removed; the I/O udev rule leaves it
 * out (the playbook). With storage_wipe naming it: erased afterwards (wipefs, then a discard of
 * the whole device where it supports one, else zeros over its first and last 16 MiB), guarded
 * by an exclusive open right before; that change needs a reviewed plan or --yes (Change.confirm).
 */
export function diskDecommission(o: DiskDecommissionOptions): Resource<DecommissionFacts, DecommissionData> {
  const path = checkAbsolutePath(o.path ?? STORAGE_RECORD, 'storage record path');
  const fstabFile = checkAbsolutePath(o.fstabFile ?? '/etc/fstab', 'fstabFile');
  const wipe = o.wipe ?? [];
  for (const w of wipe) {
    if (!w || /[\s\0]/.test(w)) throw new InputError(`storage_wipe entry ${JSON.stringify(w)} must not be empty or contain blanks`);
    if (w.startsWith('/') && !w.startsWith('/dev/disk/by-id/'))
      throw new InputError(`storage_wipe entry ${w}: name a disk by serial, WWN or /dev/disk/by-id path, never by kernel name`);
  }
  const rec = recordFile<DecommissionFacts>(
    path,
    (f) => f.record,
    (f, record) => ({ ...f, record }),
  );
  const fstab = fstabFileOf<DecommissionFacts>(
    fstabFile,
    (f) => f.fstab,
    (f, file) => ({ ...f, fstab: file }),
    `remove the lines of decommissioned ${o.name}`,
  );
  return {
    ...common('disk-decommission', `decommission:${o.name}`, o),
    verifiable: true,
    files: [rec, fstab],
    ...probed(
      // A wipe also asks who else uses the disk (its users' lines follow the disk's own).
      () => ({
        record: rec.probe(),
        fstab: fstab.probe(),
        helpers: diskHelpers(),
        disk: diskProbeBody(o.spec),
        ...(wipe.length ? diskUsersParts(o.spec) : { users: undefined }),
      }),
      (a): DecommissionFacts => ({
        record: fileFacts(a.record),
        fstab: fileFacts(a.fstab),
        disk: parseDiskFacts(a.users === undefined ? a.disk : `${a.disk}\n${a.users}`),
      }),
    ),
    diff(f) {
      const record = f.record.type === 'file' ? parseRecord(contentText(f.record), path) : [];
      const fstabText = f.fstab.type === 'file' ? contentText(f.fstab) : '';
      const plan = decommissionPlan(f.disk, record, fstabText, { mountpoint: o.mountpoint, wipe });
      const dev = `/dev/${f.disk.kname}`;
      const changes: Change<DecommissionData>[] = plan.unmount.map((mp) => ({
        summary: `unmount ${mp} (${dev}, decommissioned ${o.name})`,
        data: { unmount: mp },
      }));
      if (plan.fstabLines.length)
        changes.push(
          ...fstab.changes(f, withoutLines(fstabText, plan.fstabLines), { update: `${fstabFile}: remove ${plan.fstabLines.join('; ')}` }),
        );
      if (plan.recordLines.length) {
        const gone = new Set(plan.recordLines);
        changes.push(
          ...rec.changes(f, renderRecord(record.filter((d) => !gone.has(d.mountpoint))), {
            update: `${path}: forget ${plan.recordLines.join(', ')} (decommissioned ${o.name})`,
          }),
        );
      }
      // Wiped already: nothing left that a signature shows (a device without discard keeps its blocks).
      const signed =
        !f.disk.contentProbed ||
        !!f.disk.blkid.TYPE ||
        !!f.disk.blkid.PTTYPE ||
        f.disk.signatures.length > 0 ||
        f.disk.partitions.length > 0;
      if (plan.wipe && signed) {
        changes.push({
          summary: `wipe ${dev} (storage_wipe: ${plan.wipe.by}): erase its signatures and data, AIS metadata included`,
          confirm: 'erases the disk',
          data: { wipe: plan.wipe },
        });
      }
      return changes;
    },
    apply(f, changes): Step[] {
      const steps: Step[] = [];
      let wipeOf: { kname: string } | undefined;
      for (const c of changes) {
        const d = c.data as DecommissionData | undefined;
        if (d && 'unmount' in d) steps.push(unmountStep(d.unmount));
        if (d && 'wipe' in d) wipeOf = d.wipe;
      }
      steps.push(...fstab.steps(changes), ...rec.steps(changes));
      if (wipeOf) steps.push({ name: `wipe /dev/${wipeOf.kname}`, script: wipeScript(f.disk) });
      return steps;
    },
  };
}

/** Erase a disk nothing uses: signatures, then every block by discard where it supports it, else its first and last 16 MiB. */
function wipeScript(f: DiskFacts): string {
  const d = shq(`/dev/${f.kname}`);
  const q = shq(`/sys/class/block/${f.kname}/queue/discard_max_bytes`);
  return `${wipeGuardScript(f)}
${f.partitions.map((p) => `wipefs -a -q -- ${shq(`/dev/${p.name}`)} || :`).join('\n')}
wipefs -a -q -- ${d}
rs_dm=0; read -r rs_dm < ${q} 2>/dev/null || :
if [ "\${rs_dm:-0}" != 0 ] && blkdiscard -- ${d} 2>/dev/null; then :
else
  rs_sz=$(blockdev --getsize64 ${d})
  dd if=/dev/zero of=${d} bs=1M count=16 conv=fsync status=none
  [ "$rs_sz" -gt 33554432 ] && dd if=/dev/zero of=${d} bs=1M seek=$((rs_sz / 1048576 - 16)) count=16 conv=fsync status=none
fi
blockdev --flushbufs ${d} 2>/dev/null || :`;
}

// ---------------------------------------------------------------------------------------------
// What storage_wipe selects

export interface StorageWipeCheckOptions extends CommonOptions {
  /** Every storage_disks entry: its name, its disk, whether it is in storage_decommission. */
  disks: readonly { name: string; spec: DiskSpec; decommissioned: boolean }[];
  /** storage_wipe, as the decommissions take it. */
  wipe: readonly string[];
}

/**
 * storage_wipe checked against the host's listed disks before any decommission runs (the
 * playbook puts the decommissions after it): an entry naming a disk in service, or a
 * decommissioned disk left unwiped by an entry that names nothing here, is refused, so a
 * mistyped serial never turns "decommission and erase" into a silent "decommission". Which disk
 * an entry names is known on the host only: the probe reads each listed disk as its own
 * resources do. It changes nothing.
 */
export function storageWipeCheck(o: StorageWipeCheckOptions): Resource<{ disks: DiskFacts[] }, never> {
  return {
    ...common('storage-wipe-check', 'storage-wipe-check', o),
    verifiable: true,
    reads: DISK_READS,
    ...probed(
      () => ({ helpers: diskHelpers(), disks: o.disks.map((d) => diskProbeBody(d.spec)) }),
      ({ disks }) => ({ disks: disks.map((d) => parseDiskFacts(d)) }),
    ),
    diff: (f) => {
      const problem = wipeSelectionProblem(
        o.disks.map((d, i) => ({ name: d.name, decommissioned: d.decommissioned, facts: f.disks[i] })),
        o.wipe,
      );
      if (problem) throw new Refusal(problem);
      return [];
    },
    apply: () => [],
  };
}

// ---------------------------------------------------------------------------------------------
// AIS node state

export interface AisStatePurgeOptions extends CommonOptions {
  /** Where AIS keeps its node state (default /etc/ais): its `.ais.*` files are removed. */
  dir?: string;
  /** The node's data disks (all decommissioned): the state goes only when storage_wipe names each. */
  disks: readonly DiskSpec[];
  /** storage_wipe, as the decommissions take it. */
  wipe: readonly string[];
}

interface AisStateFacts {
  names: string[];
  disks: DiskFacts[];
}

/**
 * The AIS node state ais-k8s's cleanup removes with clean_state (`/etc/ais/.ais.*`): for a node
 * whose data disks are all wiped. Which disks storage_wipe names is known on the host only (a
 * serial, a WWN, a by-id link): the probe reads each disk as its decommission does, and a disk
 * not named keeps the state, said as the resource's skip.
 */
export function aisStatePurge(o: AisStatePurgeOptions): Resource<AisStateFacts, 'purge'> {
  const dir = checkAbsolutePath(o.dir ?? '/etc/ais', 'AIS state directory');
  return {
    ...common('ais-state-purge', `ais-state-purge:${dir}`, o),
    verifiable: true,
    reads: DISK_READS,
    ...probed(
      // each disk read as its decommission with storage_wipe reads it: the same parts, run once
      () => ({
        names: inline(`for p in ${shq(dir)}/.ais.*; do [ -e "$p" ] && printf '%s\\n' "\${p##*/}"; done; :`),
        helpers: diskHelpers(),
        disks: o.disks.map((spec) => ({ disk: diskProbeBody(spec), ...diskUsersParts(spec) })),
      }),
      ({ names, disks }) => ({
        names: names.split('\n').filter(Boolean),
        disks: disks.map((d) => parseDiskFacts(`${d.disk}\n${d.users}`)),
      }),
    ),
    diff: (f) => {
      if (!f.names.length) return [];
      const kept = f.disks.filter((d) => !namedForWipe(d, o.wipe)).map((d) => `/dev/${d.kname}`);
      if (kept.length) throw new NotApplicable(`${dir}/.ais.* kept: storage_wipe does not name ${kept.join(', ')}`);
      return [{ summary: `remove the AIS node state ${dir}/{${f.names.join(',')}}`, data: 'purge' }];
    },
    apply: () => [{ name: `remove ${dir}/.ais.*`, script: `rm -rf -- ${shq(dir)}/.ais.*` }],
  };
}

/** Whether storage_wipe names this disk as its decommission reads it (an ambiguous entry names none). */
function namedForWipe(d: DiskFacts, wipe: readonly string[]): boolean {
  // (a disk that did not resolve, or whose content cannot be read, is named by nothing)
  if (d.error) return false;
  try {
    return wipeNamedBy(d, wipe) !== undefined;
  } catch (e) {
    if (e instanceof Refusal) return false;
    throw e;
  }
}

export type { RecordDisk };
