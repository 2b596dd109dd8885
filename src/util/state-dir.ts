import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, linkSync, mkdirSync, openSync, readSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { InputError } from './errors.ts';

/** racksmith's own state (journals, the installation key): `$XDG_STATE_HOME/racksmith`, else ~/.local/state/racksmith. */
export function stateDir(): string {
  return join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'racksmith');
}

const KEY_BYTES = 32;
let cached: { file: string; key: Buffer } | undefined;
let team: { file: string; key: Buffer } | undefined;

/**
 * A team's key (`--plan-key FILE`, `RACKSMITH_PLAN_KEY`) in place of this installation's for the
 * whole process: plans signed and secrets masked under it check on every installation that holds
 * the same file (a plan made in CI, applied by the operator on duty). Set before anything is
 * masked or signed. The file is a key as the installation's is: 32 bytes, mode 0600.
 */
export function useTeamKey(file: string): void {
  const key = readKey(file, 'a plan key: make one with head -c 32 /dev/urandom > FILE && chmod 600 FILE');
  if (!key) throw new InputError(`${file}: no such plan key file (make one: head -c 32 /dev/urandom > FILE && chmod 600 FILE)`);
  team = { file, key };
}

/**
 * The per-installation secret key (state dir, mode 0600) that keys secret masks and plan
 * signatures: a mask confirms no guess of the secret without it, a plan cannot be edited and
 * re-signed without it. Created once, atomically (a complete file linked into place: two runs
 * starting together agree on one key).
 */
export function installationKey(): Buffer {
  if (team) return team.key;
  const dir = stateDir();
  const file = join(dir, 'installation.key');
  if (cached?.file === file) return cached.key;
  let key = readKey(file);
  if (!key) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    writeFileSync(tmp, randomBytes(KEY_BYTES), { mode: 0o600, flag: 'wx' });
    try {
      linkSync(tmp, file); // fails if another run made one first: theirs is used
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      unlinkSync(tmp);
    }
    key = readKey(file);
    if (!key) throw new InputError(`${file}: not a ${KEY_BYTES}-byte key`);
  }
  cached = { file, key };
  return key;
}

/** `remedy`: what to do about a file that is not a key (the installation's own: remove it, a new one is made). */
function readKey(file: string, remedy = 'an installation key: remove it to make a new one'): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== KEY_BYTES) throw new InputError(`${file}: not a ${KEY_BYTES}-byte key file (${remedy})`);
    if ((st.mode & 0o077) !== 0)
      throw new InputError(`${file}: readable by others (mode ${(st.mode & 0o777).toString(8)}); it must be 0600`);
    const buf = Buffer.alloc(KEY_BYTES);
    let n = 0;
    for (let got = 1; got > 0 && n < KEY_BYTES; n += got) got = readSync(fd, buf, n, KEY_BYTES - n, null);
    return buf;
  } finally {
    closeSync(fd);
  }
}
