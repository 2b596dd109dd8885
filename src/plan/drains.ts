import type { RunEvent } from '../engine/events.ts';
import type { DrainPlan } from '../engine/drain-session.ts';
import { drainHowText } from '../contract/drain.ts';
import { InputError } from '../util/errors.ts';

// A plan's drains: how the reviewed run drains each host (--drain / racksmith_drain) and what its
// check run found, so that its reviewers see which hosts approving it takes out of scheduling, and
// `apply` drains as was reviewed (refused otherwise).

/**
 * What the check run found for a host with a drain provider: `would` be drained (a disruptive
 * change), `may` be (one waits on a pending change: `detail` says which), `already` out of
 * scheduling by someone else (`detail`: the scheduler's state and reason; left as it is),
 * `blocked` (out under another racksmith run's drain: the apply's drain of it fails, nothing
 * disruptive applied while that run holds the node; `detail` says whose and what to do), `none`
 * (no disruptive change: not drained).
 */
export type PlanDrainOutcome = 'would' | 'may' | 'already' | 'blocked' | 'none';

export interface PlanHostDrain {
  /** The provider: kubernetes, slurm. */
  via: string;
  /** The host the provider's commands run on. */
  controller: string;
  /** The host's node in the scheduler, when not its name (racksmith_slurm_node, kube_override_hostname). */
  node?: string;
  outcome: PlanDrainOutcome;
  detail?: string;
}

export interface PlanDrains {
  /** --drain-timeout: how long a drain may wait for a host's work to leave. */
  timeoutSec: number;
  /** Every host of the selection that has a drain provider (a host not here is never drained). */
  hosts: Record<string, PlanHostDrain>;
}

type DrainEvent = Extract<RunEvent, { type: 'drain' }>;

export const planDrainsSchema = {
  type: 'object',
  required: ['timeoutSec', 'hosts'],
  additionalProperties: false,
  properties: {
    timeoutSec: { type: 'integer', minimum: 1 },
    hosts: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['via', 'controller', 'outcome'],
        additionalProperties: false,
        properties: {
          via: { type: 'string' },
          controller: { type: 'string' },
          node: { type: 'string' },
          outcome: { enum: ['would', 'may', 'already', 'blocked', 'none'] },
          detail: { type: 'string' },
        },
      },
    },
  },
};

/**
 * The check run's drains as a plan records them: each host of the drain plan with its provider,
 * controller and what the check run's `drain` event said (none: no disruptive change). Undefined
 * when no host has a drain provider.
 */
export function planDrains(plan: DrainPlan | undefined, events: readonly DrainEvent[]): PlanDrains | undefined {
  if (!plan?.hosts.size) return undefined;
  const found = new Map(events.map((e) => [e.host, e]));
  const hosts: Record<string, PlanHostDrain> = {};
  for (const [host, d] of plan.hosts) {
    const e = found.get(host);
    const outcome: PlanDrainOutcome = !e
      ? 'none'
      : e.outcome === 'already' || e.outcome === 'blocked'
        ? e.outcome
        : e.may?.length
          ? 'may'
          : 'would';
    hosts[host] = {
      via: d.provider.name,
      controller: d.controller.name,
      ...(d.node !== host ? { node: d.node } : {}),
      outcome,
      ...(e?.detail ? { detail: e.detail } : {}),
    };
  }
  return { timeoutSec: plan.timeoutSec, hosts };
}

/**
 * `apply`: refused (exit 3, before any host is contacted) unless it drains every host as the plan
 * says, through the same provider and controller, with the same timeout: the reviewed plan says
 * how its hosts are drained, as Atlantis applies only what was approved.
 */
export function checkPlanDrains(recorded: PlanDrains | undefined, now: DrainPlan | undefined, file: string): void {
  const was = recorded?.hosts ?? {};
  const differ: string[] = [];
  for (const host of new Set([...Object.keys(was), ...(now?.hosts.keys() ?? [])])) {
    const a = Object.hasOwn(was, host) ? drainHowText(was[host]) : 'none';
    const d = now?.hosts.get(host);
    const b = d
      ? drainHowText({ via: d.provider.name, controller: d.controller.name, ...(d.node !== host ? { node: d.node } : {}) })
      : 'none';
    if (a !== b) differ.push(`${host}: ${b}, the plan's ${a}`);
  }
  if (differ.length)
    throw new InputError(
      `apply would drain otherwise than the plan: ${differ.slice(0, 10).join('; ')}${differ.length > 10 ? `; and ${differ.length - 10} more` : ''}; the reviewed plan says how its hosts are drained: make a new plan to drain otherwise`,
      { file },
    );
  if (recorded && now && recorded.timeoutSec !== now.timeoutSec)
    throw new InputError(
      `apply's drain timeout (${now.timeoutSec}s) is not the plan's (${recorded.timeoutSec}s); make a new plan to drain otherwise`,
      { file },
    );
}

/**
 * `apply`: a drain the plan did not list (a host it said has no disruptive change, or has no
 * drain provider), as a warning: what the reviewers approved did not take that host out. So is a
 * host the plan showed as already out by someone else (left so), or blocked by another racksmith
 * run's drain, that apply drained, and so will put back: its drain was lifted since, or it was a
 * racksmith run's that has died since (taken over); and a blocked host that apply found out by
 * someone else (that run ended, an operator drained it since): its changes are applied after all.
 */
export function unplannedDrain(recorded: PlanDrains | undefined, e: DrainEvent): string | undefined {
  if (e.outcome === 'would') return undefined;
  const planned = recorded && Object.hasOwn(recorded.hosts, e.host) ? recorded.hosts[e.host].outcome : undefined;
  if (planned === 'already' && e.outcome === 'drained')
    return `${e.host} was out of scheduling by someone else when the plan was made (its reviewers were shown it left so), but apply found it to drain${
      e.detail ? ` (${e.detail})` : ''
    }: it is drained now and will be put back after its changes`;
  if (planned === 'blocked' && e.outcome === 'drained')
    return `${e.host} was out of scheduling under another racksmith run's drain when the plan was made (its reviewers were shown its changes blocked), but apply found it to drain${
      e.detail ? ` (${e.detail})` : ''
    }: it is drained now, its changes applied, and it will be put back after them`;
  if (planned === 'blocked' && e.outcome === 'already')
    return `${e.host} was out of scheduling under another racksmith run's drain when the plan was made (its reviewers were shown its changes blocked), but apply found it out by someone else${
      e.detail ? ` (${e.detail})` : ''
    }: its changes are applied under that drain, and it is left out of scheduling as it was`;
  if (planned !== undefined && planned !== 'none') return undefined;
  return `${e.host} has a disruptive change the plan did not list (the plan's check run found none on it), so it was ${
    e.outcome === 'drained' ? 'drained' : e.outcome === 'already' ? 'found already out of scheduling' : 'to be drained (the drain failed)'
  } though its reviewers were not shown a drain of it`;
}
