import { sha256 } from '../../util/sha256.ts';
import { posix } from 'node:path';
import { createTwoFilesPatch } from 'diff/lib/patch/create.js';
import { shBytes, shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { checkPathLength, checkToken, shown, VALUE_LIMITS } from '../../util/input-value.ts';
import type { BatchPart, ProbeBatch } from '../../contract/probe.ts';
import { ProbeError, Refusal } from '../../contract/resource.ts';
import { remember } from '../../util/memo.ts';
import { parseSensitiveRecord, readSensitiveScript, SENSITIVE_RECORDS, type SensitiveRecords } from './sensitive-files.ts';

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
  /** Listed in the host's record of sensitive files (sensitive-files.ts): its diffs show no content. */
  sensitive?: boolean;
  /**
   * The wanted owner (user) or group name that the host does not know (getent finds none): set by
   * the parse of a resource that wants it (withOwnerLookups), never by the file probe; its diff
   * refuses any change (ownerLookupRefusal), as Ansible's file module fails in check mode.
   */
  unknownUser?: string;
  unknownGroup?: string;
}

export function checkAbsolutePath(path: string, what = 'path'): string {
  if (typeof path !== 'string' || !path.startsWith('/'))
    throw new InputError(`${what} must be an absolute path, got ${typeof path === 'string' ? shown(path) : typeof path}`);
  checkToken(path, what, VALUE_LIMITS.path);
  checkPathLength(path, what);
  if (posix.normalize(path) !== path || (path.length > 1 && path.endsWith('/'))) {
    throw new InputError(`${what} must be normalised (no '..', '.', '//' or trailing '/'): ${shown(path)}`);
  }
  return path;
}

/** Octal mode as given by the user ('0644', '644') -> '644'; a number is refused (its base is unknown). */
export function normMode(mode: string | undefined): string | undefined {
  if (mode === undefined) return undefined;
  // a number cannot say which base was meant: 755 is 0o1363 (sticky bit set), not rwxr-xr-x
  if (typeof mode === 'number') {
    const octal = (mode as number).toString(8);
    const asWritten = /^[0-7]{3,4}$/.test(String(mode)) ? `, '${mode}' for ${mode} as written` : '';
    throw new InputError(
      `mode must be a string like '0644', not the number ${mode}: quote the digits ('${octal}' for 0o${octal}${asWritten})`,
    );
  }
  if (typeof mode !== 'string' || !/^0?[0-7]{3,4}$/.test(mode))
    throw new InputError(`mode must be octal like '0644', got ${JSON.stringify(mode)}`);
  return String(parseInt(mode, 8).toString(8));
}

/**
 * A wanted owner or group as given (Ansible's `owner`/`group`): a name, or a numeric id (a number,
 * or a string of digits). Refused (exit 3): what chown could not take as one name, and what the
 * name lookups of the probe (ownerLookups) could not carry.
 */
export function checkOwner<T extends string | number | undefined>(value: T, what: string): T {
  if (value === undefined) return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new InputError(`${what} must be a name or an id (an integer from 0), got ${value}`);
    return value;
  }
  checkToken(value, what, VALUE_LIMITS.component);
  if (!/^[^\s:-][^\s:]*$/.test(value))
    throw new InputError(`${what} must be a user or group name (no blanks or ':', not starting with '-') or an id, got ${shown(value)}`);
  return value;
}

/** A name (not an id) to look up: a string that is not all digits. */
const isName = (v: string | number | undefined): v is string => typeof v === 'string' && !/^\d+$/.test(v);

/**
 * A wanted name's lookup on the host (an answer of FILE_FACTS for a `user:NAME` or `group:NAME`
 * argument): `known` (some probed file is owned by it, or getent finds it), `unknown` (getent finds
 * none), `untold` (getent could not answer: not installed, a database it cannot enumerate).
 */
export type NameLookup = 'known' | 'unknown' | 'untold';

/**
 * The name lookups of a wanted owner and group, as a probe declaration (numeric ids are not looked
 * up: Ansible takes them as they are). A type, not an interface: a declaration is a record.
 */
export type OwnerLookups = {
  readonly user: BatchPart<NameLookup> | undefined;
  readonly group: BatchPart<NameLookup> | undefined;
};

