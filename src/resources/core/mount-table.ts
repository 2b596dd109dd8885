/**
 * The kernel's mount table as a probe part: /proc/self/mountinfo is read once per script's inline
 * shell (no findmnt per resource on the host), and each resource gets only the lines of its
 * mountpoint (`/path`) or of a subtree (`/path/`): its answer is those lines, as the table has them.
 */
import { define, inline, type BatchPart } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { mountinfoEscape, fstabUnescape as unescapeMountinfo } from './fstab.ts';
import { remember } from '../../util/memo.ts';

/**
 * Shell functions over the mount table, read once per shell (and root): rs_mi_load ROOT sets
 * $rs_mi to ROOT/proc/self/mountinfo (one `cat` for every disk, mount and storage record of the
 * script's shared subshell: contract/probe.ts); rs_mi_each ROOT FN calls FN with each line's
 * fields as its arguments (the whole line in $rs_mi_l; IFS a blank and globbing off meanwhile);
 * rs_mi_lines exact|under ESCAPED prints the lines whose mountpoint field is ESCAPED (mountinfo's
 * escaping), or starts with it. Lines are walked with builtins: a Kubernetes node's table runs to
 * thousands of lines, which `read` would take a syscall per byte to read.
 */
export const MOUNTINFO_FN = `rs_mi_root=
rs_mi_load() {
  [ "$rs_mi_root" = "=$1" ] && return 0
  rs_mi_root="=$1"
  rs_mi=$(cat -- "$1/proc/self/mountinfo" 2>/dev/null)
}
rs_mi_each() {
  rs_mi_load "$1"
  rs_mi_fn=$2; rs_mi_ifs=$IFS; set -f
  IFS='
'
  for rs_mi_l in $rs_mi; do
    IFS=' '
    # shellcheck disable=SC2086 # the line split into its fields (set -f: no globbing)
    set -- $rs_mi_l
    "$rs_mi_fn" "$@" || :
  done
  IFS=$rs_mi_ifs; set +f
}
rs_mi_line() {
  case $rs_mi_how in
  exact) [ "$5" = "$rs_mi_want" ] || return 0 ;;
  *) case $5 in "$rs_mi_want"*) ;; *) return 0 ;; esac ;;
  esac
  printf '%s\\n' "$rs_mi_l"
}
rs_mi_lines() {
  rs_mi_how=$1; rs_mi_want=$2
  rs_mi_each '' rs_mi_line
}`;

/** The define part of MOUNTINFO_FN, for a probe whose parts call it. */
export const MOUNTINFO = define(MOUNTINFO_FN);

/**
 * The mount table lines of `path` (its mountpoint exactly), or of everything under it when it
 * ends with '/', as the table has them: an inline part (the probe needs MOUNTINFO defined).
 */
export function mountTableProbe(path: string): BatchPart {
  return inline(`rs_mi_lines ${path.endsWith('/') ? 'under' : 'exact'} ${shq(mountinfoEscape(path))}`);
}

export interface MountEntry {
  /** As findmnt shows it: the device, with the bound subtree in brackets when not its root. */
  source: string;
  fstype: string;
  /** Per-mount options, then the filesystem's (findmnt's OPTIONS). */
  options: string[];
  /** Decimal major:minor of the mounted filesystem. */
  majmin: string;
}

/** The fifth field of a mountinfo line, with or without its newline (the mountpoint, escaped). */
function mountpointField(line: string): string {
  let at = 0;
  for (let i = 0; i < 4; i++) {
    at = line.indexOf(' ', at) + 1;
    if (at === 0) return '';
  }
  let end = line.indexOf(' ', at);
  if (end < 0) end = line.endsWith('\n') ? line.length - 1 : line.length;
  return line.slice(at, end);
}

// mountinfo escapes space, tab, newline and backslash as \ooo (fstab escapes these and more).
export { unescapeMountinfo, mountinfoEscape as escapeMountinfo };

/** Mountpoint -> the entry on top (the last one mounted there), from /proc/self/mountinfo text. */
export function parseMountTable(text: string): Map<string, MountEntry> {
  const byPath = new Map<string, MountEntry>();
  for (const line of text.split('\n')) {
    const m = parseMountLine(line);
    if (m) byPath.set(m.mountpoint, m.entry);
  }
  return byPath;
}

/** The entry on top at `path` (the last line for it), or undefined: parses only that line. */
export function topMount(text: string, path: string): MountEntry | undefined {
  for (let end = text.length; end > 0;) {
    const start = text.lastIndexOf('\n', end - 1) + 1;
    const line = text.slice(start, end);
    end = start - 1;
    if (unescapeMountinfo(mountpointField(line)) !== path) continue;
    const m = parseMountLine(line);
    if (m) return m.entry;
  }
  return undefined;
}

// Lines parsed lately, by their text after the mount and parent ids (the two fields that differ
// between hosts that mount alike): a fleet's hosts share the entries (read-only, like all facts).
const parsedLines = new Map<string, { mountpoint: string; entry: MountEntry } | undefined>();

/** One mountinfo line: its (unescaped) mountpoint and entry; undefined for a line that is not one. */
function parseMountLine(line: string): { mountpoint: string; entry: MountEntry } | undefined {
  const a = line.indexOf(' ');
  const key = line.slice(line.indexOf(' ', a + 1) + 1);
  let parsed = parsedLines.get(key);
  if (parsed === undefined && !parsedLines.has(key)) {
    parsed = remember(parsedLines, key, readMountLine(line));
  }
  return parsed;
}

function readMountLine(line: string): { mountpoint: string; entry: MountEntry } | undefined {
  const f = line.split(' ');
  const dash = f.indexOf('-', 6);
  if (dash < 0 || f.length < dash + 3) return undefined;
  const root = unescapeMountinfo(f[3]);
  const device = unescapeMountinfo(f[dash + 2]);
  const options = f[5].split(',');
  const superOptions = f[dash + 3];
  if (superOptions) for (const o of superOptions.split(',')) if (o) options.push(o);
  return {
    mountpoint: unescapeMountinfo(f[4]),
    entry: { source: root === '/' ? device : `${device}[${root}]`, fstype: f[dash + 1], options, majmin: f[2] },
  };
}
