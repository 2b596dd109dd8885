import type { Resource } from '../contract/resource.ts';

/**
 * When answers probed earlier still hold: nothing that could change them was applied since. A
 * host's own applies always count. Another host's count only for resources that read state other
 * hosts can change (Resource.readsSharedState: a cluster's API, the shared jail tree): the other
 * facts are the host's own, and no other host's run writes them.
 *
 * Epochs count the start and the end of every apply exec (an exec in flight while answers were
 * read may have changed them either side), on all hosts and per host.
 */
export class ApplyEpochs {
  private all = 0;
  private readonly own = new Map<string, number>();

  /** An apply exec on `host` starts or ends. */
  applied(host: string): void {
    this.all++;
    this.own.set(host, (this.own.get(host) ?? 0) + 1);
  }

  /** What to keep with answers read from `host` now. */
  stamp(host: string): ApplyStamp {
    return { all: this.all, own: this.own.get(host) ?? 0 };
  }

  /** Whether answers of `resources` stamped `at` on `host` still hold. */
  holds(at: ApplyStamp, host: string, resources: readonly Resource[]): boolean {
    if (this.appliedOnHostSince(at, host)) return false;
    return at.all === this.all || !readsSharedState(resources);
  }

  /** Whether `host` applied anything since `at` (then none of its answers from then hold). */
  appliedOnHostSince(at: ApplyStamp, host: string): boolean {
    return at.own !== (this.own.get(host) ?? 0);
  }
}

export interface ApplyStamp {
  readonly all: number;
  readonly own: number;
}

/** Never holds: no answers were read. */
export const NEVER: ApplyStamp = { all: -1, own: -1 };

/** Whether any of these resources reads state that other hosts can change. */
export function readsSharedState(resources: readonly Resource[]): boolean {
  for (const r of resources) if (r.readsSharedState === true) return true;
  return false;
}
