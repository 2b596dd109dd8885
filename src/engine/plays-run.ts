import type { Connection } from '../connection/types.ts';
import type { Host } from '../inventory/model.ts';
import type { Resource } from '../contract/resource.ts';
import { connect, type ConnectOptions } from '../connection/connect.ts';
import { HostConnections } from '../connection/host-connections.ts';
import { transientConnectError, withRetry } from '../connection/retry.ts';
import { resourceEvent, type EventSink, type HostRecap, type Recap, type ResourceResult } from './events.ts';
import { isReadable, probeHost, runHost, type Answer, type HostRunOptions, type HostRunResult } from './host-run.ts';
import { fleetViews, playHasFleet, type FleetViews } from './fleet.ts';
import { ApplyEpochs, NEVER, type ApplyStamp } from './apply-epochs.ts';
import { batchSizes } from './batches.ts';
import { newRunId } from './apply-lock.ts';
import { FailBudget } from './fail-budget.ts';
import { allowHostsInFlight, endedError, until, watchHost, type HostWatch } from './host-watch.ts';
import { mapLimit } from './map-limit.ts';
import { DrainSession, wouldDisrupt } from './drain-session.ts';
import type { ExecuteOptions, PreparedPlay, RunOutcome } from './run-types.ts';
import { hostname } from 'node:os';

type PlayHosts = PreparedPlay['hosts'];

/** A fleet play's answers from its start, and when each host's were read. */
interface Gathered {
  answers: Map<string, readonly Answer[]>;
  at: Map<string, ApplyStamp>;
  fleet: FleetViews;
}

/**
 * One run of prepared plays: plays in order, each in batches, hosts concurrently up to `forks`.
 * `run()` reads as the steps of a run; each host's own run is host-run.ts's.
 */
export class PlaysRun {
  private readonly t0 = Date.now();
  private readonly recaps = new Map<string, HostRecap>();
  /** Each host's one connection for the whole run. */
  private readonly conns: HostConnections;
  private readonly results: ResourceResult[] = [];
  private readonly factHashes = new Map<string, Map<string, Map<string, string>>>();
  private readonly connector: (host: Host, o: ConnectOptions) => Promise<Connection>;
  /** Changes take each host's apply lock (when asked: the CLI does); check mode never takes it. */
  private readonly lock: HostRunOptions['lock'];
  /**
   * Hosts whose escalation was refused: not run again in this run (sudo is asked once per host:
   * pam_faillock counts every try); their error is sudo's message.
   */
  private readonly refused = new Set<string>();
  /**
   * One round trip per host for all its plays: a host's first exec also probes its later plays,
   * and a later play uses those answers while they hold: nothing was applied on that host since
   * (nor on any host, for resources that read shared state: apply-epochs.ts). Else it probes again.
   */
  private readonly epochs = new ApplyEpochs();
  private readonly onApply = (host: string, touches: readonly string[] | undefined) => this.epochs.applied(host, touches);
  private readonly prefetched = new Map<string, Prefetched>();
  private readonly resourcesOf: Array<Map<string, Resource[]>>;
  /**
   * Play objects differ in shape (optional fields): read once here, not in runOne, whose optimised
   * code would be thrown away at each play that brings a new shape.
   */
  private readonly playNames: string[];
  private readonly budget = new FailBudget();
  /** --drain: hosts drained around their disruptive changes (drain-session.ts). */
  private readonly drains: DrainSession | undefined;
  /** Each host's plays, in order: when a host this run drained is put back (putBackAfter). */
  private readonly playsOf = new Map<string, number[]>();
  /** Per play: whether it runs in more than one batch (serial), a rolling rollout. */
  private readonly rolling: boolean[];

