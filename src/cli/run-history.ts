import { resolve } from 'node:path';
import { startRecord, type RunRecorder } from '../history/recorder.ts';
import { inventoryFingerprint } from '../plan/plan.ts';
import type { Loaded } from './load.ts';
import { runArgv } from './plan-args.ts';

/**
 * The run's record in the history (`provision runs`), started once its journal is open: argv in
 * the order given, each option spelled long (`-e` secrets as masks), the playbooks loaded, the
 * inventory's fingerprint, --label, the hosts it reaches with their groups.
 */
export function recordRun(argv: string[], loaded: Loaded, journal: string, hostNames: string[], warn: (m: string) => void): RunRecorder {
  const { opts, inventory } = loaded;
  const reached = new Set(hostNames);
  return startRecord(
    {
      argv: runArgv(argv, loaded.vault),
      // the files loading found (an apply's resolved where its plan was made, not where apply runs)
      playbooks: loaded.playbookFiles,
      inventoryFingerprint: inventoryFingerprint(inventory),
      labels: opts.labels,
      check: opts.check,
      journal: resolve(journal),
      hosts: inventory.hosts.filter((h) => reached.has(h.name)).map((h) => ({ name: h.name, groups: h.groups })),
    },
    warn,
  );
}
