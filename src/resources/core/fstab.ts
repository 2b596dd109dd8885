/** Pure fstab handling: parse, find the entry for a mountpoint, replace or append it. */

export interface FstabEntry {
  source: string;
  target: string;
  fstype: string;
  options: string;
  dump: number;
  pass: number;
}

// eslint-disable-next-line no-control-regex -- control characters are what it escapes
const FSTAB_SPECIAL = /[\x00-\x20\x7f\\]/g;
const MOUNTINFO_SPECIAL = /[ \t\n\\]/g;
const octal = (c: string) => '\\' + c.charCodeAt(0).toString(8).padStart(3, '0');

/**
 * A field as fstab holds it: space, backslash and every control character as a 3-digit octal
 * escape (`\040` is a space), as util-linux's mangle() and fstab(5) have them. Other characters
 * (a non-breaking space, any UTF-8) stay as they are: fstab separates fields by spaces and tabs only.
 */
export function fstabEscape(s: string): string {
  return s.replace(FSTAB_SPECIAL, octal);
}

/** A path as /proc/self/mountinfo shows it: the kernel escapes only space, tab, newline and backslash. */
export function mountinfoEscape(s: string): string {
  return s.replace(MOUNTINFO_SPECIAL, octal);
}

/**
 * The inverse of both: every `\ooo` is one byte (as the kernel and libmount read it), so escaped
 * bytes of a multi-byte character decode together. A backslash not followed by 3 octal digits is itself.
 */
export function fstabUnescape(s: string): string {
  if (!s.includes('\\')) return s; // the common case: nothing escaped
  const raw = Buffer.from(s, 'utf8');
  const out = Buffer.allocUnsafe(raw.length);
  let n = 0;
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i];
    if (b === 0x5c && i + 3 < raw.length && isOctal(raw[i + 1]) && isOctal(raw[i + 2]) && isOctal(raw[i + 3])) {
      out[n++] = ((raw[i + 1] - 48) * 64 + (raw[i + 2] - 48) * 8 + (raw[i + 3] - 48)) & 0xff;
      i += 3;
    } else out[n++] = b;
  }
  return out.subarray(0, n).toString('utf8');
}

const isOctal = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x37;

export function formatEntry(e: FstabEntry): string {
  return [fstabEscape(e.source), fstabEscape(e.target), e.fstype, e.options, e.dump, e.pass].join(' ');
}

/**
 * The fields of an fstab line are split where libmount splits them: on C-locale isspace() bytes
 * (space, tab, \v, \f, \r), never on other Unicode spaces (a non-breaking space is part of a path).
 */
const FIELD_SEPARATOR = /[ \t\v\f\r]+/;

export function parseEntry(line: string): FstabEntry | undefined {
  const t = line.replace(/^[ \t\v\f\r]+|[ \t\v\f\r]+$/g, '');
  if (!t || t.startsWith('#')) return undefined;
  const f = t.split(FIELD_SEPARATOR);
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

// A path spelled as sameTargetKey would not return it (most are: no split and join for them).
const NOT_CANONICAL = /\/\/|\/\.(?:\/|$)|.\/$/;

/**
 * A mountpoint as systemd's fstab generator and libmount compare them: repeated slashes, `.`
 * components and a trailing slash dropped. `/ais/d1/` is the line of /ais/d1: missed, a hand
 * line would stay beside racksmith's, and at boot the first of them mounts there.
 */
export function sameTargetKey(target: string): string {
  if (!target.startsWith('/') || !NOT_CANONICAL.test(target)) return target;
  const parts = target.split('/').filter((p) => p !== '' && p !== '.');
  return '/' + parts.join('/');
}

// Every mount resource of a host looks its target up in the same fstab: keep the last one parsed.
let parsed: { text: string; byTarget: Map<string, Readonly<FstabEntry>>; count: Map<string, number> } | undefined;

/** The last entry for `target`, however its line spells the path (sameTargetKey; mount(8) uses the last one too). Read-only: it is shared. */
export function findEntry(text: string, target: string): Readonly<FstabEntry> | undefined {
  if (parsed?.text !== text) {
    const byTarget = new Map<string, Readonly<FstabEntry>>();
    const count = new Map<string, number>();
    for (const line of text.split('\n')) {
      const e = parseEntry(line);
      if (!e) continue;
      const key = sameTargetKey(e.target);
      byTarget.set(key, Object.freeze(e)); // a later line wins
      count.set(key, (count.get(key) ?? 0) + 1);
    }
    parsed = { text, byTarget, count };
  }
  return parsed.byTarget.get(sameTargetKey(target));
}

/** How many entries `text` has for `target` (more than one: setEntry collapses them into one). */
export function entryCount(text: string, target: string): number {
  findEntry(text, target);
  return parsed!.count.get(sameTargetKey(target)) ?? 0;
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
 * Set the entry for `want.target`: the first existing line for that target (however spelled:
 * sameTargetKey) is replaced in place (so comments and order stay), later duplicates are
 * dropped; otherwise the line is appended.
 */
export function setEntry(text: string, want: FstabEntry): string {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  const out: string[] = [];
  let placed = false;
  const key = sameTargetKey(want.target);
  for (const line of lines) {
    const e = parseEntry(line);
    if (e && sameTargetKey(e.target) === key) {
      if (!placed) out.push(formatEntry(want));
      placed = true;
    } else out.push(line);
  }
  if (!placed) out.push(formatEntry(want));
  return out.join('\n') + '\n';
}

/** Remove every entry for `target` (however spelled: sameTargetKey). */
export function removeEntry(text: string, target: string): string {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  const key = sameTargetKey(target);
  const kept = lines.filter((l) => {
    const e = parseEntry(l);
    return !e || sameTargetKey(e.target) !== key;
  });
  return kept.length ? kept.join('\n') + '\n' : '';
}