/**
 * The probe parts that look up the wanted owner and group names, next to the file's own part
 * (`fileProbe`): arguments of the same batch, so the lookup runs with the file's `find` line at
 * hand and only for a name no probed file is owned by (a converged host starts no process for it).
 */
export function ownerLookups(owner: string | number | undefined, group: string | number | undefined): OwnerLookups {
  // (the batch's answers to these arguments are NameLookups: FILE_FACTS answers by argument)
  const part = (arg: string) => ({ batch: FILE_FACTS as ProbeBatch<NameLookup>, arg });
  return { user: isName(owner) ? part(`user:${owner}`) : undefined, group: isName(group) ? part(`group:${group}`) : undefined };
}

/**
 * A file's facts with the wanted names its host does not know (the facts themselves when it
 * knows them all, or could not tell): what the resource's parse gives its diff.
 */
export function withOwnerLookups(
  f: FileFacts,
  found: { readonly user: NameLookup | undefined; readonly group: NameLookup | undefined },
  owner: string | number | undefined,
  group: string | number | undefined,
): FileFacts {
  const user = found.user === 'unknown' && isName(owner) ? owner : undefined;
  const grp = found.group === 'unknown' && isName(group) ? group : undefined;
  if (user === undefined && grp === undefined) return f;
  return { ...f, ...(user !== undefined && { unknownUser: user }), ...(grp !== undefined && { unknownGroup: grp }) };
}

/**
 * Why `path` cannot be given its wanted owner or group (a name the host does not know), as the
 * Refusal its diff throws when it has changes to make; undefined when nothing stands in the way.
 * Ansible's file module fails so, in check mode too ("chown failed: failed to look up user X").
 */
export function ownerLookupRefusal(path: string, f: FileFacts): Refusal | undefined {
  const missing = [
    f.unknownUser !== undefined && `no user ${shown(f.unknownUser)} on this host (getent passwd finds none)`,
    f.unknownGroup !== undefined && `no group ${shown(f.unknownGroup)} on this host (getent group finds none)`,
  ].filter((m): m is string => m !== false);
  if (!missing.length) return undefined;
  return new Refusal(`cannot chown ${path}: ${missing.join('; ')}; a resource that creates it belongs in this one's dependsOn`);
}

/** The facts a stacked writer diffs against (predicted by the writer before it), with its own unknown names kept. */
export function keepOwnerLookups(own: FileFacts, predicted: FileFacts): FileFacts {
  const { unknownUser, unknownGroup } = own;
  if (unknownUser === undefined && unknownGroup === undefined) return predicted;
  return { ...predicted, ...(unknownUser !== undefined && { unknownUser }), ...(unknownGroup !== undefined && { unknownGroup }) };
}

/** Why a file's facts could not be read (its probe answer instead of FileFacts). */
export class FileUnreadable {
  constructor(readonly error: string) {}
}

/** A file probe's answer: the file's facts, or why they could not be read. */
export type FileAnswer = FileFacts | FileUnreadable;

/** The facts in a file probe's answer; ProbeError when the host could not tell. */
export function fileFacts(answer: unknown): FileFacts {
  if (answer instanceof FileUnreadable) throw new ProbeError(answer.error);
  if (typeof answer !== 'object' || answer === null || typeof (answer as FileFacts).type !== 'string') {
    throw new ProbeError(`no file facts in the probe output (${String(answer).slice(0, 100)})`);
  }
  return answer as FileFacts;
}

/**
 * A file's facts as a batched probe part: every file of every resource of a script is looked at
 * by one `find` (type, size, mode, owner), and the content of all small regular files is sent by
 * one `od` as hex bytes (one process: `cat | base64` took two; their sha256 is computed here); a
 * file too large to transfer is hashed on the host. Each resource gets its own path's FileFacts.
 */
export function fileProbe(path: string): BatchPart<FileAnswer> {
  // (the batch's answer to a path is a FileAnswer: FILE_FACTS answers by argument)
  return { batch: FILE_FACTS as ProbeBatch<FileAnswer>, arg: path };
}

/** Each ASCII character's value as a hex digit (lowercase, as od prints them), else -1. */
const HEX_DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) HEX_DIGIT['0123456789abcdef'.charCodeAt(i)] = i;

