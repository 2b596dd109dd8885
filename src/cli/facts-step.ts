import { connect } from '../connection/connect.ts';
import type { ExecuteOptions, PreparedPlay } from '../engine/index.ts';
import { factsOf, gatherAll, isFailure, SharedConnections } from '../engine/gather-facts.ts';
import type { HostFacts } from '../facts/types.ts';
import type { Host } from '../inventory/model.ts';
import { factsDrift } from '../plan/host-facts.ts';
import type { PlanFile } from '../plan/plan.ts';
import type { Loaded } from './load.ts';

/** A run's plays built with their hosts' facts, and what the run needs to go on from there. */
export interface FactsStep {
  prepared: PreparedPlay[];
  /** Hosts not to run: facts not gathered, or moved since the saved plan. */
  refused: NonNullable<ExecuteOptions['refused']>;
  /** The facts used, per host (a saved plan fingerprints them). */
  facts: Map<string, HostFacts>;
  /** The run's connector: the connections opened to gather, then new ones. */
  connector: NonNullable<ExecuteOptions['connector']>;
  /** Close the connections the run did not take. */
  close(): Promise<void>;
}

/**
 * Before a run whose plays ask for facts (`facts: true`): gather them on those plays' hosts, one
 * exec each over the connection the run then uses, and build the plays again with them (bad
 * input only facts reveal throws here: exit 3). In `apply`, `plannedFacts` are the plan's: a host
 * whose facts moved is refused. Nothing to do (undefined) when no play asks.
 */
export async function gatherForRun(loaded: Loaded, o: ExecuteOptions, plannedFacts?: PlanFile['facts']): Promise<FactsStep | undefined> {
  if (!loaded.withFacts) return undefined;
  const hosts = new Map<string, Host>();
  for (const pp of loaded.prepared) if (pp.awaitsFacts) for (const { host } of pp.hosts) hosts.set(host.name, host);
  const conns = new SharedConnections(o.connector ?? connect, o, o.connectAttempts);
  const gathered = await gatherAll([...hosts.values()], conns, { forks: o.forks, timeoutMs: o.hostTimeoutMs, signal: o.signal });
  const refused = new Map<string, { error: string; unreachable: boolean; execs?: number }>();
  const facts = new Map<string, HostFacts>();
  for (const [name, f] of gathered) {
    // (the gatherer's exec, where it ran, is in the failure: a host interrupted before it ran none)
    if (isFailure(f)) {
      refused.set(name, f);
      continue;
    }
    facts.set(name, f);
    const drift = plannedFacts && factsDrift(plannedFacts[name], f);
    if (drift) refused.set(name, { error: drift, unreachable: false, execs: 1 });
  }
  try {
    return { prepared: loaded.withFacts(factsOf(gathered)), refused, facts, connector: conns.connector, close: () => conns.closeUnused() };
  } catch (e) {
    await conns.closeUnused();
    throw e;
  }
}
