/** Where the shared manifest fixtures are: /work/shared, or `shared/` beside the repository clone (CI). */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is <repo>/test/kube-double/fixtures.ts). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `<shared>/fixtures/manifests`: /work/shared first, then `<repo>/../shared`. Throws when neither exists. */
export function manifestsDir(): string {
  const candidates = ['/work/shared', resolve(REPO_ROOT, '..', 'shared')].map((s) => join(s, 'fixtures', 'manifests'));
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error(`shared fixtures not found; looked in: ${candidates.join(', ')}`);
  return found;
}

/** A manifest file under fixtures/manifests, e.g. `manifest('metallb-v0.16.1/metallb-native.yaml')`. */
export function manifest(relative: string): string {
  return join(manifestsDir(), relative);
}