/**
 * The bytes of `od -A n -v -t x1` output in text[from, to): two lowercase hex digits a byte, the
 * spaces and line breaks between them skipped. (A loop over the text with a table of digits: four
 * times as fast here as stripping the blanks with a regex for Buffer.from's hex, twice as fast as
 * comparing character ranges.)
 */
export function fromOdHex(text: string, from = 0, to = text.length): Buffer {
  const out = Buffer.allocUnsafe(Math.max(0, to - from) >> 1);
  let n = 0;
  let high = -1;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    const digit = c < 128 ? HEX_DIGIT[c] : -1;
    if (digit < 0) continue;
    if (high < 0) high = digit;
    else {
      out[n++] = (high << 4) | digit;
      high = -1;
    }
  }
  return out.subarray(0, n);
}

const ABSENT: FileFacts = Object.freeze({ type: 'absent' });
const ABSENT_SENSITIVE: FileFacts = Object.freeze({ type: 'absent', sensitive: true });
const LINK: FileFacts = Object.freeze({ type: 'link' });
const OTHER: FileFacts = Object.freeze({ type: 'other' });

/**
 * The file probe: its arguments are paths (FileAnswer), and the owner and group names resources
 * want (`user:NAME`, `group:NAME`, never a path: a NameLookup; see ownerLookups).
 */
export const FILE_FACTS: ProbeBatch<FileAnswer | NameLookup> = fileFactsBatch(SENSITIVE_RECORDS);

const isPath = (arg: string) => arg.startsWith('/');

/** The file probe batch, reading the lists of sensitive files at `records` (a test's own). */
export function fileFactsBatch(records: SensitiveRecords): ProbeBatch<FileAnswer | NameLookup> {
  return {
    shared: true,
    script(args) {
      const paths = args.filter(isPath);
      const names = args.filter((a) => !isPath(a));
      const list = paths.map(shq).join(' ');
      // The regular files of a size: find's lines walked with builtins (`read` of a here-document
      // takes a system call per byte): type, size, then the path after the other five fields.
      const pick = (test: string) => `set --
rs_ff_ifs=$IFS; rs_ff_opts=$-; set -f; IFS='
'
for l in $rs_meta; do
  case $l in f\\ *) ;; *) continue ;; esac
  r=\${l#f }; s=\${r%% *}; r=\${r#* }; r=\${r#* }; r=\${r#* }; r=\${r#* }; r=\${r#* }; r=\${r#* }
  [ "$s" ${test} ${MAX_PROBED_BYTES} ] && set -- "$@" "$r"
done
IFS=$rs_ff_ifs; case $rs_ff_opts in *f*) ;; *) set +f ;; esac`;
      return `rs_meta=${paths.length ? `$(find ${list} -maxdepth 0 -printf '%y %s %m %U %u %G %g %p\\n' 2>/dev/null)` : ''}
printf '%s\\n' "$rs_meta"
${pick('-le')}
echo @content
[ $# -gt 0 ] && od -A n -v -t x1 -- "$@"
${pick('-gt')}
echo @sha
[ $# -gt 0 ] && sha256sum -- "$@"${names.length ? `\n${lookupScript(names)}` : ''}
echo @sensitive
${readSensitiveScript(records)}
:`;
    },
    split(stdout, args) {
      const c = stdout.indexOf('\n@content\n');
      const h = stdout.indexOf('\n@sha\n');
      const s = stdout.indexOf('\n@sensitive\n', h);
      if (c < 0 || h < c || s < 0) return args.map((a) => (isPath(a) ? new FileUnreadable('file probe output is incomplete') : 'untold'));
      const n = stdout.lastIndexOf('\n@names\n', s);
      const lookups = n > h ? readLookups(stdout.slice(n + 8, s)) : undefined;
      // (a record that cannot be read: every file is taken as sensitive)
      const listed = parseSensitiveRecord(stdout.slice(s + 12));
      const everyFile = stdout
        .slice(s + 12)
        .split('\n')
        .includes('@unreadable');
      const sensitive = (path: string) => everyFile || listed.has(path);
      // find's line of each path: `TYPE SIZE MODE UID USER GID GROUP PATH` (the path may hold spaces)
      const meta = new Map<string, string>();
      for (let at = 0; at < c;) {
        let end = stdout.indexOf('\n', at);
        if (end < 0 || end > c) end = c;
        const line = stdout.slice(at, end);
        at = end + 1;
        let sp = -1;
        for (let k = 0; k < 7 && (sp = line.indexOf(' ', sp + 1)) >= 0; k++);
        if (sp >= 0) meta.set(line.slice(sp + 1), line);
      }
      const hashes = new Map<string, string>();
      const hashed = lookups ? n : s;
      if (h + 6 < hashed) {
        for (const line of stdout.slice(h + 6, hashed).split('\n')) {
          const m = /^\\?([0-9a-f]{64}) [ *](.*)$/.exec(line);
          if (m) hashes.set(m[2], m[1]);
        }
      }
      // Small files' contents, concatenated in the order find listed them.
      const blob = fromOdHex(stdout, c + 10, h);
      const content = new Map<string, Buffer>();
      let at = 0;
      for (const [path, line] of meta) {
        if (line[0] !== 'f') continue;
        const size = Number(line.slice(2, line.indexOf(' ', 2)));
        if (size <= MAX_PROBED_BYTES) content.set(path, blob.subarray(at, (at += size)));
      }
      const whole = at === blob.length;
      return args.map((path): FileAnswer | NameLookup => {
        if (!isPath(path)) return lookups?.get(path) ?? 'untold';
        const line = meta.get(path);
        if (!line) return sensitive(path) ? ABSENT_SENSITIVE : ABSENT;
        if (line[0] === 'l') return LINK;
        if (line[0] !== 'd' && line[0] !== 'f') return OTHER;
        // A file that grew or shrank between find and cat: its content cannot be told apart.
        if (line[0] === 'f' && !whole && content.has(path)) return new FileUnreadable('changed while it was read');
        return factsOf(path, line, content.get(path), hashes.get(path), line[0] === 'f' && sensitive(path));
      });
    },
  };
}

