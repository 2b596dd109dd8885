import { join } from 'node:path';
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';
import { useRunScratchDir } from './test/support/scratch-tmpdir.ts';

// Two projects: `unit` (pure logic, no root needed) and `e2e` (real hosts from the test bed).
// e2e files run one at a time: they share the test bed's hosts and reset the ones they use.
// Every temporary directory of the run goes into one, removed when the run ends (its globalSetup);
// so do the run journals of the CLI under test, not into the user's home (a state directory the
// caller set is kept). The directory is made either way: inside the ??= it was not made at all when
// XDG_STATE_HOME was set, and the run's temporary directories were left in /tmp.
const scratch = useRunScratchDir();
process.env.XDG_STATE_HOME ??= join(scratch, 'state');
const SCRATCH = 'test/support/scratch-tmpdir.ts';

// `import ... from 'racksmith'` in a test is src/index.ts (package.json's racksmith-source
// condition), not dist/: one copy of every class (test/unit/one-module.test.ts).
const racksmithSource = { resolve: { conditions: ['racksmith-source', ...defaultServerConditions] } };

const sourceConditions = { ...racksmithSource, ssr: racksmithSource };

export default defineConfig({
  test: {
    projects: [
      {
        ...sourceConditions,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          globalSetup: [SCRATCH],
        },
      },
      {
        ...sourceConditions,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: [SCRATCH, 'test/testbed/global-setup.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 300_000,
        },
      },
      // The e2e suite again with every test's inventory written in INI (test/e2e/helpers.ts
      // writeInventory): both formats must give identical results. Files that read no inventory
      // of their own (the bed itself, the benchmark smoke test, pull mode on this machine) run once, above. One file at a time
      // across both projects (no file parallelism: vitest runs them in one sequential group).
      {
        ...sourceConditions,
        test: {
          name: 'e2e-ini',
          include: ['test/e2e/**/*.test.ts'],
          exclude: ['test/e2e/testbed.test.ts', 'test/e2e/bench-smoke.test.ts', 'test/e2e/pull-mode.test.ts'],
          env: { RS_E2E_INVENTORY: 'ini' },
          globalSetup: [SCRATCH, 'test/testbed/global-setup.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
