import type { Connection } from '../connection/types.ts';
import { BecomeError } from '../connection/become.ts';
import { NotApplicable, Refusal, type Change, type Resource, type Step } from '../contract/resource.ts';
import { resourceResult, type Outcome, type ResourceResult } from './events.ts';
import { factsHash } from './facts-hash.ts';
import { ProbeSet, sameParts, type ProbeAnswers } from './probe-set.ts';
import type { ProbeOutput, ProbeText } from '../contract/probe.ts';
import { buildScript, scriptBody, splitOutput, type Section, type SectionOutput } from './script.ts';
import { applyLockScript, LOCK_WAITED, type ApplyLockOptions } from './apply-lock.ts';
import { withFleet, type FleetViews } from './fleet.ts';
import { listLinks } from './links.ts';

export interface HostRunOptions {
  host: string;
  play: string;
  check: boolean;
  /** --yes: changes that need confirmation (Change.confirm) apply without a reviewed plan. */
  yes?: boolean;
  /** Called as soon as a resource's outcome is known. */
  onResult: (r: ResourceResult) => void;
  /**
   * Saved-plan mode: every resource's facts must still hash to the reviewed value (else the host
   * is refused with a drift report), and each resource may make exactly its reviewed changes.
   */
  planned?: Map<string, PlannedResource>;
  /** Ctrl-C: apply no further waves (the exec in flight finishes). */
  signal?: AbortSignal;
  /**
   * Why the run was stopped (--max-fail-percent exceeded, a failure in an anyErrorsFatal play),
   * once it was: like Ctrl-C, no further wave or handler starts (the exec in flight finishes).
   */
  halted?: () => string | undefined;
  /** Resources of this host's later plays, probed in this run's first exec: one round trip for every play. */
  prefetch?: ReadonlyArray<readonly Resource[]>;
  /**
   * Their answers (`prefetch` flattened, in order), read as soon as the first exec returned: what
   * waits for a later play is each resource's facts, not the exec's output (a fleet's outputs,
   * split and held across the play barrier, cost far more memory and garbage collection).
   */
  onPrefetched?: (answers: Answer[]) => void;
  /** This play's answers, prefetched by an earlier play and still current: no probe exec. */
  probed?: readonly Answer[];
  /** Fingerprint the facts (saved plans): a sha256 per resource, only worth its cost there. */
  hashFacts?: boolean;
  /** Before and after every exec that applies steps on `host` (the caller tracks whether prefetched facts still hold). */
  onApply?: (host: string) => void;
  /** Take the host's apply lock in every exec that applies steps (apply-lock.ts). */
  lock?: ApplyLockOptions;
  /** The play's fleet groups (fleet.ts): keyed resources diff their facts with their group's. */
  fleet?: FleetViews;
}

export interface PlannedResource {
  factHash: string;
  /** Change summaries that were reviewed (empty: the resource was converged). */
  changes: string[];
  /**
   * Reviewed as "depends on a pending change" of this resource: its own changes could only be
   * known after that one applied, so whatever they turn out to be is what was approved.
   */
  pending?: string;
}

export interface HostRunResult {
  results: ResourceResult[];
  /** sha256 of each resource's facts, for saved plans. */
  factHashes: Map<string, string>;
  /** Set when the connection broke mid-run: the host counts as unreachable. */
  lostConnection?: string;
  /** The host could be reached but not escalated (sudo refused): it failed, with this cause. */
  becomeFailed?: string;
  /** Saved-plan mode: resources whose facts moved since the plan (the host was refused). */
  drift?: Array<{ id: string; now: string[]; planned: string[] }>;
  /** Another run held the host's apply lock: whom this run waited for (it re-read the host after). */
  lockWaits?: string[];
}

/** A resource's probe output as read by its parse: its facts, or why they could not be read. */
export type Answer = unknown;

/** An answer that could not be read: the probe did not finish, or parse threw. */
class Unreadable {
  constructor(readonly error: string) {}
}

/** Whether an answer holds facts (not why they could not be read). */
export const isReadable = (answer: Answer): boolean => !(answer instanceof Unreadable);