/**
 * The lookups of wanted names (`user:NAME`, `group:NAME`), after find's lines are in $rs_meta: a
 * name some probed file is owned by (find printed it) is known without a process; only another
 * (a file not yet owned by it, or not yet there) is asked of getent, the NSS lookup chown makes
 * (LDAP and sssd users included, which /etc/passwd does not list). One line per argument:
 * `CODE ARG`, getent's exit code (0 found, 2 none).
 */
function lookupScript(names: readonly string[]): string {
  const seen = `rs_ff_seen=' '
rs_ff_ifs=$IFS; rs_ff_opts=$-; set -f; IFS='
'
for l in $rs_meta; do
  r=\${l#* }; r=\${r#* }; r=\${r#* }; r=\${r#* }; u=\${r%% *}; r=\${r#* }; r=\${r#* }; g=\${r%% *}
  case $rs_ff_seen in *" user:$u group:$g "*) ;; *) rs_ff_seen="$rs_ff_seen user:$u group:$g " ;; esac
done
IFS=$rs_ff_ifs; case $rs_ff_opts in *f*) ;; *) set +f ;; esac`;
  const ask = (arg: string) => {
    const db = arg.startsWith('user:') ? 'passwd' : 'group';
    const name = arg.slice(arg.indexOf(':') + 1);
    return `case $rs_ff_seen in *${shq(` ${arg} `)}*) rs_c=0 ;; *) getent ${db} ${shq(name)} >/dev/null 2>&1; rs_c=$? ;; esac; printf '%s %s\\n' "$rs_c" ${shq(arg)}`;
  };
  return ['echo @names', seen, ...names.map(ask)].join('\n');
}

/** The @names section's answers by argument: getent's 0 known, 2 unknown, anything else untold. */
function readLookups(text: string): Map<string, NameLookup> {
  const out = new Map<string, NameLookup>();
  for (const line of text.split('\n')) {
    const sp = line.indexOf(' ');
    if (sp > 0) out.set(line.slice(sp + 1), line.slice(0, sp) === '0' ? 'known' : line.slice(0, sp) === '2' ? 'unknown' : 'untold');
  }
  return out;
}

