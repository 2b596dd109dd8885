/**
 * Fleet agreement: resources whose hosts must agree before anything is applied (the GPU hosts
 * sharing one jail must run one driver version). Such a resource carries a `fleet` key; a play
 * that has one is probed on every host first (run.ts), and each host's facts of a keyed resource
 * are given its group's answers (`useFleet`) before the pure diff, which can then refuse on all of
 * them alike. The answers are the ones each host gave at the play's start.
 */
import type { Resource } from '../contract/resource.ts';

/** Per fleet key: each host's facts of the resource carrying the key, as probed at the play's start. */
export type FleetViews = ReadonlyMap<string, ReadonlyMap<string, unknown>>;

/** Whether some host of the play has a resource that must agree with its fleet. */
export function playHasFleet(hosts: ReadonlyArray<{ resources: readonly Resource[] }>): boolean {
  // Hosts of one build share the resource list: look at each list once.
  const seen = new Set<readonly Resource[]>();
  for (const h of hosts) {
    if (seen.has(h.resources)) continue;
    seen.add(h.resources);
    if (h.resources.some((r) => r.fleet !== undefined)) return true;
  }
  return false;
}

/**
 * The groups of a play: for each key, the facts of every host that answered for its keyed
 * resource (an answer that could not be read is left out: that host's resource fails on its own).
 */
export function fleetViews(
  hosts: ReadonlyArray<{ name: string; resources: readonly Resource[]; answers: readonly unknown[] | undefined }>,
  readable: (answer: unknown) => boolean,
): FleetViews {
  const views = new Map<string, Map<string, unknown>>();
  for (const h of hosts) {
    if (!h.answers) continue;
    h.resources.forEach((r, i) => {
      if (r.fleet === undefined || !readable(h.answers![i])) return;
      let view = views.get(r.fleet);
      if (!view) views.set(r.fleet, (view = new Map()));
      view.set(h.name, h.answers![i]);
    });
  }
  return views;
}

// Each keyed resource's last result: hosts that share a parse (the same facts) and a view share
// the facts given to diff too, so its diff is computed once for them (host-run's diffOnce).
const lastFleet = new WeakMap<Resource, { facts: unknown; view: ReadonlyMap<string, unknown>; out: unknown }>();

/** The facts a resource diffs: with its group's answers when it has a fleet key and the play was gathered. */
export function withFleet(r: Resource, facts: unknown, views: FleetViews | undefined): unknown {
  if (!views || r.fleet === undefined || !r.useFleet) return facts;
  const view = views.get(r.fleet) ?? NO_VIEW;
  const last = lastFleet.get(r);
  if (last && last.facts === facts && last.view === view) return last.out;
  const out = r.useFleet(facts, view);
  lastFleet.set(r, { facts, view, out });
  return out;
}

const NO_VIEW: ReadonlyMap<string, unknown> = new Map();
