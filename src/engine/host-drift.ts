import type { HostRunOptions, HostRunResult, PlannedResource } from './host-types.ts';
import { failUnfinished, type State } from './host-state.ts';

// Saved-plan mode: a host whose facts moved since the review is refused before any change.

/**
 * The drift of a host's facts from the plan (each drifted resource then fails, saying so), or
 * undefined when every resource still hashes to its reviewed value.
 */
export function refuseDrift(o: HostRunOptions, states: State[], planned: Map<string, PlannedResource>): HostRunResult['drift'] {
  const drift = findDrift(states, planned);
  if (!drift.length) return undefined;
  const what = drift
    .map((d) => `${d.id} (now: ${d.now.join('; ') || 'no change'}; planned: ${d.planned.join('; ') || 'no change'})`)
    .join(', ');
  failUnfinished(o, states, `refused: facts changed since the plan: ${what}`);
  return drift;
}

/** Resources whose facts no longer hash to the reviewed value, with what they would change now. */
function findDrift(states: State[], planned: Map<string, PlannedResource>): NonNullable<HostRunResult['drift']> {
  const drift: NonNullable<HostRunResult['drift']> = [];
  for (const s of states) {
    const p = planned.get(s.r.id);
    if (p && p.factHash === s.factHash) continue;
    let now: string[];
    try {
      now = s.facts === undefined ? ['(probe failed)'] : s.r.diff(s.facts).map((c) => c.summary);
    } catch (e) {
      now = [(e as Error).message];
    }
    drift.push({ id: s.r.id, now, planned: p ? p.changes : ['(not in the plan)'] });
  }
  for (const id of planned.keys())
    if (!states.some((s) => s.r.id === id)) drift.push({ id, now: ['(no longer declared)'], planned: planned.get(id)!.changes });
  return drift;
}
