import type { RunDrainEvent, RunDrains } from '../report/model.ts';
import type { RunLedger } from './drain-ledger.ts';

// A run's --drain as its journal shows it, for `runs show`: what it did to each node, in order, and
// the nodes it left out of scheduling. A reviewer of a change window reads it there, often not at
// the operator's terminal.

/**
 * Per node, from its events in order: out of scheduling by this run after `drained` (taken over
 * included), back after a resume that went through; a resume that failed leaves it out. A failed
 * drain is followed by a resume when it had taken the node out (the session resumes it at once or at
 * the run's end): without one, in a run that ended, it had not; in a run with no end, its `tookOut`
 * says (a journal older than it: not known).
 */
export function runDrains(events: readonly RunDrainEvent[], ended: boolean): RunDrains {
  const last = new Map<string, { e: RunDrainEvent; why?: string }>();
  for (const e of events) {
    if (e.type === 'resume')
      last.set(e.host, { e, why: e.ok || e.someoneElses ? undefined : `its resume failed: ${e.detail ?? 'no reason given'}` });
    else if (e.outcome === 'drained')
      last.set(e.host, {
        e,
        why: ended ? 'the run ended without a resume of it' : 'no resume in the journal: the run was killed, or is still running',
      });
    else if (e.outcome === 'failed' && e.tookOut === false)
      continue; // (blocked, say: it took nothing out; what an earlier event left, a resume that failed, holds)
    else if (e.outcome === 'failed' && !ended)
      last.set(e.host, {
        e,
        why:
          e.tookOut === true
            ? `its drain failed (${e.detail ?? 'no reason given'}) after taking the node out, and the run has no end: no resume in the journal`
            : `its drain failed (${e.detail ?? 'no reason given'}) and the run has no end: whether it had taken the node out is not known`,
      });
  }
  const stillOut = [...last.entries()]
    .filter(([, s]) => s.why !== undefined)
    .map(([host, s]) => ({
      host,
      via: s.e.via,
      controller: s.e.controller,
      ...(s.e.node !== undefined ? { node: s.e.node } : {}),
      why: s.why!,
    }));
  return { events: [...events], stillOut, takenOver: [] };
}

/** A node's key, as the ledger's: scheduler and node name (a still-out node or an event without one: named as its host). */
const keyOf = (s: { via: string; node?: string; host?: string }) => `${s.via}\0${s.node ?? s.host}`;

/**
 * The journal's view corrected by the run's drain ledger (drain-ledger.ts). A node the ledger still
 * names that the journal does not show out is added to the still-out list, said so: a drain under
 * way when the run was killed writes no event, but the ledger names its node from before the drain
 * starts. A node a later run took over (the ledger's entry says by whom and when) is not this
 * run's to put back any more: off the still-out list, listed as taken over.
 */
export function withLedger(drains: RunDrains | undefined, ledger: RunLedger | undefined): RunDrains | undefined {
  if (!ledger) return drains;
  const taken = new Map(ledger.takenOver.map((t) => [keyOf(t.node), t]));
  const journal = drains?.stillOut ?? [];
  const stillOut = journal.filter((s) => !taken.has(keyOf(s)));
  const shown = new Set(journal.map(keyOf));
  const more = ledger.nodes
    .filter((n) => !shown.has(keyOf(n)))
    .map((n) => ({
      host: n.node,
      via: n.via,
      controller: n.controller,
      why: `its drain ledger ${ledger.where} names it: a drain was under way (or its resume failed) when the run ended or was killed`,
    }));
  // (named by the host the journal knows it as, when it does)
  const hostOf = new Map((drains?.events ?? []).map((e) => [keyOf(e), e.host]));
  const takenOver = [...taken.entries()].map(([key, t]) => {
    const host = hostOf.get(key) ?? t.node.node;
    return {
      host,
      via: t.node.via,
      controller: t.node.controller,
      ...(host !== t.node.node ? { node: t.node.node } : {}),
      by: t.by,
      at: t.at,
    };
  });
  if (!more.length && !takenOver.length && stillOut.length === journal.length) return drains;
  return { events: drains?.events ?? [], stillOut: [...stillOut, ...more], takenOver: [...(drains?.takenOver ?? []), ...takenOver] };
}
