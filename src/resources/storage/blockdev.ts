/**
 * Block-device resources of the storage playbook:
 *  - xfsFormat: mkfs.xfs on a blank whole disk; keeps an XFS disk; refuses anything else unless
 *    format_allow names it (and never a disk in use);
 *  - ioTuning: scheduler and queue values in sysfs, each clamped to what the device accepts;
 *  - xattrCheck: set, read back and remove a user xattr on a mounted data filesystem;
 *  - diskMount: mount.ts for a disk given by path or by serial.
 * The udev rule that persists the I/O tuning is in udev.ts. Decisions live in blockdev-logic.ts.
 */
import { define, inline, isInline, probed, type BatchPart, type DefinePart, type ProbeBatch, type Probed } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { BLOCK_DEVICES, fileTopic, KERNEL_MODULES, MOUNTS, PACKAGES } from '../../contract/state-topics.ts';
import { InputError } from '../../util/errors.ts';
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
import { checkAbsolutePath } from '../core/file-common.ts';
import { mount, type MountFacts, type MountOptions } from '../core/mount.ts';
import { escapeMountinfo, MOUNTINFO, MOUNTINFO_FN, mountpointsText } from '../core/mount-table.ts';
import { BLOCK_IDS, BLOCK_IDS_FN, READ_WOULD_WAIT } from '../core/block-ids.ts';
import { HOST_TABLES_FN } from '../core/host-tables.ts';
import { common, Refusal, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';

/**
 * Where the io tuning step records a driver cap (a queue value the kernel settled below what was
 * written, until boot), which every disk probe reads back (a fixed path, no quoting needed).
 */
const IO_CAPS_DIR = '/run/racksmith/io-caps';

/**
 * Where the format step leaves the UUID of each filesystem it made (an empty file per UUID, until
 * boot): a recorded mountpath whose filesystem is gone takes a new one only when racksmith made it
 * on this host (a blank replacement, or a disk format_allow named), or storage_adopt names it.
 */
export const XFS_MADE_DIR = '/run/racksmith/xfs-made';

/** Probe shell (builtins only) that prints `made=UUID` for each filesystem the format step made (XFS_MADE_DIR). */
export const XFS_MADE_LIST = `for p in ${XFS_MADE_DIR}/*; do [ -e "$p" ] && printf 'made=%s\\n' "\${p##*/}"; done; :`;

/** The UUIDs XFS_MADE_LIST printed (lower case, as blkid prints them). */
export function parseMadeList(out: string): string[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('made='))
    .map((l) => l.slice(5).toLowerCase());
}

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

/**
 * Shell: rs_udev_each MAJ:MIN FN calls FN with each of UDEV_PROPS that udev has of the block
 * device MAJ:MIN (root $R) as `KEY=VALUE` in $rs_ul: from the host tables' one read
 * (core/host-tables.ts), walked with builtins. `read` of udev's files took a system call per byte,
 * for every device of the host each time a disk was looked up by serial.
 */
const UDEV_EACH_FN = `rs_udev_each() {
  rs_ht_load "$R"
  rs_udev_p="$R/run/udev/data/b$1:E:"; rs_udev_fn=$2
  case $rs_ht_udev in *"$rs_udev_p"*) ;; *) return 0 ;; esac
  rs_udev_ifs=$IFS; rs_udev_opts=$-; set -f
  IFS='
'
  for rs_ul in $rs_ht_udev; do
    case $rs_ul in "$rs_udev_p"*) rs_ul=\${rs_ul#"$rs_udev_p"}; "$rs_udev_fn" ;; esac
  done
  IFS=$rs_udev_ifs
  case $rs_udev_opts in *f*) ;; *) set +f ;; esac
}`;

/** Shell that prints udev's UDEV_PROPS as udev.KEY=VALUE, for the device with decimal maj:min $1. */
const UDEV_FN = `rs_udev_print() { printf 'udev.%s\\n' "$rs_ul"; }
rs_udev() { rs_udev_each "$1" rs_udev_print; return 0; }`;

/** udev properties that name a disk: what a serial spec and format_allow entries are matched against. */
const UDEV_ID_KEYS = 'ID_SERIAL=*|ID_SERIAL_SHORT=*|ID_WWN=*|ID_WWN_WITH_EXTENSION=*';
/**
 * Shell that sets $rs_ids to the serial and WWN values of the disk at sysfs dir $1 with decimal
 * maj:min $2 (udev's and sysfs's, trimmed), each between tabs: `<TAB>S1<TAB>0x5000c5...<TAB>`.
 */
const IDS_FN = `rs_ids_udev() { case $rs_ul in ${UDEV_ID_KEYS}) rs_trim "\${rs_ul#*=}"; [ -n "$rs_v" ] && rs_ids="$rs_ids$rs_v\t" ;; esac; }
rs_ids() {
  rs_ids='\t'
  rs_udev_each "$2" rs_ids_udev
  for x in device/serial serial device/wwid wwid; do
    [ -r "$1/$x" ] || continue
    rs_rd "$1/$x" || :; rs_trim "$rs_v"; [ -n "$rs_v" ] && rs_ids="$rs_ids$rs_v\t"
  done
  return 0
}`;

/**
 * Shell: rs_dids_load sets $rs_dids to a line per block device of root $R, `NAME MAJ:MIN` and its
 * ids as rs_ids gives them (`sdb 8:16<TAB>S1<TAB>...<TAB>`), once per shell and root: every disk
 * given by serial and every format_allow serial looks through it, not through every device's
 * files again. rs_dids_each FN calls FN with each line in $rs_dl.
 */
const DISK_IDS_FN = `rs_dids_root=
rs_dids_load() {
  [ "$rs_dids_root" = "=$R" ] && return 0
  rs_dids_root="=$R"; rs_dids=
  for s in "$R"/sys/block/*; do
    [ -r "$s/dev" ] || continue
    rs_rd "$s/dev"; rs_dm=$rs_v; rs_ids "$s" "$rs_dm"
    rs_dids="$rs_dids\${s##*/} $rs_dm$rs_ids
"
  done
}
rs_dids_each() {
  rs_dids_load
  rs_dids_ifs=$IFS; rs_dids_opts=$-; set -f
  IFS='
'
  for rs_dl in $rs_dids; do "$1"; done
  IFS=$rs_dids_ifs
  case $rs_dids_opts in *f*) ;; *) set +f ;; esac
}`;

/** Shell that sets $mm (decimal maj:min) for the one disk whose serial or WWN is $1, or prints error=. */
const SERIAL_FN = `rs_by_serial_line() {
  case $rs_dl in *"\t$rs_want\t"*) rs_n=$((rs_n + 1)); rs_found="$rs_found \${rs_dl%% *}"; mm=\${rs_dl#* }; mm=\${mm%%"\t"*} ;; esac
}
rs_by_serial() {
  rs_n=0; rs_found=; mm=; rs_want=$1
  rs_dids_each rs_by_serial_line
  if [ "$rs_n" = 0 ]; then echo "error=no disk has serial or WWN $1"; mm=; return 1; fi
  if [ "$rs_n" -gt 1 ]; then echo "error=serial $1 matches several disks:$rs_found"; mm=; return 1; fi
  return 0
}`;

