/**
 * What a saved plan was made with: the sha256 of every module the playbooks load (followed
 * through their relative imports, transitively) and of racksmith's own sources, by file. Apply
 * recomputes it and names each file that differs: a plan is valid for exactly this code.
 *
 * The imports are read from the source text (static `import`/`export ... from` and `import('...')`
 * with a literal path): a module loaded through a computed path is not followed (its importer's
 * own text still is hashed). Bare imports (npm packages, `racksmith` itself) are not followed;
 * racksmith's sources are hashed whole instead, and its package.json (its version).
 */
import { sha256 } from '../util/sha256.ts';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** path (racksmith's own: relative to its root, as `racksmith/src/...`; others absolute) -> sha256 */
export type CodeHashes = Record<string, string>;

const IMPORT = /\b(?:import|export)\s[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|\bimport\s+['"]([^'"]+)['"]/g;
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;

const sha = sha256;

/** The relative imports of a module's text, resolved to files (those that exist). */
function importsOf(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec.startsWith('.') && !spec.startsWith('/')) continue;
    const base = resolve(dirname(file), spec);
    const found = [base, `${base}.ts`, `${base}.js`, join(base, 'index.ts'), join(base, 'index.js')].find(
      (p) => existsSync(p) && statSync(p).isFile(),
    );
    if (found) out.push(found);
  }
  return out;
}

function ownFiles(root: string, dir: string): string[] {
  const at = join(root, dir);
  if (!existsSync(at)) return [];
  const out: string[] = [];
  for (const e of readdirSync(at, { withFileTypes: true })) {
    const rel = join(dir, e.name);
    if (e.isDirectory()) out.push(...ownFiles(root, rel));
    else if (CODE.test(e.name)) out.push(rel);
  }
  return out;
}

/** The code hashes for these playbook files and the racksmith installation at `root`. */
export function codeHashes(playbooks: readonly string[], root: string): CodeHashes {
  const out: CodeHashes = {};
  const own = (abs: string) => {
    const rel = relative(root, abs);
    return !rel.startsWith('..') && /^(src|playbooks)\//.test(rel) ? `racksmith/${rel}` : undefined;
  };
  for (const rel of [...ownFiles(root, 'src'), ...ownFiles(root, 'playbooks'), 'package.json'].sort()) {
    out[`racksmith/${rel}`] = sha(readFileSync(join(root, rel)));
  }
  const seen = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file);
    const key = own(file) ?? file;
    out[key] = sha(text);
    for (const dep of importsOf(file, text.toString('utf8'))) walk(dep);
  };
  for (const p of playbooks) walk(resolve(p));
  return out;
}

/** One digest of the hashes (a plan's `playbookFingerprint`). */
export function codeDigest(hashes: CodeHashes): string {
  return sha(
    JSON.stringify(
      Object.keys(hashes)
        .sort()
        .map((k) => [k, hashes[k]]),
    ),
  );
}

/** The files whose code differs between two hash sets: changed, added or removed. */
export function changedCode(planned: CodeHashes, now: CodeHashes): string[] {
  const out: string[] = [];
  for (const k of Object.keys(planned)) if (now[k] !== planned[k]) out.push(k in now ? k : `${k} (removed)`);
  for (const k of Object.keys(now)) if (!(k in planned)) out.push(`${k} (added)`);
  return out.sort();
}
