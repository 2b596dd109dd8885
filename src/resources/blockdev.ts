/**
 * Block-device resources of the storage playbook:
 *  - xfsFormat: mkfs.xfs on a blank whole disk; keeps an XFS disk; refuses anything else unless
 *    format_allow names it (and never a disk in use);
 *  - ioTuning: scheduler and queue values in sysfs, each clamped to what the device accepts;
 *  - xattrCheck: set, read back and remove a user xattr on a mounted data filesystem;
 *  - diskMount: mount.ts for a disk given by path or by serial.
 * The udev rule that persists the I/O tuning is in udev.ts. Decisions live in blockdev-logic.ts.
 */
import { define, inline, type DefinePart, type ProbeBatch, type ProbePart } from '../contract/probe.ts';
import { shq } from '../shell/quote.ts';
import { InputError } from '../util/errors.ts';
import {
  ioChanges,
  ioTarget,
  mergeProfiles,
  parseDiskFacts,
  parseXattrFacts,
  planFormat,
  profileFor,
  xattrDiff,
  XATTR_NAME,
  type DiskFacts,
  type FormatPlan,
  type IoChange,
  type IoProfile,
  type ProfileName,
  type XattrFacts,
} from './blockdev-logic.ts';
import { checkAbsolutePath } from './file-common.ts';
import { mount, type MountFacts, type MountOptions } from './mount.ts';
import { escapeMountinfo } from './mount-table.ts';
import { common, ProbeError, Refusal, type CommonOptions, type Resource, type Step } from '../contract/resource.ts';

/** A whole disk as the inventory names it: a device path (kernel name or /dev/disk/by-id/...) or a serial. */
export type DiskSpec = { device: string; serial?: undefined } | { serial: string; device?: undefined };

export function specText(s: DiskSpec): string {
  return s.device ?? `serial ${s.serial}`;
}

export interface ProbeOptions {
  /** Prefix for /sys, /dev, /proc and /run (tests run the probe over a fake tree). */
  root?: string;
}

// The probe runs for every disk of every host: shell builtins (read, case, test -ef) where a
// helper process (cat, sed, grep, readlink, tr) would be started per value.

/** Shell that sets $rs_v to the first line of file $1 (empty when unreadable). */
const READ_FN = `rs_rd() { rs_v=; IFS= read -r rs_v < "$1"; } 2>/dev/null`;

/** Shell that sets $rs_v to $1 without leading and trailing blanks. */
const TRIM_FN = `rs_trim() { rs_v=\${1#"\${1%%[![:space:]]*}"}; rs_v=\${rs_v%"\${rs_v##*[![:space:]]}"}; }`;

/** A `case` pattern for the udev properties racksmith uses. */
const UDEV_KEYS = 'E:ID_SERIAL=*|E:ID_SERIAL_SHORT=*|E:ID_WWN=*|E:ID_WWN_WITH_EXTENSION=*|E:ID_MODEL=*|E:ID_BUS=*|E:ID_PATH=*';
/** Shell that prints those properties as udev.KEY=VALUE, for the device with decimal maj:min $1. */
const UDEV_FN = `rs_udev() {
  db="$R/run/udev/data/b$1"
  [ -r "$db" ] || return 0
  while IFS= read -r l; do case $l in ${UDEV_KEYS}) echo "udev.\${l#E:}" ;; esac; done < "$db"
  return 0
}`;