/**
 * Shell that prints, for each serial/WWN value of the disk at sysfs dir $1 (maj:min $2), the
 * host's disks that carry it: `iddisks=VALUE<TAB>sdb sdc`. A format_allow serial must name one.
 */
const IDDISKS_FN = `rs_iddisks_line() { case $rs_dl in *"\t$v\t"*) l="$l \${rs_dl%% *}" ;; esac; }
rs_iddisks() {
  rs_ids "$1" "$2"; rs_mine=\${rs_ids#?}
  while [ -n "$rs_mine" ]; do
    v=\${rs_mine%%"\t"*}; rs_mine=\${rs_mine#*"\t"}; l=
    rs_dids_each rs_iddisks_line
    printf 'iddisks=%s\\t%s\\n' "$v" "\${l# }"
  done
}`;

/** Shell that sets $rs_mm to the decimal maj:min of block device file $1 (stat prints hex). */
const MAJMIN_FN = `rs_majmin() {
  # /dev/NAME itself (not a link) is the kernel's NAME: sysfs has its number, no stat needed.
  if [ ! -L "$1" ] && [ -r "$R/sys/class/block/\${1##*/}/dev" ]; then rs_rd "$R/sys/class/block/\${1##*/}/dev"; rs_mm=$rs_v; [ -n "$rs_mm" ] && return 0; fi
  rs_mm=$(stat -L -c '%t:%T' -- "$1") && rs_mm="$((0x\${rs_mm%:*})):$((0x\${rs_mm#*:}))"
}`;

/** Shell that sets $rs_kn to the kernel name of block device file $1 ('' when it is none). */
const KNAME_FN = `rs_kname() {
  rs_kn=
  if [ ! -L "$1" ] && [ -r "$R/sys/class/block/\${1##*/}/dev" ]; then rs_kn=\${1##*/}; return 0; fi
  rs_majmin "$1" 2>/dev/null || return 0
  cd -P -- "$R/sys/dev/block/$rs_mm" 2>/dev/null && rs_kn=\${PWD##*/}
  cd /
}`;

/**
 * Shell that prints `stack=NAME` for every device stacked with the disk at sysfs dir $1: below it
 * (its slaves: a multipath map's path devices, the disk under a dm-linear; the block device a loop
 * disk reads), and above it (its holders: the dm devices over it), each transitively. They read
 * the disk's own blocks, so blkid finds its filesystem UUID on those at offset 0 too: the same
 * disk, not a clone (blockdev-logic.ts: uuidClones). So do the classic LVM snapshots of a data LV:
 * the origin reads its blocks through ORIGIN-real (dm uuid `<the origin's>-real`), which each
 * snapshot (a holder of it with a `-cow` store) holds too; udev gives a snapshot's by-uuid link a
 * lower priority than the origin's, so a mount by UUID finds the origin. Only when the disk is the
 * origin: a snapshot given as the data disk would lose to its origin at a mount by UUID, which stays
 * named as a clone; so does a thin snapshot, a volume of its own.
 */
const STACK_FN = `rs_stack_add() { case $rs_stack_seen in *" $1 "*) return 1 ;; esac; rs_stack_seen="$rs_stack_seen$1 "; echo "stack=$1"; }
rs_stack_real() {
  if [ -z "$rs_stack_du" ] || ! rs_rd "$1/dm/uuid" || [ "$rs_v" != "$rs_stack_du-real" ]; then return 0; fi
  for rs_sh in "$1"/holders/*; do if rs_stack_cow "$rs_sh"; then rs_stack_add "\${rs_sh##*/}" || :; fi; done
}
rs_stack_cow() {
  for rs_sc in "$1"/slaves/*; do rs_rd "$rs_sc/dm/uuid" && case $rs_v in *-cow) return 0 ;; esac; done
  return 1
}
rs_stack_down() {
  for rs_sd in "$1"/slaves/*; do [ -e "$rs_sd" ] && rs_stack_add "\${rs_sd##*/}" && { rs_stack_real "$rs_sd"; rs_stack_down "$rs_sd"; }; done
  if [ -r "$1/loop/backing_file" ]; then
    rs_rd "$1/loop/backing_file" || :
    case $rs_v in /*) [ -b "$R$rs_v" ] && rs_kname "$R$rs_v" && [ -n "$rs_kn" ] && rs_stack_add "$rs_kn" && rs_stack_down "$R/sys/class/block/$rs_kn" ;; esac
  fi
  return 0
}
rs_stack_up() {
  for rs_su in "$1"/holders/*; do [ -e "$rs_su" ] && rs_stack_add "\${rs_su##*/}" && rs_stack_up "$rs_su"; done
  return 0
}
rs_stack() { rs_stack_seen=" $2 "; rs_stack_du=; rs_rd "$1/dm/uuid" && rs_stack_du=$rs_v; rs_stack_down "$1"; rs_stack_up "$1"; }`;

/**
 * Shell that prints, for every device of the host that carries filesystem UUID $1 (from the
 * script's one blkid: core/block-ids.ts), `uuiddev=PATH<TAB>KNAME<TAB>BACKING`: the path blkid
 * names it by (/dev/mapper/NAME for a dm device), its kernel name, and for a loop device other
 * than the disk $2 the kernel name of the block device it reads (its backing file), else empty.
 * Whether one is a clone or the disk itself is decided from these (blockdev-logic.ts: uuidClones).
 */
const UUID_DEVS_FN = `rs_uuid_devs() {
  rs_bid_devs "$1"
  rs_ud_ifs=$IFS; rs_ud_opts=$-; set -f
  IFS='
'
  for rs_ud_d in $rs_bid_vs; do
    IFS=$rs_ud_ifs
    rs_kname "$rs_ud_d"; rs_ud_k=$rs_kn; rs_ud_b=
    if [ -n "$rs_ud_k" ] && [ "$rs_ud_k" != "$2" ] && [ -r "$R/sys/class/block/$rs_ud_k/loop/backing_file" ]; then
      rs_rd "$R/sys/class/block/$rs_ud_k/loop/backing_file" || :
      case $rs_v in /*) [ -b "$R$rs_v" ] && rs_kname "$R$rs_v" && rs_ud_b=$rs_kn ;; esac
    fi
    printf 'uuiddev=%s\\t%s\\t%s\\n' "$rs_ud_d" "$rs_ud_k" "$rs_ud_b"
  done
  IFS=$rs_ud_ifs
  case $rs_ud_opts in *f*) ;; *) set +f ;; esac
}`;

/** Where a partition usually starts (bytes): 34, 63, 64 and 128 sectors, GPT on 4Kn, 1-16 MiB alignments. */
export const PARTITION_OFFSETS = [17408, 24576, 32256, 32768, 65536, 1048576, 2097152, 4194304, 8388608, 16777216];

/**
 * Shell that writes the bytes of file $1 at each OFFSET LENGTH pair of the arguments after it,
 * one region after the other (fewer at the end of the file or at a read error, as dd).
 *
 * Why two readers: a process costs about as much as reading a region, and the blank-disk sample
 * reads 21 regions per disk in the probe, in the storage play's probe and again in the guard
 * before mkfs; one perl (present on every Debian and Ubuntu host: perl-base is Essential) reads
 * them all, where dd takes one process per region (bench/README "Where the first run goes").
 * Both write the same bytes, which the same od | awk reads (test/unit/resources/storage/disk-sample.test.ts).
 */
