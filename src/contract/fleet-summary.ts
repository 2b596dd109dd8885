/**
 * What a fleet resource derives from its group alone, computed once per group. `useFleet` runs
 * for every host of the group, and a host's pass over the whole group makes a fleet of n hosts
 * cost n² (10,000 GPU and CPU nodes of one jail: 10^8 steps). The engine hands every host of a
 * play the same map for one key (engine/fleet.ts), so the summary is kept per map: a host given
 * another map still gets its own, correct, summary.
 */
export function fleetSummary<S>(summarize: (fleet: ReadonlyMap<string, unknown>) => S): (fleet: ReadonlyMap<string, unknown>) => S {
  const made = new WeakMap<ReadonlyMap<string, unknown>, S>();
  return (fleet) => {
    if (made.has(fleet)) return made.get(fleet)!;
    const s = summarize(fleet);
    made.set(fleet, s);
    return s;
  };
}
