import type { Change, Resource, Step } from '../contract/resource.ts';
import { resourceResult, type Outcome, type ResourceResult } from './events.ts';
import { factsHash } from './facts-hash.ts';
import { withFleet } from './fleet.ts';
import { listLinks } from './links.ts';
import type { Answer, HostRunOptions } from './host-types.ts';

// A host's run as the engine keeps it: one State per resource, its outcome reported once.

/** An answer that could not be read: the probe did not finish, or parse threw. */
export class Unreadable {
  constructor(readonly error: string) {}
}

/** Whether an answer holds facts (not why they could not be read). */
export const isReadable = (answer: Answer): boolean => !(answer instanceof Unreadable);

export interface State {
  r: Resource;
  /** The states of its links (see Links), resolved once. */
  deps: State[];
  writers: State[];
  afters: State[];
  /** A handler's notifiers (see links.ts). */
  notifiers: State[];
  stacked?: State;
  facts?: unknown;
  factHash?: string;
  changes?: Change[];
  /** Files expected after this resource (and those it stacks on) apply; set only when some differ from the probe. */
  predictedFiles?: Record<string, unknown>;
  steps?: Step[];
  result?: ResourceResult;
}

/** Every resource without an outcome yet fails with `msg`. */
export function failUnfinished(o: HostRunOptions, states: State[], msg: string): void {
  for (const s of states) if (!s.result) finishState(o, s, { status: 'failed', changes: NO_CHANGES, error: msg });
}

/** No dependencies. */
const NONE: State[] = [];
/** The changes of a result without any (most results of a converged fleet share it; read-only). */
export const NO_CHANGES = Object.freeze([]) as unknown as Change[];
export const NO_STEPS = Object.freeze([]) as unknown as Step[];

/** A host's states of a resource list, dependencies resolved (indexes worked out once per list). */
export function newStates(resources: readonly Resource[]): State[] {
  const links = listLinks(resources);
  const states: State[] = new Array(resources.length);
  // Every field set from the start: one object shape for all states (V8 keeps the code that reads them monomorphic).
  for (let i = 0; i < resources.length; i++) {
    states[i] = {
      r: resources[i],
      deps: NONE,
      writers: NONE,
      afters: NONE,
      notifiers: NONE,
      stacked: undefined,
      facts: undefined,
      factHash: undefined,
      changes: undefined,
      predictedFiles: undefined,
      steps: undefined,
      result: undefined,
    };
  }
  for (let i = 0; i < states.length; i++) {
    const l = links[i];
    const s = states[i];
    s.deps = statesAt(states, l.deps);
    s.writers = statesAt(states, l.writers);
    s.afters = statesAt(states, l.afters);
    s.notifiers = statesAt(states, l.notifiers);
    if (l.stacked >= 0) s.stacked = states[l.stacked];
  }
  return states;
}

function statesAt(states: State[], indexes: readonly number[]): State[] {
  if (indexes.length === 0) return NONE;
  const out: State[] = [];
  for (const i of indexes) out.push(states[i]);
  return out;
}

// finishState and ingestAnswer are module functions, not closures made per host: V8 optimises
// (and inlines) one function instead of a closure it meets thousands of times.
export function finishState(o: HostRunOptions, s: State, res: Outcome): void {
  if (res.changes.length) res.changes = shown(res.changes);
  s.result = resourceResult(o.host, o.play, s.r.id, s.r.kind, res);
  o.onResult(s.result);
}

/** Changes as shown and recorded: without the data that apply reads (it may hold bytes, or secrets). */
function shown(changes: Change[]): Change[] {
  for (const c of changes) {
    if (c.data !== undefined) return changes.map(shownChange);
  }
  return changes;
}

/** A change without its data; what it disturbs (Change.disruptive) is shown, and --drain reads it. */
function shownChange({ summary, diff, disruptive }: Change): Change {
  const out: Change = { summary };
  if (diff !== undefined) out.diff = diff;
  if (disruptive !== undefined) out.disruptive = disruptive;
  return out;
}

/** Take a resource's answer: its facts, or it fails with why they could not be read. */
export function ingestAnswer(o: HostRunOptions, factHashes: Map<string, string>, s: State, answer: Answer): boolean {
  if (answer instanceof Unreadable) {
    finishState(o, s, { status: 'failed', changes: NO_CHANGES, error: answer.error });
    return false;
  }
  s.facts = answer;
  if (o.hashFacts) {
    s.factHash = factsHash(s.facts);
    factHashes.set(s.r.id, s.factHash);
  }
  // After hashing: a saved plan fingerprints the host's own facts, not its group's.
  if (o.fleet) s.facts = withFleet(s.r, answer, o.fleet);
  return true;
}

export const notConverged = (d: State) => d.result?.status === 'failed' || d.result?.status === 'skipped';

/** A writer of the same file that predicted its result does not make `s` wait: s diffs against it. */
export const stackable = (s: State, d: State) => d === s.stacked && d.predictedFiles !== undefined && s.r.files !== undefined;

export function collect(states: State[]): ResourceResult[] {
  const out: ResourceResult[] = [];
  for (const s of states) if (s.result) out.push(s.result);
  return out;
}

/** Why no further change may start on this host (the run stopped, or was interrupted), if so. */
export function stopped(o: HostRunOptions): string | undefined {
  const halt = o.halted?.();
  if (halt !== undefined) return `not applied: ${halt}`;
  return o.signal?.aborted ? 'interrupted before this change was applied' : undefined;
}