const REGIONS_FN = `rs_regions() {
  rs_rf=$1; shift
  if command -v perl >/dev/null 2>&1; then
    perl -e 'open(my $f, "<:raw", shift) or exit 1;
while (@ARGV > 1) {
  my ($o, $l) = splice(@ARGV, 0, 2);
  sysseek($f, $o, 0) or next;
  while ($l > 0) { my $n = sysread($f, my $b, $l < 65536 ? $l : 65536); last unless $n; print $b; $l -= $n }
}' "$rs_rf" "$@" 2>/dev/null
  else
    while [ $# -gt 1 ]; do dd if="$rs_rf" bs=65536 iflag=skip_bytes,count_bytes skip="$1" count="$2" 2>/dev/null; shift 2; done
  fi
}`;

/**
 * Shell that samples the data of device $1 (size $2 bytes): the first 1 MiB + 128 KiB, 128 KiB
 * at each partition alignment from 2 MiB to 16 MiB, 80 KiB around each sixteenth (where XFS puts
 * its secondary superblocks), the last 1 MiB; a device up to 32 MiB is read whole. One reader for
 * all regions (rs_regions) into one od and one awk. Sets $rs_s to what is not zero: `data=OFFSET HEX` (each
 * region's first non-zero byte), `xfsb=OFFSET` (an XFS superblock magic at a 4 KiB boundary),
 * `tar=257` (a ustar header), `sample=READ WANT`, and with `psig.OFFSET.KEY=VALUE` what blkid
 * finds at the partition offsets inside regions that are not zero.
 */
const SAMPLE_FN = `rs_sample() {
  rs_sd=$1; rs_sz=$2; rs_s=
  if [ "$rs_sz" -le 33554432 ]; then set -- 0 "$rs_sz"
  else
    set -- 0 1179648 2097152 131072 4194304 131072 8388608 131072 16777216 131072
    i=1
    # shellcheck disable=SC2017 # each offset rounded down to 4 KiB: the division before the product is the point
    while [ "$i" -lt 16 ]; do set -- "$@" $((rs_sz / 16 * i / 4096 * 4096 - 16384)) 81920; i=$((i + 1)); done
    set -- "$@" $((rs_sz - 1048576)) 1048576
  fi
  rs_segs=$*
  rs_s=$(rs_regions "$rs_sd" "$@" |
    od -A d -t x1 -w512 | awk -v segs="$rs_segs" -v probes=${shq(PARTITION_OFFSETS.join(' '))} '
function segof(p) { while (seg < ns && p >= ss[seg] + sl[seg]) seg++; return seg }
function hit(p, c,   s, b, h) {
  s = segof(p); if (done[s]) return; done[s] = 1
  match(c, /[1-9a-f]/); b = int((RSTART - 2) / 3); h = substr(c, 3 * b + 1, 12); gsub(/ /, "", h)
  printf "data=%.0f %s\\n", so[s] + p - ss[s] + b, h
}
function line(p, c,   d) {
  last = p; lastc = c; lastz = c !~ /[1-9a-f]/
  if (lastz) return
  hit(p, c); d = so[seg] + p - ss[seg]
  if (d > 0 && d % 4096 == 0 && substr(c, 1, 12) == " 58 46 53 42" && nx++ < 16) printf "xfsb=%.0f\\n", d
  if (d == 0 && substr(c, 772, 15) == " 75 73 74 61 72") print "tar=257"
}
BEGIN {
  n = split(segs, a, " ")
  for (i = 1; i < n; i += 2) { ns++; so[ns] = a[i]; sl[ns] = a[i + 1]; ss[ns] = t; t += a[i + 1] }
  seg = 1; last = -512; lastz = 1
}
$0 == "*" { rep = 1; next }
{
  sp = index($0, " "); p = (sp ? substr($0, 1, sp - 1) : $0) + 0
  # od wrote "*" for lines equal to the last one: those not zero count in every region they span
  if (rep && !lastz) for (q = last + 512; q < p; ) { s = segof(q); hit(q, lastc); q = ss[s] + sl[s] }
  rep = 0
  if (sp) line(p, substr($0, sp)); else got = p
}
END {
  printf "sample=%.0f %.0f\\n", got, t
  m = split(probes, o, " ")
  for (i = 1; i <= m; i++) for (s = 1; s <= ns; s++) if (done[s] && o[i] >= so[s] && o[i] < so[s] + sl[s]) { print "probe=" o[i]; break }
}')
  case $rs_s in *probe=*) ;; *) return 0 ;; esac
  rs_p=$rs_s; rs_s=
  while IFS= read -r l; do
    case $l in
    probe=*)
      o=\${l#probe=}; rs_b2=$(blkid -p -O "$o" -o export -- "$rs_sd" 2>/dev/null) || continue
      while IFS= read -r l2; do case $l2 in DEVNAME=*|'') ;; *) rs_s="$rs_s
psig.$o.$l2" ;; esac; done <<RS_P_EOF
$rs_b2
RS_P_EOF
      ;;
    *) rs_s="$rs_s
$l" ;;
    esac
  done <<RS_S_EOF
$rs_p
RS_S_EOF
  rs_s=\${rs_s#"
"}
  return 0
}`;

/**
 * The same fingerprint in probe and apply: sha256 of blkid -p and wipefs -n of device $1 and,
 * when they find nothing, of its data sample (size $2 bytes). rs_sig reads them, rs_fp_sum
 * hashes what it read (the probe skips the hash of an XFS disk, which is never formatted).
 */
const FP_FN = `rs_sig() {
  # (exit codes kept with || so that apply steps, which run under set -e, go on)
  rs_brc=0; rs_b=$(blkid -p -o export -- "$1" 2>&1) || rs_brc=$?
  rs_wrc=0; rs_w=$(wipefs -n -p -i -O OFFSET,TYPE,UUID,LABEL -- "$1" 2>&1) || rs_wrc=$?
  # (-O came to wipefs after --force, which rs_inuse asks --help about: this one opens O_EXCL)
  if [ "$rs_wrc" = 0 ]; then rs_wipefs_excl=yes; fi
  rs_s=
  if [ "$rs_brc" = 2 ] && [ "$rs_wrc" = 0 ] && [ -z "$rs_w" ]; then rs_sample "$1" "$2"; fi
}
rs_fp() { rs_sig "$1" "$2"; rs_fp_sum; }
rs_fp_sum() {
  rs_fpv=$(sha256sum <<RS_FP_EOF
$rs_b
$rs_w
$rs_s
RS_FP_EOF
)
  rs_fpv=\${rs_fpv%% *}
}`;

/**
 * Shell that sets $rs_bmv to the `FSTYPE<TAB> MOUNTPOINT...` of block device maj:min $1 (its
 * mountpoints in mount table order, escaped as there: no blanks; FSTYPE that of its last mount),
 * or returns 1 (major 0 is never a block device: no proc, tmpfs, overlay). From the mount table
 * read once per shell (and root $R: mount-table.ts), walked with builtins.
 */
