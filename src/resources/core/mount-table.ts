/**
 * The kernel's mount table as probe parts: /proc/self/mountinfo is read once per script's shell
 * (no findmnt per resource on the host), and each resource gets only the lines of its
 * mountpoint (`/path`) or of a subtree (`/path/`): its answer is those lines, as the table has them.
 */
import { define, type BatchPart, type ProbeBatch } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { mountinfoEscape, fstabUnescape as unescapeMountinfo } from './fstab.ts';
import { remember } from '../../util/memo.ts';
import { HOST_TABLES_FN } from './host-tables.ts';

/**
 * Shell functions over the mount table, read once per shell and root with udev's block device
 * properties (host-tables.ts: one grep for every disk, mount and storage record of the script):
 * rs_mi_each ROOT FN [TEXT] calls FN with each line's fields as its arguments (the whole line in
 * $rs_mi_l; IFS a blank and globbing off meanwhile), only for lines that contain TEXT when given:
 * a Kubernetes node's table runs to thousands of lines (its pods' volumes), and a `case` skips a
 * line that cannot be the one for much less than splitting it and calling FN. Lines are walked
 * with builtins: `read` would take a system call per byte.
 */
export const MOUNTINFO_FN = `${HOST_TABLES_FN}
rs_mi_each() {
  rs_ht_load "$1"
  rs_mi_p="$1/proc/self/mountinfo:"; rs_mi_fn=$2; rs_mi_has=\${3-}
  # (one pattern with one text: two would backtrack over the whole table, line by line)
  case $rs_ht in *"$rs_mi_has"*) ;; *) return 0 ;; esac
  rs_mi_ifs=$IFS; rs_mi_opts=$-; set -f
  IFS='
'
  for rs_mi_l in $rs_ht; do
    case $rs_mi_l in "$rs_mi_p"*"$rs_mi_has"*) rs_mi_l=\${rs_mi_l#"$rs_mi_p"} ;; *) continue ;; esac
    IFS=' '
    # shellcheck disable=SC2086 # the line split into its fields (set -f: no globbing)
    set -- $rs_mi_l
    "$rs_mi_fn" "$@" || :
  done
  IFS=$rs_mi_ifs
  case $rs_mi_opts in *f*) ;; *) set +f ;; esac
}`;

/**
 * The text every mount table line of one of these mountpoints contains, for rs_mi_each: a blank
 * and the beginning their escaped paths share (only a blank when they share nothing).
 */
export function mountpointsText(paths: readonly string[]): string {
  const escaped = paths.map(mountinfoEscape);
  let shared = escaped[0] ?? '';
  for (const p of escaped) while (!p.startsWith(shared)) shared = shared.slice(0, -1);
  return ` ${shared}`;
}

/** The define part of MOUNTINFO_FN, for a probe whose parts call it. */
export const MOUNTINFO = define(MOUNTINFO_FN);

/** A MOUNT_LINES argument: `=ESCAPED` for a mountpoint, `/ESCAPED/` (a trailing /) for a subtree. */
const wantOf = (arg: string): { exact: boolean; escaped: string } =>
  arg.startsWith('=') ? { exact: true, escaped: arg.slice(1) } : { exact: false, escaped: arg };

/**
 * The mount table lines of every mountpoint or subtree a script's probes ask for, in one walk of
 * the table for them all (a shared batch: the script's own shell, after the inline parts). A walk
 * per mount resource cost a jail host a dozen walks, each over every line of a Kubernetes node's
 * table. The shell prints each line that any argument wants, once; each argument's answer is its
 * own lines, in table order, as the table has them.
 */
export const MOUNT_LINES: ProbeBatch = {
  shared: true,
  script(args) {
    const patterns = args.map((a) => {
      const w = wantOf(a);
      return w.exact ? shq(w.escaped) : `${shq(w.escaped)}*`;
    });
    return `rs_ml_line() {
  case $5 in ${patterns.join('|')}) printf '%s\\n' "$rs_mi_l" ;; esac
}
rs_mi_each '' rs_ml_line`;
  },
  split(stdout, args) {
    const lines = stdout.split('\n').filter((l) => l !== '');
    const fields = lines.map(mountpointField);
    return args.map((a) => {
      const w = wantOf(a);
      let answer = '';
      lines.forEach((l, i) => {
        if (w.exact ? fields[i] === w.escaped : fields[i].startsWith(w.escaped)) answer += `${l}\n`;
      });
      return answer;
    });
  },
};

/**
 * The mount table lines of `path` (its mountpoint exactly), or of everything under it when it
 * ends with '/', as the table has them: a batch part (the probe needs MOUNTINFO defined).
 */
export function mountTableProbe(path: string): BatchPart {
  const escaped = mountinfoEscape(path);
  return { batch: MOUNT_LINES, arg: path.endsWith('/') ? escaped : `=${escaped}` };
}

export interface MountEntry {
  /** As findmnt shows it: the device, with the bound subtree in brackets when not its root. */
  source: string;
  fstype: string;
  /** Per-mount options, then the filesystem's (findmnt's OPTIONS). */
  options: string[];
  /** Decimal major:minor of the mounted filesystem. */
  majmin: string;
  /** The mounted subtree of that filesystem (mountinfo's root, unescaped; `/` for all of it). */
  root?: string;
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

/** A mount's root without `//deleted` when its bound file or directory is deleted since; else undefined. */
export function deletedRoot(m: Pick<MountEntry, 'root'> | undefined): string | undefined {
  const root = m?.root;
  return root?.endsWith('//deleted') ? root.slice(0, -'//deleted'.length) : undefined;
}

/**
 * Whether a mount's root (relative to its filesystem) can be the file at `path`: one ends the
 * other at a `/`. A filesystem mounted at /var roots /var/spool/x at /spool/x; a btrfs subvolume,
 * or a directory reached through a link on the same filesystem, roots /etc/hosts at /@/etc/hosts.
 */
export function rootIsOf(root: string, path: string): boolean {
  return root.startsWith('/') && path.startsWith('/') && root !== '/' && (path.endsWith(root) || root.endsWith(path));
}

/** How many mounts the table has at each mountpoint: a mount stacked over another counts too. */
export function mountCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    const field = mountpointField(line);
    if (!field) continue;
    const path = unescapeMountinfo(field);
    counts.set(path, (counts.get(path) ?? 0) + 1);
  }
  return counts;
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
    entry: { source: root === '/' ? device : `${device}[${root}]`, fstype: f[dash + 1], options, majmin: f[2], root },
  };
}
