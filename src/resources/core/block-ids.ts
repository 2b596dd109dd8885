import { define } from '../../contract/probe.ts';

/**
 * Filesystem UUIDs of the host's block devices, read once per probe subshell: one `blkid` for
 * every disk, mount and storage record that asks (a process per ask adds up over a storage node's
 * dozen disks). The probes of a script that ask run as inline parts (contract/probe.ts), in one
 * shell: the first ask reads, the others look up with builtins.
 */

/** Why what sits on a device a read would wait on (BLOCKED_FN) is refused, in every refusal of one. */
export const READ_WOULD_WAIT = 'a read of it would wait until that changes';

/**
 * The devices a read would wait on, which neither blkid nor a probe reads: a suspended
 * device-mapper device, a multipath map with no path the kernel runs (with queue_if_no_path its
 * reads queue until a path returns), a disk whose SCSI device or NVMe controller holds its I/O
 * (blocked, quiesced, reconnecting) or a native-multipath NVMe namespace with no usable path, and
 * every device stacked on one (but a multipath path's map, which its own paths decide). A read
 * of one would hold the probe, and the host's run with it, in uninterruptible sleep: udev skips
 * such devices too (DM_SUSPENDED, DM_NOSCAN). Read from sysfs with builtins, once per shell and
 * root: rs_blk_load ROOT sets $rs_blk to lines `NAME MAJ:MIN WHY` (after a newline; '' when
 * none); rs_blk_mm ROOT MAJ:MIN and rs_blk_dev ROOT PATH set $rs_blk_w to WHY, '' for a device
 * read. A multipath path whose state cannot be read (no device/state) counts as running.
 */
