import type { OsFamily } from './types.ts';

/**
 * os-release's assignments (shell-like: `KEY=value`, `KEY="va\"lue"`, `KEY='value'`; comments
 * and blank lines skipped). Only the quoting os-release(5) allows, never a shell evaluation.
 */
export function parseOsRelease(lines: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of lines) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(raw);
    if (!m) continue;
    let v = m[2].trim();
    if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1).replace(/\\([$"`\\])/g, '$1');
    else if (v.length >= 2 && v.startsWith("'") && v.endsWith("'")) v = v.slice(1, -1);
    out.set(m[1], v);
  }
  return out;
}

const FAMILIES: ReadonlyArray<readonly [OsFamily, readonly string[]]> = [
  ['debian', ['debian', 'ubuntu', 'raspbian', 'linuxmint', 'pop']],
  ['rhel', ['rhel', 'centos', 'fedora', 'rocky', 'almalinux', 'ol', 'amzn', 'scientific', 'eurolinux', 'circle']],
  ['suse', ['suse', 'sles', 'sles_sap', 'opensuse', 'opensuse-leap', 'opensuse-tumbleweed']],
  ['arch', ['arch', 'archarm', 'manjaro', 'endeavouros']],
  ['alpine', ['alpine']],
];

/** The family of an OS: its ID first, then each ID_LIKE in order (Ubuntu's `ID_LIKE=debian`, Rocky's `"rhel centos fedora"`). */
export function osFamily(id: string, idLike: string): OsFamily {
  for (const candidate of [id, ...idLike.split(/\s+/)]) {
    const c = candidate.toLowerCase();
    if (!c) continue;
    for (const [family, ids] of FAMILIES) if (ids.includes(c)) return family;
  }
  return 'other';
}