  constructor(
    private readonly plays: PreparedPlay[],
    private readonly o: ExecuteOptions,
    private readonly emit: EventSink,
  ) {
    allowHostsInFlight(o.signal, o.forks);
    this.connector = o.connector ?? connect;
    this.conns = new HostConnections(this.connector, o, o.connectAttempts);
    this.lock =
      o.check || o.lockTimeoutSec === undefined
        ? undefined
        : { runId: o.runId ?? newRunId(hostname(), process.pid, new Date(this.t0)), timeoutSec: o.lockTimeoutSec };
    this.resourcesOf = plays.map((pp) => new Map(pp.hosts.map((h) => [h.host.name, h.resources])));
    this.playNames = plays.map((pp) => pp.play.name);
    // Hosts the caller refused before the run (no facts): never run, their recap says why.
    for (const [host, why] of o.refused ?? []) {
      this.refused.add(host);
      Object.assign(this.recapOf(host), why);
    }
    plays.forEach((pp, i) => pp.hosts.forEach((h) => this.playsOf.set(h.host.name, [...(this.playsOf.get(h.host.name) ?? []), i])));
    this.rolling = plays.map((pp) => batchSizes(pp.hosts.length, o.serial ?? pp.play.serial).length > 1);
    this.drains = o.drain?.hosts.size
      ? new DrainSession(
          o.drain,
          this.lock?.runId ?? o.runId ?? newRunId(hostname(), process.pid, new Date(this.t0)),
          // (retried as a host's connection is: one dropped by the controller's load, MaxStartups, must not fail a drain)
          (h, stop) => {
            // (a drain's own connection also ends at its stop: its host given up while it is being made)
            const signal = stop && o.signal ? AbortSignal.any([o.signal, stop]) : (stop ?? o.signal);
            return withRetry(() => this.connector(h, { ...this.o, signal }), o.connectAttempts, transientConnectError, { signal });
          },
          emit,
          o.signal,
        )
      : undefined;
  }

  /** Every play in order, the hosts' connections closed at the end, then the recap. */
  async run(): Promise<RunOutcome> {
    try {
      for (const [playIndex, pp] of this.plays.entries()) await this.runPlay(playIndex, pp);
    } finally {
      // what this run drained comes back however the run ended (Ctrl-C, a halt, a lost host)
      await this.drains?.resumeAll();
      await this.drains?.close();
      await this.conns.close();
    }
    return this.finish();
  }

  /** One play: its hosts still in the run, its fail budget, the fleet agreement, then batch by batch. */
  private async runPlay(playIndex: number, pp: PreparedPlay): Promise<void> {
    const hosts = pp.hosts.filter((h) => !this.recapOf(h.host.name).unreachable && !this.refused.has(h.host.name));
    const halt = this.budget.halted();
    if (halt !== undefined || this.o.signal?.aborted) {
      // (a host already failed or unreachable keeps that as its reason)
      const why = halt ?? 'interrupted';
      for (const h of hosts) this.leftOut(h.host.name, playIndex, why);
      return;
    }
    this.emit({ type: 'play_start', play: pp.play.name, hosts: hosts.map((h) => h.host.name) });
    const sizes = batchSizes(hosts.length, this.o.serial ?? pp.play.serial);
    const names = hosts.map((h) => h.host.name);
    this.budget.startPlay(pp.play.name, names, this.o.maxFailPercent ?? pp.play.maxFailPercent, pp.play.anyErrorsFatal === true);
    // A play with resources that must agree across hosts is probed on all of them first.
    const gathered = playHasFleet(hosts) ? await this.gatherFleet(playIndex, hosts) : undefined;
    let start = 0;
    for (const size of sizes) {
      const stop = this.stopReason();
      if (stop !== undefined) {
        for (const h of hosts.slice(start)) this.leftOut(h.host.name, playIndex, stop);
        break;
      }
      const batch = hosts.slice(start, start + size);
      start += size;
      await this.runBatch(playIndex, batch, gathered);
    }
  }

  /** Why no further batch or host may start (the run halted, or was interrupted), if so. */
  private stopReason(): string | undefined {
    return this.budget.halted() ?? (this.o.signal?.aborted ? 'interrupted' : undefined);
  }

  /** Every host of a fleet play probed before any applies, and each host's view of its group. */
  private async gatherFleet(playIndex: number, hosts: PlayHosts): Promise<Gathered> {
    const answers = await this.gather(playIndex, hosts);
    const at = new Map<string, ApplyStamp>();
    for (const h of hosts) at.set(h.host.name, this.epochs.stamp(h.host.name));
    const fleet = fleetViews(
      hosts.map((h) => ({ name: h.host.name, resources: h.resources, answers: answers.get(h.host.name) })),
      isReadable,
    );
    return { answers, at, fleet };
  }

