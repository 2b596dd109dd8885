import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';

/**
 * `text` as the whole of `file`, atomically: written to a fresh file beside it (mode `mode`, made
 * new: never through a link planted there), then renamed over it. A reader sees the old file or
 * the new one, never half of one.
 */
export function writeFileAtomic(file: string, text: string, mode = 0o600): void {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    writeFileSync(tmp, text, { mode, flag: 'wx' });
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
