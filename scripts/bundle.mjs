// dist/racksmith.js: every module of dist/ (tsc's output of src/ and playbooks/) in one file, and
// each dist/ module made a facade that re-exports its names from it. Node then loads one module
// where a run loaded some 200 (resolving, reading and compiling each: ~95 ms of the CLI's start,
// ~50 ms as one file), and every way of naming a module (the CLI, a playbook's `racksmith`, a
// checkout's playbook importing ../src/x.ts, the bench) still reaches the one copy of its code:
// an `instanceof` across them holds. esbuild, the bundler tsx itself runs on, does the bundling;
// the npm packages stay imports of their own (`packages: 'external'`).
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { filesUnder, SOURCE_DIRS } from '../bin/prebuilt.mjs';

export const BUNDLE = 'racksmith.js';

/** Every .js module under dist/src and dist/playbooks, relative to dist/. */
const modules = (dist) => SOURCE_DIRS.flatMap((d) => filesUnder(dist, d, '.js')).sort();

/** A name of module `i` in the bundle's exports (`default` included): unique across modules. */
const bundled = (i, name) => `m${i}$${name}`;

export async function bundleDist(dist) {
  const files = modules(dist);
  // Each module's export names, as Node sees them (types are gone by now).
  const names = [];
  for (const f of files) names.push(Object.keys(await import(pathToFileURL(join(dist, f)).href)));
  const entry = join(dist, '.bundle-entry.js');
  writeFileSync(
    entry,
    files.map((f, i) => `export { ${names[i].map((n) => `${n} as ${bundled(i, n)}`).join(', ')} } from './${f}';\n`).join(''),
  );
  const { build } = await import('esbuild');
  try {
    await build({
      entryPoints: [entry],
      outfile: join(dist, BUNDLE),
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      // No keepNames: it wraps every function made, closures in hot loops too (~5% of the
      // synthetic plan's CPU); nothing reads a function's name, and errors set their own.
      // The map goes through tsc's maps to the TypeScript lines (engine/throw-site.ts reads it).
      sourcemap: 'linked',
      sourcesContent: false,
      logLevel: 'warning',
    });
  } finally {
    rmSync(entry, { force: true });
  }
  files.forEach((f, i) => {
    const from = relative(dirname(join(dist, f)), join(dist, BUNDLE));
    const spec = from.startsWith('.') ? from : `./${from}`;
    const list = names[i].map((n) => `${bundled(i, n)} as ${n}`).join(', ');
    writeFileSync(join(dist, f), names[i].length ? `export { ${list} } from '${spec}';\n` : `import '${spec}';\n`);
    rmSync(join(dist, `${f}.map`), { force: true });
  });
}
