import type { DrainNode } from '../contract/drain.ts';
import type { RunDrainEvent, RunDrains } from '../report/model.ts';
import type { RunLedger } from './drain-ledger.ts';
import { findNode, nodeKey } from './node-match.ts';

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

/** A still-out node or an event as a node: named as its host when the event names no node. */
const asNode = (s: { via: string; controller: string; node?: string; host: string }): DrainNode => ({
  via: s.via,
  controller: s.controller,
  node: s.node ?? s.host,
});

/** How many distinct nodes of `list` have n's scheduler and name (findNode's rivals). */
const namesake = (list: readonly DrainNode[], n: DrainNode): number =>
  new Set(list.filter((m) => m.via === n.via && m.node === n.node).map(nodeKey)).size;

/**
 * The journal's view corrected by the run's drain ledger (drain-ledger.ts). A node the ledger still
 * names that the journal does not show out is added to the still-out list, said so: a drain under
 * way when the run was killed writes no event, but the ledger names its node from before the drain
 * starts. A node a later run took over (the ledger's entry says by whom and when) is not this
 * run's to put back any more: off the still-out list, listed as taken over. The journal names a
 * controller by its host, the ledger by the address the run reached it at: a node of each is
 * matched as node-match.ts does; two of one name that cannot be told apart stay still out.
 */
export function withLedger(drains: RunDrains | undefined, ledger: RunLedger | undefined): RunDrains | undefined {
  if (!ledger) return drains;
  const entries = [...ledger.nodes.map((node) => ({ node })), ...ledger.takenOver.map((t) => ({ node: t.node, taken: t }))];
  const ledgerNodes = entries.map((e) => e.node);
  const journal = drains?.stillOut ?? [];
  const journalNodes = [...(drains?.events ?? []), ...journal].map(asNode);
  const stillOut = journal.filter((s) => {
    const m = findNode(asNode(s), entries, (e) => e.node, namesake(journalNodes, asNode(s)));
    return !(m.kind === 'found' && 'taken' in m.it);
  });
  const more = ledger.nodes
    .filter((n) => findNode(n, journal, asNode, namesake(ledgerNodes, n)).kind !== 'found')
    .map((n) => ({
      host: n.node,
      via: n.via,
      controller: n.controller,
      why: `its drain ledger ${ledger.where} names it: a drain was under way (or its resume failed) when the run ended or was killed`,
    }));
  // (named by the host the journal knows it as, when it does)
  const takenOver = ledger.takenOver.map((t) => {
    const m = findNode(t.node, drains?.events ?? [], asNode, namesake(ledgerNodes, t.node));
    const host = m.kind === 'found' ? m.it.host : t.node.node;
    return {
      host,
      via: t.node.via,
      controller: t.node.controller,
      ...(host !== t.node.node ? { node: t.node.node } : {}),
      by: t.by,
      at: t.at,
      ...(t.found ? { found: t.found } : {}),
    };
  });
  if (!more.length && !takenOver.length && stillOut.length === journal.length) return drains;
  return { events: drains?.events ?? [], stillOut: [...stillOut, ...more], takenOver: [...(drains?.takenOver ?? []), ...takenOver] };
}
