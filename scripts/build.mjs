// Builds dist/ (see bin/prebuilt.mjs): src/ and playbooks/ as JavaScript, so the CLI starts
// without tsx. Run by `npm ci` (prepare). Never fails the install: without dist/ (or with an
// outdated one) the CLI runs the TypeScript sources through tsx, only slower to start.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DIST, manifestOf, manifestPath } from '../bin/prebuilt.mjs';
import { bundleDist } from './bundle.mjs';

const root = resolve(import.meta.dirname, '..');
try {
  // the digest and stamp of the sources as they were before compiling: a file edited during the
  // build makes the manifest disagree with the tree, never a stale build look current
  const manifest = manifestOf(root);
  rmSync(join(root, DIST), { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
  await precompileSchemas();
  await bundleDist(join(root, DIST));
  writeFileSync(manifestPath(root), JSON.stringify(manifest) + '\n');
} catch (e) {
  rmSync(join(root, DIST), { recursive: true, force: true });
  process.stderr.write(`racksmith: no prebuilt JavaScript (${e.message.split('\n')[0]}); provision runs the sources through tsx\n`);
}

/**
 * dist/schemas.cjs: the validators of every schema the built modules declare (inventory, plan,
 * the playbooks' variables), precompiled by ajv, so the CLI neither imports ajv nor compiles at
 * start-up. Without it (or for a user's own playbook) schemas compile on first use, as before.
 */
async function precompileSchemas() {
  const dist = (f) => pathToFileURL(join(root, DIST, f)).href;
  const { declaredSchemas } = await import(dist('src/util/validate.js'));
  for (const m of ['src/inventory/schema.js', 'src/plan/plan.js', 'playbooks/site.js']) await import(dist(m));
  const { precompiledModule } = await import(dist('src/util/precompile.js'));
  writeFileSync(join(root, DIST, 'schemas.cjs'), precompiledModule(declaredSchemas.values()));
}
