/**
 * The host's memory of sensitive files: /var/lib/racksmith/sensitive-files lists (one path a line,
 * paths only) every file racksmith wrote from a secret or with `sensitive: true`. Every file
 * probe reads it (file-common.ts FILE_FACTS), and a listed file's diffs show no content, old or
 * new, in any sink, whatever a later run's resource gives (a missing or empty secret, plain text).
 * A path stays listed until a `file({ path, state: 'absent' })` removes the file (or the line is
 * deleted from the list by hand).
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { shq } from '../shell/quote.ts';
import { InputError } from '../util/errors.ts';
import { maskHex } from '../util/secret.ts';

export const SENSITIVE_RECORD = '/var/lib/racksmith/sensitive-files';

/** A resource's `sensitive` option: true, false or left out. */
export function checkSensitive(value: unknown, where: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean')
    throw new InputError(`${where}: sensitive must be true or false, got ${JSON.stringify(value) ?? typeof value}`);
  return value;
}

/** The paths of a record's text (lines that are absolute paths). */
export function parseSensitiveRecord(text: string): Set<string> {
  return new Set(text.split('\n').filter((l) => l.startsWith('/')));
}

/**
 * Shell (a step, under `set -e`) that lists `path` in the record unless it is there: a copy of the
 * record with the line added, synced and renamed over it. Runs before the file's write, so a file
 * is never written sensitive and left unlisted.
 */
export function markSensitiveScript(path: string, record = SENSITIVE_RECORD): string {
  const dir = posix.dirname(record);
  const r = shq(record);
  return `if ! grep -qxF -e ${shq(path)} ${r} 2>/dev/null; then
  { mkdir -p -- ${shq(dir)} && [ -w ${shq(dir)} ]; } 2>/dev/null || { echo ${shq(`cannot list ${path} as sensitive in ${record} (no write access: run as root, or with become)`)} >&2; exit 1; }
  rs_r=$(mktemp ${shq(`${dir}/.${posix.basename(record)}.racksmith-tmp.XXXXXX`)})
  trap 'rm -f "$rs_r"' EXIT
  if [ -f ${r} ]; then cat -- ${r} > "$rs_r"; fi
  printf '%s\\n' ${shq(path)} >> "$rs_r"
  chmod 644 "$rs_r"
  sync -- "$rs_r" 2>/dev/null || sync
  mv -f -- "$rs_r" ${r}
  trap - EXIT
fi`;
}

/** Shell (a step, under `set -e`) that takes `path` off the record, if listed. */
export function forgetSensitiveScript(path: string, record = SENSITIVE_RECORD): string {
  const dir = posix.dirname(record);
  const r = shq(record);
  return `if grep -qxF -e ${shq(path)} ${r} 2>/dev/null; then
  rs_r=$(mktemp ${shq(`${dir}/.${posix.basename(record)}.racksmith-tmp.XXXXXX`)})
  trap 'rm -f "$rs_r"' EXIT
  grep -vxF -e ${shq(path)} -- ${r} > "$rs_r" || [ $? = 1 ]
  chmod 644 "$rs_r"
  sync -- "$rs_r" 2>/dev/null || sync
  mv -f -- "$rs_r" ${r}
  trap - EXIT
fi`;
}

/** What a sensitive file's diff shows of one side: its size and a keyed hash (confirms no guess without the installation key). */
function side(content: Buffer | undefined, size: number | undefined, hash: string | undefined): string {
  if (size === undefined) return 'absent';
  const h = hash ?? (content ? createHash('sha256').update(content).digest('hex') : undefined);
  return h === undefined ? `${size} bytes` : `${size} bytes, ${'hmac:' + maskHex(h)}`;
}

/**
 * The diff of a sensitive file: no content, only that it changes, its sizes and keyed hashes
 * (the same content has the same hash on every run of this installation).
 */
export function sensitiveDiff(
  path: string,
  before: { size?: number; content?: Buffer; sha256?: string } | undefined,
  after: Buffer,
): string {
  const old = before ? side(before.content, before.size, before.sha256) : 'absent';
  return `${path} (sensitive: content not shown): ${old} → ${side(after, after.length, undefined)}\n`;
}
