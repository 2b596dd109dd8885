import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { InputError } from './errors.ts';

/**
 * Size limits of the files racksmith reads as input, by kind. Each is far above what a real one
 * holds (a 10,000-host inventory is ~2 MB) and far below what would exhaust memory.
 */
export const INPUT_LIMITS = {
  /** Inventory files, group_vars/host_vars files, `-e @file`. */
  vars: 64 * 2 ** 20,
  /** Private keys. */
  key: 1 * 2 ** 20,
  /** known_hosts files, ssh_config files. */
  sshConfig: 16 * 2 ** 20,
  /** Saved plans. */
  plan: 256 * 2 ** 20,
  /** Run journals (`--resume`). */
  journal: 512 * 2 ** 20,
  /** Kubernetes manifests and other artifacts. */
  artifact: 64 * 2 ** 20,
} as const;

const KIND_OF_NODE: Array<[(s: import('node:fs').Stats) => boolean, string]> = [
  [(s) => s.isSymbolicLink(), 'a symbolic link'],
  [(s) => s.isDirectory(), 'a directory'],
  [(s) => s.isFIFO(), 'a FIFO'],
  [(s) => s.isCharacterDevice(), 'a character device'],
  [(s) => s.isBlockDevice(), 'a block device'],
  [(s) => s.isSocket(), 'a socket'],
];

/** What a path that is not a regular file is, in words ('a FIFO'; lstat's link too). */
export function nodeKind(st: import('node:fs').Stats): string {
  return KIND_OF_NODE.find(([is]) => is(st))?.[1] ?? 'not a regular file';
}

/**
 * The bytes of an input file: a regular file of at most `maxBytes`, read with that bound. A FIFO,
 * a device (`/dev/zero`), a directory, a closed `/dev/stdin` or a file over the limit is bad input
 * (InputError naming `what` and the path): never a hang, an unbounded read or "internal error".
 */
export function readInputFile(path: string, what: string, maxBytes: number): Buffer {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw new InputError(`${what} ${path}: ${openError(e as NodeJS.ErrnoException)}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      const kind = nodeKind(st);
      throw new InputError(`${what} ${path} is ${kind}, not a regular file`);
    }
    if (st.size > maxBytes) throw new InputError(`${what} ${path} is ${st.size} bytes, over the limit of ${maxBytes}`);
    // One byte more than its size: a file that grows while it is read is refused, not cut short.
    const buf = Buffer.allocUnsafe(st.size + 1);
    let n = 0;
    for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, null);
    if (n > st.size) throw new InputError(`${what} ${path} changed while it was read`);
    return buf.subarray(0, n);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`${what} ${path}: ${openError(e as NodeJS.ErrnoException)}`);
  } finally {
    closeSync(fd);
  }
}

/** readInputFile as UTF-8 text. */
export function readInputText(path: string, what: string, maxBytes: number): string {
  return readInputFile(path, what, maxBytes).toString('utf8');
}

function openError(e: NodeJS.ErrnoException): string {
  switch (e.code) {
    case 'ENOENT':
      return 'not found';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory, not a regular file';
    case 'ENXIO':
    case 'EBADF':
      return 'cannot be read (a closed stream?)';
    default:
      return e.code ? `cannot be read (${e.code})` : e.message;
  }
}

/** Whether the file's first bytes (up to 256) match `head`; an unreadable file does not. */
export function fileStartsWith(file: string, head: RegExp): boolean {
  const buf = Buffer.alloc(256);
  let fd;
  try {
    // O_NONBLOCK: a FIFO put there since it was checked must not make this wait for a writer
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return head.test(buf.toString('latin1', 0, n));
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