/**
 * One exec that probes a play's resources and those of the host's later plays: their answers (in
 * order), or why the exec failed as a whole.
 */
export async function probeHost(
  conn: Connection,
  resources: readonly Resource[],
  later: ReadonlyArray<readonly Resource[]>,
): Promise<{ answers: Answer[]; later: Answer[] } | string> {
  const { set, sections, body } = probeLayout(resources, later);
  const out = await execSections(conn, sections, body);
  if (typeof out === 'string') return out;
  const answers: Answer[] = [];
  for (let i = 0; i < resources.length; i++) answers.push(readAnswer(resources[i], set.output(out, i)));
  const rest: Answer[] = [];
  let i = resources.length;
  for (const rs of later) for (const r of rs) rest.push(readAnswer(r, set.output(out, i++)));
  return { answers, later: rest };
}

/** Read a probe output into facts (parse is pure: hosts answering alike share one parse). */
function readAnswer(r: Resource, out: ProbeAnswers): Answer {
  if (out.code === null) return new Unreadable('probe did not run to completion');
  try {
    return parseOnce(r, out as ProbeAnswers & ProbeOutput);
  } catch (e) {
    return new Unreadable(`probe: ${(e as Error).message}`);
  }
}

interface State {
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

/**
 * Converge one host: one exec probes everything; each wave of changes is one exec that applies
 * and re-probes (verify + facts for the next wave). A converged host costs exactly one exec.
 */
export async function runHost(conn: Connection, resources: Resource[], o: HostRunOptions): Promise<HostRunResult> {
  const states = newStates(resources);
  const factHashes = new Map<string, string>();

  // Wave 0: probe all.
  let probed = o.probed;
  if (!probed) {
    const later = o.prefetch ?? NO_LISTS;
    const first = await probeHost(conn, resources, later);
    if (typeof first === 'string') return { results: collect(states), factHashes, ...execFailed(o, states, first) };
    probed = first.answers;
    if (later.length && o.onPrefetched) o.onPrefetched(first.later);
  }
  for (let i = 0; i < states.length; i++) ingestAnswer(o, factHashes, states[i], probed[i]);

  if (o.planned) {
    const drift = findDrift(states, o.planned);
    if (drift.length) {
      const what = drift
        .map((d) => `${d.id} (now: ${d.now.join('; ') || 'no change'}; planned: ${d.planned.join('; ') || 'no change'})`)
        .join(', ');
      failUnfinished(o, states, `refused: facts changed since the plan: ${what}`);
      return { results: collect(states), factHashes, drift };
    }
  }

  let settled = false;
  let lockWaits: string[] | undefined;
  for (let wave = 0; wave <= resources.length; wave++) {
    const toApply: State[] = [];
    const deferred: State[] = [];
    decideWave(o, states, toApply, deferred);
    if (toApply.length === 0) {
      if (deferred.length === 0) {
        settled = true;
        break;
      }
      continue; // nothing applied, so the deferred resources' facts are still current
    }
    const stop = stopped(o);
    if (stop !== undefined) {
      failUnfinished(o, states, stop);
      break;
    }
    const res = await applyWave(conn, o, factHashes, toApply, deferred);
    if (res?.lost !== undefined) return { results: collect(states), factHashes, ...execFailed(o, states, res.lost), lockWaits };
    if (res?.lockFailed !== undefined) {
      failUnfinished(o, states, `not applied: ${res.lockFailed}`);
      return { results: collect(states), factHashes, lockWaits };
    }
    for (const s of states) s.predictedFiles = undefined; // the re-probe superseded every prediction
    if (res?.lockWaited !== undefined) {
      // Nothing was applied: what this run read came before the other run's changes. Read again.
      (lockWaits ??= []).push(res.lockWaited);
      const lost = lockWaits.length > 3 ? 'the apply lock was lost to other runs 4 times' : await reprobe(conn, o, factHashes, states);
      if (lost !== undefined) {
        if (lockWaits.length <= 3) return { results: collect(states), factHashes, ...execFailed(o, states, lost), lockWaits };
        failUnfinished(o, states, lost);
        return { results: collect(states), factHashes, lockWaits };
      }
      wave--; // this wave changed nothing
    }
  }
  if (!settled) for (const s of states) if (!s.r.handler && !s.result) failUnfinished(o, [s], 'not converged: dependency cycle');
  const lost = await runHandlers(conn, o, states);
  if (lost !== undefined) return { results: collect(states), factHashes, ...execFailed(o, states, lost), lockWaits };
  return { results: collect(states), factHashes, lockWaits };
}

/** Probe the undecided resources again (after waiting for the apply lock); why the exec failed, if it did. */
async function reprobe(conn: Connection, o: HostRunOptions, factHashes: Map<string, string>, states: State[]): Promise<string | undefined> {
  const open = states.filter((s) => !s.result);
  const sections: Section[] = [];
  const set = new ProbeSet(
    sections,
    open.map((s) => probeOf(s.r)),
  );
  const out = await execSections(conn, sections);
  if (typeof out === 'string') return out;
  open.forEach((s, i) => ingestAnswer(o, factHashes, s, readAnswer(s.r, set.output(out, i))));
  return undefined;
}

/**
 * The handlers, once the waves are done: each whose notifiers include a changed resource runs
 * (in check mode: is reported as "would ..."), all in one exec; the others are ok. A handler's
 * steps carry its own health check: a failing step fails it (and so the host).
 */
async function runHandlers(conn: Connection, o: HostRunOptions, states: State[]): Promise<string | undefined> {
  const due: State[] = [];
  for (const s of states) {
    if (!s.r.handler || s.result) continue;
    const by = s.notifiers.filter((n) => n.result?.status === 'changed');
    if (by.length === 0) {
      finishState(o, s, { status: 'ok', changes: NO_CHANGES });
      continue;
    }
    const because = ` (${by.map((n) => n.r.id).join(', ')} changed)`;
    let changes: Change[];
    try {
      changes = s.r.diff(s.facts);
    } catch (e) {
      if (e instanceof NotApplicable) finishState(o, s, { status: 'skipped', changes: NO_CHANGES, error: `${e.message}${because}` });
      else
        finishState(o, s, {
          status: 'failed',
          changes: NO_CHANGES,
          error: e instanceof Refusal ? `refused: ${e.message}` : `diff: ${(e as Error).message}`,
        });
      continue;
    }
    if (changes.length === 0) finishState(o, s, { status: 'ok', changes: NO_CHANGES });
    else if (o.check) finishState(o, s, { status: 'changed', changes: changes.map((c) => ({ summary: `would ${c.summary}${because}` })) });
    else {
      s.changes = changes.map((c) => ({ ...c, summary: `${c.summary}${because}` }));
      due.push(s);
    }
  }
  const stop = due.length === 0 ? undefined : stopped(o);
  if (due.length === 0 || stop !== undefined) {
    for (const s of due) finishState(o, s, { status: 'failed', changes: s.changes!, error: stop });
    return undefined;
  }
  const sections: Section[] = [];
  // Behind the apply lock too (held by this run since its first apply: the quick path).
  if (o.lock) sections.push({ kind: 'step', stop: true, body: applyLockScript(o.lock, conn) });
  const ran: State[] = [];
  for (const s of due) {
    try {
      s.steps = s.r.apply(s.facts, s.changes!);
    } catch (e) {
      finishState(o, s, { status: 'failed', changes: s.changes!, error: `apply: ${(e as Error).message}` });
      continue;
    }
    for (const step of s.steps) sections.push({ kind: 'step', group: s.r.id, body: step.script });
    ran.push(s);
  }
  if (sections.length === (o.lock ? 1 : 0)) {
    // (handlers without steps: nothing to send)
    for (const s of ran) finishState(o, s, { status: 'changed', changes: s.changes! });
    return undefined;
  }
  o.onApply?.(o.host);
  const out = await execSections(conn, sections).finally(() => o.onApply?.(o.host));
  if (typeof out === 'string') return out;
  let k = 0;
  if (o.lock) {
    const lock = out[k++];
    if (lock.code !== 0) {
      // (another run took the host in between: these restarts are left to it, or to the next run)
      const why = (lock.stderr || lock.stdout).trim() || 'the apply lock was not held';
      for (const s of ran) finishState(o, s, { status: 'failed', changes: s.changes!, error: `not run: ${why}` });
      return undefined;
    }
  }
  for (const s of ran) {
    for (const step of s.steps!) {
      const so = out[k++];
      if (s.result || so.code === 0) continue;
      finishState(o, s, { status: 'failed', changes: s.changes!, error: stepError(step, so) });
    }
    if (!s.result) finishState(o, s, { status: 'changed', changes: s.changes! });
  }
  return undefined;
}

/** Why no further change may start on this host (the run stopped, or was interrupted), if so. */
function stopped(o: HostRunOptions): string | undefined {
  const halt = o.halted?.();
  if (halt !== undefined) return `not applied: ${halt}`;
  return o.signal?.aborted ? 'interrupted before this change was applied' : undefined;
}

/** A failed step's message: its name, exit code and the last lines it printed. */
function stepError(step: Step, so: SectionOutput): string {
  const why = so.code === null ? 'did not run (connection lost or earlier failure)' : `exit ${so.code}`;
  const detail = (so.stderr || so.stdout).trim().split('\n').slice(-5).join('\n');
  return `step "${step.name}" ${why}${detail ? `: ${detail}` : ''}`;
}

/**
 * One wave's decisions: every undecided resource whose dependencies are decided is diffed, and
 * finishes (converged, check-mode change, failed, skipped) or goes to `toApply`; the rest wait in
 * `deferred`. Apart from runHost so that V8 optimises this hot loop without the whole run.
 */
function decideWave(o: HostRunOptions, states: State[], toApply: State[], deferred: State[]): void {
  for (const s of states) {
    if (s.result || s.r.handler) continue; // (handlers run after the waves: runHandlers)
    const { deps, writers, afters, stacked } = s;
    const blocker = deps.find(notConverged) ?? afters.find(notConverged);
    if (blocker) {
      // Pass the file predictions along, so a later writer of the same file still stacks.
      if (stacked && stackable(s, stacked)) s.predictedFiles = stacked.predictedFiles;
      finishState(o, s, { status: 'skipped', changes: NO_CHANGES, error: `dependency ${blocker.r.id} did not converge` });
      continue;
    }
    // Ordering-only dependencies must be decided first, or go in this same wave before us.
    if (afterPending(afters, toApply) || anyUndecided(s, deps) || anyUndecided(s, writers)) {
      deferred.push(s); // decided once its dependencies are
      continue;
    }
    const pendingDep = o.check ? (firstPending(s, deps) ?? firstPending(s, writers)) : undefined;
    if (pendingDep) {
      // Its facts would only be known after the dependency's change: report, never guess.
      finishState(o, s, {
        status: 'changed',
        changes: [{ summary: `depends on a pending change of ${pendingDep.r.id}` }],
        pending: pendingDep.r.id,
      });
      continue;
    }
    const inherited = stacked && stackable(s, stacked) ? stacked.predictedFiles : undefined;
    // The resource's own code may throw at each stage: it then fails alone (the prediction it
    // stacks on still holds, so a later writer of the same file stacks on that one).
    let stage = 'use';
    let own: Record<string, unknown> | undefined;
    try {
      if (inherited) s.facts = useFiles(s.r, s.facts, inherited);
      stage = 'diff';
      s.changes = diffOnce(s.r, s.facts);
      stage = 'predict';
      own = s.changes.length && s.r.files ? predictFiles(s.r, s.facts, s.changes) : undefined;
    } catch (e) {
      if (inherited) s.predictedFiles = inherited;
      if (e instanceof NotApplicable) {
        finishState(o, s, { status: 'skipped', changes: NO_CHANGES, error: e.message });
        continue;
      }
      finishState(o, s, {
        status: 'failed',
        changes: NO_CHANGES,
        error: e instanceof Refusal ? `refused: ${e.message}` : `${stage}: ${(e as Error).message}`,
      });
      continue;
    }
    if (own || inherited) s.predictedFiles = { ...inherited, ...own };
    const reviewed = o.planned?.get(s.r.id);
    if (reviewed && !reviewed.pending && JSON.stringify(reviewed.changes) !== JSON.stringify(s.changes.map((c) => c.summary))) {
      finishState(o, s, {
        status: 'failed',
        changes: s.changes,
        error: `refused: changes differ from the plan (planned: ${reviewed.changes.join('; ') || 'none'})`,
      });
      continue;
    }
    // A change that destroys data applies only as reviewed (a saved plan that showed it) or with --yes.
    const unconfirmed = o.check || o.yes || (reviewed && !reviewed.pending) ? [] : s.changes.filter((c) => c.confirm);
    if (unconfirmed.length) {
      finishState(o, s, {
        status: 'failed',
        changes: s.changes,
        error: `refused: ${unconfirmed.map((c) => `${c.summary} (${c.confirm})`).join('; ')}: only in a plan reviewed with --check --plan-out FILE, then \`provision apply FILE\`, or with --yes`,
      });
      continue;
    }
    if (s.changes.length === 0) {
      finishState(o, s, { status: 'ok', changes: NO_CHANGES });
    } else if (o.check) {
      finishState(o, s, { status: 'changed', changes: s.changes, alwaysRuns: !s.r.verifiable || undefined });
    } else {
      toApply.push(s);
    }
  }
}

/** What became of an apply wave other than its results: the connection was lost, or the apply lock was not held. */
interface WaveTrouble {
  lost?: string;
  /** The lock was taken only after another run let it go (named here): nothing ran. */
  lockWaited?: string;
  /** The lock could not be taken (another run holds it): nothing ran. */
  lockFailed?: string;
}

/** Apply `toApply`'s steps and re-probe in one exec (behind the apply lock when asked). */
async function applyWave(
  conn: Connection,
  o: HostRunOptions,
  factHashes: Map<string, string>,
  toApply: State[],
  deferred: State[],
): Promise<WaveTrouble | undefined> {
  const sections: Section[] = [];
  // The lock first: when it is not held as it should be, the script ends before any step.
  if (o.lock) sections.push({ kind: 'step', stop: true, body: applyLockScript(o.lock, conn) });
  for (const s of toApply) {
    const failed = wavePredecessorStates(s, toApply).find(notConverged);
    if (failed) {
      // (its apply threw or it was skipped itself: it sends no steps, so the script cannot tell)
      s.steps = NO_STEPS;
      finishState(o, s, { status: 'skipped', changes: s.changes!, error: `dependency ${failed.r.id} did not converge` });
      continue;
    }
    try {
      s.steps = s.r.apply(s.facts, s.changes!);
    } catch (e) {
      s.steps = NO_STEPS;
      finishState(o, s, { status: 'failed', changes: s.changes!, error: `apply: ${(e as Error).message}` });
      continue;
    }
    const skipIf = wavePredecessors(s, toApply);
    for (const step of s.steps) sections.push({ kind: 'step', group: s.r.id, skipIf, body: step.script });
  }
  const reprobe = [...toApply.filter((s) => s.r.verifiable), ...deferred];
  const reprobeSet = new ProbeSet(
    sections,
    reprobe.map((s) => probeOf(s.r)),
  );
  o.onApply?.(o.host);
  const out = await execSections(conn, sections).finally(() => o.onApply?.(o.host));
  if (typeof out === 'string') return { lost: out };
  if (o.lock) {
    const lock = out[0];
    if (lock.code === LOCK_WAITED) return { lockWaited: lock.stdout.trim().replace(/^waited for run /, '') || 'another run' };
    if (lock.code !== 0) {
      const why = (lock.stderr || lock.stdout).trim();
      return { lockFailed: why || (lock.code === null ? 'the apply lock step did not run' : `the apply lock step exited ${lock.code}`) };
    }
  }
  // Attribute step outcomes to their resources.
  let k = o.lock ? 1 : 0;
  for (const s of toApply) {
    if (s.result) continue; // decided before the exec: no steps were sent
    // A predecessor in this wave did not converge: the script skipped this one's steps.
    const failed = wavePredecessorStates(s, toApply).find(notConverged);
    if (failed) {
      k += s.steps!.length;
      finishState(o, s, { status: 'skipped', changes: s.changes!, error: `dependency ${failed.r.id} did not converge` });
      continue;
    }
    for (const step of s.steps!) {
      const so = out[k++];
      if (s.result) continue;
      if (so.code !== 0) finishState(o, s, { status: 'failed', changes: s.changes!, error: stepError(step, so) });
    }
  }
  reprobe.forEach((s, i) => {
    const po = reprobeSet.output(out, i);
    if (s.result) return;
    if (!ingestAnswer(o, factHashes, s, readAnswer(s.r, po))) return;
    if (!toApply.includes(s)) return; // deferred: diffed in the next wave
    let still: Change[];
    try {
      still = s.r.diff(s.facts);
    } catch (e) {
      finishState(o, s, { status: 'failed', changes: s.changes!, error: `after apply: ${(e as Error).message}` });
      return;
    }
    if (still.length) {
      finishState(o, s, {
        status: 'failed',
        changes: s.changes!,
        error: `still differs after apply: ${still.map((c) => c.summary).join('; ')}`,
      });
    } else {
      finishState(o, s, { status: 'changed', changes: s.changes! });
    }
  });
  for (const s of toApply) if (!s.result) finishState(o, s, { status: 'changed', changes: s.changes!, alwaysRuns: true });
  return undefined;
}

/**
 * The resources of this wave whose failure must skip `s`'s steps: its `after` dependencies, and
 * the writer whose predicted file it was diffed against (through writers skipped by --tags...).
 */
function wavePredecessorStates(s: State, toApply: State[]): State[] {
  const out: State[] = [];
  for (const d of s.afters) if (toApply.includes(d)) out.push(d);
  let under = s.stacked;
  while (under && !toApply.includes(under) && under.stacked) under = under.stacked;
  if (under && toApply.includes(under)) out.push(under);
  return out;
}

function wavePredecessors(s: State, toApply: State[]): string[] | undefined {
  const ids = wavePredecessorStates(s, toApply).map((d) => d.r.id);
  return ids.length ? ids : undefined;
}

/** Run sections as one script: their outputs, or why the exec failed as a whole. */
async function execSections(conn: Connection, sections: Section[], body?: string): Promise<SectionOutput[] | string> {
  const { script, marker } = buildScript(sections, body);
  try {
    const res = await conn.exec(script);
    if (res.code !== 0 && res.code !== null) {
      // The wrapper itself did not run (no /bin/sh, a dead session): every section lacks output.
      if (!res.stdout.includes(marker)) return `remote shell failed (exit ${res.code}): ${res.stderr.trim()}`;
    }
    return splitOutput(res.stdout, marker, sections.length, res.stderr);
  } catch (e) {
    return e instanceof BecomeError ? `${BECOME_FAILED_PREFIX}${e.message}` : (e as Error).message;
  }
}

/** Begins an exec's failure that is a refused escalation, not a lost connection. */
const BECOME_FAILED_PREFIX = 'not run: ';
/** The error of each resource of a host whose escalation was refused (the host's error says why). */
export const BECOME_REFUSED = 'not run: become failed on this host';

/**
 * An exec that failed as a whole: a refused escalation (sudo's message once, as the host's error;
 * the unfinished resources only point there) or a lost connection (each of them says so).
 */
function execFailed(o: HostRunOptions, states: State[], why: string): { becomeFailed: string } | { lostConnection: string } {
  if (why.startsWith(BECOME_FAILED_PREFIX)) {
    failUnfinished(o, states, BECOME_REFUSED);
    return { becomeFailed: why };
  }
  failUnfinished(o, states, why);
  return { lostConnection: why };
}

/** Every resource without an outcome yet fails with `msg`. */
function failUnfinished(o: HostRunOptions, states: State[], msg: string): void {
  for (const s of states) if (!s.result) finishState(o, s, { status: 'failed', changes: NO_CHANGES, error: msg });
}

/** No dependencies. */
const NONE: State[] = [];
/** The changes of a result without any (most results of a converged fleet share it; read-only). */
const NO_CHANGES = Object.freeze([]) as unknown as Change[];
const NO_STEPS = Object.freeze([]) as unknown as Step[];

/** A host's states of a resource list, dependencies resolved (indexes worked out once per list). */
function newStates(resources: readonly Resource[]): State[] {
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
function finishState(o: HostRunOptions, s: State, res: Outcome): void {
  if (res.changes.length) res.changes = shown(res.changes);
  s.result = resourceResult(o.host, o.play, s.r.id, s.r.kind, res);
  o.onResult(s.result);
}

/** Changes as shown and recorded: without the data that apply reads (it may hold bytes, or secrets). */
function shown(changes: Change[]): Change[] {
  for (const c of changes) {
    if (c.data !== undefined) return changes.map(({ summary, diff }) => (diff === undefined ? { summary } : { summary, diff }));
  }
  return changes;
}

/** Take a resource's answer: its facts, or it fails with why they could not be read. */
function ingestAnswer(o: HostRunOptions, factHashes: Map<string, string>, s: State, answer: Answer): boolean {
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

/** An ordering-only dependency is neither decided nor going in this wave before `s`. */
function afterPending(afters: State[], toApply: State[]): boolean {
  for (const d of afters) if (!d.result && !toApply.includes(d)) return true;
  return false;
}

const notConverged = (d: State) => d.result?.status === 'failed' || d.result?.status === 'skipped';

/** A writer of the same file that predicted its result does not make `s` wait: s diffs against it. */
const stackable = (s: State, d: State) => d === s.stacked && d.predictedFiles !== undefined && s.r.files !== undefined;

/** Facts with the files an earlier writer predicted in place of the probed ones. */
function useFiles(r: Resource, facts: unknown, predicted: Record<string, unknown>): unknown {
  let f = facts;
  for (const slot of r.files!) if (slot.path in predicted) f = slot.use(f, predicted[slot.path]);
  return f;
}

/** The files `changes` leave, by path (only those they change). */
function predictFiles(r: Resource, facts: unknown, changes: readonly Change[]): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const slot of r.files!) {
    const p = slot.predict(facts, changes);
    if (p !== undefined) (out ??= {})[slot.path] = p;
  }
  return out;
}

/** Some of `list` is not decided yet (and `s` cannot diff against its prediction). */
function anyUndecided(s: State, list: State[]): boolean {
  for (const d of list) if (!d.result && !stackable(s, d)) return true;
  return false;
}

/** The first of `list` with a change pending (check mode) that `s` cannot diff against. */
function firstPending(s: State, list: State[]): State | undefined {
  for (const d of list) if (d.result?.status === 'changed' && !stackable(s, d)) return d;
  return undefined;
}

// Each resource's last parse: hosts that share a play's build share its resource objects, and
// converged hosts mostly answer a probe word for word alike (same file, same sysctl values).
const lastParse = new WeakMap<Resource, { out: ProbeAnswers; facts: unknown }>();

/** `r.parse` of this output, or the facts of the same output parsed just before (parse is pure). */
function parseOnce(r: Resource, out: ProbeAnswers & ProbeOutput): unknown {
  const last = lastParse.get(r);
  if (last && (last.out === out || (last.out.code === out.code && last.out.stderr === out.stderr && sameParts(last.out.parts, out.parts))))
    return last.facts;
  const facts = r.parse(out);
  lastParse.set(r, { out, facts });
  return facts;
}

/** The probe exec of some resource lists: its sections, their script (marker aside) and answer split. */
interface ProbeLayout {
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
function probeLayout(resources: readonly Resource[], later: ReadonlyArray<readonly Resource[]>): ProbeLayout {
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

const NO_LISTS: ReadonlyArray<readonly Resource[]> = [];

// Each resource's last diff: hosts that shared a parse (the same facts object) share its diff.
const lastDiff = new WeakMap<Resource, { facts: unknown; changes: Change[] }>();

/** `r.diff(facts)`, or the changes of these very facts diffed just before (diff is pure). */
function diffOnce(r: Resource, facts: unknown): Change[] {
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

function collect(states: State[]): ResourceResult[] {
  const out: ResourceResult[] = [];
  for (const s of states) if (s.result) out.push(s.result);
  return out;
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