/** Shell that sets $mm (decimal maj:min) for the one disk whose serial or WWN is $1, or prints error=. */
const SERIAL_FN = `rs_by_serial() {
  rs_n=0; rs_found=; mm=
  for s in "$R"/sys/block/*; do
    [ -r "$s/dev" ] || continue
    rs_rd "$s/dev"; m=$rs_v; rs_hit=
    db="$R/run/udev/data/b$m"
    if [ -r "$db" ]; then
      while IFS= read -r l; do
        case $l in ${UDEV_KEYS}) rs_trim "\${l#*=}"; [ "$rs_v" = "$1" ] && rs_hit=1 ;; esac
      done < "$db"
    fi
    for x in device/serial serial device/wwid wwid; do
      [ -r "$s/$x" ] || continue
      rs_rd "$s/$x"; rs_trim "$rs_v"; [ "$rs_v" = "$1" ] && rs_hit=1
    done
    if [ -n "$rs_hit" ]; then rs_n=$((rs_n + 1)); rs_found="$rs_found \${s##*/}"; mm=$m; fi
  done
  if [ "$rs_n" = 0 ]; then echo "error=no disk has serial or WWN $1"; mm=; return 1; fi
  if [ "$rs_n" -gt 1 ]; then echo "error=serial $1 matches several disks:$rs_found"; mm=; return 1; fi
  return 0
}`;

/** Shell that sets $rs_mm to the decimal maj:min of block device file $1 (stat prints hex). */
const MAJMIN_FN = `rs_majmin() {
  # /dev/NAME itself (not a link) is the kernel's NAME: sysfs has its number, no stat needed.
  if [ ! -L "$1" ] && [ -r "$R/sys/class/block/\${1##*/}/dev" ]; then rs_rd "$R/sys/class/block/\${1##*/}/dev"; rs_mm=$rs_v; [ -n "$rs_mm" ] && return 0; fi
  rs_mm=$(stat -L -c '%t:%T' -- "$1") && rs_mm="$((0x\${rs_mm%:*})):$((0x\${rs_mm#*:}))"
}`;

/** The same fingerprint in probe and apply: sha256 of blkid -p and wipefs -n of the disk. */
const FP_FN = `rs_fp() {
  # (exit codes kept with || so that apply steps, which run under set -e, go on)
  rs_brc=0; rs_b=$(blkid -p -o export -- "$1" 2>&1) || rs_brc=$?
  rs_wrc=0; rs_w=$(wipefs -n -p -i -O OFFSET,TYPE,UUID,LABEL -- "$1" 2>&1) || rs_wrc=$?
  rs_fpv=$(sha256sum <<RS_FP_EOF
$rs_b
$rs_w
RS_FP_EOF
)
  rs_fpv=\${rs_fpv%% *}
}`;

/**
 * Shell that sets $rs_bm to the mount table by block device (major 0 is never one: no proc, tmpfs,
 * overlay), read once per shell (and root $R):
 * a line `MAJ:MIN<TAB>FSTYPE<TAB> MOUNTPOINT...` per device, its mountpoints in mount table order
 * (escaped as there: no blanks), FSTYPE that of its last mount. One awk for every disk of a
 * script, not one per disk (a storage node has dozens).
 */
const BLOCK_MOUNTS_FN = `rs_bm_root=
rs_block_mounts() {
  [ "$rs_bm_root" = "=$R" ] && return 0
  rs_bm_root="=$R"
  rs_bm=$(awk '$3 ~ /^0:/ { next } { fs = ""; for (i = 7; i < NF; i++) if ($i == "-") { fs = $(i + 1); break }
    if (!($3 in mps)) order[++n] = $3
    mps[$3] = mps[$3] " " $5; last[$3] = fs }
  END { for (j = 1; j <= n; j++) printf "%s\\t%s\\t%s\\n", order[j], last[order[j]], mps[order[j]] }' "$R/proc/self/mountinfo" 2>/dev/null)
}`;

/**
 * Shell that prints the facts of one disk (parsed by parseDiskFacts): rs_disk ROOT SPEC_TEXT
 * device PATH | rs_disk ROOT SPEC_TEXT serial SERIAL. A function, so that each disk's part is an
 * inline part (no subshell of its own): it returns where a section would exit, reads only what
 * it set, and leaves the working directory at /.
 */
