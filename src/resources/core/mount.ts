import { define, inline, probed, type Answers, type ProbeBatch } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { BLOCK_DEVICES, fileTopic, MOUNTS, PACKAGES } from '../../contract/state-topics.ts';
import { InputError } from '../../util/errors.ts';
import { checkToken, VALUE_LIMITS } from '../../util/input-value.ts';
import { checkAbsolutePath, contentText, fileFacts, normMode, type FileFacts } from './file-common.ts';
import { managedFile, type FileWrite, type ManagedFile } from './managed-file.ts';
import { deletedRoot, MOUNTINFO, mountTableProbe, rootIsOf, topMount, type MountEntry } from './mount-table.ts';
import { entryCount, findEntry, formatEntry, sameEntry, setEntry, type FstabEntry } from './fstab.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';
import { remember } from '../../util/memo.ts';
import { BLOCK_IDS, READ_WOULD_WAIT } from './block-ids.ts';

export interface MountOptions extends CommonOptions {
  /** Mountpoint. */
  path: string;
  fstype: string;
  /** What to mount: a device path, `UUID=...`, a directory (bind), `server:/export`, `tmpfs`... */
  source?: string;
  /** A block device mounted by its filesystem UUID (probed): fstab says `UUID=...`. */
  device?: string;
  /** fstab options. `bind` / `rbind` make a bind mount. */
  options?: string[];
  dump?: number;
  pass?: number;
  /** Write the fstab entry (default true). */
  persist?: boolean;
  /**
   * Create the mountpoint when missing: a directory (true, the default), an empty file ('file',
   * for binding a file onto it), or never (false).
   */
  mkdir?: boolean | 'file';
  /** The mountpoint must resolve (symlinks followed) to a path under this directory. */
  within?: string;
  /**
   * A file that must exist in the mounted filesystem (relative to its root), e.g. a "populated"
   * marker. Missing: refused when it can be seen beforehand, else the fresh mount is undone.
   */
  requireMarker?: string;
  /** Bind only where the source exists (e.g. /etc/resolv.conf); elsewhere nothing to do. */
  optional?: boolean;
  /** Mode of the mounted root as seen through the mountpoint, e.g. '0750'. */
  mode?: string;
  /** Allow mounting over a non-empty directory (its content is hidden while mounted). */
  overNonEmpty?: boolean;
  fstabFile?: string;
}

type Live = MountEntry;

export interface MountFacts {
  fstab: FileFacts;
  live?: Live;
  target: { kind: 'absent' | 'dir' | 'file' | 'link' | 'other'; devIno?: string; mode?: string; empty?: boolean; real?: string };
  /**
   * `path`: the device as the host resolved it (a placeholder device is resolved by the probe's
   * shell); `blocked`: why it is not read (core/block-ids.ts: a read would wait, a suspended map);
   * `real`: a bind source that is a symlink, resolved (only while the target is not it).
   */
  source: { exists: boolean; devIno?: string; majmin?: string; uuid?: string; path?: string; blocked?: string; real?: string };
  /** Whether requireMarker exists: seen through the mountpoint or a local bind source; undefined = cannot tell yet. */
  marker?: boolean;
  /** Whether requireMarker exists in a local bind source (what a stale bind is bound again from). */
  sourceMarker?: boolean;
}

/** A path's identity (st_dev:st_ino, symlinks followed), mode and emptiness. */
export interface PathId {
  devIno: string;
  mode: string;
  empty: boolean;
}

/** Identity, mode and emptiness of paths, one find for all the mounts of a script; undefined when missing. */
export const PATH_IDS: ProbeBatch<PathId | undefined> = {
  shared: true,
  script: (paths) =>
    `find -L ${paths.map(shq).join(' ')} -maxdepth 0 -printf '%D:%i %m ' \\( -empty -printf 'empty ' -o -printf 'nonempty ' \\) -printf '%p\\n' 2>/dev/null\n:`,
  split(stdout, paths) {
    const found = new Map<string, PathId>();
    for (const line of stdout.split('\n')) {
      // DEV:INO MODE empty|nonempty PATH (the path may hold spaces)
      const a = line.indexOf(' ');
      const b = a < 0 ? -1 : line.indexOf(' ', a + 1);
      const c = b < 0 ? -1 : line.indexOf(' ', b + 1);
      if (c >= 0)
        found.set(line.slice(c + 1), { devIno: line.slice(0, a), mode: line.slice(a + 1, b), empty: line.slice(b + 1, c) === 'empty' });
    }
    return paths.map((p) => found.get(p));
  },
};

