// Module resolve hook (see prebuilt.mjs): while the CLI runs from dist/, a TypeScript playbook's
// import of one of racksmith's sources resolves to its built module in dist/.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { prebuiltFor } from './prebuilt.mjs';

let root;
export function initialize(data) {
  root = data.root;
}

export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (!r.url.startsWith('file:') || !r.url.endsWith('.ts')) return r;
  const built = prebuiltFor(root, fileURLToPath(r.url));
  return built ? { ...r, url: pathToFileURL(built).href, format: 'module' } : r;
}
