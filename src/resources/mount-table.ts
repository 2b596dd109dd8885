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
    const lines = stdout.split('\n').filter(Boolean).map((l) => ({ l, mp: unescapeMountinfo(l.split(' ', 5)[4] ?? '') }));
    return args.map((a) => {
      const mine = lines.filter((x) => (a.endsWith('/') ? x.mp.startsWith(a) : x.mp === a));
      return MOUNT_TABLE_MARK + mine.map((x) => `${x.l}\n`).join('');
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

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
export function unescapeMountinfo(s: string): string {
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
