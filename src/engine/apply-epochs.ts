import type { Resource, Step } from '../contract/resource.ts';
import { anyOverlap } from '../contract/state-topics.ts';

/**
 * When answers probed earlier still hold: nothing that could change them was applied since.
 *
 * - An apply on the answers' own host counts unless every step of it declared what it touches
 *   (Step.touches) and every resource whose answers they are declared what its probe reads
 *   (Resource.reads), and none of the one is among the other (a sysctl file written by the
 *   network play leaves the storage play's disk answers current).
 * - Another host's apply counts only for resources that read state other hosts can change
 *   (Resource.readsSharedState: a cluster's API, the shared jail tree): the other facts are the
 *   host's own, and no other host's run writes them.
 *
 * Epochs count the start and the end of every apply exec (an exec in flight while answers were
 * read may have changed them either side), on all hosts and per host.
 */
export class ApplyEpochs {
  private all = 0;
  /** Per host, what each of its apply epochs may have changed (undefined: anything); its length is the host's epoch. */
  private readonly own = new Map<string, Array<readonly string[] | undefined>>();

  /** An apply exec on `host` starts or ends; its steps may change `touches` (undefined: anything). */
  applied(host: string, touches: readonly string[] | undefined): void {
    this.all++;
    const h = this.own.get(host);
    if (h) h.push(touches);
    else this.own.set(host, [touches]);
  }

  /** What to keep with answers read from `host` now. */
  stamp(host: string): ApplyStamp {
    return { all: this.all, own: this.own.get(host)?.length ?? 0 };
  }

  /** Whether answers of `resources` stamped `at` on `host` still hold. */
  holds(at: ApplyStamp, host: string, resources: readonly Resource[]): boolean {
    if (at.own < 0) return false;
    for (const touches of this.appliesSince(at, host)) {
      if (touches === undefined) return false;
      for (const r of resources) if (r.reads === undefined || anyOverlap(touches, r.reads)) return false;
    }
    return at.all === this.all || !readsSharedState(resources);
  }

  /** Whether no answers from `at` on `host` can hold any more: an apply since may have changed anything. */
  nothingHolds(at: ApplyStamp, host: string): boolean {
    return at.own < 0 || this.appliesSince(at, host).includes(undefined);
  }

  /** What each of the host's apply epochs since `at` may have changed. */
  private appliesSince(at: ApplyStamp, host: string): Array<readonly string[] | undefined> {
    return this.own.get(host)?.slice(at.own) ?? [];
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

/** What the steps of these resources' states may change together: undefined (anything) when one of them does not say. */
export function touchedBy(states: readonly { readonly steps?: readonly Step[] }[]): readonly string[] | undefined {
  const out: string[] = [];
  for (const s of states)
    for (const step of s.steps ?? []) {
      if (!step.touches) return undefined;
      out.push(...step.touches);
    }
  return out;
}
