import type { Connection } from '../connection/types.ts';
import { drainMark, type DrainOptions, type DrainOutcome, type DrainProvider } from '../contract/drain.ts';
import type { Change } from '../contract/resource.ts';
import type { Host } from '../inventory/model.ts';
import type { EventSink, ResourceResult } from './events.ts';

// --drain: a host's work moves off (through its provider, on a controller host) before the
// host's first disruptive change, and comes back after its last change, only when this run took
// it out. The engine knows DrainProvider only (contract/drain.ts); Kubernetes and Slurm are in src/drain/.

/** How one host is drained. */
export interface HostDrain {
  provider: DrainProvider;
  /** Where the provider's commands run (the first control-plane host, the Slurm controller). */
  controller: Host;
  /** The host's name in the scheduler (Kubernetes node, Slurm node name). */
  node: string;
}

export interface DrainPlan {
  /** Per host of the run; a host not in it is never drained. */
  hosts: ReadonlyMap<string, HostDrain>;
  timeoutSec: number;
  /** The mark this run leaves on what it drains (drainMark: its history id and controller); unset: of the run id the session is given. */
  mark?: string;
  /** Whose another racksmith run's mark is (history/drain-owner.ts); unset: someone else's. */
  ownerOf?: DrainOptions['ownerOf'];
}

/** Whether a change (or one of a list) disturbs workloads. */
export const isDisruptive = (c: Change): boolean => c.disruptive !== undefined;

/**
 * Check mode: whether a host's results include a disruptive change, so the apply would drain it;
 * `may` when the only ones are of resources that wait on a pending change (Resource.mayDisrupt:
 * whether they change anything is known at the apply), with those resources.
 */
export function wouldDisrupt(results: readonly ResourceResult[]): { may?: string[] } | undefined {
  const may: string[] = [];
  for (const r of results)
    if (r.changes.some(isDisruptive)) {
      if (r.pending === undefined) return {};
      may.push(r.id);
    }
  return may.length ? { may } : undefined;
}