const BM_GET_FN = `rs_bm_line() {
  if [ $# -lt 7 ] || [ "$3" != "$rs_bm_mm" ]; then return 0; fi
  rs_bmv="$rs_bmv $5"; rs_bm_n=1
  shift 6
  while [ $# -gt 0 ] && [ "$1" != - ]; do shift; done
  rs_bm_fs=\${2-}
}
rs_bm_get() {
  rs_bmv=; rs_bm_fs=; rs_bm_n=; rs_bm_mm=$1
  case $1 in 0:*) return 1 ;; esac
  rs_mi_each "$R" rs_bm_line " $1 "
  [ -n "$rs_bm_n" ] || return 1
  rs_bmv="$rs_bm_fs\t$rs_bmv"
}`;

/**
 * Shell that prints who uses device $1 the way the kernel sees it, for its `MAJ:MIN=NAME` pairs
 * $2 (the disk and its partitions): `excl=ok` or `excl=ERROR` from an exclusive open (wipefs
 * --no-act opens O_EXCL and, with a type nothing has, touches nothing: EBUSY when mounted in any
 * mount namespace, held by dm/md/swap or open exclusively); when that fails, `nsmount=PID MAJ:MIN
 * MOUNTPOINT` (mounts in other mount namespaces) and `openby=PID COMM`; and `loop=NAME BACKING`,
 * `loopmount=NAME MOUNTPOINT`, `loopholder=NAME HOLDER` for loop devices backed by the disk or a
 * partition (a loop over a block device claims nothing, so only loop/backing_file tells).
 */
const INUSE_FN = `rs_wipefs_excl=
rs_inuse() {
  rs_dv=$1; rs_pairs=$2
  # (wipefs opens O_EXCL since util-linux 2.24, the one that has --force: asked once per script)
  [ -n "$rs_wipefs_excl" ] || case $(wipefs --help 2>&1) in *--force*) rs_wipefs_excl=yes ;; *) rs_wipefs_excl=no ;; esac
  rs_xrc=0; rs_x=$(LOCK_BLOCK_DEVICE=no wipefs --no-act --quiet --types racksmith-exclusive-open --all -- "$rs_dv" 2>&1) || rs_xrc=$?
  if [ "$rs_wipefs_excl" = no ]; then echo 'excl=wipefs of util-linux before 2.24 cannot open a disk exclusively'
  elif [ "$rs_xrc" = 0 ]; then echo excl=ok
  else
    rs_x=\${rs_x%%"
"*}
    printf 'excl=%s\\n' "\${rs_x##*: }"
    set --; for pr in $rs_pairs; do set -- "$@" -e " \${pr%%=*} "; done
    grep -s -H -F "$@" "$R"/proc/[0-9]*/mountinfo | {
      seen=
      while IFS= read -r l; do
        p=\${l%%/mountinfo:*}; p=\${p##*/}
        set -f
        # shellcheck disable=SC2086 # the mountinfo line split into its fields (set -f: no globbing)
        set -- \${l#*/mountinfo:}; set +f
        case $seen in *"|$3 $5|"*) continue ;; esac
        seen="$seen|$3 $5|"; echo "nsmount=$p $3 $5"
      done
    }
    set --; for pr in $rs_pairs; do [ $# -gt 0 ] && set -- "$@" -o; set -- "$@" -lname "/dev/\${pr#*=}"; done
    find "$R"/proc/[0-9]*/fd "$@" 2>/dev/null | {
      seen=
      while IFS= read -r l; do
        p=\${l%/fd/*}; p=\${p##*/}
        case $seen in *" $p "*) continue ;; esac
        seen="$seen $p "; rs_rd "$R/proc/$p/comm" || :; echo "openby=$p $rs_v"
      done
    }
  fi
  for b in "$R"/sys/class/block/loop*/loop/backing_file; do
    [ -r "$b" ] || continue
    rs_rd "$b" || :; bf=$rs_v
    case $bf in /*) [ -b "$R$bf" ] || continue ;; *) continue ;; esac
    rs_majmin "$R$bf" || continue
    case " $rs_pairs " in *" $rs_mm="*) ;; *) continue ;; esac
    ln=\${b%/loop/backing_file}; ln=\${ln##*/}
    echo "loop=$ln $bf"
    rs_rd "$R/sys/class/block/$ln/dev" || :
    if rs_bm_get "$rs_v"; then set -f; for mp in \${rs_bmv#*"\t"}; do echo "loopmount=$ln $mp"; done; set +f; fi
    for h in "$R/sys/class/block/$ln"/holders/*; do [ -e "$h" ] && echo "loopholder=$ln \${h##*/}"; done
  done
  return 0
}`;

