/** Pure fstab handling: parse, find the entry for a mountpoint, replace or append it. */

export interface FstabEntry {
  source: string;
  target: string;
  fstype: string;
  options: string;
  dump: number;
  pass: number;
}

/**
 * fstab escapes whitespace and backslashes as octal (`\040` is a space), as the kernel does in
 * /proc/self/mountinfo (mount-table.ts uses these too).
 */
export function fstabEscape(s: string): string {
  return s.replace(/[\\ \t\n]/g, (c) => '\\' + c.charCodeAt(0).toString(8).padStart(3, '0'));
}

export function fstabUnescape(s: string): string {
  if (!s.includes('\\')) return s; // the common case: nothing escaped
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

export function formatEntry(e: FstabEntry): string {
  return [fstabEscape(e.source), fstabEscape(e.target), e.fstype, e.options, e.dump, e.pass].join(' ');
}

export function parseEntry(line: string): FstabEntry | undefined {
  const t = line.trim();
  if (!t || t.startsWith('#')) return undefined;
  const f = t.split(/\s+/);
  if (f.length < 3) return undefined;
  return {
    source: fstabUnescape(f[0]),
    target: fstabUnescape(f[1]),
    fstype: f[2],
    options: f[3] ?? 'defaults',
    dump: Number(f[4] ?? 0),
    pass: Number(f[5] ?? 0),
  };
}

// Every mount resource of a host looks its target up in the same fstab: keep the last one parsed.
let parsed: { text: string; byTarget: Map<string, Readonly<FstabEntry>> } | undefined;

/** The last entry for `target` (mount(8) uses the last one too). Read-only: it is shared. */
export function findEntry(text: string, target: string): Readonly<FstabEntry> | undefined {
  if (parsed?.text !== text) {
    const byTarget = new Map<string, Readonly<FstabEntry>>();
    for (const line of text.split('\n')) {
      const e = parseEntry(line);
      if (e) byTarget.set(e.target, Object.freeze(e)); // a later line wins
    }
    parsed = { text, byTarget };
  }
  return parsed.byTarget.get(target);
}

/** The same options in any order (an ais-k8s line lists AIStore's options with nofail first): adopted as they are. */
function sameOptions(a: string, b: string): boolean {
  if (a === b) return true;
  const x = a.split(',').sort();
  const y = b.split(',').sort();
  return x.length === y.length && x.every((o, i) => o === y[i]);
}

export function sameEntry(a: FstabEntry, b: FstabEntry): boolean {
  return (
    a.source === b.source &&
    a.target === b.target &&
    a.fstype === b.fstype &&
    sameOptions(a.options, b.options) &&
    a.dump === b.dump &&
    a.pass === b.pass
  );
}

/**
 * Set the entry for `want.target`: the first existing line for that target is replaced in place
 * (so comments and order stay), later duplicates are dropped; otherwise the line is appended.
 */
export function setEntry(text: string, want: FstabEntry): string {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  const out: string[] = [];
  let placed = false;
  for (const line of lines) {
    const e = parseEntry(line);
    if (e && e.target === want.target) {
      if (!placed) out.push(formatEntry(want));
      placed = true;
    } else out.push(line);
  }
  if (!placed) out.push(formatEntry(want));
  return out.join('\n') + '\n';
}

/** Remove every entry for `target`. */
export function removeEntry(text: string, target: string): string {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  const kept = lines.filter((l) => parseEntry(l)?.target !== target);
  return kept.length ? kept.join('\n') + '\n' : '';
}
