/**
 * The one place where values become shell words. Every value that reaches a remote shell goes
 * through `shq`: POSIX single quotes, with embedded single quotes closed, escaped and reopened.
 * Nothing inside single quotes is special to sh, so `$()`, backticks, `;`, newlines and globs
 * arrive literally.
 */
export function shq(value: string | number): string {
  const s = String(value);
  if (s.includes('\0')) throw new Error('a NUL byte cannot be passed through a shell word');
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Quote each word and join them into one command line. */
export function shJoin(words: ReadonlyArray<string | number>): string {
  return words.map(shq).join(' ');
}

/** A shell snippet that writes `content` (any bytes) to stdout, using only base64 characters in the script. */
export function shBytes(content: string | Buffer): string {
  const b64 = Buffer.from(content).toString('base64');
  if (b64 === '') return ':';
  return `printf '%s' ${shq(b64)} | base64 -d`;
}