  /** One batch: its hosts side by side, up to --forks at once. */
  private async runBatch(playIndex: number, batch: PlayHosts, gathered: Gathered | undefined): Promise<void> {
    // The answers from the play's start hold for a batch while they hold when it starts (its
    // hosts run side by side, as if they had probed now); where they no longer do (a later
    // batch, answers of shared state), it probes again, while the agreement stays the one
    // reached at the start.
    const fromStart = new Map<string, readonly Answer[] | undefined>();
    for (const h of batch) {
      const at = gathered?.at.get(h.host.name);
      if (gathered && at && this.epochs.holds(at, h.host.name, h.resources)) fromStart.set(h.host.name, gathered.answers.get(h.host.name));
    }
    await mapLimit(batch, this.o.forks, async (h) => {
      const why = this.stopReason();
      if (why !== undefined) return this.leftOut(h.host.name, playIndex, why);
      if (!(await this.runOne(playIndex, h.host, h.resources, fromStart.get(h.host.name), gathered?.fleet)))
        this.budget.hostFailed(h.host.name);
    });
  }

  /** One host's run of one play: connect, run it (within its watch), record it. Whether it succeeded. */
  private async runOne(
    playIndex: number,
    host: Host,
    resources: Resource[],
    fromStart: readonly Answer[] | undefined,
    fleet: FleetViews | undefined,
  ): Promise<boolean> {
    const playName = this.playNames[playIndex];
    const recap = this.recapOf(host.name);
    if (recap.unreachable) return false;
    this.emit({ type: 'host_start', host: host.name, play: playName });
    const pending = this.conns.open(host);
    const w = this.watch(host.name, pending);
    // a host given up during its drain: the drain stopped at once and the node put back
    const drains = this.drains;
    if (drains && this.o.hostTimeoutMs)
      void w.ended.then(async (end) => {
        if (end === 'timeout') await drains.giveUp(host.name, `host ${endedError(end, this.o.hostTimeoutMs)}`);
      });
    const conn = await this.connected(pending, w, recap);
    if (!conn) return false;
    const options = this.hostOptions(playIndex, host.name, resources, fromStart, fleet);
    const res = await until(
      runHost(conn, resources, options).catch((e: Error): undefined => {
        // A fault of the engine itself (resources' own errors fail those resources): this host
        // ends failed, with its recap; the run and the other hosts go on.
        recap.error = `internal error on this host: ${e.message}`;
        return undefined;
      }),
      w,
    ).finally(() => w.clear());
    if (w.reason) {
      recap.unreachable = w.reason === 'timeout';
      recap.error = endedError(w.reason, this.o.hostTimeoutMs);
      return false;
    }
    const disrupts = this.drains && res && this.o.check ? wouldDisrupt(res.results) : undefined;
    if (disrupts) await this.drains!.would(host.name, disrupts.may);
    if (this.drains && this.putBackAfter(host.name, playIndex)) await this.drains.resume(host.name);
    if (!res) return false;
    return this.record(host.name, playName, conn, res, recap);
  }

  /**
   * Whether a host this run drained goes back into scheduling after this play: after its last
   * play, and around a play run in batches (this one or the host's next), so that a rolling
   * rollout has one batch out of scheduling at a time, as a drain and resume around each batch of
   * an Ansible play would. Plays without batches keep the host out from its first disruptive
   * change to its last, drained once.
   */
  private putBackAfter(host: string, playIndex: number): boolean {
    const mine = this.playsOf.get(host) ?? [];
    const next = mine[mine.indexOf(playIndex) + 1];
    return next === undefined || this.rolling[playIndex] || this.rolling[next];
  }

  /** The host's connection, or undefined when it failed or the watch ended first (the recap says why). */
  private async connected(pending: Promise<Connection>, w: HostWatch, recap: HostRecap): Promise<Connection | undefined> {
    let conn: Connection | undefined;
    try {
      conn = await until(pending, w);
    } catch (e) {
      w.clear();
      // Ctrl-C drops the connections still being made (ssh.ts): those hosts were interrupted, not
      // unreachable; so does the end of the host's watch (its timeout), which the recap says
      const ended = w.reason ?? (this.o.signal?.aborted === true ? 'interrupted' : undefined);
      recap.unreachable = ended !== 'interrupted';
      recap.error = ended ? endedError(ended, this.o.hostTimeoutMs) : (e as Error).message;
      return undefined;
    }
    if (!conn || w.reason) {
      w.clear();
      recap.unreachable = w.reason !== 'interrupted';
      recap.error = endedError(w.reason ?? 'timeout', this.o.hostTimeoutMs);
      return undefined;
    }
    return conn;
  }

