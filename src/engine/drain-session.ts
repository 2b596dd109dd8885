import type { Connection } from '../connection/types.ts';
import {
  drainHowText,
  drainMark,
  parseDrainMark,
  pollUntil,
  stopReason,
  type ClaimedNode,
  type DrainNode,
  type DrainOptions,
  type DrainOutcome,
  type DrainLedger,
  type DrainProvider,
  type ResumeOutcome,
  type DrainClaims,
} from '../contract/drain.ts';
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
  /** Whose another racksmith run's mark is (history/drain-owner.ts); unset: one this run cannot vouch for (blocked). */
  ownerOf?: DrainOptions['ownerOf'];
  /** This controller's drain claims (history/drain-claim.ts); unset: nodes are drained (and taken over) unclaimed. */
  claims?: DrainClaims;
  /** Which nodes this run may have out (history/drain-ledger.ts); unset: not kept. */
  ledger?: DrainLedger;
}

/** The host's node as a drain claim names it: the controller as the run reaches it (its ansible_host, else its name). */
export function drainNode(d: HostDrain): DrainNode {
  const address = d.controller.vars.ansible_host;
  return { via: d.provider.name, controller: typeof address === 'string' && address ? address : d.controller.name, node: d.node };
}

/** Which cluster identity a host's claim takes (DrainSession.readCluster): its scheduler's and controller's. */
const clusterKey = (d: HostDrain): string => `${d.provider.name}\0${d.controller.name}`;

/** Why a node's claim cannot be asked: its cluster's identity not read (DrainSession.readCluster). */
const clusterUnread = (d: HostDrain, e: unknown): string =>
  `its cluster's identity, which its drain claim names, could not be read (controller ${d.controller.name}: ${(e as Error).message})`;

/** How a host is drained, as its events say: the provider, the controller, and its node when that is not the host's name. */
const how = (host: string, d: HostDrain) => ({
  via: d.provider.name,
  controller: d.controller.name,
  ...(d.node !== host ? { node: d.node } : {}),
});

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

/**
 * Commands at once on the session's one connection per controller (the resumes at a run's end,
 * check mode's questions): sshd allows 10 sessions per connection by default (MaxSessions), and a
 * channel it refuses would fail a resume, leaving a node out of scheduling. One is left over for
 * an abort's kill channel.
 */
export const SESSION_EXECS = 8;

/** A host's drain under way: its stop (Ctrl-C, the host given up), its connection, its end. */
interface RunningDrain {
  stop: AbortController;
  conn?: Promise<Connection>;
  done?: Promise<DrainOutcome>;
}

/**
 * Whose a racksmith mark is when the session was given no run history to ask (DrainPlan.ownerOf
 * unset: a program calling the engine): another run's that this one cannot vouch for, so a node
 * out under it blocks the host's drain rather than being taken for an operator's.
 */
const unvouched: NonNullable<DrainOptions['ownerOf']> = (reason) => {
  const mark = parseDrainMark(reason);
  return mark && { takeOver: false, why: `run ${mark.run} cannot be asked about: this run was given no run history (DrainPlan.ownerOf)` };
};

/** Tries of a resume that fails before it is said to have failed, a pause longer each time in between. */
export const RESUME_ATTEMPTS = 3;
const RESUME_PAUSE_MS = 500;

/** A drain claim not waited for (DrainSession.claim): why. */
class NotWaited extends Error {}

/** What a drain that did not get its node's claim from another run says after why. */
const UNDER_ANOTHER =
  "; no disruptive change is applied while another racksmith run holds the node (it puts the node back when its own work on it ends, maybe in the middle of this host's changes): run again once that run has ended";