/** What a mountpoint is (`target=link|dir|file|other|absent`): defined once per script, however many mounts. */
const TARGET_KIND = define(
  'rs_target_kind() { if [ -L "$1" ]; then echo target=link; elif [ -d "$1" ]; then echo target=dir; elif [ -f "$1" ]; then echo target=file; elif [ -e "$1" ]; then echo target=other; else echo target=absent; fi; }',
);

/** Options the kernel shows per mount and that a remount can change. */
const VFS_FLAGS = ['ro', 'nosuid', 'nodev', 'noexec', 'noatime', 'nodiratime'];
/** Options only mount(8)/systemd read; never passed to the kernel or compared live. */
const USERSPACE = /^(defaults|nofail|auto|noauto|user|users|owner|group|_netdev|bind|rbind|x-.*|comment=.*)$/;

const DEC_MAJMIN = /^\d+:\d+$/;
const hexOfDec = new Map<string, string>();
/** Decimal maj:min (sysfs) as stat's hex %t:%T; a fleet's disks repeat the same few. */
const decToHexMajMin = (dec: string | undefined) => {
  if (!dec) return undefined;
  const known = hexOfDec.get(dec);
  if (known !== undefined || !DEC_MAJMIN.test(dec)) return known;
  const colon = dec.indexOf(':');
  return remember(hexOfDec, dec, `${Number(dec.slice(0, colon)).toString(16)}:${Number(dec.slice(colon + 1)).toString(16)}`);
};
const decMajMin = new Map<string, string>();
/** Hex maj:min (stat's %t:%T) as the decimal mountinfo shows; a fleet's disks repeat the same few. */
const hexMajMin = (hex: string) =>
  decMajMin.get(hex) ??
  remember(
    decMajMin,
    hex,
    hex
      .split(':')
      .map((h) => parseInt(h, 16))
      .join(':'),
  );

/**
 * Shell that prints `real=` and the physical path of "$t" (a normalised absolute path), as
 * `realpath -m` would, mostly without it: cd -P resolves the deepest directory that exists, and
 * the components after it (not there, so no symlinks) follow as they are. realpath only when
 * that walk meets a symlink that is not a directory, or a directory since deleted (a stale bind:
 * dash's cd -P into it succeeds with an empty PWD). Ends in / (as inline parts must).
 */
export const PHYSICAL_PATH = `q=$t; r=; while [ ! -d "$q" ] && [ ! -L "$q" ]; do r=/\${q##*/}$r; q=\${q%/*}; [ -n "$q" ] || q=/; done
if [ -d "$q" ] && cd -P -- "$q" 2>/dev/null && [ -n "$PWD" ]; then echo "real=\${PWD%/}$r"; else echo "real=$(realpath -m -- "$t")"; fi
cd /`;

/**
 * Shell run on the new fstab in "$t" before it replaces /etc/fstab: a line libmount cannot parse
 * fails the write (exit 4, findmnt's message on stderr). Only syntax: sources that are not
 * reachable yet are fine, so no --verify (which also resolves every UUID= source on the host).
 */
export const FSTAB_SYNTAX_CHECK = `rs_v=$(findmnt --tab-file "$t" -n -o TARGET 2>&1 >/dev/null) || :
case $rs_v in *'parse error'*) printf '%s\\n' "$rs_v" >&2; exit 4 ;; esac`;

/** A mounted filesystem: live now (verified by source identity and flags) and persisted in fstab. */
export function mount(o: MountOptions): Resource<MountFacts, MountStep | FileWrite> {
  const s = checkMount(o);
  const fstab = managedFile<MountFacts>({
    path: s.fstabFile,
    get: (f) => f.fstab,
    set: (f, file) => ({ ...f, fstab: file }),
    backup: true,
    stepName: `fstab entry for ${s.path}`,
    check: FSTAB_SYNTAX_CHECK,
    // (the mount commands name source and target: nothing reads fstab before the one write)
    foldWrites: true,
  });
  const readOwn = ownLinesReader();
  return {
    ...common('mount', `mount:${s.path}`, o),
    verifiable: true,
    reads: mountReads(s),
    claims: [`mountpoint:${s.path}`],
    files: s.persist ? [fstab] : undefined,
    ...probed(
      () => mountProbe(s, fstab),
      (a): MountFacts => mountFacts(s, a, readOwn),
    ),
    diff: (f) => mountChanges(s, f, fstab),
    apply: (f, changes) => mountSteps(s, f, changes, fstab),
  };
}

