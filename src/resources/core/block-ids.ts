import { define } from '../../contract/probe.ts';

/**
 * Filesystem UUIDs of the host's block devices, read once per probe subshell: one `blkid` for
 * every disk, mount and storage record that asks (a process per ask adds up over a storage node's
 * dozen disks). The probes of a script that ask run as inline parts (contract/probe.ts), in one
 * shell: the first ask reads, the others look up with builtins.
 */

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
export const BLOCK_IDS_FN = `rs_bid_done=
rs_bid_load() {
  [ -n "$rs_bid_done" ] && return 0
  rs_bid_done=1
  rs_bid=$(blkid -c /dev/null -o export 2>/dev/null) || : # (exit 2: no device has a tag; steps run under set -e)
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
    [ "$rs_bid_d" -ef "/dev/disk/by-uuid/$1" ] && { rs_bid_v=$rs_bid_d; return 1; } ;;
  esac
  return 0
}
rs_bid_dev() {
  rs_bid_load; rs_bid_v=; rs_bid_d=; rs_bid_1st=
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
