import { createRequire } from 'node:module';

let lib: typeof import('yaml') | undefined;

/**
 * The yaml library, loaded on first use (~35 ms): inventories in plain block YAML are read
 * without it (src/inventory/plain-yaml.ts), so most runs never load it.
 */
export function yamlLib(): typeof import('yaml') {
  return (lib ??= createRequire(import.meta.url)('yaml') as typeof import('yaml'));
}