/** What a mount's probe reads: the mount table, devices, fstab, its target, source and `within` (and everything under them). */
function mountReads(s: MountSpec): string[] {
  const paths = [s.fstabFile, s.path, ...(s.bindKind ? [s.source!] : []), ...(s.within ? [s.within] : [])];
  return [MOUNTS, BLOCK_DEVICES, PACKAGES, ...paths.map(fileTopic)];
}

/** What a mount's own changes do (besides its fstab file's): the data of its changes. */
type MountStep = 'mkdir' | 'mount' | 'rebind' | 'remount' | 'mode';

/** A mount's options, checked once: what its probe, diff and apply read. */
interface MountSpec {
  path: string;
  fstype: string;
  source?: string;
  device?: string;
  options: string[];
  bindKind?: 'bind' | 'rbind';
  fstabFile: string;
  persist: boolean;
  mkdir: boolean | 'file';
  within?: string;
  requireMarker?: string;
  optional?: boolean;
  mode?: string;
  overNonEmpty?: boolean;
  dump: number;
  pass: number;
  /** The options the kernel shows per mount and a remount can change. */
  wantFlags: string[];
  /** The options passed to mount -o (the userspace-only ones left out). */
  kernelOpts: string[];
}

/** The mount's options checked (InputError before any host is contacted). */
function checkMount(o: MountOptions): MountSpec {
  const path = checkAbsolutePath(o.path, 'mount path');
  if (!o.fstype || /\s/.test(o.fstype)) throw new InputError(`mount ${path}: fstype is required and has no spaces`);
  if ((o.source === undefined) === (o.device === undefined)) throw new InputError(`mount ${path}: give exactly one of source or device`);
  checkToken(o.fstype, `mount ${path}: fstype`, 64);
  if (o.source !== undefined) checkToken(o.source, `mount ${path}: source`, VALUE_LIMITS.path);
  for (const opt of o.options ?? []) checkToken(opt, `mount ${path}: option`, VALUE_LIMITS.path);
  const device = o.device !== undefined ? checkAbsolutePath(o.device, 'device') : undefined;
  const options = o.options?.length ? o.options : ['defaults'];
  for (const opt of options) if (!opt || /[\s,]/.test(opt)) throw new InputError(`mount ${path}: invalid option ${JSON.stringify(opt)}`);
  if (o.requireMarker !== undefined && (o.requireMarker.startsWith('/') || o.requireMarker.split('/').includes('..'))) {
    throw new InputError(`mount ${path}: requireMarker must be a path relative to the mounted root, got ${o.requireMarker}`);
  }
  return {
    path,
    fstype: o.fstype,
    source: o.source,
    device,
    options,
    bindKind: options.includes('rbind') ? 'rbind' : options.includes('bind') ? 'bind' : undefined,
    fstabFile: checkAbsolutePath(o.fstabFile ?? '/etc/fstab', 'fstabFile'),
    persist: o.persist ?? true,
    mkdir: o.mkdir ?? true,
    within: o.within !== undefined ? checkAbsolutePath(o.within, 'within') : undefined,
    requireMarker: o.requireMarker,
    optional: o.optional,
    mode: normMode(o.mode),
    overNonEmpty: o.overNonEmpty,
    dump: o.dump ?? 0,
    pass: o.pass ?? 0,
    wantFlags: options.filter((x) => VFS_FLAGS.includes(x)),
    kernelOpts: options.filter((x) => !USERSPACE.test(x)),
  };
}

/**
 * The mount's probe: builtins in its own lines; the target's (and a bind source's) identity, mode
 * and emptiness from one find for every mount of the script, what is mounted from the shared
 * mount table, and the fstab file.
 */