export class DrainSession {
  /** Hosts this run took out: put back by resume / resumeAll. */
  private readonly drained = new Map<string, HostDrain>();
  /** Hosts whose drain is settled for this run (drained, or already out): not asked again. */
  private readonly settled = new Set<string>();
  /** Hosts this run took out whose resume failed: still out by this run, on its ledger whatever a later drain of them comes to. */
  private readonly notPutBack = new Set<string>();
  /**
   * The mark of the dead run a host's node was taken over from: still this run's to put back under
   * it (a Kubernetes takeover whose cordon patch, the new mark, failed leaves it on the node).
   */
  private readonly takenOverMarks = new Map<string, string>();
  private readonly listed = new Set<string>();
  /**
   * The session's own connection per controller for the resumes, apart from the hosts' runs: a
   * host's connection is aborted at Ctrl-C or its timeout, and the resume after that must still
   * get through. Made with the first drain (a connection cannot be made after Ctrl-C).
   */
  private readonly conns = new Map<string, Promise<Connection>>();
  /**
   * Drain connections per controller not in use, for the next drain. Each drain under way has one
   * of its own: stopping one host's drain (its host given up) kills that drain's command on the
   * controller (a `kubectl drain` waiting on its evictions) by aborting its connection, and no
   * other host's.
   */
  private readonly idle = new Map<string, Connection[]>();
  /** The drains under way, per host: their stop (Ctrl-C, the host given up) and their connection. */
  private readonly running = new Map<string, RunningDrain>();
  /** The drains and stops under way: resumeAll waits for them to end (Ctrl-C ends them) before it puts hosts back. */
  private readonly inFlight = new Set<Promise<unknown>>();
  /**
   * Check mode: per controller, the session's connection made once for every host's question. A
   * failure is kept, not tried again for the next host: each try waits out the connect timeout
   * again (a plan of many hosts would take hosts × timeout), and every host's line says the same reason.
   */
  private readonly reached = new Map<string, Promise<void>>();
  /** Per scheduler and controller: the cluster's identity (DrainProvider.clusterOf), once read; and the read under way. */
  private readonly clusterIds = new Map<string, string>();
  private readonly clusterReads = new Map<string, Promise<void>>();
  /** Per controller: resumes that failed in a row, tries included (past SESSION_EXECS, a failed one is not tried again). */
  private readonly resumeFailures = new Map<string, number>();
  /** Per controller: commands running on the session's connection, and those waiting for a turn (SESSION_EXECS). */
  private readonly turns = new Map<string, { running: number; waiting: Array<() => void> }>();

  constructor(
    private readonly plan: DrainPlan,
    private readonly runId: string,
    /** A connection to a controller; `stop` (a drain's own: its host given up) ends one still being made. */
    private readonly connect: (h: Host, stop?: AbortSignal) => Promise<Connection>,
    private readonly emit: EventSink,
    private readonly signal?: AbortSignal,
  ) {
    signal?.addEventListener('abort', () => [...this.running.keys()].forEach((h) => this.stop(h, 'interrupted')), { once: true });
  }

