/**
 * The kernel's mount table as a batched probe part: /proc/self/mountinfo is read once per script
 * (no findmnt per resource on the host), and each resource gets only the lines of its mountpoint
 * (`/path`) or of a subtree (`/path/`), after MOUNT_TABLE_MARK.
 */
import type { BatchPart, ProbeBatch } from '../engine/probe-set.ts';

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

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
export function unescapeMountinfo(s: string): string {
  if (!s.includes('\\')) return s;
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** A path as mountinfo spells it (the inverse of unescapeMountinfo). */
export function escapeMountinfo(p: string): string {
  return p.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

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

/** The mount table part of a probe's output: from the mark to the next `== ` section or the end. */
export function mountTableText(out: string): string {
  const i = out.indexOf(MOUNT_TABLE_MARK);
  if (i < 0) return '';
  const start = i + MOUNT_TABLE_MARK.length;
  const end = out.indexOf('\n== ', start - 1);
  return end < 0 ? out.slice(start) : out.slice(start, end + 1);
}
