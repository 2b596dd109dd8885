import { InputError } from '../util/errors.ts';
import { MASK_PATTERN } from '../util/secret.ts';

/**
 * The one place where values become shell words. Every value that reaches a remote shell goes
 * through `shq`: POSIX single quotes, with embedded single quotes closed, escaped and reopened.
 * Nothing inside single quotes is special to sh, so `$()`, backticks, `;`, newlines and globs
 * arrive literally.
 */
export function shq(value: string | number): string {
  // A secret (or a string built from one) would reach the host as its mask: resources refuse it
  // at build time (contract/resource.ts common()); this is the last line.
  if (typeof value === 'object') throw new InputError('a secret cannot be passed as a shell word: it would reach the host as its mask');
  const s = String(value);
  if (MASK_PATTERN.test(s))
    throw new InputError('a string built from a secret cannot be passed as a shell word: it holds the mask, not the value');
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
