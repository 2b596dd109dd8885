import { EDIT_CLAIM, type Resource } from '../contract/resource.ts';
import { formatPos, InputError, InputErrors } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import { throwSite } from './throw-site.ts';

/**
 * Two resources of one host's run that claim the same thing (Resource.claims), in any plays:
 * each run would undo the other's work and report it converged, so the run is refused before any
 * host is contacted. Edits (editClaim) of one thing share it; an edit and an exclusive claim, or
 * two exclusive claims, conflict. Hosts given the same builds are checked once.
 */
export class ClaimCheck {
  private readonly listIds = new WeakMap<readonly Resource[], number>();
  private lists = 0;
  private readonly checked = new Set<string>();

  /** Throws InputError naming both resources and where each was declared. */
  check(host: string, lists: readonly (readonly Resource[])[]): void {
    const key = lists.map((l) => this.listId(l)).join(',');
    if (this.checked.has(key)) return;
    this.checked.add(key);
    const errors = conflicts(lists).map(
      ({ claims, first, second }) =>
        new InputError(
          `host ${printable(host)}: ${describe(first)} and ${describe(second)} both claim ${claims.map(printable).join(', ')}: each run would undo the other; keep one`,
          throwSite(second.declaredAt ?? {}),
        ),
    );
    if (errors.length === 1) throw errors[0];
    if (errors.length) throw new InputErrors(errors);
  }

  private listId(l: readonly Resource[]): number {
    let id = this.listIds.get(l);
    if (id === undefined) this.listIds.set(l, (id = this.lists++));
    return id;
  }
}

export interface Conflict {
  /** What both claim, in the order the second one claims it. */
  claims: string[];
  first: Resource;
  second: Resource;
}

/** Every pair of resources, in declaration order, that claim one thing, with what they both claim. */
export function conflicts(lists: readonly (readonly Resource[])[]): Conflict[] {
  const holders = new Map<string, { r: Resource; edit: boolean }>();
  const reported = new Set<string>();
  const out: Conflict[] = [];
  for (const list of lists)
    for (const r of list)
      for (const c of new Set(r.claims ?? [])) {
        const edit = c.startsWith(EDIT_CLAIM);
        const claim = edit ? c.slice(EDIT_CLAIM.length) : c;
        const held = holders.get(claim);
        if (!held) {
          holders.set(claim, { r, edit });
          continue;
        }
        if (held.r === r || (edit && held.edit) || reported.has(claim)) continue;
        reported.add(claim);
        const pair = out.find((c) => c.first === held.r && c.second === r);
        if (pair) pair.claims.push(claim);
        else out.push({ claims: [claim], first: held.r, second: r });
      }
  return out;
}

function describe(r: Resource): string {
  const at = throwSite(r.declaredAt ?? {});
  return `${printable(r.id)} (${at ? formatPos(at) : 'declared at an unknown line'})`;
}
