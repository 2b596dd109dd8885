import { InputError } from '../util/errors.ts';
import { MASK_PATTERN } from '../util/secret.ts';

// How to get a secret to the host, for the errors that refuse one.
const COMPOSE = "; compose it with text as secretText`KEY=${secret}` (from 'racksmith') and give that to file({ content })";

/**
 * The one place where values become shell words. Every value that reaches a remote shell goes
 * through `shq`: POSIX single quotes, with embedded single quotes closed, escaped and reopened.
 * Nothing inside single quotes is special to sh, so `$()`, backticks, `;`, newlines and globs
 * arrive literally.
 */
export function shq(value: string | number): string {
  // A secret (or a string built from one) would reach the host as its mask: resources refuse it
  // at build time (contract/resource.ts common()); this is the last line.
  if (typeof value === 'object')
    throw new InputError(`a secret cannot be passed as a shell word: it would reach the host as its mask${COMPOSE}`);
  const s = String(value);
  if (MASK_PATTERN.test(s))
    throw new InputError(`a string built from a secret cannot be passed as a shell word: it holds the mask, not the value${COMPOSE}`);
  if (s.includes('\0')) throw new Error('a NUL byte cannot be passed through a shell word');
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Quote each word and join them into one command line. */
export function shJoin(words: ReadonlyArray<string | number>): string {
  return words.map(shq).join(' ');
}

/**
 * A shell snippet that writes `content` (any bytes) to stdout: text as one quoted printf (a
 * builtin: no process), anything else (NUL bytes, bytes that are not UTF-8, a secret's mask)
 * through base64, whose characters are all the script then holds of it.
 */
export function shBytes(content: string | Buffer): string {
  const bytes = Buffer.from(content);
  if (bytes.length === 0) return ':';
  const text = bytes.toString('utf8');
  if (!bytes.includes(0) && !MASK_PATTERN.test(text) && Buffer.from(text).equals(bytes)) return `printf '%s' ${shq(text)}`;
  return `printf '%s' ${shq(bytes.toString('base64'))} | base64 -d`;
}
