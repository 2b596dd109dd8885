/**
 * The kernel's mount table as a batched probe part: /proc/self/mountinfo is read once per script
 * (no findmnt per resource on the host), and each resource gets only the lines of its mountpoint
 * (`/path`) or of a subtree (`/path/`): its answer is those lines, as the table has them.
 */
import type { BatchPart, ProbeBatch } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { mountinfoEscape, fstabUnescape as unescapeMountinfo } from './fstab.ts';
import { remember } from '../../util/memo.ts';

export const MOUNT_TABLE: ProbeBatch = {
  // Only lines that may be asked for travel: a Kubernetes node's table runs to thousands of lines
  // (a few per pod volume). grep -F keeps every line with ` /path ` (or ` /path/` for a subtree)
  // anywhere in it, a superset of the lines whose mountpoint field matches, which split picks.
  // Exit 1 (nothing matched) is an empty table, not a failure.
  script: (paths) =>
    `grep -F ${paths.map((p) => `-e ${shq(p.endsWith('/') ? ` ${mountinfoEscape(p)}` : ` ${mountinfoEscape(p)} `)}`).join(' ')} /proc/self/mountinfo\n[ $? -le 1 ]`,
  split(stdout, args) {
    // Each line with its mountpoint, in table order; the lines of each mountpoint (several when
    // mounts are stacked) joined once.
    const lines: Array<{ mp: string; line: string }> = [];
    const byMountpoint = new Map<string, string>();
    for (let at = 0; at < stdout.length;) {
      let end = stdout.indexOf('\n', at);
      if (end < 0) end = stdout.length;
      if (end > at) {
        const line = `${stdout.slice(at, end)}\n`;
        const mp = unescapeMountinfo(mountpointField(line));
        lines.push({ mp, line });
        byMountpoint.set(mp, (byMountpoint.get(mp) ?? '') + line);
      }
      at = end + 1;
    }
    return args.map((a) => {
      if (!a.endsWith('/')) return byMountpoint.get(a) ?? '';
      let under = '';
      for (const x of lines) if (x.mp.startsWith(a)) under += x.line;
      return under;
    });
  },
};

/** The mount table lines of `path` (exact), or of everything under it when it ends with '/'. */
export function mountTableProbe(path: string): BatchPart {
  return { batch: MOUNT_TABLE, arg: path };
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