  /** The reason (Slurm) or annotation (Kubernetes) this run's drains leave on a node: its mark. */
  private get mark(): string {
    return this.plan.mark ?? drainMark(this.runId);
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

  /** A command on the session's connection to the controller, at most SESSION_EXECS at once. */
  private async sessionExec(h: Host, script: string): ReturnType<Connection['exec']> {
    let t = this.turns.get(h.name);
    if (!t) this.turns.set(h.name, (t = { running: 0, waiting: [] }));
    if (t.running < SESSION_EXECS) t.running++;
    else await new Promise<void>((go) => t.waiting.push(go)); // (its turn is handed over, running unchanged)
    try {
      const conn = await this.connection(this.conns, h);
      return await conn.exec(script);
    } finally {
      const next = t.waiting.shift();
      if (next) next();
      else t.running--;
    }
  }

  /**
   * The cluster's identity read from the host's controller, once per scheduler and controller for
   * every host's claim (hosts asking meanwhile wait for the same read); a failure is thrown to
   * every host that waited, and read again at the next claim. Undefined: nothing to read (known,
   * or the provider cannot say it), so a claim is asked at once.
   */
  private readCluster(d: HostDrain): Promise<void> | undefined {
    const clusterOf = d.provider.clusterOf?.bind(d.provider);
    const key = clusterKey(d);
    if (!clusterOf || this.clusterIds.has(key)) return undefined;
    let read = this.clusterReads.get(key);
    if (!read) {
      read = clusterOf((script) => this.sessionExec(d.controller, script))
        .then((id) => void this.clusterIds.set(key, id))
        .finally(() => this.clusterReads.delete(key));
      this.clusterReads.set(key, read);
    }
    return read;
  }

  /** The host's node as its claim names it: with its cluster's identity once read (readCluster). */
  private claimNode(d: HostDrain): ClaimedNode {
    const cluster = this.clusterIds.get(clusterKey(d));
    return cluster === undefined ? drainNode(d) : { ...drainNode(d), cluster };
  }

  /** A drain connection to the controller: an idle one, else a new one. */
  private lease(h: Host, stop: AbortSignal): Promise<Connection> {
    const c = this.idle.get(h.name)?.pop();
    return c ? Promise.resolve(c) : this.connect(h, stop);
  }

  /** A host's drain stopped now: its command killed on the controller, its connection dropped; its outcome says `why`. */
  private stop(host: string, why: string): void {
    const r = this.running.get(host);
    if (!r || r.stop.signal.aborted) return;
    r.stop.abort(why);
    void r.conn?.then((c) => (c.abort ? c.abort() : c.close())).catch(() => undefined);
  }

  /** The controllers' connections closed (after resumeAll). */
  async close(): Promise<void> {
    const idle = [...this.idle.values()].flat();
    this.idle.clear();
    await Promise.all([...this.conns.values()].map((p) => p.then((c) => c.close()).catch(() => undefined)));
    await Promise.all(idle.map((c) => c.close().catch(() => undefined)));
  }

  /**
   * A host given up (its --host-timeout) while its drain is under way: nothing disruptive ran on
   * it, so its drain is stopped at once (as Ctrl-C does) and the node put back if this run took it
   * out. A host past its drain is put back with the others at the run's end.
   */
  async giveUp(host: string, why: string): Promise<void> {
    const r = this.running.get(host);
    if (!r) return;
    const stopping = (async () => {
      this.stop(host, why);
      await r.done?.catch(() => undefined);
      await this.resume(host);
    })();
    this.inFlight.add(stopping);
    await stopping.finally(() => this.inFlight.delete(stopping));
  }

  /** Drain the host unless this run already did (or found it out); why it failed, if it did. */
  async before(host: string): Promise<string | undefined> {
    const d = this.plan.hosts.get(host);
    if (!d || this.settled.has(host)) return undefined;
    if (this.signal?.aborted) return `drain (${drainHowText(how(host, d))}) not started: interrupted`;
    const base = { type: 'drain' as const, host, ...how(host, d) };
    // (recorded and said within what resumeAll waits for: a resume never comes before its drain)
    const stop = new AbortController();
    const mine: RunningDrain = { stop };
    this.running.set(host, mine);
    const drain = async (): Promise<DrainOutcome> => {
      const claimed = await this.claim(host, d, stop.signal);
      let out: DrainOutcome =
        'failed' in claimed
          ? { kind: 'failed', detail: claimed.failed, drained: false }
          : stop.signal.aborted
            ? { kind: 'failed', detail: `${stopReason(stop.signal)} before it started`, drained: false }
            : // (the drain timeout bounds the whole drain, the wait for the claim included)
              await this.drainClaimed(host, d, mine, Math.max(1, Math.round(this.plan.timeoutSec - claimed.waitedSec)));
      // a drain that ended well just as its host was given up: that host must not go on to its change
      // (after Ctrl-C the host's run stops before it, saying so)
      if (out.kind !== 'failed' && stop.signal.aborted && !this.signal?.aborted)
        out = { kind: 'failed', detail: `${stopReason(stop.signal)} as it ended`, drained: out.kind === 'drained' };
      if (out.kind === 'drained' || (out.kind === 'failed' && out.drained)) this.drained.set(host, d);
      // (not out by this run: off its ledger, and its claim let go now, not at the run's end)
      // (a node an earlier play's resume left out stays on it, and claimed, whatever this drain came to)
      if (!this.drained.has(host) && !this.notPutBack.has(host)) {
        this.plan.ledger?.back(drainNode(d));
        this.plan.claims?.release(this.claimNode(d));
      }
      this.emit({
        ...base,
        outcome: out.kind,
        ...(out.detail ? { detail: out.detail } : {}),
        ...(out.kind === 'failed' ? { tookOut: this.drained.has(host) } : {}),
      });
      return out;
    };
    const running = (mine.done = drain());
    this.inFlight.add(running);
    const out = await running.finally(() => {
      this.inFlight.delete(running);
      this.running.delete(host);
    });
    if (out.kind === 'failed') return `drain (${drainHowText(how(host, d))}) failed: ${out.detail}`;
    this.settled.add(host);
    return undefined;
  }

  /** The provider's drain of the host's node, claimed for this run (its connection back to the idle ones after, if whole). */
  private async drainClaimed(host: string, d: HostDrain, mine: RunningDrain, timeoutSec: number): Promise<DrainOutcome> {
    const { stop } = mine;
    let out: DrainOutcome;
    let conn: Connection | undefined;
    try {
      mine.conn = this.lease(d.controller, stop.signal);
      [conn] = await Promise.all([mine.conn, this.connection(this.conns, d.controller)]);
      const exec = conn.exec.bind(conn);
      if (!stop.signal.aborted) this.plan.ledger?.taking(drainNode(d));
      /** The run whose drain this one takes over, if it does, and its mark. */
      let from: string | undefined;
      let fromMark: string | undefined;
      out = stop.signal.aborted
        ? { kind: 'failed', detail: `${stopReason(stop.signal)} before it started`, drained: false }
        : await d.provider.drain(exec, d.node, {
            reason: this.mark,
            ownerOf: this.tellingTakeovers((reason) => {
              from = parseDrainMark(reason)?.run;
              fromMark = reason;
            }),
            timeoutSec,
            signal: stop.signal,
            // out of scheduling by this run from here on: put back even if Ctrl-C cuts the wait short
            takenOut: () => {
              this.drained.set(host, d);
              if (fromMark !== undefined) this.takenOverMarks.set(host, fromMark);
              if (from !== undefined) this.plan.ledger?.takenOver(from, drainNode(d));
            },
          });
      // (in scheduling, or out under someone else's drain: no dead run has it out, whatever its ledger says)
      // (not when a dead run's mark was found, whatever came of it: a Slurm node down under it is `already`, and still that run's)
      if (fromMark === undefined && (out.kind === 'already' || out.kind === 'drained')) this.plan.ledger?.foundNotOut(drainNode(d));
    } catch (e) {
      void mine.conn?.then((c) => c.close()).catch(() => undefined);
      conn = undefined;
      out = {
        kind: 'failed',
        detail: stop.signal.aborted
          ? `${stopReason(stop.signal)} before it started`
          : `controller ${d.controller.name}: ${(e as Error).message}`,
        drained: false,
      };
    }
    // (a stopped drain's connection was aborted: only a whole one goes back for the next drain)
    if (conn && !stop.signal.aborted) this.idle.set(d.controller.name, [...(this.idle.get(d.controller.name) ?? []), conn]);
    return out;
  }

  /**
   * Check mode: say once that the apply would drain this host, or may (`may`: the resources whose
   * changes may be disruptive but wait on a pending change), or that it is already out of
   * scheduling by someone else (asked of its scheduler, read only: the apply leaves it so), or
   * blocked by another racksmith run's drain (the apply's drain of it would fail).
   */
  async would(host: string, may?: readonly string[]): Promise<void> {
    const d = this.plan.hosts.get(host);
    if (!d || this.listed.has(host)) return;
    this.listed.add(host);
    const base = { type: 'drain' as const, host, ...how(host, d) };
    const notes = may?.length ? [`may be: ${may.join(', ')} wait${may.length > 1 ? '' : 's'} on a pending change`] : [];
    if (this.plan.claims && d.provider.clusterOf) {
      // (the cluster's identity first: the claim names it)
      const said = (note: string) =>
        this.emit({ ...base, outcome: 'would', detail: [...notes, note].join('; '), ...(may?.length ? { may: [...may] } : {}) });
      try {
        await this.reachedOnce(d.controller);
      } catch (e) {
        return said(
          `whether it is already out of scheduling, or held by another run of this controller, is not known (controller ${d.controller.name}: ${(e as Error).message})`,
        );
      }
      try {
        await this.readCluster(d);
      } catch (e) {
        return said(`the apply's drain would fail at once: ${clusterUnread(d, e)}`);
      }
    }
    // (another run of this controller holds the node: the apply's drain waits for it, whatever the node is now)
    const claimed = this.plan.claims?.peek(this.claimNode(d));
    if (claimed && 'cannot' in claimed) notes.push(`the apply's drain would fail at once: ${claimed.cannot}`);
    else if (claimed)
      notes.push(
        `the apply's drain waits up to ${this.plan.timeoutSec}s for another run of this controller to let go of the node: ${claimed.held}`,
      );
    else if (d.provider.outOfScheduling)
      try {
        // (the session's own connection: a read-only question as quick as a resume)
        await this.reachedOnce(d.controller);
        const ownerOf = this.plan.ownerOf ?? unvouched;
        const out = await d.provider.outOfScheduling((script) => this.sessionExec(d.controller, script), d.node, ownerOf);
        if (typeof out === 'string') return this.emit({ ...base, outcome: 'already', detail: out });
        // (another racksmith run's drain: the apply's drain of this host would fail, its changes not applied)
        if (out && 'blocked' in out) return this.emit({ ...base, outcome: 'blocked', detail: [...notes, out.blocked].join('; ') });
        if (out) notes.push(`out of scheduling now, to be ${out.takeOver}`);
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

  /** Check mode: the controller's connection made, or its one failure thrown again. */
  private reachedOnce(h: Host): Promise<void> {
    let p = this.reached.get(h.name);
    if (!p) this.reached.set(h.name, (p = this.connection(this.conns, h).then(() => undefined)));
    return p;
  }

  /**
   * The node's claim for this run (history/drain-claim.ts), before anything is asked of its
   * scheduler: two runs of this controller never drain one node at once (the second's mark would
   * replace the first's, and whichever ended first would put the node back in the middle of the
   * other's changes). Another run's claim is waited for, said once, up to the drain timeout: that
   * run lets go when it is done with the node. Not waited for: a claim that cannot be got until
   * someone acts, and, while this run holds other nodes, one held by a run that started before it
   * (wait-die: two runs each holding a node the other waits for would both wait out the timeout;
   * so of two runs only the older waits on the younger, asked again at each look). Why the claim
   * was not got, or how long it was waited for.
   */
  private async claim(host: string, d: HostDrain, stop: AbortSignal): Promise<{ failed: string } | { waitedSec: number }> {
    const { claims } = this.plan;
    if (!claims) return { waitedSec: 0 };
    try {
      // (not awaited when there is nothing to read: the first ask of the claim is made at once)
      const reading = this.readCluster(d);
      if (reading) await reading;
    } catch (e) {
      return { failed: `${clusterUnread(d, e)}; no disruptive change is applied without the node's drain claim` };
    }
    const n = this.claimNode(d);
    const started = Date.now();
    let said = false;
    try {
      const failed = await pollUntil(
        async () => {
          const a = claims.claim(n);
          if (a === undefined) return true;
          if ('cannot' in a) throw new NotWaited(`${a.cannot}; no disruptive change is applied without the node's drain claim`);
          if (a.older && claims.holdsAny())
            throw new NotWaited(
              `${a.held}, a run started before this one, which holds other nodes out: it does not wait for it (two runs each ` +
                `waiting for a node the other holds would both wait out the drain timeout)${UNDER_ANOTHER}`,
            );
          if (!said) {
            said = true;
            this.emit({
              type: 'warning',
              message: `${host}: its drain (${drainHowText(how(host, d))}) waits up to ${this.plan.timeoutSec}s for another run of this controller to let go of the node: ${a.held}`,
            });
          }
          return a.held;
        },
        this.plan.timeoutSec,
        stop,
        'another run of this controller to let go of the node',
      );
      return failed ? { failed: `${failed}${UNDER_ANOTHER}` } : { waitedSec: (Date.now() - started) / 1000 };
    } catch (e) {
      if (e instanceof NotWaited) return { failed: e.message };
      throw e;
    }
  }

  /** ownerOf, telling `takingOver` the mark of a dead run's drain this run takes over. */
  private tellingTakeovers(takingOver: (reason: string) => void): NonNullable<DrainOptions['ownerOf']> {
    const { ownerOf = unvouched } = this.plan;
    return (reason) => {
      const owner = ownerOf(reason);
      if (owner?.takeOver) takingOver(reason);
      return owner;
    };
  }

  /** Put the host back if this run drained it (Ctrl-C and failures included). */
  async resume(host: string): Promise<void> {
    const d = this.drained.get(host);
    if (!d) return;
    this.drained.delete(host);
    this.settled.delete(host);
    const taken = this.takenOverMarks.get(host);
    this.takenOverMarks.delete(host);
    const marks = taken === undefined ? [this.mark] : [this.mark, taken];
    let out: ResumeOutcome;
    // (a node left out costs its whole cluster a node: a command that failed, a blip of the
    // scheduler or its API server, is tried again; the resume asks first, so a second one is never a
    // second put-back. A controller not reached is not: its connection was tried as every one is,
    // and at Ctrl-C each try would wait out its timeout again)
    for (let attempt = 1; ; attempt++) {
      try {
        out = await d.provider.resume((script) => this.sessionExec(d.controller, script), d.node, marks);
      } catch (e) {
        out = `controller ${d.controller.name}: ${(e as Error).message}`;
        break;
      }
      // (failures in a row on one controller, every host's tries counted: past a few, its scheduler is
      // down, not blinking, and each try of a fleet's resumes would cost its full timeout again)
      const inARow = typeof out === 'string' ? (this.resumeFailures.get(d.controller.name) ?? 0) + 1 : 0;
      this.resumeFailures.set(d.controller.name, inARow);
      if (typeof out !== 'string' || attempt === RESUME_ATTEMPTS || inARow > SESSION_EXECS) break;
      await new Promise((go) => setTimeout(go, RESUME_PAUSE_MS * attempt));
    }
    // (someone else's drain now: no longer this run's to put back, off its ledger)
    const someoneElses = typeof out === 'object' && 'someoneElses' in out;
    const back = out === undefined || (typeof out === 'object' && 'back' in out);
    if (back || someoneElses) {
      // (a node not put back stays this run's, claimed, to its end: a run waiting for it then finds this one ended)
      this.plan.claims?.release(this.claimNode(d));
      this.plan.ledger?.back(drainNode(d));
      this.notPutBack.delete(host);
    } else this.notPutBack.add(host);
    const why = typeof out === 'object' ? ('someoneElses' in out ? out.someoneElses : out.back) : out;
    this.emit({
      type: 'resume',
      host,
      ...how(host, d),
      ok: back,
      ...(why ? { detail: why } : {}),
      ...(someoneElses ? { someoneElses } : {}),
    });
  }

  /**
   * Every host still drained by this run, back (the run's end, however it ended), once the drains
   * under way have ended: a host whose run was given up (Ctrl-C, its timeout) may still be in one.
   */
  async resumeAll(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
    await Promise.all([...this.drained.keys()].map((h) => this.resume(h)));
    // (the claims of the nodes not out by this run; a node it could not put back stays claimed until
    // the run's end is recorded, DrainClaims.releaseAll by the caller: a run waiting for it then takes it over)
    for (const [host, d] of this.plan.hosts) if (!this.notPutBack.has(host)) this.plan.claims?.release(this.claimNode(d));
  }
}
