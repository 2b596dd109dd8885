import { define, inline, probed, type ProbeBatch } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { checkToken, VALUE_LIMITS } from '../../util/input-value.ts';
import { checkAbsolutePath, contentText, fileFacts, normMode, type FileFacts } from './file-common.ts';
import { managedFile, type FileWrite } from './managed-file.ts';
import { mountTableProbe, topMount, type MountEntry } from './mount-table.ts';
import { entryCount, findEntry, formatEntry, sameEntry, setEntry, type FstabEntry } from './fstab.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';
import { remember } from '../../util/memo.ts';

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
  mode?: string | number;
  /** Allow mounting over a non-empty directory (its content is hidden while mounted). */
  overNonEmpty?: boolean;
  fstabFile?: string;
}

type Live = MountEntry;

export interface MountFacts {
  fstab: FileFacts;
  live?: Live;
  target: { kind: 'absent' | 'dir' | 'file' | 'link' | 'other'; devIno?: string; mode?: string; empty?: boolean; real?: string };
  /** `path`: the device as the host resolved it (a placeholder device is resolved by the probe's shell). */
  source: { exists: boolean; devIno?: string; majmin?: string; uuid?: string; path?: string };
  /** Whether requireMarker exists: seen through the mountpoint or a local bind source; undefined = cannot tell yet. */
  marker?: boolean;
}

/** A path's identity (st_dev:st_ino, symlinks followed), mode and emptiness. */
export interface PathId {
  devIno: string;
  mode: string;
  empty: boolean;
}

