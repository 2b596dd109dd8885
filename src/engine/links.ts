/**
 * The links between the resources of one host's play: what the author declared (dependsOn,
 * after) and what the engine derives from the files they write. Kept here, in the engine's own
 * record, never on the resources. How each kind of link acts (host-run.ts carries it out):
 *
 * | link     | made by                       | orders                   | when the other fails / is skipped | check mode, the other has a change        |
 * |----------|-------------------------------|--------------------------|-----------------------------------|-------------------------------------------|
 * | deps     | `dependsOn`                   | a later wave (re-probed) | skipped                           | "depends on a pending change", not diffed |
 * | afters   | `after`                       | same wave, steps after   | skipped (also within the wave)    | diffed as usual                           |
 * | stacked  | the one earlier writer of its | same wave, steps after   | its own steps skipped; otherwise  | diffed against the writer's predicted     |
 * |          | files (see FileSlot)          |                          | not blocked (its probe holds)     | file: exact diffs                         |
 * | writers  | every earlier writer of its   | after them               | never blocks (compare-and-swap    | "depends on a pending change" unless it   |
 * |          | files                         |                          | writes still hold)                | stacks on that writer                     |
 */
import type { Resource } from '../contract/resource.ts';

/** A resource's links as indexes into its list; every field always set (no link: empty, -1): one object shape. */
export interface Links {
  deps: readonly number[];
  afters: readonly number[];
  /** Earlier resources that write one of its files. */
  writers: readonly number[];
  /** The single earlier writer it is diffed against (-1: none, or more than one). */
  stacked: number;
}

// Per resource list: the hosts of a play's build share it, so a fleet resolves ids once.
const linksOfList = new WeakMap<readonly Resource[], Links[]>();

/** The links of every resource of a list (checked: dependsOn and after name resources of the list). */
export function listLinks(resources: readonly Resource[]): Links[] {
  let links = linksOfList.get(resources);
  if (!links) linksOfList.set(resources, (links = resolveLinks(resources)));
  return links;
}

function resolveLinks(resources: readonly Resource[]): Links[] {
  const byId = new Map(resources.map((r, i) => [r.id, i]));
  const indexes = (ids: readonly string[] | undefined): readonly number[] => (ids?.length ? ids.map((id) => byId.get(id)!) : NO_LINKS);
  const lastWriter = new Map<string, number>();
  return resources.map((r, i): Links => {
    const earlier = new Set<number>();
    for (const slot of r.files ?? []) {
      const w = lastWriter.get(slot.path);
      if (w !== undefined) earlier.add(w);
      lastWriter.set(slot.path, i);
    }
    const writers = earlier.size ? [...earlier] : NO_LINKS;
    // Stacking needs a single predecessor whose prediction covers what this one reads.
    return { deps: indexes(r.dependsOn), afters: indexes(r.after), writers, stacked: writers.length === 1 ? writers[0] : -1 };
  });
}

const NO_LINKS: readonly number[] = [];
