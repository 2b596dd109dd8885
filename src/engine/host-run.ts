import type { Connection } from '../connection/types.ts';
import type { Resource } from '../contract/resource.ts';
import { refuseDrift } from './host-drift.ts';
import { runHandlers } from './host-apply.ts';
import { NO_LISTS } from './host-caches.ts';
import { execFailed, probeHost } from './host-exec.ts';
import { collect, ingestAnswer, newStates, type State } from './host-state.ts';
import type { HostRunOptions, HostRunResult } from './host-types.ts';
import { runWaves } from './host-waves.ts';

// One host's run, step by step. The steps live by job: host-exec.ts (one exec), host-waves.ts
// (which resources go together), host-apply.ts (a wave's apply, the handlers), host-drift.ts
// (saved plans), host-state.ts (each resource's outcome) and host-caches.ts (what hosts share).
export type { Answer, HostRunOptions, HostRunResult, PlannedResource } from './host-types.ts';
export { isReadable } from './host-state.ts';
export { probeHost } from './host-exec.ts';

/**
 * Converge one host: one exec probes everything; each wave of changes is one exec that applies
 * and re-probes (verify + facts for the next wave). A converged host costs exactly one exec.
 */
export async function runHost(conn: Connection, resources: Resource[], o: HostRunOptions): Promise<HostRunResult> {
  const states = newStates(resources);
  const factHashes = new Map<string, string>();
  // 1. Every resource's facts: one probe exec (or this play's answers, prefetched and still current).
  const probeFailed = await probeAll(conn, resources, o, states, factHashes);
  if (probeFailed !== undefined) return { results: collect(states), factHashes, ...execFailed(o, states, probeFailed) };
  // 2. A saved plan's host whose facts moved since the review is refused before any change.
  const drift = o.planned && refuseDrift(o, states, o.planned);
  if (drift) return { results: collect(states), factHashes, drift };
  // 3. The waves: diff, apply and verify, in dependency order.
  const { lost, ended, lockWaits } = await runWaves(conn, o, states, factHashes);
  if (lost !== undefined) return { results: collect(states), factHashes, ...execFailed(o, states, lost), lockWaits };
  if (ended) return { results: collect(states), factHashes, lockWaits };
  // 4. The handlers notified by a change.
  const handlersLost = await runHandlers(conn, o, states);
  if (handlersLost !== undefined) return { results: collect(states), factHashes, ...execFailed(o, states, handlersLost), lockWaits };
  return { results: collect(states), factHashes, lockWaits };
}

/** Take every resource's answer: probed now (with the later plays'), or given; why the exec failed, if it did. */
async function probeAll(
  conn: Connection,
  resources: Resource[],
  o: HostRunOptions,
  states: State[],
  factHashes: Map<string, string>,
): Promise<string | undefined> {
  let probed = o.probed;
  if (!probed) {
    const later = o.prefetch ?? NO_LISTS;
    const first = await probeHost(conn, resources, later);
    if (typeof first === 'string') return first;
    probed = first.answers;
    if (later.length && o.onPrefetched) o.onPrefetched(first.later);
  }
  for (let i = 0; i < states.length; i++) ingestAnswer(o, factHashes, states[i], probed[i]);
  return undefined;
}
