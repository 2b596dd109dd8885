import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { shBytes, shq } from '../shell/quote.ts';
import { InputError } from '../util/errors.ts';
import { ProbeError } from './types.ts';

/** Files larger than this are compared by hash only (no content transfer, no text diff). */
export const MAX_PROBED_BYTES = 1024 * 1024;

export interface FileFacts {
  type: 'absent' | 'file' | 'link' | 'dir' | 'other';
  mode?: string; // octal, no leading zero: "644"
  uid?: number;
  user?: string;
  gid?: number;
  group?: string;
  size?: number;
  sha256?: string;
  /** Present when the file is at most MAX_PROBED_BYTES. */
  content?: Buffer;
}

export function checkAbsolutePath(path: string, what = 'path'): string {
  if (typeof path !== 'string' || !path.startsWith('/')) throw new InputError(`${what} must be an absolute path, got ${JSON.stringify(path)}`);
  if (path.includes('\0') || path.includes('\n')) throw new InputError(`${what} must not contain NUL or newline: ${JSON.stringify(path)}`);
  if (posix.normalize(path) !== path || (path.length > 1 && path.endsWith('/'))) {
    throw new InputError(`${what} must be normalised (no '..', '.', '//' or trailing '/'): ${path}`);
  }
  return path;
}

/** Octal mode as given by the user ('0644', '644', 0o644) -> '644'. */
export function normMode(mode: string | number | undefined): string | undefined {
  if (mode === undefined) return undefined;
  const s = typeof mode === 'number' ? mode.toString(8) : mode;
  if (!/^0?[0-7]{3,4}$/.test(s)) throw new InputError(`mode must be octal like '0644', got ${JSON.stringify(mode)}`);
  return String(parseInt(s, 8).toString(8));
}

/**
 * Shell that prints a file's facts: key=value lines, then base64 of the content (its sha256 is
 * computed here from that; only a file too large to transfer is hashed on the host). Two
 * processes at most: many resources read the same file (every mount reads /etc/fstab), and the
 * engine runs an identical probe part once per script.
 */
export function fileProbe(path: string): string {
  const p = shq(path);
  const fields = "mode=%a\nuid=%u\nuser=%U\ngid=%g\ngroup=%G";
  return `p=${p}
if [ -L "$p" ]; then echo type=link
elif [ -d "$p" ]; then echo type=dir; stat -c '${fields}' -- "$p"
elif [ -f "$p" ]; then echo type=file; rs_s=$(stat -c '${fields}\nsize=%s' -- "$p") && printf '%s\n' "$rs_s"
  if [ "\${rs_s##*size=}" -le ${MAX_PROBED_BYTES} ]; then echo content:; base64 < "$p"; else set -- $(sha256sum < "$p"); echo "sha256=$1"; fi
elif [ -e "$p" ]; then echo type=other
else echo type=absent; fi`;
}

export function parseFileFacts(out: string): FileFacts {
  const idx = out.indexOf('content:\n');
  const head = idx < 0 ? out : out.slice(0, idx);
  const kv = new Map<string, string>();
  for (const line of head.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) kv.set(line.slice(0, eq), line.slice(eq + 1));
  }
  const type = kv.get('type') as FileFacts['type'] | undefined;
  if (!type) throw new ProbeError(`unexpected probe output: ${out.slice(0, 200)}`);
  const num = (k: string) => (kv.has(k) ? Number(kv.get(k)) : undefined);
  const facts: FileFacts = { type, mode: kv.get('mode'), uid: num('uid'), user: kv.get('user'), gid: num('gid'), group: kv.get('group'), size: num('size'), sha256: kv.get('sha256') };
  if (idx >= 0) {
    facts.content = Buffer.from(out.slice(idx + 'content:\n'.length).replace(/\s+/g, ''), 'base64');
    facts.sha256 ??= sha256(facts.content);
  }
  if (type === 'file' && !facts.sha256) throw new ProbeError(`no content or hash for a file: ${out.slice(0, 200)}`);
  return facts;
}

export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

const printable = (b: Buffer) => !b.includes(0);

/** A unified diff between old and new file text, or a one-line note for binary/large files. */
export function contentDiff(path: string, before: Buffer | undefined, after: Buffer, existed: boolean): string | undefined {
  if ((existed && !before) || (before && !printable(before)) || !printable(after)) return undefined;
  const patch = createTwoFilesPatch(existed ? path : '/dev/null', path, before ? before.toString('utf8') : '', after.toString('utf8'), '', '', { context: 3 });
  // Drop the "Index:" / "====" preamble: operators expect `diff -u` output.
  return patch.replace(/^(Index: .*\n)?=+\n/, '').replace(/\t\n/g, '\n');
}

