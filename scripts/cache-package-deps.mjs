// Puts into npm's cache the registry metadata of racksmith's runtime dependencies (and of the
// TypeScript a user's project type-checks with), so that test/e2e/package.test.ts can install
// racksmith's own tarball with `npm install --offline`: tests never reach the network. `npm ci`
// caches the dependencies' tarballs but not the metadata an install from a tarball resolves with.
// Run by .ci/run after `npm ci`.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const root = new URL('..', import.meta.url);
const tree = JSON.parse(execFileSync('npm', ['ls', '--all', '--json'], { cwd: root, encoding: 'utf8' }));
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const specs = new Set();
const walk = (deps) => {
  for (const [name, d] of Object.entries(deps ?? {})) {
    if (d.version) specs.add(`${name}@${d.version}`);
    walk(d.dependencies);
  }
};
// the runtime dependencies' trees, and those of the two dev tools a user's project installs too
const wanted = [...Object.keys(pkg.dependencies), 'typescript', '@types/node'];
walk(Object.fromEntries(wanted.map((n) => [n, tree.dependencies[n]])));
execFileSync('npm', ['cache', 'add', ...specs], { cwd: root, stdio: 'inherit' });
process.stdout.write(`npm cache: metadata of ${specs.size} packages\n`);