/**
 * Shell that prints the facts of one disk (parsed by parseDiskFacts): rs_disk ROOT SPEC_TEXT
 * device PATH | rs_disk ROOT SPEC_TEXT serial SERIAL. A function, so that each disk's part is an
 * inline part (no subshell of its own): it returns where a section would exit, reads only what
 * it set, and leaves the working directory at /.
 *
 * A mounted disk costs builtins only (it is never formatted: its content is not read), besides
 * the script's one blkid: its filesystem UUID, which devices share it (a clone) and the devices
 * stacked with it (which share it as the same disk). An unmounted one is read (blkid, wipefs) and
 * asked who uses it (the exclusive open, the loop devices over it: an XFS disk mounted in another
 * mount namespace is not taken either); an XFS one also which devices share its UUID and which
 * are stacked with it; one that might be formatted also gets the data sample (when no signature
 * is found) and the count of disks sharing each of its serials.
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
  rs_rd "$sys/size"; rs_size=$rs_v; echo "size=$rs_v"
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
  rs_mnt=
  for pr in $pairs; do
    pm=\${pr%%=*}
    rs_bm_get "$pm" || continue
    fs=\${rs_bmv%%"\t"*}
    set -f # mountpoints are words of the list: never patterns
    for mp in \${rs_bmv#*"\t"}; do rs_mnt="$rs_mnt
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
  # A device a read would wait on (core/block-ids.ts): what sysfs, udev and the mount table say of
  # it (the mountpath it holds), not its content, or the probe would hang with it.
  rs_blk_mm "$R" "$mm"
  if [ -n "$rs_blk_w" ]; then
    printf 'blocked=%s\\nerror=%s (%s) %s: %s; not read\\n' "$rs_blk_w" "$2" "$k" "$rs_blk_w" ${shq(READ_WOULD_WAIT)}
    return 0
  fi
  if [ -n "$rs_mnt" ]; then
    # A mounted disk is never formatted: its content is not read (no wipefs, sample), only the
    # filesystem UUID its mountpath is recorded by (storage.json): from the script's one blkid of
    # the host's devices (block-ids.ts), a fake root's own device read alone.
    echo content=mounted
    if [ -z "$R" ]; then
      rs_bid_uuid "/dev/$k"; echo "fsuuid=$rs_bid_v"
      # Another device that carries it (a clone): fstab mounts by UUID, so after a reboot the copy
      # may be mounted here; as for an unmounted XFS disk below (builtins: blkid ran already).
      [ -n "$rs_bid_v" ] && rs_uuid_devs "$rs_bid_v" "$k"
    else echo "fsuuid=$(blkid -p -s UUID -o value -- "$R/dev/$k" 2>/dev/null)"; fi
    rs_stack "$sys" "$k"
  else
    rs_sig "$R/dev/$k" $((\${rs_size:-0} * 512))
    # The fingerprint guards a format: an XFS disk is never formatted (a hash process saved per disk).
    case "
$rs_b
" in *"
TYPE=xfs
"*) rs_fpv= ;; *) rs_fp_sum ;; esac
    while IFS= read -r l; do case $l in DEVNAME=*) ;; *=*) echo "blkid.$l" ;; esac; done <<RS_B_EOF
$rs_b
RS_B_EOF
    echo "blkid_rc=$rs_brc"
    if [ "$rs_wrc" = 0 ]; then
      while IFS= read -r l; do [ -n "$l" ] && echo "sig=$l"; done <<RS_W_EOF
$rs_w
RS_W_EOF
    else echo "sig=?,wipefs failed: $(printf '%s' "$rs_w" | tr '\\n,' '  ')"; fi
    [ -n "$rs_s" ] && printf '%s\\n' "$rs_s"
    echo "fp=$rs_fpv"
    case "
$rs_b
" in
    *"
TYPE=xfs
"*)
      # Kept, not formatted: only whether another device carries its UUID (a clone) matters.
      # (blkid scans the host's devices: not over a fake root, whose /proc/partitions is not its own)
      rs_u=
      case $rs_b in *"
UUID="*) rs_u=\${rs_b#*"
UUID="}; rs_u=\${rs_u%%"
"*} ;; esac
      if [ -z "$R" ] && [ -n "$rs_u" ]; then rs_uuid_devs "$rs_u" "$k"; fi
      rs_stack "$sys" "$k"
      # Mounted in another mount namespace, open exclusively, a loop over it: not ours to mount.
      rs_inuse "$R/dev/$k" "$pairs" ;;
    *)
      rs_inuse "$R/dev/$k" "$pairs"
      rs_iddisks "$sys" "$mm" ;;
    esac
  fi
  q="$sys/queue"
  for x in scheduler nr_requests read_ahead_kb rq_affinity max_sectors_kb max_hw_sectors_kb; do [ -r "$q/$x" ] && { rs_rd "$q/$x"; echo "q.$x=$rs_v"; }; done
  t=; for x in "$sys"/mq/*/nr_tags; do
    rs_rd "$x"; case $rs_v in ''|*[!0-9]*) continue ;; esac
    if [ -z "$t" ] || [ "$rs_v" -lt "$t" ]; then t=$rs_v; fi
  done
  [ -n "$t" ] && echo "q.nr_tags=$t"
  for c in "$R${IO_CAPS_DIR}/$k".*; do [ -r "$c" ] && { rs_rd "$c"; echo "cap.\${c##*.}=$rs_v"; }; done
  echo end=1
}`;

/** The shell functions of the disk probes alone (the mount table's and blkid's are shared with mounts). */
const DISK_OWN_HELPERS = [
  READ_FN,
  TRIM_FN,
  MAJMIN_FN,
  KNAME_FN,
  STACK_FN,
  UUID_DEVS_FN,
  UDEV_EACH_FN,
  UDEV_FN,
  IDS_FN,
  DISK_IDS_FN,
  SERIAL_FN,
  IDDISKS_FN,
  REGIONS_FN,
  SAMPLE_FN,
  FP_FN,
  BM_GET_FN,
  INUSE_FN,
  DISK_FN,
].join('\n');

/** The shell functions every disk probe calls. */
const DISK_HELPERS = [MOUNTINFO_FN, BLOCK_IDS_FN, DISK_OWN_HELPERS].join('\n');

/**
 * The probe parts that define the disk probes' helpers: defined once per script, however many
 * disks; the mount table's and blkid's as the same parts the mounts ask for, so that a script
 * defines them once.
 */
export const diskHelpers = (): readonly DefinePart[] => [MOUNTINFO, BLOCK_IDS, define(DISK_OWN_HELPERS)];

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
export function diskProbeBody(spec: DiskSpec, o: ProbeOptions = {}): BatchPart {
  return inline(diskCall(spec, o));
}

/**
 * What a disk's probe reads (Resource.reads): the block devices and their users, the mount table,
 * the programs it runs (blkid, wipefs), the modules that bring devices, and the recorded driver caps.
 */
export const DISK_READS: readonly string[] = [BLOCK_DEVICES, MOUNTS, PACKAGES, KERNEL_MODULES, fileTopic(IO_CAPS_DIR)];

/**
 * A disk's probe and parse, with the other disks of its list: each part is some disk's own probe,
 * shared word for word with that disk's resources, so knowing which entries are the same disk
 * costs nothing on the host. The facts are the disk's, with `sameAs` from the others' maj:min.
 */
export function diskFactsProbe(spec: DiskSpec, others: readonly DiskSpec[] = [], o: ProbeOptions = {}): Probed<DiskFacts> {
  return probed(
    () => ({ helpers: diskHelpers(), self: diskProbeBody(spec, o), others: others.map((x) => diskProbeBody(x, o)) }),
    (answers) => {
      // parsed facts are frozen and shared (parseDiskFacts caches per answer): add sameAs to a copy
      const self = parseDiskFacts(answers.self);
      const others = answers.others.map((p) => parseDiskFacts(p));
      const same = self.error ? [] : others.filter((x) => !x.error && x.majmin === self.majmin).map((x) => x.spec);
      return same.length ? { ...self, sameAs: [...self.sameAs, ...same] } : self;
    },
  );
}

/**
 * Shell that prints, for a disk given as rs_disk's arguments (ROOT device PATH | ROOT serial
 * SERIAL), what a wipe must know whatever the disk holds: `iddisks=` (rs_iddisks) and who uses
 * it (rs_inuse: loop devices over it, mounts in other mount namespaces, openers).
 */
const DISK_USERS_FN = `rs_disk_users() {
  IFS=' \t\n'; R=$1
  if [ "$2" = device ]; then [ -b "$R$3" ] || return 0; rs_majmin "$R$3" || return 0; mm=$rs_mm
  else rs_by_serial "$3" >/dev/null || return 0; fi
  sys=; cd -P -- "$R/sys/dev/block/$mm" 2>/dev/null && sys=$PWD; cd /
  [ -n "$sys" ] || return 0
  k=\${sys##*/}; pairs="$mm=$k"
  for s2 in "$sys/$k"*; do [ -r "$s2/partition" ] && { rs_rd "$s2/dev"; pairs="$pairs $rs_v=\${s2##*/}"; }; done
  rs_iddisks "$sys" "$mm"
  rs_inuse "$R/dev/$k" "$pairs"
  return 0
}`;

/**
 * Probe parts (after diskHelpers()) that tell, for a disk that may be mounted or carry XFS (whose
 * probe leaves them out), the count of the host's disks carrying each of its serials/WWNs and who
 * else uses it (`iddisks=`, `loop=`, `nsmount=`, ... as parseDiskFacts reads them): what a wipe
 * must know. Its answer: `users`.
 */
export function diskUsersParts(spec: DiskSpec, o: ProbeOptions = {}): { usersFn: DefinePart; users: BatchPart } {
  const how = spec.device !== undefined ? `device ${shq(spec.device)}` : `serial ${shq(spec.serial)}`;
  return { usersFn: define(DISK_USERS_FN), users: inline(`rs_disk_users ${shq(o.root ?? '')} ${how}`) };
}

/** The helpers the format guard calls (a step has its own shell: it defines what it uses). */
const GUARD_HELPERS = [READ_FN, MAJMIN_FN, REGIONS_FN, SAMPLE_FN, FP_FN, MOUNTINFO_FN, BM_GET_FN, INUSE_FN].join('\n');

/**
 * Shell that exits 3 unless /dev/KNAME is still the probed disk (maj:min) and nothing uses it:
 * the kernel's exclusive open succeeds (no mount in any mount namespace, no holder such as
 * dm/md, no exclusive opener) and no loop device is backed by it. When the open fails, what holds
 * it is named: mounted here, held by another device, else what rs_inuse found. `between` checks
 * more after the identity (the format's size and content); `words` say what is refused and when.
 */
function diskGuard(f: DiskFacts, words: { refusing: string; now: string; stillMounted: string }, between = ''): string {
  const k = f.kname;
  const sys = `/sys/class/block/${k}`;
  const pairs = [`${f.majmin}=${k}`, ...f.partitions.map((p) => `${p.majmin}=${p.name}`)].join(' ');
  const not = `; ${words.refusing}`;
  // The probe's exclusive open succeeded: this wipefs opens O_EXCL (util-linux 2.24 or later), no need to ask it again.
  const excl = f.exclusiveOpen === '' ? '\nrs_wipefs_excl=yes' : '';
  return `${GUARD_HELPERS}${excl}
R=
d=${shq(`/dev/${k}`)}
[ -b "$d" ] || { echo "$d is gone" >&2; exit 3; }
rs_rd ${shq(`${sys}/dev`)} || :
[ "$rs_v" = ${shq(f.majmin)} ] || { echo "$d is no longer the probed disk ${f.majmin}${words.refusing === 'not formatting' ? '' : not}" >&2; exit 3; }
${between}rs_u=$(rs_inuse "$d" ${shq(pairs)})
case $rs_u in excl=ok*) ;; *)
  # (a mount or a holder claims the disk: the exclusive open fails, and these say why)
  mms=" ${[f.majmin, ...f.partitions.map((p) => p.majmin)].join(' ')} "
  if awk -v mms="$mms" 'index(mms, " " $3 " ") { found = 1 } END { exit !found }' /proc/self/mountinfo; then echo "$d (or a partition of it) is ${words.stillMounted}${not}" >&2; exit 3; fi
  if [ -n "$(ls -A ${shq(`${sys}/holders`)} 2>/dev/null)" ]; then echo "$d is held by another device${words.now}${not}" >&2; exit 3; fi
  echo "$d is in use${words.now}, the kernel refuses to open it exclusively: $(printf '%s' "$rs_u" | tr '\\n' ' ')${not}" >&2; exit 3 ;;