  /** What runHost is given for this host and play: its prefetched answers if they still hold, else the later plays to probe with it. */
  private hostOptions(
    playIndex: number,
    host: string,
    resources: Resource[],
    fromStart: readonly Answer[] | undefined,
    fleet: FleetViews | undefined,
  ): HostRunOptions {
    const o = this.o;
    // A host without answers reads an empty entry (the same code path and object shape as one
    // with them), and this play's answers are looked up and dropped whether current or not: the
    // first play makes these calls too, so V8 has their feedback and keeps its code for the later.
    const pre = this.prefetched.get(host) ?? NOT_PREFETCHED;
    const playAnswers = pre.byPlay.get(playIndex);
    const probed = fromStart ?? (this.epochs.holds(pre.at, host, resources) ? playAnswers : undefined);
    // Answers are used once, and are worth nothing after an apply on the host that may have
    // changed anything: do not keep them around.
    pre.byPlay.delete(playIndex);
    if (this.epochs.nothingHolds(pre.at, host)) this.prefetched.delete(host);
    const later = probed ? NO_LATER_PLAYS : laterPlays(this.resourcesOf, playIndex, host);
    const prefetch = later.map(([, rs]) => rs);
    const sentAt = this.epochs.stamp(host);
    const playName = this.playNames[playIndex];
    return {
      probed,
      prefetch,
      onPrefetched: (answers) => this.prefetched.set(host, { at: sentAt, byPlay: byLaterPlay(later, answers) }),
      onApply: this.onApply,
      hashFacts: o.hashFacts || o.planned !== undefined,
      host,
      play: playName,
      check: o.check,
      yes: o.yes,
      planned: o.planned ? (o.planned.get(host)?.get(playName) ?? new Map()) : undefined,
      signal: o.signal,
      halted: this.budget.halted,
      lock: this.lock,
      beforeDisruptive: this.drains && (() => this.drains!.before(host)),
      onResult: this.onResult,
      fleet,
    };
  }

  /** A host's run of a play into its recap and the run's fact hashes; whether it succeeded. */
  private record(host: string, playName: string, conn: Connection, res: HostRunResult, recap: HostRecap): boolean {
    const byPlay = this.factHashes.get(host) ?? new Map<string, Map<string, string>>();
    byPlay.set(playName, res.factHashes);
    this.factHashes.set(host, byPlay);
    recap.execs = conn.execCount;
    if (res.becomeFailed) {
      recap.error = res.becomeFailed;
      this.refused.add(host);
    }
    if (res.drift) recap.error = `drift since the plan: ${res.drift.map((d) => d.id).join(', ')}`;
    if (res.lockWaits) recap.lockWaits = [...(recap.lockWaits ?? []), ...res.lockWaits];
    if (res.lostConnection) {
      recap.unreachable = true;
      recap.error = res.lostConnection;
      return false;
    }
    return !res.results.some((r) => r.status === 'failed');
  }

  /**
   * A fleet play's answers from its start (fleet.ts): every host probed before any of them
   * applies anything, in one exec that also probes its later plays (or, when still current, the
   * answers an earlier play's exec already brought: no exec at all). A host that cannot be
   * reached or whose exec fails is left out here: its runOne meets the same and reports it.
   */
  private async gather(playIndex: number, hosts: PlayHosts): Promise<Map<string, readonly Answer[]>> {
    const answers = new Map<string, readonly Answer[]>();
    await mapLimit(hosts, this.o.forks, async ({ host, resources }) => {
      if (this.o.signal?.aborted || this.budget.halted() !== undefined) return;
      const pre = this.prefetched.get(host.name);
      const ready = pre && this.epochs.holds(pre.at, host.name, resources) ? pre.byPlay.get(playIndex) : undefined;
      if (ready) {
        answers.set(host.name, ready);
        pre!.byPlay.delete(playIndex);
        return;
      }
      const pending = this.conns.open(host);
      const w = this.watch(host.name, pending);
      const later = laterPlays(this.resourcesOf, playIndex, host.name);
      const sentAt = this.epochs.stamp(host.name);
      // A fault of the engine itself: this host's runOne meets it again and reports it.
      const res = await until(
        pending.then((conn) =>
          probeHost(
            conn,
            resources,
            later.map(([, rs]) => rs),
          ),
        ),
        w,
      )
        .catch((e: Error) => e.message)
        .finally(() => w.clear());
      if (w.reason) {
        const recap = this.recapOf(host.name);
        recap.unreachable = w.reason === 'timeout';
        recap.error = endedError(w.reason, this.o.hostTimeoutMs);
        return;
      }
      if (res === undefined || typeof res === 'string') return;
      answers.set(host.name, res.answers);
      this.prefetched.set(host.name, { at: sentAt, byPlay: byLaterPlay(later, res.later) });
    });
    return answers;
  }