function mountProbe(s: MountSpec, fstab: ManagedFile<MountFacts>) {
  const mk = s.requireMarker;
  const t = shq(s.path);
  const src = s.bindKind ? shq(s.source!) : undefined;
  const lines = [`t=${t}`];
  if (src) {
    // (the link resolved by a process only while the bind is not it: never on a converged host)
    lines.push(`s=${src}; if [ -e "$s" ]; then
  echo source=present
  if [ -L "$s" ] && ! [ "$t" -ef "$s" ]; then echo "source_real=$(realpath -e -- "$s")"; fi
else echo source=absent; fi`);
  }
  lines.push('rs_target_kind "$t"');
  if (s.device) {
    // maj:min of a plain /dev/NAME from sysfs (no stat); the UUID from the superblock itself
    // (udev's by-uuid links can lag right after a mkfs): one blkid for every mount and disk of
    // the script (block-ids.ts).
    lines.push(`d=${shq(s.device)}; if [ -b "$d" ]; then
  echo "dev=$d"
  mm=; [ ! -L "$d" ] && [ -r "/sys/class/block/\${d##*/}/dev" ] && IFS= read -r mm < "/sys/class/block/\${d##*/}/dev"
  if [ -n "$mm" ]; then echo "majmin_dec=$mm"; else echo "majmin=$(stat -L -c '%t:%T' -- "$d")"; fi
  rs_blk_dev '' "$d"
  if [ -n "$rs_blk_w" ]; then echo "blocked=$rs_blk_w"; else rs_bid_uuid "$d"; echo "uuid=$rs_bid_v"; fi
else echo source=absent; fi`);
  }
  if (s.within) {
    lines.push(PHYSICAL_PATH);
  }
  if (mk !== undefined) {
    // Seen through the mountpoint once mounted, or on a local bind source before that: parse picks.
    lines.push(`[ -d "$t" ] && { [ -e "$t"/${shq(mk)} ] && echo marker_t=yes || echo marker_t=no; }`);
    if (src) lines.push(`[ -d "$s" ] && { [ -e "$s"/${shq(mk)} ] && echo marker_s=yes || echo marker_s=no; }`);
  }
  return {
    kind: TARGET_KIND,
    ids: s.device ? BLOCK_IDS : undefined,
    own: inline(lines.join('\n')),
    target: { batch: PATH_IDS, arg: s.path },
    source: s.bindKind ? { batch: PATH_IDS, arg: s.source! } : undefined,
    mountinfo: MOUNTINFO,
    table: mountTableProbe(s.path),
    fstab: fstab.probe(),
  };
}

/** The own lines' `key=value`s, as a reader that keeps the last lines read (hosts alike answer them alike; the map is only read). */
function ownLinesReader(): (own: string) => Map<string, string> {
  let last: { own: string; kv: Map<string, string> } | undefined;
  return (own) => {
    if (last?.own === own) return last.kv;
    const kv = new Map<string, string>();
    for (const l of own.split('\n')) {
      const eq = l.indexOf('=');
      if (eq > 0) kv.set(l.slice(0, eq), l.slice(eq + 1));
    }
    last = { own, kv };
    return kv;
  };
}

function mountFacts(s: MountSpec, a: Answers<ReturnType<typeof mountProbe>>, readOwn: (own: string) => Map<string, string>): MountFacts {
  const kv = readOwn(a.own);
  const target = a.target;
  const live = topMount(a.table, s.path);
  const marker = live ? kv.get('marker_t') : kv.get('marker_s');
  const sourceMarker = kv.get('marker_s');
  return {
    marker: marker === undefined ? undefined : marker === 'yes',
    sourceMarker: sourceMarker === undefined ? undefined : sourceMarker === 'yes',
    fstab: fileFacts(a.fstab),
    live,
    target: {
      kind: (kv.get('target') ?? 'absent') as MountFacts['target']['kind'],
      devIno: target?.devIno || undefined,
      mode: target?.mode,
      empty: target?.empty ?? false,
      real: kv.get('real'),
    },
    source: {
      exists: kv.get('source') !== 'absent',
      devIno: a.source?.devIno,
      majmin: kv.get('majmin') ?? decToHexMajMin(kv.get('majmin_dec')),
      uuid: kv.get('uuid') || undefined,
      path: kv.get('dev') || undefined,
      blocked: kv.get('blocked'),
      real: kv.get('source_real') || undefined,
    },
  };
}

/** Is what is mounted at the path the thing we want? */
function liveMatches(s: MountSpec, f: MountFacts): boolean {
  const live = f.live!;
  if (s.device) return f.source.majmin !== undefined && live.majmin === hexMajMin(f.source.majmin);
  if (s.bindKind) return f.source.devIno !== undefined && f.target.devIno === f.source.devIno;
  return live.fstype === s.fstype && (live.source === s.source || ['tmpfs', 'proc', 'sysfs', 'devpts', 'mqueue'].includes(s.fstype));
}

