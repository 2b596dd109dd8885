// The prebuilt JavaScript of src/ and playbooks/ (dist/, made by scripts/build.mjs at `npm ci`).
// It is used only while it was built from exactly the sources in the tree (checked at each start:
// ~4 ms while no source was written since the build, ~10 ms to read and hash them all otherwise);
// after any edit the CLI runs the sources through tsx.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

export const DIST = 'dist';
/** The directories built: their .ts files under the root, their .js files under dist/. */
export const SOURCE_DIRS = ['src', 'playbooks'];
// what else decides the output
const BUILD_INPUTS = ['tsconfig.json', 'tsconfig.build.json'];

/** Every file ending in `ext` under `root`/`dir`, as paths relative to `root`, in directory order. */
export function filesUnder(root, dir, ext) {
  const out = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...filesUnder(root, rel, ext));
    else if (e.name.endsWith(ext)) out.push(rel);
  }
  return out;
}

const sourceFiles = (root) => [...SOURCE_DIRS.flatMap((d) => filesUnder(root, d, '.ts')).sort(), ...BUILD_INPUTS];

/** sha256 over the names and contents of every source file and the build configuration. */
export function sourceDigest(root, files = sourceFiles(root)) {
  const h = createHash('sha256');
  for (const f of files)
    h.update(`${f}\0`)
      .update(readFileSync(join(root, f)))
      .update('\0');
  return h.digest('hex');
}

/**
 * The same files as the file system names them: path, inode, size and change time of each. Any
 * write to a file moves its change time (which no one sets by hand) and a replaced file has
 * another inode, so a stamp equal to the build's says no source was written since, without
 * reading one. A stamp that differs says only "maybe": the digest decides then (a file saved
 * unchanged, a tree copied or unpacked elsewhere).
 */
export function sourceStamp(root, files = sourceFiles(root)) {
  return files
    .map((f) => {
      const s = statSync(join(root, f), { bigint: true });
      return `${f} ${s.ino} ${s.size} ${s.ctimeNs}`;
    })
    .join('\n');
}

export const manifestPath = (root) => join(root, DIST, 'manifest.json');

/** The manifest of a build of the sources as they are now (taken before compiling them). */
export const manifestOf = (root) => ({ digest: sourceDigest(root), stamp: sourceStamp(root) });

/** True when dist/ holds the build of exactly these sources. */
export function prebuiltIsCurrent(root) {
  const m = manifestPath(root);
  if (!existsSync(m)) return false;
  try {
    const built = JSON.parse(readFileSync(m, 'utf8'));
    const files = sourceFiles(root); // listed once for the stamp and, if it differs, the digest
    return built.stamp === sourceStamp(root, files) || built.digest === sourceDigest(root, files);
  } catch {
    return false;
  }
}

/** The built file of one of racksmith's own TypeScript files, if there is one. */
export function prebuiltFor(root, file) {
  const rel = relative(root, resolve(file));
  if (!SOURCE_DIRS.some((d) => rel.startsWith(d + sep)) || !rel.endsWith('.ts')) return undefined;
  const js = join(root, DIST, rel.replace(/\.ts$/, '.js'));
  return existsSync(js) ? js : undefined;
}

/**
 * Loads playbooks when the CLI runs from dist/: racksmith's own from dist/, anything else (a
 * user's TypeScript playbook) through tsx, registered on first use, with its imports of
 * racksmith's sources (`../src/x.ts`) sent to the dist/ modules already loaded: one copy of
 * every module, as when everything runs through tsx.
 */
export function prebuiltPlaybookImporter(root) {
  let tsx;
  return async (file) => {
    const built = prebuiltFor(root, file);
    if (built) return import(pathToFileURL(built).href);
    tsx ??= (async () => {
      const { register } = await import('tsx/esm/api');
      register();
      // registered after tsx, so it runs first and sees tsx's resolution
      const { register: registerHooks } = await import('node:module');
      registerHooks('./prebuilt-hooks.mjs', import.meta.url, { data: { root, dist: true } });
    })();
    await tsx;
    return import(pathToFileURL(file).href);
  };
}