esac
case $rs_u in *loop=*) echo "$d backs a loop device${words.now}: $(printf '%s' "$rs_u" | tr '\\n' ' ')${not}" >&2; exit 3 ;; esac`;
}

/** The regions rs_sample reads of a device of `size` bytes, as its OFFSET LENGTH pairs (made here, for the format guard). */
export function sampleRegions(size: number): number[] {
  if (size <= 32 * MiB) return [0, size];
  const out = [0, 1179648, 2097152, 131072, 4194304, 131072, 8388608, 131072, 16777216, 131072];
  // (as the shell's integer arithmetic: each sixteenth rounded down to 4 KiB)
  for (let i = 1; i < 16; i++) out.push(Math.floor((Math.floor(size / 16) * i) / 4096) * 4096 - 16384, 81920);
  out.push(size - MiB, MiB);
  return out;
}
const MiB = 1048576;

/** How many bytes rs_sample reads of a device of `size` bytes. */
export function sampledBytes(size: number): number {
  return sampleRegions(size).reduce((a, x, i) => (i % 2 ? a + x : a), 0);
}

/** Shell that succeeds when every byte rs_sample would read of `dev` (shell text, size `size`) is there and zero. */
export function zeroSample(dev: string, size: number): string {
  return `rs_regions ${dev} ${sampleRegions(size).join(' ')} | cmp -s -n ${sampledBytes(size)} - /dev/zero`;
}

/**
 * Right before mkfs: the disk guard, and the same size and content as probed. A disk the probe
 * proved blank is blank still: no signature (blkid, wipefs) and every sampled byte zero, read once
 * into cmp against /dev/zero (the probe's sample read nothing else). Any other disk: the same
 * fingerprint (signatures, and the data sample where there were none) as probed.
 */
function guardScript(f: DiskFacts, blank: boolean): string {
  const sys = `/sys/class/block/${f.kname}`;
  const changed = `{ echo "$d changed since it was probed (signatures or data differ); not formatting" >&2; exit 3; }`;
  const content =
    blank && f.sample?.want === sampledBytes(f.sizeBytes)
      ? `rs_brc=0; rs_b=$(blkid -p -o export -- "$d" 2>&1) || rs_brc=$?
rs_wrc=0; rs_w=$(wipefs -n -p -i -O OFFSET,TYPE,UUID,LABEL -- "$d" 2>&1) || rs_wrc=$?
if [ "$rs_brc" != 2 ] || [ "$rs_wrc" != 0 ] || [ -n "$rs_b$rs_w" ] || ! ${zeroSample('"$d"', f.sizeBytes)}; then ${changed}; fi`
      : `rs_fp "$d" $((rs_v * 512))
[ "$rs_fpv" = ${shq(f.fingerprint)} ] || ${changed}`;
  return diskGuard(
    f,
    { refusing: 'not formatting', now: ' now', stillMounted: 'mounted now' },
    `rs_rd ${shq(`${sys}/size`)} || :
[ "$rs_v" = ${shq(String(f.sizeBytes / 512))} ] || { echo "$d changed size since it was probed; not formatting" >&2; exit 3; }
${content}
`,
  );
}

/** Right before a wipe: the disk guard. */
export function wipeGuardScript(f: DiskFacts): string {
  return diskGuard(f, { refusing: 'not wiping', now: '', stillMounted: 'still mounted' });
}

/**
 * mkfs.xfs of /dev/KNAME whose root directory gets `mode` (a protofile: mkfs.xfs -p, in xfsprogs
 * for decades); then the new filesystem's UUID is left in XFS_MADE_DIR, which is how the
 * mountpath's record and mount tell this replacement from a filesystem made elsewhere.
 */
function mkfsScript(kname: string, mode: string, force: boolean): string {
  const proto = `/dev/null\n0 0\nd--${mode.slice(-3)} 0 0\n$\n`;
  const d = shq(`/dev/${kname}`);
  return `rs_pf=$(mktemp)
