// A local Debian repository for the test bed (no internet there): packages fetched on the runner
// with `apt-get download` (Debian's archive is reachable from the runner), indexed with
// dpkg-scanpackages, and served to the hosts through the bed's shared directory as a file: source.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tb from '../testbed/api.ts';

const cache = join(tb.repoRoot, '.cache', 'apt-repo');

/** The repository with these packages (downloaded once into .cache/apt-repo); its apt source line, as hosts read it. */
export function localAptRepo(packages: string[]): string {
  mkdirSync(cache, { recursive: true });
  const have = readdirSync(cache);
  const missing = packages.filter((p) => !have.some((f) => f.startsWith(`${p}_`)));
  if (missing.length) execFileSync('apt-get', ['download', '-q', ...missing], { cwd: cache, stdio: ['ignore', 'ignore', 'pipe'] });
  const dir = join(tb.sharedDir, 'apt-repo');
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(cache)) if (f.endsWith('.deb') && !existsSync(join(dir, f))) cpSync(join(cache, f), join(dir, f));
  writeFileSync(
    join(dir, 'Packages'),
    execFileSync('dpkg-scanpackages', ['.', '/dev/null'], { cwd: dir, stdio: ['ignore', 'pipe', 'ignore'] }),
  );
  return `deb [trusted=yes] file:${tb.sharedMount}/apt-repo ./`;
}