const DISK_FN = `rs_disk() {
  # (the default field separators: the lists below are split on them, whatever ran before)
  IFS=' \t\n'
  R=$1
  printf 'spec=%s\\n' "$2"
  if [ "$3" = device ]; then
    p=$4
    if [ ! -e "$R$p" ]; then printf 'error=%s does not exist\\n' "$p"; return 0; fi
    if [ ! -b "$R$p" ]; then printf 'error=%s is not a block device\\n' "$p"; return 0; fi
    rs_majmin "$R$p"; mm=$rs_mm
  else
    rs_by_serial "$4" || return 0
  fi
  sys=; cd -P -- "$R/sys/dev/block/$mm" 2>/dev/null && sys=$PWD; cd /
  if [ -z "$sys" ]; then printf 'error=%s (%s) is not in sysfs\\n' "$2" "$mm"; return 0; fi
  k=\${sys##*/}
  echo "kname=$k"
  echo "majmin=$mm"
  [ -e "$sys/partition" ] && echo partition=1
  rs_rd "$sys/size"; echo "size=$rs_v"
  rs_rd "$sys/queue/rotational"; echo "rotational=$rs_v"
  rs_rd "$sys/ro"; echo "ro=$rs_v"
  rs_udev "$mm"
  for x in device/serial serial device/wwid wwid; do [ -r "$sys/$x" ] && { rs_rd "$sys/$x"; echo "sys.$x=$rs_v"; }; done
  for l in "$R"/dev/disk/by-id/*; do [ -L "$l" ] && [ "$l" -ef "$R/dev/$k" ] && echo "byid=\${l#"$R"}"; done
  pairs="$mm=$k"
  for s2 in "$sys/$k"*; do
    [ -r "$s2/partition" ] || continue
    rs_rd "$s2/dev"; pm=$rs_v; echo "part=\${s2##*/} $pm"; pairs="$pairs $pm=\${s2##*/}"
    for h in "$s2"/holders/*; do [ -e "$h" ] && echo "holder=\${s2##*/} \${h##*/}"; done
  done
  for h in "$sys"/holders/*; do [ -e "$h" ] && echo "holder=$k \${h##*/}"; done
  # The disk's and its partitions' mounts: mount=MAJ:MIN NAME MOUNTPOINT, and the disk's own fstype.
  rs_block_mounts
  rs_mnt=
  for pr in $pairs; do
    pm=\${pr%%=*}
    case $rs_bm in "$pm\t"*) rest=\${rs_bm#"$pm\t"} ;; *"
$pm\t"*) rest=\${rs_bm#*"
$pm\t"} ;; *) continue ;; esac
    rest=\${rest%%"
"*}
    fs=\${rest%%"\t"*}
    set -f # mountpoints are words of the list: never patterns
    for mp in \${rest#*"\t"}; do rs_mnt="$rs_mnt
mount=$pm \${pr#*=} $mp"; done
    set +f
    [ "$pm" = "$mm" ] && [ -n "$fs" ] && rs_mnt="$rs_mnt
mountfs=$fs"
  done
  rs_mnt=\${rs_mnt#"
"}
  [ -n "$rs_mnt" ] && printf '%s\\n' "$rs_mnt"
  if [ -r "$R/proc/swaps" ]; then
    while read -r f rest; do
      [ -b "$f" ] || continue
      rs_majmin "$f" && case " $pairs " in *" $rs_mm="*) echo "swap=$f";; esac
    done < "$R/proc/swaps"
  fi
  if [ -n "$rs_mnt" ]; then
    # A mounted disk is never formatted: its signatures are not read (blkid, wipefs, sha256sum).
    echo content=mounted
  else
    rs_fp "$R/dev/$k"
    while IFS= read -r l; do case $l in DEVNAME=*) ;; *=*) echo "blkid.$l" ;; esac; done <<RS_B_EOF
$rs_b
RS_B_EOF
    echo "blkid_rc=$rs_brc"
    if [ "$rs_wrc" = 0 ]; then
      while IFS= read -r l; do [ -n "$l" ] && echo "sig=$l"; done <<RS_W_EOF
$rs_w
RS_W_EOF
    else echo "sig=?,wipefs failed: $(printf '%s' "$rs_w" | tr '\\n,' '  ')"; fi
    echo "fp=$rs_fpv"
  fi
  q="$sys/queue"
  for x in scheduler nr_requests read_ahead_kb rq_affinity max_sectors_kb max_hw_sectors_kb; do [ -r "$q/$x" ] && { rs_rd "$q/$x"; echo "q.$x=$rs_v"; }; done
  t=; for x in "$sys"/mq/*/nr_tags; do
    rs_rd "$x"; case $rs_v in ''|*[!0-9]*) continue ;; esac
    if [ -z "$t" ] || [ "$rs_v" -lt "$t" ]; then t=$rs_v; fi
  done
  [ -n "$t" ] && echo "q.nr_tags=$t"
  for c in "$R/run/racksmith/io-caps/$k".*; do [ -r "$c" ] && { rs_rd "$c"; echo "cap.\${c##*.}=$rs_v"; }; done
  echo end=1
}`;