const BLOCKED_FN = `rs_blk_root=
rs_blk_load() {
  [ "$rs_blk_root" = "=$1" ] && return 0
  rs_blk_root="=$1"; rs_blk=
  # (globs: whatever the caller has set)
  rs_blk_o=$-; set +f
  for rs_blk_s in "$1"/sys/class/block/dm-*; do
    [ -d "$rs_blk_s/dm" ] || continue
    rs_blk_x=; [ -r "$rs_blk_s/dm/suspended" ] && { IFS= read -r rs_blk_x < "$rs_blk_s/dm/suspended" || :; }
    # (named as dmsetup and multipath name it: mpatha, vg0-data)
    rs_blk_nm=; [ -r "$rs_blk_s/dm/name" ] && { IFS= read -r rs_blk_nm < "$rs_blk_s/dm/name" || :; }
    rs_blk_nm=\${rs_blk_nm:+" ($rs_blk_nm)"}
    if [ "$rs_blk_x" = 1 ]; then rs_blk_add "$1" "\${rs_blk_s##*/}" "is a suspended device-mapper device$rs_blk_nm"; continue; fi
    rs_blk_x=; [ -r "$rs_blk_s/dm/uuid" ] && { IFS= read -r rs_blk_x < "$rs_blk_s/dm/uuid" || :; }
    case $rs_blk_x in mpath-*) ;; *) continue ;; esac
    rs_blk_x=
    for rs_blk_p in "$rs_blk_s"/slaves/*; do
      [ -e "$rs_blk_p" ] || continue
      rs_blk_x=running; [ -r "$rs_blk_p/device/state" ] && { IFS= read -r rs_blk_x < "$rs_blk_p/device/state" || :; }
      case $rs_blk_x in running|live) break ;; esac
    done
    case $rs_blk_x in running|live) ;; *) rs_blk_add "$1" "\${rs_blk_s##*/}" "is a multipath map$rs_blk_nm with no running path" ;; esac
  done
  # A disk whose device queues its reads: a SCSI device blocked or quiesced (until its transport
  # recovers or gives up: iSCSI's replacement_timeout), an NVMe controller reconnecting or resetting
  # (a fabric's ctrl_loss_tmo). A multipath path in such a state is not read either, but its map is
  # its own check's (above). NVMe's hidden paths (nvmeXcYnZ) are never read: their head decides.
  for rs_blk_s in "$1"/sys/class/block/*/device/state; do
    [ -r "$rs_blk_s" ] || continue
    rs_blk_x=; IFS= read -r rs_blk_x < "$rs_blk_s" || :
    rs_blk_s=\${rs_blk_s%/device/state}
    case \${rs_blk_s##*/} in nvme*c*n*) continue ;; esac
    case $rs_blk_x in blocked|quiesce|created-blocked|connecting|resetting) ;; *) continue ;; esac
    rs_blk_p=
    for rs_blk_h in "$rs_blk_s"/holders/*; do
      rs_blk_u=; [ -r "$rs_blk_h/dm/uuid" ] && { IFS= read -r rs_blk_u < "$rs_blk_h/dm/uuid" || :; }
      case $rs_blk_u in mpath-*) rs_blk_p=path ;; esac
    done
    rs_blk_add "$1" "\${rs_blk_s##*/}" "is a device in state $rs_blk_x" "$rs_blk_p"
  done
  # An NVMe namespace of native multipath (its device the subsystem, no state of its own): with no
  # usable path (controller live, ANA state optimized or non-optimized) its reads queue while any
  # controller is live, resetting or connecting, and fail at once when none is.
  for rs_blk_s in "$1"/sys/class/block/nvme*n*; do
    rs_blk_q=\${rs_blk_s##*/}
    case $rs_blk_q in *c*|*p*) continue ;; esac
    if [ ! -e "$rs_blk_s/device" ] || [ -e "$rs_blk_s/device/state" ]; then continue; fi
    rs_blk_x=
    for rs_blk_p in "$1/sys/class/block/\${rs_blk_q%n*}c"*"n\${rs_blk_q##*n}"; do
      [ -e "$rs_blk_p" ] || continue
      rs_blk_u=live; [ -r "$rs_blk_p/device/state" ] && { IFS= read -r rs_blk_u < "$rs_blk_p/device/state" || :; }
      rs_blk_a=optimized; [ -r "$rs_blk_p/ana_state" ] && { IFS= read -r rs_blk_a < "$rs_blk_p/ana_state" || :; }
      case $rs_blk_u:$rs_blk_a in
      live:optimized|live:non-optimized) rs_blk_x=; break ;;
      live:*|resetting:*|connecting:*) rs_blk_x=queued ;;
      esac
    done
    [ -z "$rs_blk_x" ] || rs_blk_add "$1" "$rs_blk_q" 'is an NVMe multipath namespace with no usable path'
  done
  case $rs_blk_o in *f*) set -f ;; esac
  return 0
}
rs_blk_add() {
  case $rs_blk in *"
$2 "*) return 0 ;; esac
  rs_blk_x=; [ -r "$1/sys/class/block/$2/dev" ] && { IFS= read -r rs_blk_x < "$1/sys/class/block/$2/dev" || :; }
  rs_blk="$rs_blk
$2 $rs_blk_x $3"
  # (what reads it: its holders, and its partitions, an md array's or a bcache device's)
  for rs_blk_h in "$1/sys/class/block/$2"/holders/* "$1/sys/class/block/$2/$2"*/partition; do
    [ -e "$rs_blk_h" ] || continue
    case $rs_blk_h in
    */partition) rs_blk_h=\${rs_blk_h%/partition}; rs_blk_add "$1" "\${rs_blk_h##*/}" "is a partition of $2, which $3" ;;
    # (a multipath path's map: its own check's)
    *) [ "\${4-}" = path ] || rs_blk_add "$1" "\${rs_blk_h##*/}" "is stacked on $2, which $3" ;;
    esac
  done
  return 0
}
rs_blk_find() {
  rs_blk_load "$1"; rs_blk_w=
  [ -n "$rs_blk" ] || return 0
  rs_blk_ifs=$IFS; rs_blk_opts=$-; set -f
  IFS='
'
  for rs_blk_l in $rs_blk; do
    rs_blk_n=\${rs_blk_l%% *}; rs_blk_r=\${rs_blk_l#* }; rs_blk_m=\${rs_blk_r%% *}
    if "$rs_blk_fn" "$1" "$2"; then rs_blk_w=\${rs_blk_r#* }; break; fi
  done
  IFS=$rs_blk_ifs
  case $rs_blk_opts in *f*) ;; *) set +f ;; esac
  return 0
}
rs_blk_is_mm() { [ "$2" = "$rs_blk_m" ]; }
rs_blk_is_dev() { [ "$2" -ef "$1/dev/$rs_blk_n" ]; }
rs_blk_mm() { rs_blk_fn=rs_blk_is_mm; rs_blk_find "$1" "$2"; }
rs_blk_dev() { rs_blk_fn=rs_blk_is_dev; rs_blk_find "$1" "$2"; }`;

/**
 * Shell functions: rs_bid_uuid DEV sets $rs_bid_v to DEV's filesystem UUID ('' when none; DEV
 * may be a link to the device) and $rs_bid_n to blkid's name of DEV; rs_bid_dev UUID sets $rs_bid_v to the device that carries that
 * UUID (the one udev's by-uuid link names, when there is one and several carry it; '' when none);
 * rs_bid_devs UUID sets $rs_bid_vs to every device that carries that UUID, a line each. They read the
 * superblocks (`-c /dev/null`: no cache, which udev's links and blkid's cache can lag right after
 * a mkfs). blkid's answer is walked with builtins (rs_bid_walk FN ARG: FN sees each line in
 * $rs_bid_l and returns 1 to stop): `read` from a here-document takes a system call per byte, and
 * a storage node's dozens of disks, mounts and records each looked through kilobytes of it.
 */