/** Identity, mode and emptiness of paths, one find for all the mounts of a script; undefined when missing. */
export const PATH_IDS: ProbeBatch<PathId | undefined> = {
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

/** A mounted filesystem: live now (verified by source identity and flags) and persisted in fstab. */
/**
 * Shell that prints `real=` and the physical path of "$t" (a normalised absolute path), as
 * `realpath -m` would, mostly without it: cd -P resolves the deepest directory that exists, and
 * the components after it (not there, so no symlinks) follow as they are. realpath only when
 * that walk meets a symlink that is not a directory. Ends in / (as inline parts must).
 */
export const PHYSICAL_PATH = `q=$t; r=; while [ ! -d "$q" ] && [ ! -L "$q" ]; do r=/\${q##*/}$r; q=\${q%/*}; [ -n "$q" ] || q=/; done
if [ -d "$q" ] && cd -P -- "$q" 2>/dev/null; then echo "real=\${PWD%/}$r"; else echo "real=$(realpath -m -- "$t")"; fi
cd /`;

/**
 * Shell run on the new fstab in "$t" before it replaces /etc/fstab: a line libmount cannot parse
 * fails the write (exit 4, findmnt's message on stderr). Only syntax: sources that are not
 * reachable yet are fine, so no --verify (which also resolves every UUID= source on the host).
 */
export const FSTAB_SYNTAX_CHECK = `rs_v=$(findmnt --tab-file "$t" -n -o TARGET 2>&1 >/dev/null) || :
case $rs_v in *'parse error'*) printf '%s\\n' "$rs_v" >&2; exit 4 ;; esac`;

export function mount(o: MountOptions): Resource<MountFacts, MountStep | FileWrite> {
  const path = checkAbsolutePath(o.path, 'mount path');
  if (!o.fstype || /\s/.test(o.fstype)) throw new InputError(`mount ${path}: fstype is required and has no spaces`);
  if ((o.source === undefined) === (o.device === undefined)) throw new InputError(`mount ${path}: give exactly one of source or device`);
  checkToken(o.fstype, `mount ${path}: fstype`, 64);
  if (o.source !== undefined) checkToken(o.source, `mount ${path}: source`, VALUE_LIMITS.path);
  for (const opt of o.options ?? []) checkToken(opt, `mount ${path}: option`, VALUE_LIMITS.path);
  const device = o.device !== undefined ? checkAbsolutePath(o.device, 'device') : undefined;
  const options = o.options?.length ? o.options : ['defaults'];
  for (const opt of options) if (!opt || /[\s,]/.test(opt)) throw new InputError(`mount ${path}: invalid option ${JSON.stringify(opt)}`);
  const bindKind = options.includes('rbind') ? 'rbind' : options.includes('bind') ? 'bind' : undefined;
  const fstabFile = checkAbsolutePath(o.fstabFile ?? '/etc/fstab', 'fstabFile');
  const persist = o.persist ?? true;
  const mkdir = o.mkdir ?? true;
  const within = o.within !== undefined ? checkAbsolutePath(o.within, 'within') : undefined;
  if (o.requireMarker !== undefined && (o.requireMarker.startsWith('/') || o.requireMarker.split('/').includes('..'))) {
    throw new InputError(`mount ${path}: requireMarker must be a path relative to the mounted root, got ${o.requireMarker}`);
  }
  const mode = normMode(o.mode);
  const wantFlags = options.filter((x) => VFS_FLAGS.includes(x));
  const kernelOpts = options.filter((x) => !USERSPACE.test(x));

  const entryFor = (f: MountFacts): FstabEntry => ({
    source: device ? `UUID=${f.source.uuid}` : o.source!,
    target: path,
    fstype: o.fstype,
    options: options.join(','),
    dump: o.dump ?? 0,
    pass: o.pass ?? 0,
  });
  const newFstab = (f: MountFacts) => setEntry(contentText(f.fstab), entryFor(f));

  /** Is what is mounted at `path` the thing we want? */
  const liveMatches = (f: MountFacts): boolean => {
    const live = f.live!;
    if (device) return f.source.majmin !== undefined && live.majmin === hexMajMin(f.source.majmin);
    if (bindKind) return f.source.devIno !== undefined && f.target.devIno === f.source.devIno;
    return live.fstype === o.fstype && (live.source === o.source || ['tmpfs', 'proc', 'sysfs', 'devpts', 'mqueue'].includes(o.fstype));
  };
  const flagDiff = (live: Live): string[] => {
    const d: string[] = [];
    for (const flag of wantFlags) if (!live.options.includes(flag)) d.push(`+${flag}`);
    // rw is only enforced when asked for: a bind of a read-only tree (/sys) stays read-only.
    if (options.includes('rw') && live.options.includes('ro')) d.push('-ro');
    return d;
  };

  const mountCommand = (): string => {
    const p = shq(path);
    if (bindKind) {
      const cmds = [`mount --${bindKind} -- ${shq(o.source!)} ${p}`];
      // Bind mounts take per-mount flags (ro, nosuid...) only through a remount.
      if (wantFlags.length) cmds.push(`mount -o ${shq(['remount', 'bind', ...wantFlags].join(','))} ${p}`);
      return cmds.join('\n');
    }
    const src = device ?? o.source!;
    const opts = kernelOpts.length ? ` -o ${shq(kernelOpts.join(','))}` : '';
    return `mount -t ${shq(o.fstype)}${opts} -- ${shq(src)} ${p}`;
  };

  // The last own lines read (hosts alike answer them alike; the map is only read).
  let lastOwn: { own: string; kv: Map<string, string> } | undefined;
  const readOwn = (own: string) => {
    if (lastOwn?.own === own) return lastOwn.kv;
    const kv = new Map<string, string>();
    for (const l of own.split('\n')) {
      const eq = l.indexOf('=');
      if (eq > 0) kv.set(l.slice(0, eq), l.slice(eq + 1));
    }
    lastOwn = { own, kv };
    return kv;
  };

  const fstab = managedFile<MountFacts>({
    path: fstabFile,
    get: (f) => f.fstab,
    set: (f, file) => ({ ...f, fstab: file }),
    backup: true,
    stepName: `fstab entry for ${path}`,
    check: FSTAB_SYNTAX_CHECK,
  });

  return {
    ...common('mount', `mount:${path}`, o),
    verifiable: true,
    claims: [`mountpoint:${path}`],
    files: persist ? [fstab] : undefined,
    ...probed(
      () => {
        // Builtins here; the target's (and a bind source's) identity, mode and emptiness come from
        // one find for every mount of the script, what is mounted from the shared mount table.
        const mk = o.requireMarker;
        const t = shq(path);
        const s = bindKind ? shq(o.source!) : undefined;
        const lines = [`t=${t}`];
        if (s) lines.push(`s=${s}; if [ -e "$s" ]; then echo source=present; else echo source=absent; fi`);
        lines.push('rs_target_kind "$t"');
        if (device) {
          // maj:min of a plain /dev/NAME from sysfs (no stat); the UUID from the superblock itself
          // (udev's by-uuid links can lag right after a mkfs).
          lines.push(`d=${shq(device)}; if [ -b "$d" ]; then
  echo "dev=$d"
  mm=; [ ! -L "$d" ] && [ -r "/sys/class/block/\${d##*/}/dev" ] && IFS= read -r mm < "/sys/class/block/\${d##*/}/dev"
  if [ -n "$mm" ]; then echo "majmin_dec=$mm"; else echo "majmin=$(stat -L -c '%t:%T' -- "$d")"; fi
  echo "uuid=$(blkid -p -s UUID -o value -- "$d" 2>/dev/null)"
else echo source=absent; fi`);
        }
        if (within) {
          lines.push(PHYSICAL_PATH);
        }
        if (mk !== undefined) {
          // Seen through the mountpoint once mounted, or on a local bind source before that: parse picks.
          lines.push(`[ -d "$t" ] && { [ -e "$t"/${shq(mk)} ] && echo marker_t=yes || echo marker_t=no; }`);
          if (s) lines.push(`[ -d "$s" ] && { [ -e "$s"/${shq(mk)} ] && echo marker_s=yes || echo marker_s=no; }`);
        }
        // Own lines, the target's id (and the bind source's), its mount table lines, fstab.
        return {
          kind: TARGET_KIND,
          own: inline(lines.join('\n')),
          target: { batch: PATH_IDS, arg: path },
          source: bindKind ? { batch: PATH_IDS, arg: o.source! } : undefined,
          table: mountTableProbe(path),
          fstab: fstab.probe(),
        };
      },
      (a): MountFacts => {
        const kv = readOwn(a.own);
        const target = a.target;
        const live = topMount(a.table, path);
        const marker = live ? kv.get('marker_t') : kv.get('marker_s');
        return {
          marker: marker === undefined ? undefined : marker === 'yes',
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
          },
        };
      },
    ),
    diff(f): Change<MountStep | FileWrite>[] {
      const changes: Change<MountStep | FileWrite>[] = [];
      // messages name the device by the path the host resolved (a placeholder is no path there)
      const what = (device && f.source.path) ?? device ?? o.source;
      if (f.live && !liveMatches(f)) {
        throw new Refusal(`${path} already has ${f.live.source} (${f.live.fstype}) mounted, not ${what}; unmount it first`);
      }
      if ((device || bindKind) && !f.source.exists) {
        if (o.optional && !f.live) return [];
        throw new Refusal(`mount source ${device ?? o.source} does not exist`);
      }
      if (device && !f.source.uuid) throw new Refusal(`${what} has no filesystem UUID (not formatted?)`);
      if (f.target.kind === 'link') throw new Refusal(`mountpoint ${path} is a symlink; refusing to mount through it`);
      if (within && f.target.real !== undefined && f.target.real !== within && !f.target.real.startsWith(within + '/')) {
        throw new Refusal(`mountpoint ${path} resolves to ${f.target.real}, outside ${within}`);
      }
      if (o.requireMarker !== undefined && f.marker === false) {
        throw new Refusal(`${what} is not populated: marker ${o.requireMarker} is missing; nothing mounted`);
      }
      if (f.target.kind === 'absent') {
        if (!mkdir) throw new Refusal(`mountpoint ${path} does not exist`);
        changes.push({ summary: `create mountpoint ${path}${mkdir === 'file' ? ' (empty file)' : ''}`, data: 'mkdir' });
      } else if (!f.live && f.target.kind === 'dir' && !f.target.empty && !o.overNonEmpty) {
        throw new Refusal(`${path} is a non-empty directory; mounting would hide its content (set overNonEmpty to allow)`);
      } else if (f.target.kind === 'other') {
        throw new Refusal(`mountpoint ${path} is neither a directory nor a file`);
      }
      if (persist) {
        const want = entryFor(f);
        const text = f.fstab.content !== undefined ? contentText(f.fstab) : '';
        const have = findEntry(text, path);
        // Several entries for the path (another tool's, or an older racksmith's): collapsed into one.
        const duplicates = entryCount(text, path) > 1;
        if (!have || !sameEntry(have, want) || duplicates) {
          const summary = !have
            ? `${fstabFile}: add ${formatEntry(want)}`
            : duplicates
              ? `${fstabFile}: one ${path} entry instead of ${entryCount(text, path)}`
              : `${fstabFile}: update ${path} entry`;
          changes.push(...fstab.changes(f, newFstab(f), { create: summary, update: summary }));
        }
      }
      if (!f.live) changes.push({ summary: `mount ${what} on ${path} (${o.fstype}, ${options.join(',')})`, data: 'mount' });
      else {
        const d = flagDiff(f.live);
        if (d.length) changes.push({ summary: `remount ${path}: ${d.join(' ')}`, data: 'remount' });
      }
      if (mode && (f.live ? f.target.mode !== mode : true)) {
        changes.push({ summary: `${path}: mode ${f.live ? f.target.mode : '(after mount)'} → ${mode}`, data: 'mode' });
      }
      return changes;
    },
    apply(_, changes): Step[] {
      const does = (what: MountStep) => changes.some((c) => c.data === what);
      const steps: Step[] = [];
      const p = shq(path);
      if (does('mkdir')) {
        steps.push({
          name: `create mountpoint ${path}`,
          script: mkdir === 'file' ? `mkdir -p -- ${shq(path.replace(/\/[^/]*$/, '') || '/')}\n: >> ${p}` : `mkdir -p -- ${p}`,
        });
      }
      if (does('mount')) {
        const check =
          o.requireMarker === undefined
            ? ''
            : `\nif [ ! -e ${p}/${shq(o.requireMarker)} ]; then umount ${p}; echo ${shq(`${device ?? o.source} is not populated: marker ${o.requireMarker} is missing; unmounted again`)} >&2; exit 5; fi`;
        steps.push({ name: `mount ${path}`, script: mountCommand() + check });
      } else if (does('remount')) {
        steps.push({
          name: `remount ${path}`,
          script: `mount -o ${shq(['remount', ...(bindKind ? ['bind'] : []), ...(options.includes('rw') ? ['rw'] : []), ...wantFlags].join(','))} ${p}`,
        });
      }
      // fstab only after the mount worked: a broken entry never outlives a failed mount.
      steps.push(...fstab.steps(changes));
      if (does('mode')) steps.push({ name: `mode of ${path}`, script: `chmod ${shq(mode!)} -- ${p}` });
      return steps;
    },
  };
}

/** What a mount's own changes do (besides its fstab file's): the data of its changes. */
type MountStep = 'mkdir' | 'mount' | 'remount' | 'mode';
