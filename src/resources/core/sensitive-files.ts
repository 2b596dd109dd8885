/**
 * The host's memory of sensitive files: /var/lib/racksmith/sensitive-files lists (one path a line,
 * paths only) every file racksmith wrote from a secret or with `sensitive: true` (a login user who
 * may not write it lists in ~/.local/state/racksmith/sensitive-files). Every file probe reads
 * both (file-common.ts FILE_FACTS), and a listed file's diffs show no content, old or new, in any
 * sink, whatever a later run's resource gives (a missing or empty secret, plain text). A path
 * stays listed until a `file({ path, state: 'absent' })` removes the file (or its line is deleted
 * from the list by hand).
 */
import { createHash } from 'node:crypto';
import { shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { maskHex } from '../../util/secret.ts';

export const SENSITIVE_RECORD = '/var/lib/racksmith/sensitive-files';

/**
 * Where the lists are, as shell words: the host's (root writes it), and the connecting user's own
 * for a user who cannot write the host's (a run without become). A probe reads both.
 */
export interface SensitiveRecords {
  system: string;
  user: string;
}
export const SENSITIVE_RECORDS: SensitiveRecords = {
  system: shq(SENSITIVE_RECORD),
  user: '"$HOME/.local/state/racksmith/sensitive-files"',
};

/** Shell that prints both lists (a list that is there but cannot be read: `@unreadable`). */
export function readSensitiveScript(records: SensitiveRecords = SENSITIVE_RECORDS): string {
  return `for rs_r in ${records.system} ${records.user}; do [ -e "$rs_r" ] && { cat -- "$rs_r" || echo @unreadable; }; done`;
}

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

// (replaced through a synced copy renamed over it: a reader sees the old list or the new one)
const replaceList = (edit: string) => `rs_t=$(mktemp "$(dirname -- "$rs_r")/.sensitive-files.racksmith-tmp.XXXXXX")
  trap 'rm -f "$rs_t"' EXIT
  ${edit}
  chmod 644 "$rs_t"
  sync -- "$rs_t" 2>/dev/null || sync
  mv -f -- "$rs_t" "$rs_r"
  trap - EXIT`;

/**
 * Shell (a step, under `set -e`) that lists `path` unless a list has it: in the host's list, or
 * the user's own when the host's cannot be written. Runs before the file's write, so a file is
 * never written sensitive and left unlisted.
 */
export function markSensitiveScript(path: string, records: SensitiveRecords = SENSITIVE_RECORDS): string {
  const p = shq(path);
  const { system, user } = records;
  return `if ! grep -qxF -e ${p} ${system} 2>/dev/null && ! grep -qxF -e ${p} ${user} 2>/dev/null; then
  if { mkdir -p -- "$(dirname -- ${system})" && [ -w "$(dirname -- ${system})" ]; } 2>/dev/null; then rs_r=${system}
  elif { rs_r=${user}; mkdir -p -m 700 -- "$(dirname -- "$rs_r")" && [ -w "$(dirname -- "$rs_r")" ]; } 2>/dev/null; then :
  else echo ${shq(`cannot list ${path} as sensitive (its content would show in later diffs): no write access to`)} ${system} or ${user} >&2; exit 1
  fi
  ${replaceList(`if [ -f "$rs_r" ]; then cat -- "$rs_r" > "$rs_t"; fi
  printf '%s\\n' ${p} >> "$rs_t"`)}
fi`;
}

/** Shell (a step, under `set -e`) that takes `path` off the lists that have it. */
export function forgetSensitiveScript(path: string, records: SensitiveRecords = SENSITIVE_RECORDS): string {
  const p = shq(path);
  return `for rs_r in ${records.system} ${records.user}; do
  if grep -qxF -e ${p} "$rs_r" 2>/dev/null; then
  ${replaceList(`grep -vxF -e ${p} -- "$rs_r" > "$rs_t" || [ $? = 1 ]`)}
  fi
done`;
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