export const BLOCK_IDS_FN = `${BLOCKED_FN}
rs_bid_done=
# (udev's by-uuid links; a test's own)
rs_bid_links=/dev/disk/by-uuid
rs_bid_load() {
  [ -n "$rs_bid_done" ] && return 0
  rs_bid_done=1
  rs_blk_load ''
  # (exit 2: no device has a tag; steps run under set -e)
  if [ -z "$rs_blk" ]; then rs_bid=$(blkid -c /dev/null -o export 2>/dev/null) || :
  else rs_bid_some ''; fi
}
# blkid of the devices its own scan of /proc/partitions reads (partitions, whole disks without
# any, no private device-mapper device), but for the devices a read would wait on.
rs_bid_some() {
  rs_bid_r=$1; rs_bid_o=$-; set +f; set --
  while IFS=' ' read -r rs_bid_ma _ rs_bid_sz rs_bid_nm; do
    case $rs_bid_ma in ''|*[!0-9]*) continue ;; esac
    case $rs_blk in *"
$rs_bid_nm "*) continue ;; esac
    rs_bid_s=$rs_bid_r/sys/class/block/$rs_bid_nm
    if [ -e "$rs_bid_s/partition" ]; then [ "$rs_bid_sz" -gt 1 ] || continue
    else
      rs_bid_p=
      for rs_bid_c in "$rs_bid_s/$rs_bid_nm"*/partition; do [ -e "$rs_bid_c" ] && rs_bid_p=1; done
      [ -z "$rs_bid_p" ] || continue
    fi
    rs_bid_d=/dev/$rs_bid_nm
    if [ -r "$rs_bid_s/dm/uuid" ]; then
      IFS= read -r rs_bid_u < "$rs_bid_s/dm/uuid" || :
      case $rs_bid_u in LVM-*-?*|stratis-1-private*) continue ;; esac
      # (named as blkid names a map itself: /dev/mapper/NAME)
      IFS= read -r rs_bid_u < "$rs_bid_s/dm/name" && [ -b "/dev/mapper/$rs_bid_u" ] && rs_bid_d=/dev/mapper/$rs_bid_u
    fi
    set -- "$@" "$rs_bid_d"
  done < "$rs_bid_r/proc/partitions"
  case $rs_bid_o in *f*) set -f ;; esac
  rs_bid=
  if [ $# -gt 0 ]; then rs_bid=$(blkid -c /dev/null -o export -- "$@" 2>/dev/null) || :; fi
}
rs_bid_walk() {
  rs_bid_fn=$1; shift
  rs_bid_ifs=$IFS; rs_bid_opts=$-; set -f
  IFS='
'
  for rs_bid_l in $rs_bid; do
    "$rs_bid_fn" "$@" || break
  done
  IFS=$rs_bid_ifs
  case $rs_bid_opts in *f*) ;; *) set +f ;; esac
}
rs_bid_uuid_line() {
  case $rs_bid_l in
  DEVNAME=*)
    rs_bid_at=
    # shellcheck disable=SC2034 # rs_bid_n: for the callers that want blkid's name of the device
    [ "\${rs_bid_l#DEVNAME=}" -ef "$1" ] && { rs_bid_at=1; rs_bid_n=\${rs_bid_l#DEVNAME=}; } ;;
  UUID=*) [ -n "$rs_bid_at" ] && { rs_bid_v=\${rs_bid_l#UUID=}; return 1; } ;;
  esac
  return 0
}
# shellcheck disable=SC2034 # rs_bid_n: for the callers that want blkid's name of the device
rs_bid_uuid() {
  rs_bid_load; rs_bid_v=; rs_bid_n=; rs_bid_at=
  rs_bid_walk rs_bid_uuid_line "$1"
}
rs_bid_dev_line() {
  case $rs_bid_l in
  DEVNAME=*) rs_bid_d=\${rs_bid_l#DEVNAME=} ;;
  UUID=*)
    [ "\${rs_bid_l#UUID=}" = "$1" ] || return 0
    [ -n "$rs_bid_1st" ] || rs_bid_1st=$rs_bid_d
    [ "$rs_bid_d" -ef "$rs_bid_links/$1" ] && { rs_bid_v=$rs_bid_d; return 1; } ;;
  esac
  return 0
}
rs_bid_dev() {
  rs_bid_load; rs_bid_v=; rs_bid_d=; rs_bid_1st=
  # (udev's link to a device blkid was not given: that device, whose reader then says why, not a path under it)
  if [ -n "$rs_blk" ] && [ -e "$rs_bid_links/$1" ]; then
    rs_blk_dev '' "$rs_bid_links/$1"
    if [ -n "$rs_blk_w" ]; then rs_bid_v=/dev/$rs_blk_n; return 0; fi
  fi
  rs_bid_walk rs_bid_dev_line "$1"
  [ -n "$rs_bid_v" ] || rs_bid_v=$rs_bid_1st
}
rs_bid_devs_line() {
  case $rs_bid_l in
  DEVNAME=*) rs_bid_d=\${rs_bid_l#DEVNAME=} ;;
  UUID=*) [ "\${rs_bid_l#UUID=}" = "$1" ] && rs_bid_vs="$rs_bid_vs$rs_bid_d
" ;;
  esac
  return 0
}
rs_bid_devs() {
  rs_bid_load; rs_bid_d=; rs_bid_vs=
  rs_bid_walk rs_bid_devs_line "$1"
  return 0
}`;

/** The define part of BLOCK_IDS_FN, for a probe whose parts call it. */
export const BLOCK_IDS = define(BLOCK_IDS_FN);
