import type { Change, Resource } from '../contract/resource.ts';
import type { ProbeOutput, ProbeText } from '../contract/probe.ts';
import { ProbeSet, sameParts, type ProbeAnswers } from './probe-set.ts';
import { scriptBody, type Section } from './script.ts';

// What a fleet's hosts share instead of computing it per host: each resource's probe, last parse
// and last diff, and the layout of each combination of plays' probe execs.

// Each resource's last parse: hosts that share a play's build share its resource objects, and
// converged hosts mostly answer a probe word for word alike (same file, same sysctl values).
const lastParse = new WeakMap<Resource, { out: ProbeAnswers; facts: unknown }>();

/** `r.parse` of this output, or the facts of the same output parsed just before (parse is pure). */
export function parseOnce(r: Resource, out: ProbeAnswers & ProbeOutput): unknown {
  const last = lastParse.get(r);
  if (last && (last.out === out || (last.out.code === out.code && last.out.stderr === out.stderr && sameParts(last.out.parts, out.parts))))
    return last.facts;
  const facts = r.parse(out);
  lastParse.set(r, { out, facts });
  return facts;
}

/** The probe exec of some resource lists: its sections, their script (marker aside) and answer split. */
export interface ProbeLayout {
  set: ProbeSet;
  sections: Section[];
  body: string;
}

// By the identity of each list in turn: the hosts of a play's build share its resource list, so a
// fleet lays its probe exec out once per combination of builds (never rebuilt per host).
interface LayoutNode {
  layout?: ProbeLayout;
  next: WeakMap<readonly Resource[], LayoutNode>;
}
const layouts: LayoutNode = { next: new WeakMap() };

/** The layout of a play's resources and those of its later plays (prefetched in the same exec). */
export function probeLayout(resources: readonly Resource[], later: ReadonlyArray<readonly Resource[]>): ProbeLayout {
  let node = layoutChild(layouts, resources);
  for (let k = 0; k < later.length; k++) node = layoutChild(node, later[k]);
  if (!node.layout) {
    const sections: Section[] = [];
    const set = new ProbeSet(
      sections,
      [resources, ...later].flatMap((rs) => rs.map(probeOf)),
    );
    node.layout = { set, sections, body: scriptBody(sections) };
  }
  return node.layout;
}

function layoutChild(node: LayoutNode, list: readonly Resource[]): LayoutNode {
  let child = node.next.get(list);
  if (!child) node.next.set(list, (child = { next: new WeakMap() }));
  return child;
}

export const NO_LISTS: ReadonlyArray<readonly Resource[]> = [];

// Each resource's last diff: hosts that shared a parse (the same facts object) share its diff.
const lastDiff = new WeakMap<Resource, { facts: unknown; changes: Change[] }>();

/** `r.diff(facts)`, or the changes of these very facts diffed just before (diff is pure). */
export function diffOnce(r: Resource, facts: unknown): Change[] {
  const last = lastDiff.get(r);
  if (last && last.facts === facts) return last.changes;
  const changes = r.diff(facts);
  lastDiff.set(r, { facts, changes });
  return changes;
}

const probes = new WeakMap<Resource, ProbeText>();
/**
 * A resource's probe, built once: hosts that share a play's build share its resource objects, so
 * a fleet reuses the same strings (no rebuilding, and their hashes are cached for the part dedupe).
 * A probe is a pure function of the resource's options.
 */
export function probeOf(r: Resource): ProbeText {
  let p = probes.get(r);
  if (p === undefined) probes.set(r, (p = r.probe()));
  return p;
}
