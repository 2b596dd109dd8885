// Start-up cost of the racksmith CLI, phase by phase, in a fresh Node process (run by
// bench/lib/profile.ts several times). Plain JavaScript so that nothing is loaded before we look.
//   node bench/lib/startup.mjs dist   -> {"bootMs","checkMs","cliImportMs","playbookImportMs"} (as installed: dist/)
//   node bench/lib/startup.mjs tsx    -> {"bootMs","tsxRegisterMs","cliImportMs","playbookImportMs"} (after an edit)
//   node bench/lib/startup.mjs deps   -> {"bootMs", "<package>": ms, ...} (plain imports, no tsx)
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const repo = resolve(import.meta.dirname, '..', '..');
const bootMs = process.uptime() * 1000;
const out = { bootMs };
const lap = async (name, fn) => {
  const t = performance.now();
  await fn();
  out[name] = performance.now() - t;
};
if (process.argv[2] === 'deps') {
  for (const p of ['yaml', 'ajv', 'diff', 'listr2', 'node-ssh']) await lap(p, () => import(p));
} else if (process.argv[2] === 'dist') {
  // what bin/provision.js does: check that dist/ is current, then load it
  let current = false;
  await lap('checkMs', async () => (current = (await import(pathToFileURL(join(repo, 'bin/prebuilt.mjs')).href)).prebuiltIsCurrent(repo)));
  if (!current) throw new Error('dist/ is not built from these sources: npm run build');
  await lap('cliImportMs', () => import(pathToFileURL(join(repo, 'dist/src/cli.js')).href));
  await lap('playbookImportMs', () => import(pathToFileURL(join(repo, 'dist/playbooks/site.js')).href));
} else {
  await lap('tsxRegisterMs', async () => (await import('tsx/esm/api')).register());
  await lap('cliImportMs', () => import(pathToFileURL(join(repo, 'src/cli.ts')).href));
  await lap('playbookImportMs', () => import(pathToFileURL(join(repo, 'playbooks/site.ts')).href));
}
process.stdout.write(JSON.stringify(out) + '\n');
