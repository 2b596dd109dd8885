import type { Connection } from '../connection/types.ts';
import { NotApplicable, Refusal, type Change } from '../contract/resource.ts';
import { ProbeSet } from './probe-set.ts';
import type { Section } from './script.ts';
import { applyLockScript, LOCK_WAITED } from './apply-lock.ts';
import { touchedBy } from './apply-epochs.ts';
import { foldedWriteScript, planFolds, reached } from './folded-writes.ts';
import { probeOf } from './host-caches.ts';
import { isDisruptive } from './drain-session.ts';
import { execSections, readAnswer, stepError } from './host-exec.ts';
import { finishState, ingestAnswer, notConverged, NO_CHANGES, NO_STEPS, stopped, type State } from './host-state.ts';
import type { HostRunOptions } from './host-types.ts';

// Applying: a wave's steps with the probes that verify them, and the handlers after the waves.

/** What became of an apply wave other than its results: the connection was lost, or the apply lock was not held. */
export interface WaveTrouble {
  lost?: string;
  /** The lock was taken only after another run let it go (named here): nothing ran. */
  lockWaited?: string;
  /** The lock could not be taken (another run holds it): nothing ran. */
  lockFailed?: string;
}

/** Apply `toApply`'s steps and re-probe in one exec (behind the apply lock when asked). */
export async function applyWave(
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
  }
  // Where each state's steps run: their sections (a folded write's stage stands in for its step).
  const folds = planFolds(toApply, (s) => stackedInWave(s, toApply));
  const stepSections = new Map<State, number[]>();
  for (const s of toApply) {
    if (s.result) continue;
    const skipIf = wavePredecessors(s, toApply);
    const at: number[] = [];
    for (const step of s.steps!) {
      const fold = folds.get(step);
      if (!fold) {
        at.push(sections.push({ kind: 'step', group: s.r.id, skipIf, body: step.script }) - 1);
        continue;
      }
      const stage =
        sections.push({
          kind: 'step',
          group: s.r.id,
          skipIf,
          mark: { name: fold.token, value: String(fold.stages.length + 1) },
          body: '',
        }) - 1;
      at.push(stage);
      fold.stages.push(stage);
      // (no group: it runs whichever writers were reached)
      if (fold.stages.length === fold.members.length) fold.section = sections.push({ kind: 'step', body: foldedWriteScript(fold) }) - 1;
    }
    stepSections.set(s, at);
  }
  const reprobe = [...toApply.filter((s) => s.r.verifiable), ...deferred];
  const reprobeSet = new ProbeSet(
    sections,
    reprobe.map((s) => probeOf(s.r)),
  );
  const touches = touchedBy(toApply);
  o.onApply?.(o.host, touches);
  const out = await execSections(conn, sections).finally(() => o.onApply?.(o.host, touches));
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
  for (const s of toApply) {
    const at = stepSections.get(s);
    if (!at) continue; // decided before the exec: no steps were sent
    // A predecessor in this wave did not converge: the script skipped this one's steps.
    const failed = wavePredecessorStates(s, toApply).find(notConverged);
    if (failed) {
      finishState(o, s, { status: 'skipped', changes: s.changes!, error: `dependency ${failed.r.id} did not converge` });
      continue;
    }
    s.steps!.forEach((step, i) => {
      const so = out[at[i]];
      if (!s.result && so.code !== 0) finishState(o, s, { status: 'failed', changes: s.changes!, error: stepError(step, so) });
    });
  }
  // A folded write that failed fails every writer whose content it carried (each names its own write step).
  for (const fold of new Set(folds.values())) {
    const wrote = out[fold.section];
    if (wrote.code === 0) continue;
    for (const m of fold.members.slice(
      0,
      reached(fold, (i) => out[i].code),
    )) {
      if (!m.s.result) finishState(o, m.s, { status: 'failed', changes: m.s.changes!, error: stepError(m.step, wrote) });
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
  const under = stackedInWave(s, toApply);
  if (under) out.push(under);
  return out;
}

/** The writer of this wave whose predicted file `s` was diffed against (through writers not in the wave). */
function stackedInWave(s: State, toApply: State[]): State | undefined {
  let under = s.stacked;
  while (under && !toApply.includes(under) && under.stacked) under = under.stacked;
  return under && toApply.includes(under) ? under : undefined;
}

function wavePredecessors(s: State, toApply: State[]): string[] | undefined {
  const ids = wavePredecessorStates(s, toApply).map((d) => d.r.id);
  return ids.length ? ids : undefined;
}

/**
 * The handlers, once the waves are done: each whose notifiers include a changed resource runs
 * (in check mode: is reported as "would ..."), all in one exec; the others are ok. A handler's
 * steps carry its own health check: a failing step fails it (and so the host).
 */
export async function runHandlers(conn: Connection, o: HostRunOptions, states: State[]): Promise<string | undefined> {
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
    else if (o.check)
      finishState(o, s, {
        status: 'changed',
        changes: changes.map((c) => ({ summary: `would ${c.summary}${because}`, ...(c.disruptive ? { disruptive: c.disruptive } : {}) })),
      });
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
  // --drain: a disruptive handler (a kubelet restart) waits for the host's drain like a wave does
  const undrained = o.beforeDisruptive && due.some((s) => s.changes!.some(isDisruptive)) ? await o.beforeDisruptive() : undefined;
  if (undrained !== undefined) {
    for (const s of due) finishState(o, s, { status: 'failed', changes: s.changes!, error: `not applied: ${undrained}` });
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
  const touches = touchedBy(ran);
  o.onApply?.(o.host, touches);
  const out = await execSections(conn, sections).finally(() => o.onApply?.(o.host, touches));
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