// A converged fleet's hosts send the same files: a path's facts are made again only when its find
// line, its content or (for a file too large to send) its host-side hash differs from the last
// answer for that path (the same object otherwise, so the resources' parses of it are shared too).
const lastFacts = new Map<
  string,
  { line: string; content: Buffer | undefined; hash: string | undefined; sensitive: boolean; facts: FileAnswer }
>();

function factsOf(path: string, line: string, content: Buffer | undefined, hash: string | undefined, sensitive: boolean): FileAnswer {
  const last = lastFacts.get(path);
  const sameContent = last?.content === content || (content !== undefined && last?.content !== undefined && last.content.equals(content));
  if (last && last.line === line && last.hash === hash && last.sensitive === sensitive && sameContent) return last.facts;
  return remember(lastFacts, path, { line, content, hash, sensitive, facts: readFacts(line, content, hash, sensitive) }).facts;
}

function readFacts(line: string, content: Buffer | undefined, hash: string | undefined, sensitive: boolean): FileAnswer {
  // (by index: destructuring goes through the array iterator, for every file of every host)
  const f = line.split(' ', 7);
  const owner = { mode: f[2], uid: Number(f[3]), user: f[4], gid: Number(f[5]), group: f[6] };
  if (f[0] === 'd') return { type: 'dir', ...owner };
  const size = Number(f[1]);
  const mark = sensitive ? { sensitive } : undefined;
  if (size > MAX_PROBED_BYTES)
    return hash ? { type: 'file', ...owner, size, sha256: hash, ...mark } : new FileUnreadable('could not hash it');
  const facts: FileFacts = { type: 'file', ...owner, size, content, ...mark };
  // Hashed when asked for (a compare-and-swap write, a saved plan): comparing content needs no hash.
  Object.defineProperty(facts, 'sha256', {
    enumerable: true,
    configurable: true,
    get: () => {
      const value = sha256(content!);
      Object.defineProperty(facts, 'sha256', { value, enumerable: true, writable: true, configurable: true });
      return value;
    },
  });
  return facts;
}

const texts = new WeakMap<Buffer, string>();

/**
 * A probed file's content as text, decoded once: facts are shared and read-only, and a host's
 * mounts all look into the same fstab. Empty for a file without probed content.
 */
export function contentText(f: FileFacts): string {
  const c = f.content;
  if (!c) return '';
  let t = texts.get(c);
  if (t === undefined) texts.set(c, (t = c.toString('utf8')));
  return t;
}

/** Does the file hold exactly `want`? Compares content when the probe brought it, else hashes. */
export function hasContent(f: FileFacts, want: Buffer): boolean {
  if (f.type !== 'file') return false;
  if (f.content) return f.content.equals(want);
  return f.sha256 === sha256(want);
}

export { sha256 };

const printable = (b: Buffer) => !b.includes(0);

/** A unified diff between old and new file text, or a one-line note for binary/large files. */
export function contentDiff(path: string, before: Buffer | undefined, after: Buffer, existed: boolean): string | undefined {
  if ((existed && !before) || (before && !printable(before)) || !printable(after)) return undefined;
  const patch = createTwoFilesPatch(
    existed ? path : '/dev/null',
    path,
    before ? before.toString('utf8') : '',
    after.toString('utf8'),
    '',
    '',
    { context: 3 },
  );
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
  /** Keep a timestamped copy of the old file beside it (`PATH.racksmith-YYYYmmddTHHMMSS.bak`, `….N.bak` for a second one that second). */
  backup?: boolean;
  /** Shell run with the new content in "$t" before it replaces the file; non-zero aborts. */
  check?: string;
}

