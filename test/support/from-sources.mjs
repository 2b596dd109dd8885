// The CLI run from the TypeScript sources through tsx, as bin/provision.js runs it when dist/ is
// not the build of these sources (a checkout with edits): for tests of that path, which a fresh
// `npm ci` (dist/ current) never takes.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';
import { register as registerHooks } from 'node:module';

const root = fileURLToPath(new URL('../..', import.meta.url));
register();
registerHooks('../../bin/prebuilt-hooks.mjs', import.meta.url, { data: { root, dist: false } });
const { main } = await import('../../src/cli.ts');
await main(process.argv.slice(2));
