#!/usr/bin/env node
// Entry point. Runs the prebuilt JavaScript in dist/ when it was built from exactly these sources
// (no TypeScript to compile: ~200 ms less to start); otherwise lets Node load the TypeScript
// sources and playbooks directly through tsx.
import { fileURLToPath } from 'node:url';
import { prebuiltIsCurrent, prebuiltPlaybookImporter } from './prebuilt.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
if (prebuiltIsCurrent(root)) {
  const { main } = await import('../dist/src/cli.js');
  await main(process.argv.slice(2), prebuiltPlaybookImporter(root));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  // (after tsx: a playbook's `import ... from 'racksmith'` is these sources too)
  const { register: registerHooks } = await import('node:module');
  registerHooks('./prebuilt-hooks.mjs', import.meta.url, { data: { root, dist: false } });
  const { main } = await import('../src/cli.ts');
  await main(process.argv.slice(2));
}