/** The shell functions every disk probe calls: defined once per script, however many disks. */
const DISK_HELPERS = [READ_FN, TRIM_FN, MAJMIN_FN, UDEV_FN, SERIAL_FN, FP_FN, BLOCK_MOUNTS_FN, DISK_FN].join('\n');

/** The probe part that defines the disk probes' helpers. */
export const diskHelpers = (): DefinePart => define(DISK_HELPERS);

/** The call that probes one disk (after DISK_HELPERS). */
function diskCall(spec: DiskSpec, o: ProbeOptions): string {
  const how = spec.device !== undefined ? `device ${shq(spec.device)}` : `serial ${shq(spec.serial)}`;
  return `rs_disk ${shq(o.root ?? '')} ${shq(specText(spec))} ${how}`;
}

/** Shell that resolves a spec to a disk and prints its facts (parsed by parseDiskFacts), on its own. */
export function diskProbe(spec: DiskSpec, o: ProbeOptions = {}): string {
  return `${DISK_HELPERS}\n${diskCall(spec, o)}`;
}

/** diskProbe without the helpers' definitions (a probe part after diskHelpers()): one inline part per disk. */
export function diskProbeBody(spec: DiskSpec, o: ProbeOptions = {}): ProbePart {
  return inline(diskCall(spec, o));
}

/**
 * Probe parts for a disk and the other disks of its list: each part is some disk's own probe,
 * shared word for word with that disk's resources, so knowing which entries are the same disk
 * costs nothing on the host.
 */
export function diskProbeParts(spec: DiskSpec, others: readonly DiskSpec[] = [], o: ProbeOptions = {}): ProbePart[] {
  return [diskHelpers(), diskProbeBody(spec, o), ...others.map((x) => diskProbeBody(x, o))];
}

/** Facts of the first disk of `diskProbeParts` answers (one per disk), with `sameAs` from the others' maj:min. */
export function parseDiskParts(parts: readonly unknown[]): DiskFacts {
  if (!parts.length || parts.some((p) => typeof p !== 'string')) throw new ProbeError('unexpected disk probe output');
  const [self, ...others] = (parts as string[]).map((p) => parseDiskFacts(p));
  if (!self.error) for (const x of others) if (!x.error && x.majmin === self.majmin) self.sameAs.push(x.spec);
  return self;
}

/** Shell that refuses (exit 3) unless /dev/KNAME is still the probed disk: same maj:min, same content fingerprint, not mounted, no holders. */
function guardScript(f: DiskFacts): string {
  const k = f.kname;
  return `${FP_FN}
d=${shq(`/dev/${k}`)}
[ -b "$d" ] || { echo "$d is gone" >&2; exit 3; }
[ "$(cat ${shq(`/sys/class/block/${k}/dev`)})" = ${shq(f.majmin)} ] || { echo "$d is no longer the probed disk ${f.majmin}" >&2; exit 3; }
rs_fp "$d"
[ "$rs_fpv" = ${shq(f.fingerprint)} ] || { echo "$d changed since it was probed (signatures differ); not formatting" >&2; exit 3; }
mms=" ${[f.majmin, ...f.partitions.map((p) => p.majmin)].join(' ')} "
if awk -v mms="$mms" 'index(mms, " " $3 " ") { found = 1 } END { exit !found }' /proc/self/mountinfo; then echo "$d (or a partition of it) is mounted now; not formatting" >&2; exit 3; fi
if [ -n "$(ls -A ${shq(`/sys/class/block/${k}/holders`)} 2>/dev/null)" ]; then echo "$d is held by another device now; not formatting" >&2; exit 3; fi`;
}