/** Where the temp files of writes of `path` are made: `DIR/.NAME.racksmith-tmp.` + 6 random characters. */
export function tempPrefix(path: string): string {
  // (NAME cut so the temp name stays within NAME_MAX)
  const name = Buffer.from(posix.basename(path))
    .subarray(0, 200)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${posix.dirname(path)}/.${name}.racksmith-tmp.`;
}

/**
 * Steps that replace a file atomically: write a temp file in the same directory, fsync it, set
 * mode/owner, rename over the target. A reader (or a crash) sees the old file or the new one,
 * never half of it.
 */
export function atomicWriteScript(w: WriteSpec): string {
  const p = shq(w.path);
  const dir = shq(posix.dirname(w.path));
  const lines = [`p=${p}`, `[ -d ${dir} ] || mkdir -p -- ${dir}`];
  if (w.expectSha256 === 'absent') {
    lines.push(`if [ -e "$p" ] || [ -L "$p" ]; then echo "$p appeared since it was probed; not overwriting" >&2; exit 3; fi`);
  } else if (w.expectSha256) {
    lines.push(
      `rs_h=$(sha256sum < "$p"); [ "\${rs_h%% *}" = ${shq(w.expectSha256)} ] || { echo "$p changed since it was probed; not overwriting" >&2; exit 3; }`,
    );
  }
  // The temp file is named after its file, so a run that writes the file removes what an
  // interrupted write of it left (the host's apply lock: no other run is writing it now).
  const tmp = tempPrefix(w.path);
  lines.push(
    `for s in ${shq(tmp)}??????; do [ -f "$s" ] && [ ! -L "$s" ] && rm -f -- "$s"; done`,
    `t=$(mktemp ${shq(tmp + 'XXXXXX')})`,
    `trap 'rm -f "$t"' EXIT`,
    // A new file keeps the mode and owner of the one it replaces (cp -p, whose content the next
    // line replaces), unless told otherwise; a new one gets 644.
    `if [ -f "$p" ]; then cp -p -- "$p" "$t"; ${w.mode ? '' : 'else chmod 644 "$t"; '}fi`,
    `${shBytes(w.content)} > "$t"`,
  );
  if (w.owner !== undefined || w.group !== undefined) {
    lines.push(`chown ${shq(`${w.owner ?? ''}${w.group !== undefined ? ':' + w.group : ''}`)} "$t"`);
    // (a chown clears setuid and setgid: the mode is set again after it)
    if (!w.mode) lines.push(`if [ -f "$p" ]; then chmod --reference="$p" "$t"; fi`);
  }
  if (w.mode) lines.push(`chmod ${shq(w.mode)} "$t"`);
  if (w.check) lines.push(w.check);
  // (a name of its own: a second write of the file within the same second must not overwrite the first copy)
  if (w.backup)
    lines.push(
      `if [ -f "$p" ]; then b="$p.racksmith-$(date +%Y%m%dT%H%M%S)"; c="$b.bak"; k=0; while [ -e "$c" ] || [ -L "$c" ]; do k=$((k + 1)); c="$b.$k.bak"; done; cp -p -- "$p" "$c"; fi`,
    );
  lines.push(`sync -- "$t" 2>/dev/null || sync`, `mv -f -- "$t" "$p"`, `trap - EXIT`);
  return lines.join('\n');
}

export function metadataChanges(
  path: string,
  f: FileFacts,
  mode?: string,
  owner?: string | number,
  group?: string | number,
): { summary: string }[] {
  const out: { summary: string }[] = [];
  if (mode && f.mode !== mode) out.push({ summary: `${path}: mode ${f.mode} → ${mode}` });
  if (!ownerMatches(owner, f.uid, f.user)) out.push({ summary: `${path}: owner ${f.user} → ${owner}` });
  if (!ownerMatches(group, f.gid, f.group)) out.push({ summary: `${path}: group ${f.group} → ${group}` });
  return out;
}

export function chmodChownScript(path: string, mode?: string, owner?: string | number, group?: string | number): string {
  const lines: string[] = [];
  if (mode) lines.push(`chmod ${shq(mode)} -- ${shq(path)}`);
  if (owner !== undefined || group !== undefined)
    lines.push(`chown ${shq(`${owner ?? ''}${group !== undefined ? ':' + group : ''}`)} -- ${shq(path)}`);
  return lines.join('\n');
}

/** The facts a probe would report after writing `content` with the given mode/owner. */
export function predictWrite(f: FileFacts, content: Buffer, mode?: string, owner?: string | number, group?: string | number): FileFacts {
  const keep = f.type === 'file';
  const id = (v: string | number | undefined, oldId?: number, oldName?: string) =>
    v === undefined
      ? { id: keep ? oldId : 0, name: keep ? oldName : 'root' }
      : typeof v === 'number' || /^\d+$/.test(v)
        ? { id: Number(v), name: undefined }
        : { id: undefined, name: v };
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