trap 'rm -f "$rs_pf"' EXIT
printf '%s' ${shq(proto)} > "$rs_pf"
mkfs.xfs${force ? ' -f' : ''} -q -p "$rs_pf" ${d}
rs_mu=$(blkid -p -s UUID -o value -- ${d}) || rs_mu=
case $rs_mu in ''|*[!0-9a-fA-F-]*) echo ${shq(`mkfs.xfs made /dev/${kname}, but blkid reads no UUID of it:`)} "$rs_mu" >&2; exit 1 ;; esac
mkdir -p ${XFS_MADE_DIR}
: > "${XFS_MADE_DIR}/$rs_mu"`;
}

export interface XfsFormatOptions extends CommonOptions {
  spec: DiskSpec;
  /** Name of the disk (ids: `disk:NAME`). */
  name: string;
  /** The mountpoint the disk is for: an XFS disk mounted there is converged. */
  mountpoint: string;
  /**
   * The other mountpoints of the host's list: an XFS disk mounted at one of them is kept too (a
   * disk moved to another slot keeps its mountpath, storage.json; the mount decides where it goes).
   */
  alsoAt?: readonly string[];
  /** format_allow: by-id paths or serials of disks that may be erased although not blank. */
  allow?: readonly string[];
  /** The other disks of the host's list: one that is this same disk makes this one refuse. */
  others?: readonly DiskSpec[];
  /** Mode of the root directory of a filesystem this resource makes (default 0750); a kept one is left alone. */
  rootMode?: string;
}

/** A whole disk carrying XFS: formats a blank disk, keeps an XFS one, refuses the rest (see planFormat). */
export function xfsFormat(o: XfsFormatOptions): Resource<DiskFacts, FormatPlan> {
  const allow = o.allow ?? [];
  for (const a of allow)
    if (!a || /[\s\0]/.test(a)) throw new InputError(`format_allow entry ${JSON.stringify(a)} must not be empty or contain blanks`);
  const rootMode = o.rootMode ?? '0750';
  if (!/^0?[0-7]{3}$/.test(rootMode))
    throw new InputError(`disk ${o.name}: root mode ${JSON.stringify(rootMode)} is not an octal mode like 0750`);
  return {
    ...common('xfs-format', `disk:${o.name}`, o),
    verifiable: true,
    reads: DISK_READS,
    ...diskFactsProbe(o.spec, o.others),
    diff(f) {
      const plan = planFormat(f, { allow, mountpoint: o.mountpoint, alsoAt: o.alsoAt });
      return plan.action === 'keep' ? [] : [{ summary: plan.summary, data: plan }];
    },
    apply(f, changes): Step[] {
      const plan = changes[0]?.data;
      if (plan?.action !== 'format') return [];
      const d = shq(`/dev/${f.kname}`);
      if (plan.blank) {
        // Proven blank: no -f, so mkfs.xfs itself also refuses any signature that appeared.
        return [{ name: `mkfs.xfs /dev/${f.kname}`, script: `${guardScript(f, true)}\n${mkfsScript(f.kname, rootMode, false)}` }];
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
          script: `${guardScript(f, false)}
${wipeParts}
# (wipefs warns that a loop device cannot re-read its partition table, and exits 0)
wipefs -a -q -- ${d}
blockdev --rereadpt ${d} 2>/dev/null || true
${mkfsScript(f.kname, rootMode, true)}`,
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
    reads: DISK_READS,
    // The full disk probe, word for word the disk resource's: the engine runs it once for both.
    ...diskFactsProbe(o.spec),
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
      // The scheduler the device has once the writes are done: a cap is only measured under it.
      const sched = t.values.find(([key]) => key === 'scheduler')?.[1] ?? f.queue.scheduler ?? '';
      return [
        {
          name: `I/O tuning of /dev/${k} (${profileFor(f, o.profile)} profile)`,
          // (sysfs values read with the shell's own read: a disk's tuning starts no process)
          script: `k=${shq(k)}; q="/sys/block/$k/queue"; want_sched=${shq(sched)}; rs_capped=