/** st_dev of find's `%D:%i`. */
const devOf = (devIno: string) => devIno.slice(0, devIno.indexOf(':'));

/**
 * A bind of what its source was before it was replaced: the live bind's file or directory is
 * deleted (mountinfo's root ends in `//deleted`, findmnt's source `/dev/vda[/etc/hosts//deleted]`),
 * was at the source's path (rootIsOf; a source that is a link resolved) and lies on the filesystem
 * the source lies on now. /etc/hosts and /etc/resolv.conf are rewritten by rename (Ansible's copy
 * and template, `sed -i`, dhclient, systemd-resolved), a runtime directory made again by its
 * service: the bind keeps the old one, which nobody can reach but through it. Bound again; a
 * deleted file of another path there is someone else's: refused.
 */
export function staleBind(s: Pick<MountSpec, 'bindKind' | 'source'>, f: MountFacts): boolean {
  const was = deletedRoot(f.live);
  if (!s.bindKind || was === undefined || !f.source.exists || !f.source.devIno || !f.target.devIno) return false;
  return rootIsOf(was, f.source.real ?? s.source!) && devOf(f.source.devIno) === devOf(f.target.devIno);
}

/** The flags a remount must add (+flag) or take away (-ro). */
function flagDiff(s: MountSpec, live: Live): string[] {
  const d: string[] = [];
  for (const flag of s.wantFlags) if (!live.options.includes(flag)) d.push(`+${flag}`);
  // rw is only enforced when asked for: a bind of a read-only tree (/sys) stays read-only.
  if (s.options.includes('rw') && live.options.includes('ro')) d.push('-ro');
  return d;
}

const entryFor = (s: MountSpec, f: MountFacts): FstabEntry => ({
  source: s.device ? `UUID=${f.source.uuid}` : s.source!,
  target: s.path,
  fstype: s.fstype,
  options: s.options.join(','),
  dump: s.dump,
  pass: s.pass,
});

/**
 * Why a mount over a non-empty directory is refused, and what an operator can do about it. No
 * inventory variable reaches the resource's overNonEmpty (the storage play never sets it, the jail
 * root sets it false, the jail's node-local binds true), so the way out is the directory's content
 * or the path, not a setting.
 */
export function nonEmptyMountpointRefusal(path: string): string {
  return `${path} is a non-empty directory; mounting there would hide its content. Move its content elsewhere (or remove it) and run again, or mount at another path: no inventory variable allows mounting over a non-empty directory`;
}

/** Refused states (Refusal), else the changes; mountpoint, fstab, mount, mode in that order. */
function mountChanges(s: MountSpec, f: MountFacts, fstab: ManagedFile<MountFacts>): Change<MountStep | FileWrite>[] {
  const path = s.path;
  // messages name the device by the path the host resolved (a placeholder is no path there)
  const what = (s.device && f.source.path) ?? s.device ?? s.source;
  if (s.device && f.source.blocked) throw new Refusal(`${what} ${f.source.blocked}: ${READ_WOULD_WAIT}; not read`);
  const stale = f.live !== undefined && !liveMatches(s, f) && staleBind(s, f);
  if (f.live && !liveMatches(s, f) && !stale) {
    throw new Refusal(`${path} already has ${f.live.source} (${f.live.fstype}) mounted, not ${what}; unmount it first`);
  }
  // what is mounted there as wanted (a stale bind is not: it is bound again)
  const live = stale ? undefined : f.live;
  if ((s.device || s.bindKind) && !f.source.exists) {
    if (s.optional && !f.live) return [];
    throw new Refusal(`mount source ${s.device ?? s.source} does not exist`);
  }
  if (s.device && !f.source.uuid) throw new Refusal(`${what} has no filesystem UUID (not formatted?)`);
  if (f.target.kind === 'link') throw new Refusal(`mountpoint ${path} is a symlink; refusing to mount through it`);
  if (s.within && f.target.real !== undefined && f.target.real !== s.within && !f.target.real.startsWith(s.within + '/')) {
    throw new Refusal(`mountpoint ${path} resolves to ${f.target.real}, outside ${s.within}`);
  }
  if (s.requireMarker !== undefined && (stale ? f.sourceMarker : f.marker) === false) {
    throw new Refusal(`${what} is not populated: marker ${s.requireMarker} is missing; nothing mounted`);
  }
  const changes: Change<MountStep | FileWrite>[] = [];
  if (f.target.kind === 'absent') {
    if (!s.mkdir) throw new Refusal(`mountpoint ${path} does not exist`);
    changes.push({ summary: `create mountpoint ${path}${s.mkdir === 'file' ? ' (empty file)' : ''}`, data: 'mkdir' });
  } else if (!f.live && f.target.kind === 'dir' && !f.target.empty && !s.overNonEmpty) {
    throw new Refusal(nonEmptyMountpointRefusal(path));
  } else if (f.target.kind === 'other') {
    throw new Refusal(`mountpoint ${path} is neither a directory nor a file`);
  }
  if (s.persist) changes.push(...noteNotLive(s, f.live, fstabChanges(s, f, fstab)));
  if (stale) {
    changes.push({
      summary: `re-bind ${what} on ${path}: ${what} was replaced since it was bound there (the bind still shows the deleted one)`,
      data: 'rebind',
    });
  } else if (!live) changes.push({ summary: `mount ${what} on ${path} (${s.fstype}, ${s.options.join(',')})`, data: 'mount' });
  else {
    const d = flagDiff(s, live);
    if (d.length) changes.push({ summary: `remount ${path}: ${d.join(' ')}`, data: 'remount' });
  }
  if (s.mode && (live ? f.target.mode !== s.mode : true)) {
    changes.push({ summary: `${path}: mode ${live ? f.target.mode : '(after mount)'} → ${s.mode}`, data: 'mode' });
  }
  return changes;
}

