import type { RunEvent } from '../engine/events.ts';

/**
 * What `plan show` and `runs show` present, in one shape: hosts, and per host the resources worth
 * reading (changed, pending, failed), with their summaries and diffs as they were recorded (already
 * masked: plans and journals hold no secret). The text, JSON and HTML views render this model.
 */

/** A resource's state in a report: what a plan reviewed or a run did. */
export type ItemStatus = 'changed' | 'pending' | 'failed' | 'ok' | 'skipped';

export interface ReportItem {
  host: string;
  play: string;
  id: string;
  kind: string;
  status: ItemStatus;
  summaries: string[];
  diffs: string[];
  /** Why it is pending, or the error it failed with. */
  note?: string;
}

/** A host's state in a report (`unfinished`: a run that has no end, and no recap of the host in its journal). */
export type HostStatus = 'changed' | 'pending' | 'failed' | 'unreachable' | 'unfinished' | 'ok';

export interface ReportHost {
  name: string;
  groups: string[];
  status: HostStatus;
  /** Why it failed or was unreachable (a run's host error). */
  error?: string;
}

/** A host with a drain provider, as a plan's check run found it (plan/drains.ts). */
export interface ReportDrain {
  host: string;
  via: string;
  controller: string;
  /** Its node in the scheduler, when not named as the host (racksmith_slurm_node, kube_override_hostname). */
  node?: string;
  /** `would` be drained, `may` be, `already` out of scheduling (left so), `blocked` by another racksmith run's drain, `none` (no disruptive change). */
  outcome: 'would' | 'may' | 'already' | 'blocked' | 'none';
  /** Why it may be (the resources that wait on a pending change), or the scheduler's state and reason. */
  detail?: string;
}

/** A run's drain or resume event, as its journal has it (without its time stamp). */
export type RunDrainEvent = Extract<RunEvent, { type: 'drain' | 'resume' }>;

/** A node a run took out of scheduling and did not put back, and why it is still out. */
export interface StillOut {
  host: string;
  via: string;
  controller: string;
  /** Its node in the scheduler, when not named as the host. */
  node?: string;
  why: string;
}

/** A node the run took out that a later run took over (the run's drain ledger says so): no longer this run's to put back. */
export interface TakenOverBy {
  host: string;
  via: string;
  controller: string;
  /** Its node in the scheduler, when not named as the host. */
  node?: string;
  /** The run that took it over, and when. */
  by: string;
  at: string;
  /** That run found the node in scheduling, or out under someone else's drain, not under this run's mark. */
  found?: true;
}

/** A run's --drain as its journal shows it (history/run-drains.ts). */
export interface RunDrains {
  /** The drain and resume events, in the order they happened. */
  events: RunDrainEvent[];
  /** The nodes it left out of scheduling: a resume that failed, or none (the run was killed). */
  stillOut: StillOut[];
  /** The nodes it took out that a later run took over since (from its drain ledger). */
  takenOver: TakenOverBy[];
}

export interface Report {
  /** `plan` or `run`: the page's title and wording. */
  kind: 'plan' | 'run';
  title: string;
  /** Facts about the plan or run, in order (made at, argv, user, labels...). */
  meta: Array<[string, string]>;
  /** Said loudly at the top of every view (a plan whose signature does not verify). */
  warnings: string[];
  hosts: ReportHost[];
  /** The resources worth reading: not `ok`, not `skipped`. */
  items: ReportItem[];
  /** --drain: every host with a drain provider (host order) and the drains' timeout. */
  drains?: { timeoutSec: number; hosts: ReportDrain[] };
  /** A run's drains and resumes, from its journal, when it has any. */
  runDrains?: RunDrains;
}

/** One distinct change (same play, resource, status, summaries, diffs and note) and the hosts that have it. */
/** One distinct change and the hosts that have it. */
export type ItemGroup = Omit<ReportItem, 'host'> & { hosts: string[] };

/**
 * Each distinct change once, with its hosts (in the report's host order): a rack of 40 identical
 * nodes reads as one diff. Groups come in the order their first host met them.
 */
export function groupItems(report: Pick<Report, 'hosts' | 'items'>): ItemGroup[] {
  const rank = new Map(report.hosts.map((h, i) => [h.name, i]));
  const groups = new Map<string, ItemGroup>();
  const members = new Map<ItemGroup, Set<string>>();
  for (const it of report.items) {
    const key = JSON.stringify([it.play, it.id, it.kind, it.status, it.summaries, it.diffs, it.note ?? null]);
    let g = groups.get(key);
    if (!g) {
      g = { play: it.play, id: it.id, kind: it.kind, status: it.status, summaries: it.summaries, diffs: it.diffs, hosts: [] };
      if (it.note !== undefined) g.note = it.note;
      groups.set(key, g);
      members.set(g, new Set());
    }
    const seen = members.get(g)!;
    if (!seen.has(it.host)) {
      seen.add(it.host);
      g.hosts.push(it.host);
    }
  }
  const at = (h: string) => rank.get(h) ?? Number.MAX_SAFE_INTEGER;
  for (const g of groups.values()) g.hosts.sort((a, b) => at(a) - at(b));
  return [...groups.values()];
}

/** Per host (report order), the indexes in `groups` of the groups it is in. */
export function groupsByHost(report: Pick<Report, 'hosts'>, groups: ItemGroup[]): Map<string, number[]> {
  const out = new Map(report.hosts.map((h) => [h.name, [] as number[]]));
  groups.forEach((g, i) => {
    for (const h of g.hosts) out.get(h)?.push(i);
  });
  return out;
}

/** How many hosts have each status, in a fixed order (those with none left out). */
export function hostTotals(hosts: ReportHost[]): Array<[HostStatus, number]> {
  const order: HostStatus[] = ['failed', 'unreachable', 'unfinished', 'changed', 'pending', 'ok'];
  return order.map((s) => [s, hosts.filter((h) => h.status === s).length] as [HostStatus, number]).filter(([, n]) => n > 0);
}
