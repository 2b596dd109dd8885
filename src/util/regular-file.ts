import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { nodeKind } from './input-file.ts';

/** What reading a small state file came to: its text, none there, not a regular file (what it is), or an error's code. */
export type RegularRead =
  { kind: 'text'; text: string } | { kind: 'gone' } | { kind: 'not-regular'; what: string } | { kind: 'error'; code: string };

/**
 * A small file racksmith keeps for itself (a drain ledger entry, a drain claim), read only when
 * it is a regular file of at most `maxBytes`. Opened with O_NONBLOCK, then checked with fstat on
 * what was opened: a FIFO put there (a plain read would wait for a writer, hanging `provision
 * runs`, the retention after every run, a takeover) or a device is said, never read.
 */
export function readRegularFile(file: string, maxBytes = 2 ** 20): RegularRead {
  let fd: number;
  try {
    // (not through a symlink, and no device becomes the controlling terminal by being opened)
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'EIO';
    // (ENXIO: a socket; ELOOP: a symlink, O_NOFOLLOW)
    if (code === 'ENOENT') return { kind: 'gone' };
    if (code === 'ENXIO') return { kind: 'not-regular', what: 'a socket' };
    return code === 'ELOOP' ? { kind: 'not-regular', what: 'a symbolic link' } : { kind: 'error', code };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { kind: 'not-regular', what: nodeKind(st) };
    if (st.size > maxBytes) return { kind: 'error', code: 'EFBIG' };
    const buf = Buffer.allocUnsafe(st.size);
    let n = 0;
    for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, null);
    return { kind: 'text', text: buf.toString('utf8', 0, n) };
  } catch (e) {
    return { kind: 'error', code: (e as NodeJS.ErrnoException).code ?? 'EIO' };
  } finally {
    closeSync(fd);
  }
}
