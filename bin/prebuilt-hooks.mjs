// Module resolve hook for users' TypeScript playbooks (see prebuilt.mjs). A playbook's
// `import ... from 'racksmith'` resolves to the running CLI's own public API, wherever the playbook
// lives (its own node_modules need not hold racksmith); and while the CLI runs from dist/, an
// import of one of racksmith's sources (../src/x.ts) resolves to its built module: one copy of
// every module, whichever way a playbook names it.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { prebuiltFor } from './prebuilt.mjs';

let root;
let dist;
export function initialize(data) {
  root = data.root;
  dist = data.dist;
}

export async function resolve(specifier, context, next) {
  if (specifier === 'racksmith') {
    const url = pathToFileURL(join(root, dist ? 'dist/src/index.js' : 'src/index.ts')).href;
    return next(url, context);
  }
  // the bundled playbooks (package export racksmith/playbooks/NAME), of the same copy
  const bundled = /^racksmith\/playbooks\/([a-z][a-z0-9-]*)$/.exec(specifier);
  if (bundled) {
    const url = pathToFileURL(join(root, dist ? `dist/playbooks/${bundled[1]}.js` : `playbooks/${bundled[1]}.ts`)).href;
    return next(url, context);
  }
  let r = await next(specifier, context);
  // A playbook named by its path (file:///ops/site.js) is that file: tsx would take a site.ts beside
  // it (TypeScript's .js-means-.ts rule, right for imports written in TypeScript, not for this).
  if (specifier.startsWith('file:') && specifier.endsWith('.js') && r.url !== specifier && existsSync(fileURLToPath(specifier)))
    r = { ...r, url: specifier, format: isOperatorSource(specifier) ? 'module' : undefined };
  if (r.format === 'commonjs' && isOperatorSource(r.url)) r.format = 'module';
  if (!dist || !r.url.startsWith('file:') || !r.url.endsWith('.ts')) return r;
  const built = prebuiltFor(root, fileURLToPath(r.url));
  return built ? { ...r, url: pathToFileURL(built).href, format: 'module' } : r;
}

/**
 * An operator's playbook and its own modules (TypeScript or JavaScript outside node_modules) are
 * ES modules whatever their package.json says: npm's default project has no "type": "module", and
 * tsx would then compile `import` syntax to CommonJS, which cannot require racksmith's ES modules.
 * `.cjs`/`.cts` stay CommonJS.
 */
function isOperatorSource(url) {
  return url.startsWith('file:') && /\.(ts|js)$/.test(url) && !url.includes('/node_modules/');
}