/**
 * XFS options the live mount lacks, said on the fstab change that writes them: XFS takes its own
 * options (largeio, allocsize, logbufs...) only when it is mounted, a remount changes none of them
 * (only the VFS flags), and the kernel shows every one it has in mountinfo. So an entry updated
 * under a mounted filesystem says which of its options wait for the next mount, instead of a
 * converged run that leaves them off until then without a word.
 */
export function xfsOptionsNotLive(s: Pick<MountSpec, 'fstype' | 'options'>, live: Live | undefined): string[] {
  if (!live || s.fstype !== 'xfs' || live.fstype !== 'xfs') return [];
  return s.options.filter((o) => o !== 'rw' && !VFS_FLAGS.includes(o) && !USERSPACE.test(o) && !live.options.includes(o));
}

function noteNotLive(s: MountSpec, live: Live | undefined, changes: Change<FileWrite>[]): Change<FileWrite>[] {
  const waiting = xfsOptionsNotLive(s, live);
  if (!waiting.length || !changes.length) return changes;
  const note = ` (${waiting.join(', ')}: not on the live mount, and XFS does not change them on a remount: they take effect when ${s.path} is next mounted)`;
  return changes.map((c, i) => (i === 0 ? { ...c, summary: c.summary + note } : c));
}

/** The fstab entry's change: added, updated, or several entries for the path collapsed into one. */
function fstabChanges(s: MountSpec, f: MountFacts, fstab: ManagedFile<MountFacts>): Change<FileWrite>[] {
  const want = entryFor(s, f);
  const text = f.fstab.content !== undefined ? contentText(f.fstab) : '';
  const have = findEntry(text, s.path);
  // Several entries for the path (another tool's, or an older racksmith's): collapsed into one.
  const duplicates = entryCount(text, s.path) > 1;
  if (have && sameEntry(have, want) && !duplicates) return [];
  const summary = !have
    ? `${s.fstabFile}: add ${formatEntry(want)}`
    : duplicates
      ? `${s.fstabFile}: one ${s.path} entry instead of ${entryCount(text, s.path)}`
      : `${s.fstabFile}: update ${s.path} entry`;
  return fstab.changes(f, setEntry(contentText(f.fstab), want), { create: summary, update: summary });
}

/**
 * The mount command: a bind (its flags through a remount), or mount -t with the kernel's options.
 * A device is resolved once, here, as late as ever (a placeholder's resolver runs where the
 * device path stands: resolvedMount), and mounted only when it is still the probed device (maj:min)
 * carrying the probed filesystem UUID: the one the fstab line written after it names. A device path
 * that meanwhile names another disk or filesystem (a disk swapped, a by-uuid link moved, a clone
 * found first) is not mounted: exit 3, said on stderr.
 */