${READ_FN}
rs_rd "/sys/block/$k/dev" || :
[ "$rs_v" = ${shq(f.majmin)} ] || { echo "/sys/block/$k is no longer the probed disk ${f.majmin}" >&2; exit 3; }
# The largest value between the current one and $2 that the kernel takes for $1 (it is then set).
rs_bisect() {
  f="$q/$1"; rs_rd "$f"; lo=$rs_v; hi=$2
  while [ $((hi - lo)) -gt 1 ]; do
    mid=$(( (lo + hi) / 2 ))
    if { printf '%s\\n' "$mid" > "$f"; } 2>/dev/null; then lo=$mid; else hi=$mid; fi
  done
  { printf '%s\\n' "$lo" > "$f"; } 2>/dev/null || :
}
rs_set() {
  f="$q/$1"
  if { printf '%s\\n' "$2" > "$f"; } 2>/dev/null; then
    # (a value the kernel took but clamped silently is a cap to confirm too)
    [ "$1" = scheduler ] || { rs_rd "$f" && [ "$rs_v" -ge "$2" ]; } || rs_capped="$rs_capped $1=$2"
    return 0
  fi
  if [ "$1" = scheduler ]; then echo "$f: the kernel refused $2" >&2; return 1; fi
  rs_bisect "$1" "$2"
  rs_rd "$f" || :
  echo "$f: the kernel accepted at most $rs_v (wanted $2)" >&2
  rs_capped="$rs_capped $1=$2"
}
rs_sched() { rs_rd "$q/scheduler"; rs_sc=$rs_v; case $rs_sc in *"["*) rs_sc=\${rs_sc#*"["}; rs_sc=\${rs_sc%%"]"*} ;; esac; }
${writes.join('\n')}
# A refused value becomes a driver cap (/run/racksmith/io-caps, used until boot) only when it is
# confirmed on a settled device: the scheduler is still the one this step set or found (another
# run's switch resets and limits nr_requests for a moment), the value is refused again, and the
# cap is measured again then. A one-off refusal is reported and the next run tries again.
for c in $rs_capped; do
  key=\${c%%=*}; want=\${c#*=}; f="$q/$key"
  rs_sched
  if [ "$rs_sc" != "$want_sched" ]; then echo "$f: the scheduler changed meanwhile ($rs_sc, not $want_sched): no driver cap recorded" >&2; continue; fi
  if { printf '%s\\n' "$want" > "$f"; } 2>/dev/null && rs_rd "$f" && [ "$rs_v" -ge "$want" ]; then echo "$f: $want accepted on a second try: not a driver cap" >&2; continue; fi
  rs_bisect "$key" "$want"; rs_rd "$f"; got=$rs_v
  rs_sched
  if [ "$rs_sc" != "$want_sched" ]; then echo "$f: the scheduler changed meanwhile ($rs_sc, not $want_sched): no driver cap recorded" >&2; continue; fi
  if [ "$got" -lt "$want" ]; then
    mkdir -p ${IO_CAPS_DIR}
    printf '%s\\n' "$got" > "${IO_CAPS_DIR}/$k.$key.tmp" && mv -f "${IO_CAPS_DIR}/$k.$key.tmp" "${IO_CAPS_DIR}/$k.$key"
    echo "$f: driver cap $got recorded (confirmed)" >&2
  fi
done`,
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
 * The xattr check of every data mount of a script at once: the mount table (MOUNTINFO, read once
 * per shell) tells which are mounted, then one setfattr sets an attribute on them all and one
 * `setfattr -x` removes it again (two processes, not two per disk: a storage node has a dozen).
 * The removal is the read-back: removing an attribute the filesystem did not store fails
 * (ENODATA), and the name is this shell's own. Per path, the key=value lines parseXattrFacts reads.
 */
export const XATTR_CHECKS: ProbeBatch = {
  shared: true,
  script(paths) {
    // The attribute is this shell's own (its pid in the name): two runs checking one mount at the
    // same moment neither see nor remove each other's.
    return `n=${shq(XATTR_NAME)}."$$"
rs_xa_want=${shq(`\n${paths.map(escapeMountinfo).join('\n')}\n`)}
rs_xl=
rs_xa_line() {
  case $rs_xa_want in *"
$5
"*) ;; *) return 0 ;; esac
  # (a filesystem on a device a read would wait on, core/block-ids.ts: setfattr would hang with it;
  # a mountpoint's last line is what is mounted there on top, which decides)
  rs_blk_mm '' "$3"
  if [ -n "$rs_blk_w" ]; then rs_xl="$rs_xl
$5 $rs_blk_n $rs_blk_w"; else rs_xl="$rs_xl
$5 ok"; fi
}
rs_xa_state() {
  rs_xs=
  case $rs_xl in *"$1"*) rs_xs=\${rs_xl##*"$1"}; rs_xs=\${rs_xs%%"
"*} ;; esac
}
rs_mi_each '' rs_xa_line ${shq(mountpointsText(paths))}
set --
${paths
  .map(
    (p) => `rs_xa_state ${shq(`\n${escapeMountinfo(p)} `)}
case $rs_xs in '') ;; ok) set -- "$@" ${shq(p)} ;; *) printf 'blocked=%s\\t%s\\n' ${shq(escapeMountinfo(p))} "$rs_xs" ;; esac`,
  )
  .join('\n')}
for t in "$@"; do printf 'mounted=%s\\n' "$t"; done
if [ $# -gt 0 ]; then
  echo @set; setfattr -n "$n" -v "racksmith-$$" -- "$@" 2>&1; echo "@rc=$?"
  echo @removed; setfattr -x "$n" -- "$@" 2>&1; echo "@rc=$?"
fi
:`;
  },
  split(stdout, paths) {
    const mounted = new Set<string>();
    const blocked = new Map<string, string>();
    const sec: Record<string, string[]> = { head: [] };
    let cur = 'head';
    for (const l of stdout.split('\n')) {
      if (l === '@set' || l === '@removed') sec[(cur = l.slice(1))] = [];
      else if (cur === 'head' && l.startsWith('mounted=')) mounted.add(l.slice(8));
      else if (cur === 'head' && l.startsWith('blocked=')) blocked.set(l.slice(8, l.indexOf('\t')), l.slice(l.indexOf('\t') + 1));
      else sec[cur].push(l);
    }
    // setfattr names the file in each message ("setfattr: /ais/d1: Operation not supported")
    const outcome = (lines: string[] | undefined, p: string) => {
      if (!lines) return 'did not run';
      const mine = lines.filter((l) => l.includes(`: ${p}: `));
      if (mine.length) return mine.join(' ');
      return lines.some((l) => l.startsWith('@rc=')) ? 'ok' : 'did not finish';
    };
    return paths.map((p) => {
      const why = blocked.get(escapeMountinfo(p));
      if (why !== undefined) return `mounted=1\nblocked=${why}\n`;
      return !mounted.has(p) ? 'mounted=0\n' : `mounted=1\nset=${outcome(sec.set, p)}\nremoved=${outcome(sec.removed, p)}\n`;
    });
  },
};

/** The mounted filesystem at `path` takes user xattrs: user.racksmith.probe.PID set, then removed (which reads it back). */
export function xattrCheck(o: XattrCheckOptions): Resource<XattrFacts> {
  const path = checkAbsolutePath(o.path, 'xattr check path');
  return {
    ...common('xattr-check', `xattr:${path}`, o),
    verifiable: true,
    reads: [MOUNTS, PACKAGES, fileTopic(path)],
    // Leaves nothing behind: the attribute is removed again (only the root's ctime moves).
    probe: () => [MOUNTINFO, BLOCK_IDS, { batch: XATTR_CHECKS, arg: path }],
    parse: (out) => parseXattrFacts(out.stdout),
    diff: (f) => xattrDiff(path, f),
    apply: () => [],
  };
}

export interface DiskMountOptions extends Omit<MountOptions, 'device' | 'source'> {
  spec: DiskSpec;
}

/**
 * Shell that sets rs_dev to /dev/KNAME of the disk with this serial (empty when it is not exactly
 * one disk): a resolver for resolvedMount.
 */
export function serialResolver(serial: string): string {
  // (a script without a disk probe, a step's, defines the helpers itself, once)
  return `rs_dev=; R=
command -v rs_ht_load >/dev/null || {
${HOST_TABLES_FN}
}
command -v rs_by_serial >/dev/null || {
${[READ_FN, TRIM_FN, UDEV_EACH_FN, IDS_FN, DISK_IDS_FN, SERIAL_FN].join('\n')}
}
# (the kernel name with builtins: no readlink on a converged host)
rs_by_serial ${shq(serial)} >/dev/null && cd -P -- "/sys/dev/block/$mm" 2>/dev/null && rs_dev="/dev/\${PWD##*/}"
cd /`;
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
  return resolvedMount({ ...rest, device: `/dev/disk/by-serial/${spec.serial}` }, serialResolver(spec.serial));
}

/**
 * mount.ts for a device only the host can name: `o.device` is a placeholder path that does not
 * exist, which the probe and the steps replace by what `resolver` (shell that sets rs_dev to the
 * device path, or to nothing: then the placeholder's absence fails safe) finds on the host.
 * `defines`: shell functions the resolver uses, given once to the probe's script (a step's
 * resolver defines what its script lacks itself).
 */
export function resolvedMount(o: MountOptions & { device: string }, resolver: string, defines: DefinePart[] = []): Resource<MountFacts> {
  const inner = mount(o);
  const quoted = shq(o.device);
  // A probe's shell part resolves once, up front, in the probe's own shell (no subshell on a
  // converged host); a step resolves where it uses the device, as late as ever.
  const resolvedFirst = (script: string) => (script.includes(quoted) ? `${resolver}\n${script.split(quoted).join('"$rs_dev"')}` : script);
  const inPlace = (script: string) => script.split(quoted).join(`"$(${resolver}\nprintf '%s\\n' "$rs_dev")"`);
  return {
    ...inner,
    probe: () => {
      const p = inner.probe();
      // (inline parts carry their shell as the argument; the resolver's helpers come first)
      return typeof p === 'string'
        ? [...defines, resolvedFirst(p)]
        : [
            ...defines,
            ...p.map((part) => {
              if (typeof part === 'string') return resolvedFirst(part);
              if ('define' in part) return part;
              return isInline(part) ? inline(resolvedFirst(part.arg)) : { ...part, arg: inPlace(part.arg) };
            }),
          ];
    },
    apply: (f, changes) => inner.apply(f, changes as Parameters<typeof inner.apply>[1]).map((s) => ({ ...s, script: inPlace(s.script) })),
  };
}