export interface XfsFormatOptions extends CommonOptions {
  spec: DiskSpec;
  /** Name of the disk (ids: `disk:NAME`). */
  name: string;
  /** The mountpoint the disk is for: an XFS disk mounted there is converged. */
  mountpoint: string;
  /** format_allow: by-id paths or serials of disks that may be erased although not blank. */
  allow?: readonly string[];
  /** The other disks of the host's list: one that is this same disk makes this one refuse. */
  others?: readonly DiskSpec[];
}

/** A whole disk carrying XFS: formats a blank disk, keeps an XFS one, refuses the rest (see planFormat). */
export function xfsFormat(o: XfsFormatOptions): Resource<DiskFacts, FormatPlan> {
  const allow = o.allow ?? [];
  return {
    ...common('xfs-format', `disk:${o.name}`, o),
    verifiable: true,
    probe: () => diskProbeParts(o.spec, o.others),
    parse: (out) => parseDiskParts(out.parts),
    diff(f) {
      const plan = planFormat(f, { allow, mountpoint: o.mountpoint });
      return plan.action === 'keep' ? [] : [{ summary: plan.summary, data: plan }];
    },
    apply(f, changes): Step[] {
      const plan = changes[0]?.data;
      if (plan?.action !== 'format') return [];
      const d = shq(`/dev/${f.kname}`);
      if (plan.blank) {
        // Proven blank: no -f, so mkfs.xfs itself also refuses any signature that appeared.
        return [{ name: `mkfs.xfs /dev/${f.kname}`, script: `${guardScript(f)}\nmkfs.xfs -q ${d}` }];
      }
      const wipeParts = f.partitions
        .map(
          (p) =>
            `wipefs -a -q -- ${shq(`/dev/${p.name}`)} || echo ${shq(`could not wipe partition /dev/${p.name}; the whole disk is erased anyway`)} >&2`,
        )
        .join('\n');
      return [
        {
          name: `erase and mkfs.xfs /dev/${f.kname} (format_allow: ${plan.allowedBy})`,
          script: `${guardScript(f)}
${wipeParts}
# (wipefs warns that a loop device cannot re-read its partition table, and exits 0)
wipefs -a -q -- ${d}
blockdev --rereadpt ${d} 2>/dev/null || true
mkfs.xfs -f -q ${d}`,
        },
      ];
    },
  };
}

export interface IoTuningOptions extends CommonOptions {
  spec: DiskSpec;
  name: string;
  /** Effective profiles (mergeProfiles); the disk's rotational flag picks one unless `profile` says. */
  profiles?: Record<ProfileName, IoProfile>;
  profile?: ProfileName;
}

