import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { playbookProblems, type Playbook } from '../contract/playbook.ts';
import { InputError, InputErrors } from '../util/errors.ts';
import { callSite } from '../engine/throw-site.ts';

/** racksmith's own directory: its bundled playbooks, and the root the code of a plan is hashed from. */
export const PACKAGE_ROOT = packageRoot();

/** The nearest directory above this module with a package.json: from src/ and from the prebuilt dist/src/. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/**
 * Find a playbook: as given (relative to the working directory), else inside racksmith itself,
 * which is said (`notices`): the operator may have meant a site.ts of their own.
 */
export function resolvePlaybook(p: string, baseDir: string, notices: string[]): string {
  const here = resolve(baseDir, p);
  if (existsSync(here)) return here;
  const bundled = resolve(PACKAGE_ROOT, p);
  if (existsSync(bundled)) {
    if (bundled !== here) notices.push(`no ${p} in ${baseDir}: running racksmith's bundled ${p} (${bundled})`);
    return bundled;
  }
  const meant = playbookMeant(p, baseDir);
  throw new InputError(`playbook not found: ${p}${meant ? ` (did you mean ${meant}?)` : ''}`);
}

/**
 * The playbook a name that is not one most likely meant: `storage.ts` or `storage` for racksmith's
 * `playbooks/storage.ts`, `site` for a `site.ts` here (what a newcomer types after reading the
 * playbook table, where the bundled ones are named without their directory).
 */
export function playbookMeant(p: string, baseDir: string): string | undefined {
  if (p.includes('\0') || p.startsWith('/')) return undefined;
  const names = [`${p}.ts`, `playbooks/${p}`, `playbooks/${p}.ts`];
  for (const n of names) if (existsSync(resolve(baseDir, n))) return n;
  for (const n of names) if (existsSync(resolve(PACKAGE_ROOT, n))) return `${n} (racksmith's bundled one)`;
  return undefined;
}

/** Loads a playbook module; bin/provision.js passes one that uses the prebuilt dist/ when it is current. */
export type PlaybookImporter = (file: string) => Promise<{ default?: unknown }>;
export const importSource: PlaybookImporter = (file) => import(pathToFileURL(file).href);

export async function loadPlaybook(file: string, importPlaybook: PlaybookImporter = importSource): Promise<Playbook> {
  let mod: { default?: unknown };
  // (tsx compiles a .cts to require() calls, and Node 20 cannot require racksmith's ES modules)
  if (file.endsWith('.cts'))
    throw new InputError('a .cts playbook (CommonJS TypeScript) cannot load racksmith on Node 20: name it .ts, with `export default`', {
      file,
    });
  try {
    mod = await importPlaybook(file);
  } catch (e) {
    throw loadError(e, file);
  }
  const pb = mod.default as Playbook | undefined;
  const at = { file: relative(process.cwd(), file) || file };
  if (!pb || typeof pb !== 'object' || !('plays' in pb)) throw new InputError('playbook must `export default playbook({...})`', at);
  // (one built by playbook() was checked there; an object of its own is checked here)
  const problems = playbookProblems(pb);
  if (problems.length) throw new InputErrors(problems.map((p) => new InputError(p, at)));
  return { ...pb, file: at.file };
}

/**
 * A playbook that failed while loading, at the line of its own code that threw (a top-level
 * `throw`, a resource built at top level refusing its options), else at its file.
 */
function loadError(e: unknown, file: string): InputError {
  if (e instanceof InputError && e.pos) return e;
  const site = e instanceof Error ? callSite(e) : undefined;
  const at = site?.pos ?? { file: relative(process.cwd(), file) || file };
  if (e instanceof InputError) return new InputError(site?.callee ? `${site.callee}(): ${e.detail}` : e.detail, at);
  return new InputError(`cannot load playbook: ${loadFailure((e as Error).message)}`, at);
}

/**
 * What a playbook's load failure says, on one line: the message's first line, or for a compile
 * error (esbuild through tsx: "Transform failed with N errors:" first) the errors' own lines, each
 * with its file:line:col.
 */
export function loadFailure(message: string): string {
  const lines = message.split('\n').filter((l) => l.trim() !== '');
  if (!/^Transform failed/.test(lines[0] ?? '')) return lines[0] ?? message;
  const errors = lines.filter((l) => /\bERROR: /.test(l)).slice(0, 3);
  return errors.length ? errors.join('; ') : lines[0];
}