export class DrainSession {
  /** Hosts this run took out: put back by resume / resumeAll. */
  private readonly drained = new Map<string, HostDrain>();
  /** Hosts whose drain is settled for this run (drained, or already out): not asked again. */
  private readonly settled = new Set<string>();
  private readonly listed = new Set<string>();
  /**
   * The session's own connection per controller for the resumes, apart from the hosts' runs: a
   * host's connection is aborted at Ctrl-C or its timeout, and the resume after that must still
   * get through. Made with the first drain (a connection cannot be made after Ctrl-C).
   */
  private readonly conns = new Map<string, Promise<Connection>>();
  /**
   * The drains' connection per controller: aborted at Ctrl-C, which kills the providers' commands
   * in flight on the controller (a `kubectl drain` waiting on its evictions) before the resumes.
   */
  private readonly drainConns = new Map<string, Promise<Connection>>();
  /** The drains under way: resumeAll waits for them to end (Ctrl-C ends them) before it puts hosts back. */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly plan: DrainPlan,
    private readonly runId: string,
    private readonly connect: (h: Host) => Promise<Connection>,
    private readonly emit: EventSink,
    private readonly signal?: AbortSignal,
  ) {
    signal?.addEventListener('abort', () => this.stopDrains(), { once: true });
  }

  private connection(pool: Map<string, Promise<Connection>>, h: Host): Promise<Connection> {
    let p = pool.get(h.name);
    if (!p) {
      p = this.connect(h);
      p.catch(() => pool.delete(h.name)); // the next call tries again
      pool.set(h.name, p);
    }
    return p;
  }

  /** Ctrl-C: the drains' commands killed where they run, their connections dropped. */
  private stopDrains(): void {
    for (const p of this.drainConns.values()) void p.then((c) => (c.abort ? c.abort() : c.close())).catch(() => undefined);
    this.drainConns.clear();
  }

  /** The controllers' connections closed (after resumeAll). */
  async close(): Promise<void> {
    const all = [...this.conns.values(), ...this.drainConns.values()];
    this.drainConns.clear();
    await Promise.all(all.map((p) => p.then((c) => c.close()).catch(() => undefined)));
  }

  /** Drain the host unless this run already did (or found it out); why it failed, if it did. */
  async before(host: string): Promise<string | undefined> {
    const d = this.plan.hosts.get(host);
    if (!d || this.settled.has(host)) return undefined;
    if (this.signal?.aborted) return `drain (${d.provider.name} via ${d.controller.name}) not started: interrupted`;
    const base = { type: 'drain' as const, host, via: d.provider.name, controller: d.controller.name };
    // (recorded and said within what resumeAll waits for: a resume never comes before its drain)
    const drain = async (): Promise<DrainOutcome> => {
      let out: DrainOutcome;
      try {
        const [conn] = await Promise.all([this.connection(this.drainConns, d.controller), this.connection(this.conns, d.controller)]);
        out = await d.provider.drain((script) => conn.exec(script), d.node, {
          reason: this.plan.mark ?? drainMark(this.runId),
          ...(this.plan.ownerOf ? { ownerOf: this.plan.ownerOf } : {}),
          timeoutSec: this.plan.timeoutSec,
          signal: this.signal,
          // out of scheduling by this run from here on: put back even if Ctrl-C cuts the wait short
          takenOut: () => this.drained.set(host, d),
        });
      } catch (e) {
        out = { kind: 'failed', detail: `controller ${d.controller.name}: ${(e as Error).message}`, drained: false };
      }
      if (out.kind === 'drained' || (out.kind === 'failed' && out.drained)) this.drained.set(host, d);
      this.emit({ ...base, outcome: out.kind, ...(out.detail ? { detail: out.detail } : {}) });
      return out;
    };
    const running = drain();
    this.inFlight.add(running);
    const out = await running.finally(() => this.inFlight.delete(running));
    if (out.kind === 'failed') return `drain (${d.provider.name} via ${d.controller.name}) failed: ${out.detail}`;
    this.settled.add(host);
    return undefined;
  }

  /**
   * Check mode: say once that the apply would drain this host, or may (`may`: the resources whose
   * changes may be disruptive but wait on a pending change), or that it is already out of
   * scheduling by someone else (asked of its scheduler, read only: the apply leaves it so).
   */
  async would(host: string, may?: readonly string[]): Promise<void> {
    const d = this.plan.hosts.get(host);
    if (!d || this.listed.has(host)) return;
    this.listed.add(host);
    const base = { type: 'drain' as const, host, via: d.provider.name, controller: d.controller.name };
    const notes = may?.length ? [`may be: ${may.join(', ')} wait${may.length > 1 ? '' : 's'} on a pending change`] : [];
    if (d.provider.outOfScheduling)
      try {
        // (the drains' connection: Ctrl-C kills the question in flight)
        const conn = await this.connection(this.drainConns, d.controller);
        const out = await d.provider.outOfScheduling((script) => conn.exec(script), d.node);
        if (out !== undefined) return this.emit({ ...base, outcome: 'already', detail: out });
      } catch (e) {
        notes.push(`whether it is already out of scheduling is not known (controller ${d.controller.name}: ${(e as Error).message})`);
      }
    this.emit({
      ...base,
      outcome: 'would',
      ...(notes.length ? { detail: notes.join('; ') } : {}),
      ...(may?.length ? { may: [...may] } : {}),
    });
  }

  /** Put the host back if this run drained it (Ctrl-C and failures included). */
  async resume(host: string): Promise<void> {
    const d = this.drained.get(host);
    if (!d) return;
    this.drained.delete(host);
    this.settled.delete(host);
    let why: string | undefined;
    try {
      const conn = await this.connection(this.conns, d.controller);
      why = await d.provider.resume((script) => conn.exec(script), d.node);
    } catch (e) {
      why = `controller ${d.controller.name}: ${(e as Error).message}`;
    }
    this.emit({
      type: 'resume',
      host,
      via: d.provider.name,
      controller: d.controller.name,
      ok: why === undefined,
      ...(why ? { detail: why } : {}),
    });
  }

  /**
   * Every host still drained by this run, back (the run's end, however it ended), once the drains
   * under way have ended: a host whose run was given up (Ctrl-C, its timeout) may still be in one.
   */
  async resumeAll(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    await Promise.all([...this.drained.keys()].map((h) => this.resume(h)));
  }
}