/** Does `owner` (name or numeric id) match what the probe saw? */
export function ownerMatches(want: string | number | undefined, id?: number, name?: string): boolean {
  if (want === undefined) return true;
  return String(want) === String(id) || String(want) === name;
}

export interface WriteSpec {
  path: string;
  content: Buffer;
  mode?: string;
  owner?: string | number;
  group?: string | number;
  /** Compare-and-swap: refuse to replace the file when it no longer has this hash ('absent' = must not exist). */
  expectSha256?: string | 'absent';
  /** Keep a timestamped copy of the old file beside it (`PATH.racksmith-YYYYmmddTHHMMSS.bak`). */
  backup?: boolean;
  /** Shell run with the new content in "$t" before it replaces the file; non-zero aborts. */
  check?: string;
}

/**
 * Steps that replace a file atomically: write a temp file in the same directory, fsync it, set
 * mode/owner, rename over the target. A reader (or a crash) sees the old file or the new one,
 * never half of it.
 */
export function atomicWriteScript(w: WriteSpec): string {
  const p = shq(w.path);
  const dir = shq(posix.dirname(w.path));
  const lines = [`p=${p}`, `mkdir -p -- ${dir}`];
  if (w.expectSha256 === 'absent') {
    lines.push(`if [ -e "$p" ] || [ -L "$p" ]; then echo "$p appeared since it was probed; not overwriting" >&2; exit 3; fi`);
  } else if (w.expectSha256) {
    lines.push(`[ "$(sha256sum < "$p" | cut -c1-64)" = ${shq(w.expectSha256)} ] || { echo "$p changed since it was probed; not overwriting" >&2; exit 3; }`);
  }
  lines.push(
    `t=$(mktemp ${shq(posix.dirname(w.path) + '/.racksmith.XXXXXX')})`,
    `trap 'rm -f "$t"' EXIT`,
    `${shBytes(w.content)} > "$t"`,
  );
  // A new file keeps the mode/owner of the one it replaces unless told otherwise.
  lines.push(`if [ -e "$p" ]; then chmod "$(stat -c %a -- "$p")" "$t"; chown "$(stat -c %u:%g -- "$p")" "$t"; else chmod 644 "$t"; fi`);
  if (w.mode) lines.push(`chmod ${shq(w.mode)} "$t"`);
  if (w.owner !== undefined || w.group !== undefined) lines.push(`chown ${shq(`${w.owner ?? ''}${w.group !== undefined ? ':' + w.group : ''}`)} "$t"`);
  if (w.check) lines.push(w.check);
  if (w.backup) lines.push(`if [ -f "$p" ]; then cp -p -- "$p" "$p.racksmith-$(date +%Y%m%dT%H%M%S).bak"; fi`);
  lines.push(`sync -- "$t" 2>/dev/null || sync`, `mv -f -- "$t" "$p"`, `trap - EXIT`);
  return lines.join('\n');
}

export function metadataChanges(path: string, f: FileFacts, mode?: string, owner?: string | number, group?: string | number): { summary: string }[] {
  const out: { summary: string }[] = [];
  if (mode && f.mode !== mode) out.push({ summary: `${path}: mode ${f.mode} → ${mode}` });
  if (!ownerMatches(owner, f.uid, f.user)) out.push({ summary: `${path}: owner ${f.user} → ${owner}` });
  if (!ownerMatches(group, f.gid, f.group)) out.push({ summary: `${path}: group ${f.group} → ${group}` });
  return out;
}

export function chmodChownScript(path: string, mode?: string, owner?: string | number, group?: string | number): string {
  const lines: string[] = [];
  if (mode) lines.push(`chmod ${shq(mode)} -- ${shq(path)}`);
  if (owner !== undefined || group !== undefined) lines.push(`chown ${shq(`${owner ?? ''}${group !== undefined ? ':' + group : ''}`)} -- ${shq(path)}`);
  return lines.join('\n');
}

/** The facts a probe would report after writing `content` with the given mode/owner. */
export function predictWrite(f: FileFacts, content: Buffer, mode?: string, owner?: string | number, group?: string | number): FileFacts {
  const keep = f.type === 'file';
  const id = (v: string | number | undefined, oldId?: number, oldName?: string) =>
    v === undefined ? { id: keep ? oldId : 0, name: keep ? oldName : 'root' } : typeof v === 'number' || /^\d+$/.test(v) ? { id: Number(v), name: undefined } : { id: undefined, name: v };
  const u = id(owner, f.uid, f.user);
  const g = id(group, f.gid, f.group);
  return {
    type: 'file',
    mode: mode ?? (keep ? f.mode : '644'),
    uid: u.id,
    user: u.name,
    gid: g.id,
    group: g.name,
    size: content.length,
    sha256: sha256(content),
    content: content.length <= MAX_PROBED_BYTES ? content : undefined,
  };
}
