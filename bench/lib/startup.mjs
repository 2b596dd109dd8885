// Start-up cost of the racksmith CLI, phase by phase, in a fresh Node process (run by
// bench/lib/profile.ts several times). Plain JavaScript so that nothing is loaded before we look.
//   node bench/lib/startup.mjs tsx    -> {"bootMs","tsxRegisterMs","cliImportMs","playbookImportMs"}
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
  for (const p of ['yaml', 'ajv', 'diff', 'listr2', 'node-ssh', 'zx']) await lap(p, () => import(p));
} else {
  await lap('tsxRegisterMs', async () => (await import('tsx/esm/api')).register());
  await lap('cliImportMs', () => import(pathToFileURL(join(repo, 'src/cli.ts')).href));
  await lap('playbookImportMs', () => import(pathToFileURL(join(repo, 'playbooks/site.ts')).href));
}
process.stdout.write(JSON.stringify(out) + '\n');