function mountCommand(s: MountSpec, f: MountFacts): string {
  const p = shq(s.path);
  if (s.bindKind) {
    const cmds = [`mount --${s.bindKind} -- ${shq(s.source!)} ${p}`];
    // Bind mounts take per-mount flags (ro, nosuid...) only through a remount.
    if (s.wantFlags.length) cmds.push(`mount -o ${shq(['remount', 'bind', ...s.wantFlags].join(','))} ${p}`);
    return cmds.join('\n');
  }
  const opts = s.kernelOpts.length ? ` -o ${shq(s.kernelOpts.join(','))}` : '';
  if (!s.device) return `mount -t ${shq(s.fstype)}${opts} -- ${shq(s.source!)} ${p}`;
  const notMounting = shq(`; not mounting it at ${s.path}`);
  // (stat of a path that is gone prints nothing, of a file that is no device 0:0: neither matches)
  const majmin = f.source.majmin
    ? `rs_mm=$(stat -L -c '%t:%T' -- "$rs_md" 2>/dev/null) || rs_mm=
[ "$rs_mm" = ${shq(f.source.majmin)} ] || { printf '%s is device %s now, not the probed %s (hex maj:min)%s\\n' "\${rs_md:-(no device found)}" "\${rs_mm:-(none)}" ${shq(f.source.majmin)} ${notMounting} >&2; exit 3; }
`
    : '';
  return `rs_md=${shq(s.device)} || rs_md=
${majmin}rs_mu=$(blkid -p -s UUID -o value -- "$rs_md" 2>/dev/null) || rs_mu=
[ "$rs_mu" = ${shq(f.source.uuid ?? '')} ] || { printf '%s carries filesystem UUID %s, not the probed %s%s\\n' "$rs_md" "\${rs_mu:-(none)}" ${shq(f.source.uuid ?? '(none)')} ${notMounting} >&2; exit 3; }
mount -t ${shq(s.fstype)}${opts} -- "$rs_md" ${p}`;
}

function mountSteps(
  s: MountSpec,
  f: MountFacts,
  changes: readonly Change<MountStep | FileWrite>[],
  fstab: ManagedFile<MountFacts>,
): Step[] {
  const does = (what: MountStep) => changes.some((c) => c.data === what);
  const steps: Step[] = [];
  const path = s.path;
  const p = shq(path);
  if (does('mkdir')) {
    steps.push({
      name: `create mountpoint ${path}`,
      script: s.mkdir === 'file' ? `mkdir -p -- ${shq(path.replace(/\/[^/]*$/, '') || '/')}\n: >> ${p}` : `mkdir -p -- ${p}`,
    });
  }
  const check =
    s.requireMarker === undefined
      ? ''
      : `\nif [ ! -e ${p}/${shq(s.requireMarker)} ]; then umount ${p}; echo ${shq(`${s.device ?? s.source} is not populated: marker ${s.requireMarker} is missing; unmounted again`)} >&2; exit 5; fi`;
  if (does('mount')) {
    steps.push({ name: `mount ${path}`, script: mountCommand(s, f) + check });
  } else if (does('rebind')) {
    // Only the stale bind the probe saw (its deleted file's dev:ino, still on top there): anything
    // mounted since is left alone. Bound again unless what it hid is the source already.
    steps.push({
      name: `re-bind ${path}`,
      script: `rs_di=$(stat -L -c %d:%i -- ${p}) || rs_di=
[ "$rs_di" = ${shq(f.target.devIno ?? '')} ] || { echo ${shq(`${path} no longer shows the deleted ${s.source} the probe saw: not bound again`)} >&2; exit 3; }
umount -l -- ${p}
if ! [ ${p} -ef ${shq(s.source!)} ]; then
${mountCommand(s, f)}
fi${check}`,
    });
  } else if (does('remount')) {
    steps.push({
      name: `remount ${path}`,
      script: `mount -o ${shq(['remount', ...(s.bindKind ? ['bind'] : []), ...(s.options.includes('rw') ? ['rw'] : []), ...s.wantFlags].join(','))} ${p}`,
    });
  }
  // fstab only after the mount worked: a broken entry never outlives a failed mount.
  steps.push(...fstab.steps(changes));
  if (does('mode')) steps.push({ name: `mode of ${path}`, script: `chmod ${shq(s.mode!)} -- ${p}` });
  return steps;
}
