import type { Resource } from '../contract/resource.ts';
import type { Play } from '../contract/playbook.ts';
import { InputError } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import { ClaimCheck } from './claims.ts';

/** Tags the selection knows without a resource carrying them. */
const SPECIAL_TAGS = new Set(['all', 'always']);

/**
 * The checks over a whole run, once every host's plays are built (before any host is contacted):
 * no two resources of a host claim one thing (claims.ts), and the -t/--skip-tags selection
 * selects something and names only tags the run has.
 */
export class RunChecks {
  private readonly built = new Map<string, Array<readonly Resource[]>>();
  private readonly tags = new Set<string>();
  private readonly seen = new WeakSet<readonly Resource[]>();
  private total = 0;
  private selected = 0;

  constructor(private readonly sel: { tags?: string[]; skipTags?: string[] }) {}

  /** One play's build for host `n`, and what the tags kept of it. */
  add(n: string, play: Play, built: readonly Resource[], kept: readonly Resource[]): void {
    const lists = this.built.get(n);
    if (lists) lists.push(built);
    else this.built.set(n, [built]);
    this.total += built.length;
    this.selected += kept.length;
    if (this.seen.has(built)) return;
    this.seen.add(built);
    for (const r of built) for (const t of r.tags) this.tags.add(t);
    if (built.length) for (const t of play.tags ?? []) this.tags.add(t);
  }

  check(): void {
    const claims = new ClaimCheck();
    for (const [n, lists] of this.built) claims.check(n, lists);
    refuseEmptySelection(this.sel, this.tags, this.total, this.selected);
  }
}

/**
 * A -t naming a tag no resource of the run carries (a typo, a tag of another playbook), or a
 * selection that leaves no resource, is bad input: the run would connect to every host and say
 * "nothing to change".
 */
export function refuseEmptySelection(
  sel: { tags?: string[]; skipTags?: string[] },
  tagsInRun: ReadonlySet<string>,
  total: number,
  selected: number,
): void {
  if (total === 0) return; // no host, or plays without resources: said elsewhere
  const known = `tags in this run: ${[...tagsInRun].sort().map(printable).join(', ') || '(none)'}`;
  const unknown = (sel.tags ?? []).filter((t) => !SPECIAL_TAGS.has(t) && !tagsInRun.has(t));
  if (unknown.length) throw new InputError(`-t/--tags: no resource carries tag(s) ${unknown.map(printable).join(', ')}; ${known}`);
  if (selected > 0) return;
  const asked = [
    ...(sel.tags?.length ? [`-t ${sel.tags.map(printable).join(',')}`] : []),
    ...(sel.skipTags?.length ? [`--skip-tags ${sel.skipTags.map(printable).join(',')}`] : []),
  ].join(' ');
  throw new InputError(`${asked} selects no resource of this run; ${known}`);
}
