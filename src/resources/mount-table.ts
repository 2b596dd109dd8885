/**
 * The kernel's mount table as a batched probe part: /proc/self/mountinfo is read once per script
 * (no findmnt per resource on the host), and each resource gets only the lines of its mountpoint
 * (`/path`) or of a subtree (`/path/`), after MOUNT_TABLE_MARK.
 */
import type { BatchPart, ProbeBatch } from '../engine/probe-set.ts';
import { fstabEscape, fstabUnescape as unescapeMountinfo } from './fstab.ts';

export const MOUNT_TABLE_MARK = '== mountinfo\n';

export const MOUNT_TABLE: ProbeBatch = {
  script: () => 'cat /proc/self/mountinfo',
  split(stdout, args) {
    // Each line with its mountpoint, in table order; the lines of each mountpoint (several when
    // mounts are stacked) joined once.
    const lines: Array<{ mp: string; line: string }> = [];
    const byMountpoint = new Map<string, string>();
    for (let at = 0; at < stdout.length; ) {
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
      if (!a.endsWith('/')) return MOUNT_TABLE_MARK + (byMountpoint.get(a) ?? '');
      let under = '';
      for (const x of lines) if (x.mp.startsWith(a)) under += x.line;
      return MOUNT_TABLE_MARK + under;
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

/** The fifth field of a mountinfo line ending in a newline (the mountpoint, escaped). */
function mountpointField(line: string): string {
  let at = 0;
  for (let i = 0; i < 4; i++) {
    at = line.indexOf(' ', at) + 1;
    if (at === 0) return '';
  }
  const end = line.indexOf(' ', at);
  return line.slice(at, end < 0 ? line.length - 1 : end); // the line ends with its newline
}

// mountinfo escapes space, tab, newline and backslash as \ooo, exactly as fstab does.
export { unescapeMountinfo, fstabEscape as escapeMountinfo };

/** Mountpoint -> the entry on top (the last one mounted there), from /proc/self/mountinfo text. */
export function parseMountTable(text: string): Map<string, MountEntry> {
  const byPath = new Map<string, MountEntry>();
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    const dash = f.indexOf('-', 6);
    if (dash < 0 || f.length < dash + 3) continue;
    const root = unescapeMountinfo(f[3]);
    const device = unescapeMountinfo(f[dash + 2] ?? '');
    byPath.set(unescapeMountinfo(f[4]), {
      source: root === '/' ? device : `${device}[${root}]`,
      fstype: f[dash + 1],
      options: [...f[5].split(','), ...(f[dash + 3] ?? '').split(',').filter(Boolean)],
      majmin: f[2],
    });
  }
  return byPath;
}

/**
 * A probe's output around its mount table: what came `before` the mark, and the `table` from the
 * mark to the next `== ` section or the end; undefined without the mark.
 */
export function splitAtMountTable(out: string): { before: string; table: string } | undefined {
  const i = out.indexOf(MOUNT_TABLE_MARK);
  if (i < 0) return undefined;
  const start = i + MOUNT_TABLE_MARK.length;
  const end = out.indexOf('\n== ', start - 1);
  return { before: out.slice(0, i), table: end < 0 ? out.slice(start) : out.slice(start, end + 1) };
}

/** The mount table part of a probe's output (empty without one). */
export function mountTableText(out: string): string {
  return splitAtMountTable(out)?.table ?? '';
}
