import { execFileSync } from 'node:child_process';
import { hostname, userInfo } from 'node:os';
import { dirname, resolve } from 'node:path';
import type { PlaybookSource } from './record.ts';

/** `git -C dir ARGS`'s output, or undefined (no git, not a work tree, or it took too long). */
function git(dir: string, args: string[]): string | undefined {
  try {
    return execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim();
  } catch {
    return undefined;
  }
}

/**
 * Each playbook with the revision (HEAD) of the git work tree it is in, and whether that tree has
 * changes not committed (tracked files only: an untracked scratch file does not change what ran
 * from the repository). Work trees are asked once each, by one `git status` that prints both (a
 * process less at every run's start than `rev-parse HEAD` beside a plain `status`).
 */
export function playbookSources(playbooks: readonly string[]): PlaybookSource[] {
  const byDir = new Map<string, PlaybookSource['git']>();
  return playbooks.map((p) => {
    const path = resolve(p);
    const dir = dirname(path);
    if (!byDir.has(dir)) byDir.set(dir, gitSource(git(dir, ['status', '--porcelain=v2', '--branch', '--untracked-files=no'])));
    const g = byDir.get(dir);
    return g ? { path, git: g } : { path };
  });
}

/**
 * The revision and dirtiness in `git status --porcelain=v2 --branch` output: the `# branch.oid`
 * header (`(initial)` before the first commit: no revision), then a line per changed file.
 */
export function gitSource(status: string | undefined): PlaybookSource['git'] {
  if (status === undefined) return undefined;
  const lines = status.split('\n').filter((l) => l !== '');
  const oid = lines.find((l) => l.startsWith('# branch.oid '))?.slice('# branch.oid '.length);
  if (!oid || !/^[0-9a-f]{40,64}$/.test(oid)) return undefined;
  return { revision: oid, dirty: lines.some((l) => !l.startsWith('#')) };
}

/** Who ran it, from where: the login name (else $USER, else the uid) and this machine's name. */
export function runner(): { user: string; controller: string } {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? `uid ${process.getuid?.() ?? '?'}`;
  }
  return { user, controller: hostname() };
}