  /** A host's watch (host-watch.ts), which stops its connection attempt too when it ends. */
  private watch(host: string, pending: Promise<Connection>): HostWatch {
    return watchHost(pending, this.o.hostTimeoutMs, this.o.signal, () => this.conns.stop(host));
  }

  private recapOf(host: string): HostRecap {
    let r = this.recaps.get(host);
    if (!r) {
      r = { host, ok: 0, changed: 0, pending: 0, failed: 0, skipped: 0, unreachable: false, execs: 0 };
      this.recaps.set(host, r);
    }
    return r;
  }

  /** A host left out of play `playIndex` (and so of the rest of the run): why, in its recap (the first reason stands). */
  private leftOut(host: string, playIndex: number, why: string): void {
    const r = this.recapOf(host);
    r.error ??= playIndex === 0 ? `not run: ${why}` : `not run from play '${this.playNames[playIndex]}' on: ${why}`;
  }

  /** One function for every host's results (a closure per host would be one more V8 meets thousands of times). */
  private readonly onResult = (r: ResourceResult): void => {
    this.results.push(r);
    const recap = this.recapOf(r.host);
    // (a check-mode change waiting on another's is not one the apply is known to make: apart)
    if (r.pending !== undefined) recap.pending!++;
    else recap[r.status]++;
    if (r.status === 'failed') this.budget.hostFailed(r.host);
    this.emit(resourceEvent(r));
  };

  /** Every host's recap, then the run's, with its exit code. */
  private finish(): RunOutcome {
    const o = this.o;
    const hostRecaps = [...new Set(this.plays.flatMap((p) => p.hosts.map((h) => h.host.name)))].map((h) => this.recapOf(h));
    for (const r of hostRecaps) this.emit({ type: 'host_recap', ...r });
    const bad = hostRecaps.some((r) => r.failed > 0 || r.unreachable || r.error !== undefined);
    const changed = hostRecaps.some((r) => r.changed > 0);
    const exitCode = bad ? 1 : o.check && changed ? 2 : 0;
    const recap: Recap = { hosts: hostRecaps, exitCode, check: o.check, elapsedMs: Date.now() - this.t0 };
    this.emit({ type: 'recap', ...recap });
    return { ...recap, results: this.results, factHashes: this.factHashes };
  }
}

/** A host's answers for later plays, and when they were read (what was applied by then). */
interface Prefetched {
  at: ApplyStamp;
  byPlay: Map<number, readonly Answer[]>;
}

/** No answers (never current; never written to, only deleted from: a no-op). */
const NOT_PREFETCHED: Prefetched = { at: NEVER, byPlay: new Map() };

/** None. Never written to. */
const NO_LATER_PLAYS: Array<readonly [number, Resource[]]> = [];

/** The host's resource lists of the plays after `playIndex` (to probe with this play's exec). */
function laterPlays(resourcesOf: Array<Map<string, Resource[]>>, playIndex: number, host: string): Array<readonly [number, Resource[]]> {
  const out: Array<readonly [number, Resource[]]> = [];
  for (let j = playIndex + 1; j < resourcesOf.length; j++) {
    const rs = resourcesOf[j].get(host);
    if (rs) out.push([j, rs]);
  }
  return out;
}

/** The later plays' answers (in order, flattened) by play index. */
function byLaterPlay(later: ReadonlyArray<readonly [number, Resource[]]>, answers: Answer[]): Map<number, readonly Answer[]> {
  const byPlay = new Map<number, readonly Answer[]>();
  let k = 0;
  for (const [j, rs] of later) byPlay.set(j, answers.slice(k, (k += rs.length)));
  return byPlay;
}
