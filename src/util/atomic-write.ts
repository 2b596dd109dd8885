import { randomBytes } from 'node:crypto';
import { lstatSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { InputError } from './errors.ts';
import { fileStartsWith, nodeKind } from './input-file.ts';
import { printable } from './printable.ts';

/**
 * `text` as the whole of `file`, atomically: written to a fresh file beside it (mode `mode`, made
 * new: never through a link planted there), then renamed over it. A reader sees the old file or
 * the new one, never half of one. `what` names the file in a refusal (`--html`, `--plan-out`).
 */
export function writeFileAtomic(file: string, text: string, mode = 0o600, what = 'output file', replaces?: OutputKind): void {
  checkOutputFile(file, what, replaces);
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    writeFileSync(tmp, text, { mode, flag: 'wx' });
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new InputError(`${what} ${printable(file)} cannot be written: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** What a file racksmith writes looks like from its first bytes: only such a file is replaced. */
export interface OutputKind {
  /** In a refusal: "it is not NAME". */
  name: string;
  head: RegExp;
}

/**
 * Where a file racksmith writes whole may go: a new name in an existing directory, or a regular
 * file it replaces. Anything else there (a FIFO, a device, a link, a directory) is exit 3: the
 * rename would put a regular file in its place (as root, `/dev/full` or a link's target path).
 * With `replaces`, a non-empty file there must be of that kind too: a plan or page written over
 * the inventory or the plan it was made from (a swapped argument) is refused, not lost.
 * Checked before a run that ends by writing it, so that a typo does not cost the run.
 */
export function checkOutputFile(file: string, what: string, replaces?: OutputKind): void {
  if (file === '') throw new InputError(`${what}: an empty path (an unset variable?)`);
  let kind: string | undefined;
  try {
    const st = lstatSync(file);
    if (!st.isFile()) kind = nodeKind(st);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new InputError(`${what} ${printable(file)}: ${(e as NodeJS.ErrnoException).code}`);
    let dir;
    try {
      dir = statSync(dirname(file) || '.');
    } catch {
      throw new InputError(`${what} ${printable(file)}: its directory does not exist`);
    }
    if (!dir.isDirectory()) throw new InputError(`${what} ${printable(file)}: ${printable(dirname(file))} is not a directory`);
    return;
  }
  if (kind) throw new InputError(`${what} ${printable(file)} is ${kind}, not a regular file: give a regular file's path or a new one`);
  if (replaces && statSync(file).size > 0 && !fileStartsWith(file, replaces.head))
    throw new InputError(
      `${what} ${printable(file)} exists and is not ${replaces.name}: not replaced (give a new name, or remove it first)`,
    );
}
