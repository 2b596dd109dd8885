// What bench/fleet-behaviour.ts concludes from a run's journal: pure functions of its events (unit
// tested in test/unit/bench-behaviour.test.ts), so each check reads the record an operator keeps.

/** The journal's events, as far as the checks read them (docs/cli.md: the same events as --json). */
export interface JournalEvent {
  type: string;
  host?: string;
  play?: string;
  hosts?: unknown;
  error?: string;
  unreachable?: boolean;
  failed?: number;
  changed?: number;
}

/** A journal's NDJSON lines; a line cut short by a crash (the last one) is left out. */
export function parseJournal(text: string): JournalEvent[] {
  const out: JournalEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as JournalEvent);
    } catch {
      /* a cut-short line */
    }
  }
  return out;
}

/**
 * Batch sizes of `--serial P%` over `total` hosts as docs/cli.md states them: P % of the play's
 * hosts, rounded down, at least 1; the last batch holds what is left.
 */
export function percentBatches(total: number, percent: number): number[] {
  const size = Math.max(1, Math.floor((percent / 100) * total));
  const sizes: number[] = [];
  for (let left = total; left > 0; left -= size) sizes.push(Math.min(size, left));
  return sizes;
}

/** One play of a run as its journal shows it. */
export interface PlayBatches {
  play: string;
  /** The play's hosts (its play_start). */
  hosts: string[];
  /** Its hosts in the order they started (host_start). */
  started: string[];
  /** Every started host wrote an event of the play besides its start: its batches show in the journal. */
  visible: boolean;
  /**
   * The started hosts cut where every host started before had written its last event of the
   * play before the next host started: the batches as run, each finished before the next began.
   */
  observed: number[];
}

/** Per play, its hosts, their start order and the batches the events show. */
export function observedBatches(events: readonly JournalEvent[]): PlayBatches[] {
  const plays: PlayBatches[] = [];
  const byName = new Map<string, { p: PlayBatches; startAt: number[]; lastEvent: Map<string, number> }>();
  events.forEach((e, i) => {
    if (e.type === 'play_start' && e.play !== undefined) {
      const p: PlayBatches = {
        play: e.play,
        hosts: Array.isArray(e.hosts) ? (e.hosts as string[]) : [],
        started: [],
        visible: false,
        observed: [],
      };
      plays.push(p);
      byName.set(e.play, { p, startAt: [], lastEvent: new Map() });
      return;
    }
    if (e.host === undefined || e.play === undefined) return;
    const rec = byName.get(e.play);
    if (!rec) return;
    if (e.type === 'host_start') {
      rec.p.started.push(e.host);
      rec.startAt.push(i);
    }
    rec.lastEvent.set(e.host, i);
  });
  for (const { p, startAt, lastEvent } of byName.values()) {
    p.visible = p.started.length > 0 && p.started.every((h, j) => (lastEvent.get(h) ?? -1) > startAt[j]);
    let lastOfEarlier = -1;
    let size = 0;
    p.started.forEach((h, j) => {
      if (j > 0 && lastOfEarlier < startAt[j]) {
        p.observed.push(size);
        size = 0;
      }
      size++;
      lastOfEarlier = Math.max(lastOfEarlier, lastEvent.get(h) ?? startAt[j]);
    });
    if (size) p.observed.push(size);
  }
  return plays;
}

/**
 * What is wrong with a play's batches against the expected sizes (empty: nothing). A play whose
 * batches do not show (not `visible`) is checked for its hosts' order only.
 */
export function batchProblems(p: PlayBatches, expected: readonly number[]): string[] {
  const problems: string[] = [];
  if (p.started.join(' ') !== p.hosts.join(' '))
    problems.push(`play '${p.play}': ${p.started.length} of ${p.hosts.length} hosts started, or not in the play's order`);
  if (p.visible && p.observed.join(',') !== expected.join(','))
    problems.push(`play '${p.play}': batches ${fmtSizes(p.observed)}, expected ${fmtSizes(expected)}`);
  return problems;
}

/** `10 x 4` for ten batches of 4, `2 x 4, 1` when the last is smaller. */
export function fmtSizes(sizes: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < sizes.length;) {
    let j = i;
    while (j < sizes.length && sizes[j] === sizes[i]) j++;
    parts.push(j - i > 1 ? `${j - i} x ${sizes[i]}` : String(sizes[i]));
    i = j;
  }
  return parts.join(', ') || 'none';
}

/** How each host of a run ended, from its host_recap events. */
export interface HostOutcomes {
  done: string[];
  interrupted: string[];
  notRun: string[];
  /** Failed or unreachable for another reason. */
  other: string[];
  /** Not run from a later play on: they finished the plays before it. */
  notRunFrom: string[];
  /** Hosts of the run with no host_recap. */
  missing: string[];
}

export function hostOutcomes(events: readonly JournalEvent[], hosts: readonly string[]): HostOutcomes {
  const recaps = new Map(events.filter((e) => e.type === 'host_recap' && e.host !== undefined).map((e) => [e.host!, e]));
  const o: HostOutcomes = { done: [], interrupted: [], notRun: [], notRunFrom: [], other: [], missing: [] };
  for (const h of hosts) {
    const r = recaps.get(h);
    if (!r) o.missing.push(h);
    else if (r.error?.startsWith('interrupted')) o.interrupted.push(h);
    else if (r.error?.startsWith('not run from')) o.notRunFrom.push(h);
    else if (r.error?.startsWith('not run')) o.notRun.push(h);
    else if (r.error === undefined && !r.unreachable && !r.failed) o.done.push(h);
    else o.other.push(h);
  }
  return o;
}

/** The hosts a --max-fail-percent run fails on purpose, and what docs/cli.md says the run then does. */
export interface FailBudgetCase {
  /** Hosts made to fail: at the budget in batch 1 (the run goes on), one more in the halting batch. */
  failing: string[];
  /** 1-based: the batch in which the budget is exceeded (it finishes; none starts after it). */
  haltBatch: number;
  /** Hosts that start the first play: batches 1..haltBatch. */
  started: string[];
  /** `play 'P' stopped, F of N hosts failed (max P%)`. */
  reason: string;
}

/**
 * With `--max-fail-percent P` over `hosts` in batches of `sizes`: the fewest failures that exceed
 * P % (counted over the play's hosts, as src/engine/fail-budget.ts does), one short of them in the
 * first batch and the last in batch `haltBatch`. Undefined when the batches cannot show it (fewer
 * than haltBatch + 1 batches, or batch 1 too small to hold the failures at the budget).
 */
export function failBudgetCase(
  hosts: readonly string[],
  sizes: readonly number[],
  maxFailPercent: number,
  haltBatch: number,
  play: string,
): FailBudgetCase | undefined {
  const n = hosts.length;
  let exceeding = 1;
  while ((exceeding / n) * 100 <= maxFailPercent) exceeding++;
  if (sizes.length <= haltBatch || exceeding - 1 > sizes[0] || exceeding > n) return undefined;
  const startOf = (b: number) => sizes.slice(0, b).reduce((a, s) => a + s, 0);
  const failing = [...hosts.slice(0, exceeding - 1), hosts[startOf(haltBatch - 1)]];
  return {
    failing,
    haltBatch,
    started: hosts.slice(0, startOf(haltBatch)),
    reason: `play '${play}' stopped, ${exceeding} of ${n} hosts failed (max ${maxFailPercent}%)`,
  };
}
