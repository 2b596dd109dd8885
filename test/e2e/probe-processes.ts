// What a host's probe exec costs it, in processes (issue #39: each process a converged host's
// probe starts is load racksmith puts on every host of a fleet). Used by the tests that hold a
// probe to a number of processes.
import * as tb from '../testbed/api.ts';
import { loadInventory } from '../../src/inventory/load.ts';
import { loadPlaybook } from '../../src/cli.ts';
import { prepare } from '../../src/engine/index.ts';
import { probeOf } from '../../src/engine/host-caches.ts';
import { ProbeSet } from '../../src/engine/probe-set.ts';
import { buildScript, type Section } from '../../src/engine/script.ts';
import { scriptAsStdin } from '../../src/connection/transport.ts';

/** The host's probe exec of `playbook` as the engine sends it (every play's resources in one script). */
export async function probeScript(inventory: string, playbook: string, host: string): Promise<string> {
  const plays = prepare(loadInventory(inventory), [await loadPlaybook(playbook)], { limit: host });
  const sections: Section[] = [];
  new ProbeSet(
    sections,
    plays.flatMap((p) => p.hosts.flatMap((h) => h.resources.map(probeOf))),
  );
  return buildScript(sections).script;
}

/**
 * Processes `script` starts on the bed host: the last pid given out (loadavg's fifth field) before
 * and after, less the measurement's own 2 (the `sh -s`, the second cut). The host runs nothing
 * else meanwhile (no cron, no udev on the bed); the least of 3 runs is taken.
 */
export async function processesOf(host: string, script: string): Promise<number> {
  const counts: number[] = [];
  for (let k = 0; k < 3; k++) {
    const r = await tb.hostExec(
      host,
      'a=$(cut -d" " -f5 /proc/loadavg); sh -s >/dev/null 2>&1; b=$(cut -d" " -f5 /proc/loadavg); echo "$((b - a - 2))"',
      { input: scriptAsStdin(script) },
    );
    if (r.code !== 0) throw new Error(`counting the probe's processes on ${host}: exit ${r.code}: ${r.stderr}`);
    counts.push(Number(r.stdout.trim()));
  }
  return Math.min(...counts);
}
