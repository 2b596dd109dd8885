// One scratch directory for a whole test run. vitest.config.ts makes it and points TMPDIR at it
// before any worker starts, so every mkdtemp under os.tmpdir() (tests, the CLIs they start, the
// bench smoke test's tools) lands in it; this file is also each project's globalSetup, whose
// teardown removes it when the run ends, failed tests included. Before it, a run of the suite
// left a few hundred directories in /tmp that nothing removed.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MARK = 'RS_TEST_SCRATCH';
const PREFIX = 'racksmith-tests-';

/** Is `dir` one this file made (mkdtemp's six characters after the prefix)? Nothing else is removed. */
export function isRunScratchDir(dir: string): boolean {
  return new RegExp(`^/.*/${PREFIX}[A-Za-z0-9]{6}$`).test(dir);
}

/** Makes the run's scratch directory once (a config loaded again keeps the first) and sets TMPDIR to it. */
export function useRunScratchDir(): string {
  const made = process.env[MARK];
  const dir = made && isRunScratchDir(made) && existsSync(made) ? made : mkdtempSync(join(tmpdir(), PREFIX));
  process.env[MARK] = process.env.TMPDIR = dir;
  return dir;
}

/** Mount points in this mount namespace at or under `dir` (mountinfo's 5th field, octal escapes undone). */
export function mountsUnder(dir: string, mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): string[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return mountinfo
    .split('\n')
    .map((line) => unescape(line.split(' ')[4] ?? ''))
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
}

/** Removes the scratch directory, unless a mount is left under it: removing it would reach into the mount. */
export function removeRunScratchDir(dir = process.env[MARK]): void {
  if (!dir || !isRunScratchDir(dir) || !existsSync(dir)) return;
  const mounts = mountsUnder(dir);
  if (mounts.length) {
    console.error(
      `[tests] kept ${dir}: ${mounts.length} mount(s) left under it (${mounts.slice(0, 3).join(', ')}); unmount them, then remove it`,
    );
    return;
  }
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch (e) {
    console.error(`[tests] could not remove ${dir}: ${(e as Error).message}`);
  }
}

/** globalSetup: nothing to set up (the config did); the teardown removes the directory. */
export default function setup(): () => void {
  return () => removeRunScratchDir();
}
