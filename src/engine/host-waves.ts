import type { Connection } from '../connection/types.ts';
import { NotApplicable, Refusal, type Change, type Resource } from '../contract/resource.ts';
import { applyWave } from './host-apply.ts';
import { isDisruptive } from './drain-session.ts';
import { diffOnce } from './host-caches.ts';
import { reprobe } from './host-exec.ts';
import { failUnfinished, finishState, notConverged, NO_CHANGES, stackable, stopped, type State } from './host-state.ts';
import type { HostRunOptions } from './host-types.ts';

// Wave scheduling: which resources diff and apply together, in dependency order.

/** How the waves ended: with every resource decided (the handlers' turn), or the host's run cut short. */
export interface WavesEnd {
  /** The exec failed as a whole (the caller fails the host with this). */
  lost?: string;
  /** The run ended here (the apply lock not held, or lost too often): no handlers. */
  ended?: boolean;
  lockWaits?: string[];
}

/**
 * Decide and apply wave after wave until nothing is left undecided: each wave is one exec that
 * applies and re-probes (verify + facts for the next wave).
 */
export async function runWaves(conn: Connection, o: HostRunOptions, states: State[], factHashes: Map<string, string>): Promise<WavesEnd> {
  let settled = false;
  let lockWaits: string[] | undefined;
  for (let wave = 0; wave <= states.length; wave++) {
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
    // --drain: the host's work moves off before the first exec with a disruptive change
    if (o.beforeDisruptive && toApply.some((s) => s.changes!.some(isDisruptive))) {
      // (a Ctrl-C or a halt while the drain waited stops here too: nothing disruptive after it)
      const undrained = await o.beforeDisruptive();
      const why = undrained !== undefined ? `not applied: ${undrained}` : stopped(o);
      if (why !== undefined) {
        failUnfinished(o, states, why);
        return { ended: true, lockWaits };
      }
    }
    const res = await applyWave(conn, o, factHashes, toApply, deferred);
    if (res?.lost !== undefined) return { lost: res.lost, lockWaits };
    if (res?.lockFailed !== undefined) {
      failUnfinished(o, states, `not applied: ${res.lockFailed}`);
      return { ended: true, lockWaits };
    }
    for (const s of states) s.predictedFiles = undefined; // the re-probe superseded every prediction
    if (res?.lockWaited !== undefined) {
      // Nothing was applied: what this run read came before the other run's changes. Read again.
      (lockWaits ??= []).push(res.lockWaited);
      const lost = lockWaits.length > 3 ? 'the apply lock was lost to other runs 4 times' : await reprobe(conn, o, factHashes, states);
      if (lost !== undefined) {
        if (lockWaits.length <= 3) return { lost, lockWaits };
        failUnfinished(o, states, lost);
        return { ended: true, lockWaits };
      }
      wave--; // this wave changed nothing
    }
  }
  if (!settled) for (const s of states) if (!s.r.handler && !s.result) failUnfinished(o, [s], 'not converged: dependency cycle');
  return { lockWaits };
}

/**
 * One wave's decisions: every undecided resource whose dependencies are decided is diffed, and
 * finishes (converged, check-mode change, failed, skipped) or goes to `toApply`; the rest wait in
 * `deferred`. Apart from runHost so that V8 optimises this hot loop without the whole run.
 */
export function decideWave(o: HostRunOptions, states: State[], toApply: State[], deferred: State[]): void {
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
      // Its facts would only be known after the dependency's change: report, never guess (but a
      // resource whose changes may be disruptive says so: --drain's check lists the host).
      const may = s.r.mayDisrupt;
      finishState(o, s, {
        status: 'changed',
        changes: [{ summary: `depends on a pending change of ${pendingDep.r.id}`, ...(may !== undefined ? { disruptive: may } : {}) }],
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

/** An ordering-only dependency is neither decided nor going in this wave before `s`. */
function afterPending(afters: State[], toApply: State[]): boolean {
  for (const d of afters) if (!d.result && !toApply.includes(d)) return true;
  return false;
}

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