/** Scheduler and queue values of a disk, written to sysfs now (the udev rule persists them). */
export function ioTuning(o: IoTuningOptions): Resource<DiskFacts, IoChange> {
  const profiles = o.profiles ?? mergeProfiles();
  const target = (f: DiskFacts) => {
    if (f.error) throw new Refusal(f.error);
    if (f.isPartition) throw new Refusal(`${f.spec} is a partition (${f.kname}); I/O tuning applies to whole disks`);
    return ioTarget(profiles[profileFor(f, o.profile)], f.queue);
  };
  return {
    ...common('io-tuning', `io:${o.name}`, o),
    verifiable: true,
    // The full disk probe, word for word the disk resource's: the engine runs it once for both.
    probe: () => diskProbeParts(o.spec),
    parse: (out) => parseDiskParts(out.parts),
    diff: (f) => ioChanges(f.kname, target(f), f.queue),
    apply(f, changes): Step[] {
      const t = changes[0].data!.target;
      const differ = new Set(changes.map((c) => c.data!.key));
      // Switching the scheduler resets nr_requests: then every value is written again, after it.
      // Writing max_sectors_kb can raise read_ahead_kb: then read_ahead_kb is written after it.
      const all = differ.has('scheduler');
      if (differ.has('max_sectors_kb')) differ.add('read_ahead_kb');
      const writes = t.values.filter(([k]) => all || differ.has(k)).map(([k, v]) => `rs_set ${k} ${shq(v)}`);
      const k = f.kname;
      return [
        {
          name: `I/O tuning of /dev/${k} (${profileFor(f, o.profile)} profile)`,
          script: `k=${shq(k)}; q="/sys/block/$k/queue"
[ "$(cat "/sys/block/$k/dev" 2>/dev/null)" = ${shq(f.majmin)} ] || { echo "/sys/block/$k is no longer the probed disk ${f.majmin}" >&2; exit 3; }
rs_set() {
  f="$q/$1"
  if { printf '%s\\n' "$2" > "$f"; } 2>/dev/null; then :
  elif [ "$1" = scheduler ]; then echo "$f: the kernel refused $2" >&2; return 1
  else
    # The driver caps it: find the largest value it takes between the current one and ours.
    lo=$(cat "$f"); hi=$2
    while [ $((hi - lo)) -gt 1 ]; do
      mid=$(( (lo + hi) / 2 ))
      if { printf '%s\\n' "$mid" > "$f"; } 2>/dev/null; then lo=$mid; else hi=$mid; fi
    done
    { printf '%s\\n' "$lo" > "$f"; } 2>/dev/null || :
  fi
  if [ "$1" != scheduler ]; then
    got=$(cat "$f")
    if [ "$got" -lt "$2" ]; then
      mkdir -p /run/racksmith/io-caps && printf '%s\\n' "$got" > "/run/racksmith/io-caps/$k.$1"
      echo "$f: the kernel accepted at most $got (wanted $2)" >&2
    fi
  fi
  return 0
}
${writes.join('\n')}`,
        },
      ];
    },
  };
}

export interface XattrCheckOptions extends CommonOptions {
  /** A mounted filesystem (the mountpoint). */
  path: string;
}

/**
 * The xattr check of every data mount of a script at once: one awk finds which are mounted, one
 * setfattr, getfattr and setfattr -x each take them all (four processes, not four per disk: a
 * storage node has a dozen). Per path, the key=value lines parseXattrFacts reads.
 */
export const XATTR_CHECKS: ProbeBatch = {
  script(paths) {
    const n = shq(XATTR_NAME);
    return `v="racksmith-$$"
rs_m=$(RS_MPS=${shq(paths.map(escapeMountinfo).join('\n'))} awk 'BEGIN { n = split(ENVIRON["RS_MPS"], a, "\\n"); for (i = 1; i <= n; i++) w[a[i]] = 1 } ($5 in w) { print $5 }' /proc/self/mountinfo 2>/dev/null)
rs_m="
$rs_m
"
set --
${paths.map((p) => `case "$rs_m" in *${shq(`\n${escapeMountinfo(p)}\n`)}*) set -- "$@" ${shq(p)} ;; esac`).join('\n')}
for t in "$@"; do printf 'mounted=%s\\n' "$t"; done
if [ $# -gt 0 ]; then
  echo "want=$v"
  echo @set; setfattr -n ${n} -v "$v" -- "$@" 2>&1; echo "@rc=$?"
  echo @get; getfattr --absolute-names -n ${n} -- "$@" 2>/dev/null
  echo @removed; setfattr -x ${n} -- "$@" 2>&1; echo "@rc=$?"
fi
:`;
  },
  split(stdout, paths) {
    const mounted = new Set<string>();
    const sec: Record<string, string[]> = { head: [] };
    let cur = 'head';
    for (const l of stdout.split('\n')) {
      if (l === '@set' || l === '@get' || l === '@removed') sec[(cur = l.slice(1))] = [];
      else if (cur === 'head' && l.startsWith('mounted=')) mounted.add(l.slice(8));
      else sec[cur].push(l);
    }
    const want = (sec.head.find((l) => l.startsWith('want=')) ?? 'want=').slice(5);
    // setfattr/getfattr name the file in each message ("setfattr: /ais/d1: Operation not supported")
    const outcome = (lines: string[] | undefined, p: string) => {
      if (!lines) return 'did not run';
      const mine = lines.filter((l) => l.includes(`: ${p}: `));
      if (mine.length) return mine.join(' ');
      return lines.some((l) => l.startsWith('@rc=')) ? 'ok' : 'did not finish';
    };
    const got = new Map<string, string>();
    let file: string | undefined;
    for (const l of sec.get ?? []) {
      if (l.startsWith('# file: ')) file = l.slice(8);
      else if (file !== undefined && l.startsWith(`${XATTR_NAME}=`))
        got.set(file, l.slice(XATTR_NAME.length + 1).replace(/^"(.*)"$/, '$1'));
    }
    return paths.map((p) =>
      !mounted.has(p)
        ? 'mounted=0\n'
        : `mounted=1\nwant=${want}\nset=${outcome(sec.set, p)}\ngot=${got.get(p) ?? ''}\nremoved=${outcome(sec.removed, p)}\n`,
    );
  },
};

