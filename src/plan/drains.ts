import type { RunEvent } from '../engine/events.ts';
import type { DrainPlan } from '../engine/drain-session.ts';

// A plan's drains: how the reviewed run drains each host (--drain / racksmith_drain) and what its
// check run found, so that its reviewers see which hosts approving it takes out of scheduling.

/**
 * What the check run found for a host with a drain provider: `would` be drained (a disruptive
 * change), `may` be (one waits on a pending change: `detail` says which), `already` out of
 * scheduling by someone else (`detail`: the scheduler's state and reason; left as it is), `none`
 * (no disruptive change: not drained).
 */
export type PlanDrainOutcome = 'would' | 'may' | 'already' | 'none';

export interface PlanHostDrain {
  /** The provider: kubernetes, slurm. */
  via: string;
  /** The host the provider's commands run on. */
  controller: string;
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
          outcome: { enum: ['would', 'may', 'already', 'none'] },
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
    const outcome: PlanDrainOutcome = !e ? 'none' : e.outcome === 'already' ? 'already' : e.may?.length ? 'may' : 'would';
    hosts[host] = { via: d.provider.name, controller: d.controller.name, outcome, ...(e?.detail ? { detail: e.detail } : {}) };
  }
  return { timeoutSec: plan.timeoutSec, hosts };
}
