/**
 * The host's tables that many probes of a script look through, read by one process per shell
 * and root: the mount table (/proc/self/mountinfo, every line) and udev's properties of the
 * block devices (/run/udev/data/b*, the UDEV_PROPS lines). A process per table is a process more
 * on every host at every run, and the shell's `read` of a file takes a system call per byte (a
 * real disk's udev entry is a kilobyte or more). Mount table lines start with a digit (their
 * mount id) and udev's with a letter, so one grep pattern picks each table's lines.
 */

/** The udev properties racksmith reads: a disk's identity, model, bus and path. */
export const UDEV_PROPS = ['ID_SERIAL', 'ID_SERIAL_SHORT', 'ID_WWN', 'ID_WWN_WITH_EXTENSION', 'ID_MODEL', 'ID_BUS', 'ID_PATH'];

/**
 * Shell: rs_ht_load ROOT sets $rs_ht to the tables under ROOT ('' for the host's own), once per
 * shell and root, as `grep -H` prints them: `ROOT/run/udev/data/bMAJ:MIN:E:KEY=VALUE` lines, then
 * `ROOT/proc/self/mountinfo:LINE` lines (grep reads its files in order); and $rs_ht_udev to the
 * udev lines alone, cut off before the mount table (a suffix removal: one pass), so that a walk
 * of udev's does not step through a Kubernetes node's thousands of mounts. (No udev entry at
 * all: the unexpanded pattern names no file, which grep -s passes over.) The walks are the
 * tables' own (mount-table.ts, the disk probes): each keeps its own variables, so that one may
 * run inside another.
 */
export const HOST_TABLES_FN = `rs_ht_root=
rs_ht_load() {
  [ "$rs_ht_root" = "=$1" ] && return 0
  rs_ht_root="=$1"
  case $- in
  *f*) set +f; set -- "$1"/run/udev/data/b* "$1/proc/self/mountinfo"; set -f ;;
  *) set -- "$1"/run/udev/data/b* "$1/proc/self/mountinfo" ;;
  esac
  rs_ht=$(grep -a -s -H -E '^([0-9]|E:(${UDEV_PROPS.join('|')})=)' -- "$@") || :
  rs_ht_udev=\${rs_ht%%"
\${rs_ht_root#=}/proc/self/mountinfo:"*}
  case $rs_ht_udev in "\${rs_ht_root#=}/proc/self/mountinfo:"*) rs_ht_udev= ;; esac
}`;