/** The mounted filesystem at `path` takes user xattrs: set, read back and remove user.racksmith.probe. */
export function xattrCheck(o: XattrCheckOptions): Resource<XattrFacts> {
  const path = checkAbsolutePath(o.path, 'xattr check path');
  return {
    ...common('xattr-check', `xattr:${path}`, o),
    verifiable: true,
    // Leaves nothing behind: the attribute is removed again (only the root's ctime moves).
    probe: () => [{ batch: XATTR_CHECKS, arg: path }],
    parse: (out) => parseXattrFacts(out.stdout),
    diff: (f) => xattrDiff(path, f),
    apply: () => [],
  };
}

export interface DiskMountOptions extends Omit<MountOptions, 'device' | 'source'> {
  spec: DiskSpec;
}

/** Resolve a serial to /dev/KNAME in shell (prints nothing when it is not exactly one disk). */
function serialResolver(serial: string): string {
  return `$(R=; ${READ_FN}
${TRIM_FN}
${UDEV_FN}
${SERIAL_FN}
rs_by_serial ${shq(serial)} >/dev/null && k=$(readlink -f -- "/sys/dev/block/$mm") && echo "/dev/\${k##*/}")`;
}

/**
 * mount.ts for a disk given by path, or by serial: the mount resource takes a device path, so a
 * serial is given to it as the placeholder /dev/disk/by-serial/SERIAL, which its probe and steps
 * resolve on the host (no such path exists, so anything left unresolved fails safe).
 */
export function diskMount(o: DiskMountOptions): Resource<MountFacts> {
  const { spec, ...rest } = o;
  if (spec.device !== undefined) return mount({ ...rest, device: spec.device });
  if (/[/\s]/.test(spec.serial)) throw new InputError(`serial ${JSON.stringify(spec.serial)} cannot contain '/' or spaces`);
  const placeholder = `/dev/disk/by-serial/${spec.serial}`;
  const inner = mount({ ...rest, device: placeholder });
  const quoted = shq(placeholder);
  const resolved = `"${serialResolver(spec.serial)}"`;
  const sub = (script: string) => script.split(quoted).join(resolved);
  return {
    ...inner,
    probe: () => {
      const p = inner.probe();
      // (inline parts carry their shell as the argument)
      return typeof p === 'string'
        ? sub(p)
        : p.map((part) => (typeof part === 'string' ? sub(part) : 'define' in part ? part : { ...part, arg: sub(part.arg) }));
    },
    apply: (f, changes) => inner.apply(f, changes as Parameters<typeof inner.apply>[1]).map((s) => ({ ...s, script: sub(s.script) })),
  };
}
