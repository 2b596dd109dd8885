import type { Connection } from '../connection/types.ts';
import { ConnectError } from '../connection/types.ts';
import type { Host, Inventory } from '../inventory/model.ts';
import { selectLimit } from '../inventory/limit.ts';
import type { Resource } from '../contract/resource.ts';
import { InputError, type SourcePos } from '../util/errors.ts';
import { BadValue } from '../util/input-value.ts';
import { printable } from '../util/printable.ts';
import { connect, type ConnectOptions } from '../connection/connect.ts';
import { resourceEvent, type EventSink, type HostRecap, type Recap, type ResourceResult } from './events.ts';
import { isReadable, probeHost, runHost, type Answer, type PlannedResource } from './host-run.ts';
import { fleetViews, playHasFleet, type FleetViews } from './fleet.ts';
import { PlayMemo } from './play-memo.ts';
import { ApplyEpochs, NEVER, type ApplyStamp } from './apply-epochs.ts';
import { HostContext, type Play, type Playbook } from '../contract/playbook.ts';
import { batchSizes } from './batches.ts';
import { playHosts, withPlayGroups } from './play-hosts.ts';
import { withRetry } from '../connection/retry.ts';
import { resolveBecome, type BecomeSetting } from '../connection/become.ts';
import { newRunId } from './apply-lock.ts';
import { getMaxListeners, setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { throwSite } from './throw-site.ts';
import { RunChecks } from './run-checks.ts';

export interface RunSelection {
  limit?: string;
  tags?: string[];
  skipTags?: string[];
  /** -b, --become-user, --become-method (hosts' variables and plays' keywords win). */
  become?: BecomeSetting;
}

/** A play with each selected host's resources already built and checked. */
export interface PreparedPlay {
  play: Play;
  hosts: Array<{ host: Host; resources: Resource[] }>;
  /** The variables the play read or validated while building its hosts' resources. */
  variables?: ReadonlySet<string>;
}

/**
 * Build every resource of every play for every selected host before anything connects: bad
 * input (a wrong variable, an invalid path, a duplicate id) is found while nothing has run.
 */
export function prepare(written: Inventory, playbooks: Playbook[], sel: RunSelection): PreparedPlay[] {
  const inv = withPlayGroups(written, playbooks); // racksmith_play_hosts: the plays' groups as the operator defines them
  const limited = sel.limit !== undefined ? new Set(selectLimit(inv, sel.limit)) : null;
  const byName = new Map(inv.hosts.map((h) => [h.name, h]));
  const out: PreparedPlay[] = [];
  // Each host as it is reached: with whom its execs run as (the same in every play: one shell per exec).
  const reached = new Map<string, { host: Host; play: string }>();
  const reachedAs = (h: Host, play: Play): Host => {
    const escalate = resolveBecome(
      h.connection.become,
      { enabled: play.become, user: play.becomeUser, method: play.becomeMethod },
      sel.become ?? {},
    );
    const seen = reached.get(h.name);
    if (seen) {
      const before = seen.host.connection.escalate;
      if (before?.user !== escalate?.user || before?.method !== escalate?.method)
        throw new InputError(
          `host ${h.name}: play '${seen.play}' runs as ${who(before)} and play '${play.name}' as ${who(escalate)}: racksmith runs one shell per host, so its plays must agree on become`,
          h.pos,
        );
      return seen.host;
    }
    const host = escalate ? { ...h, connection: { ...h.connection, escalate } } : h;
    reached.set(h.name, { host, play: play.name });
    return host;
  };
  // What each host's plays built, for the checks over a host's whole run (claims, tags).
  const runOf = new RunChecks(sel);
  for (const pb of playbooks) {
    for (const play of pb.plays) {
      const names = playHosts(inv, pb, play).filter((n) => !limited || limited.has(n));
      batchSizes(names.length, play.serial); // a bad `serial` is bad input, found before anything runs
      checkStopOptions(play);
      const memo = new PlayMemo();
      // Hosts given the same build (memo) share its checked, ordered list too.
      const checked = new Map<Resource[], Resource[]>();
      const hosts = names.map((n) => {
        const host = byName.get(n)!;
        const built = buildResources(pb, play, host, inv, memo);
        let resources = checked.get(built);
        if (!resources) {
          resources = checkResources(play, n, built, sel);
          checked.set(built, resources);
        }
        runOf.add(n, play, built, resources);
        return { host: reachedAs(host, play), resources };
      });
      out.push({ play, hosts, variables: memo.variables });
    }
  }
  runOf.check();
  return out;
}

/** A play's maxFailPercent and anyErrorsFatal: bad values are bad input, before anything runs. */
function checkStopOptions(play: Play): void {
  const m = play.maxFailPercent;
  if (m !== undefined && !(typeof m === 'number' && m >= 0 && m <= 100))
    throw new InputError(`play '${play.name}': maxFailPercent must be a number from 0 to 100, got ${printable(String(m))}`);
  const f = play.anyErrorsFatal;
  if (f !== undefined && typeof f !== 'boolean')
    throw new InputError(`play '${play.name}': anyErrorsFatal must be true or false, got ${printable(String(f))}`);
}

function who(e: { user: string; method: string } | undefined): string {
  return e ? `${e.user} (${e.method})` : 'the login user';
}

/** A play's resources for host `n`, checked (ids, dependencies) and selected by tags. */
function checkResources(play: Play, n: string, built: Resource[], sel: RunSelection): Resource[] {
  const all = built.map((r) => withPlayTags(r, play.tags ?? []));
  const ids = new Set<string>();
  for (const r of all) {
    if (ids.has(r.id)) throw new InputError(`play '${play.name}' declares ${r.id} twice for host ${n}`);
    ids.add(r.id);
  }
  const declared = new Set<string>();
  for (const r of all) {
    for (const d of r.dependsOn)
      if (!ids.has(d)) throw new InputError(`${r.id} depends on ${d}, which play '${play.name}' does not declare for host ${n}`);
    for (const d of r.after ?? [])
      if (!declared.has(d))
        throw new InputError(`${r.id} must come after ${d}, which play '${play.name}' does not declare before it for host ${n}`);
    declared.add(r.id);
  }
  const handlers = new Set(all.filter((r) => r.handler).map((r) => r.id));
  for (const r of all)
    for (const h of r.notify ?? [])
      if (!handlers.has(h))
        throw new InputError(`${r.id} notifies ${h}, which play '${play.name}' does not declare as a handler for host ${n}`);
  const kept = all.filter((r) => tagSelected(r.tags, sel));
  const keptIds = new Set(kept.map((r) => r.id));
  // A dependency left out by --tags is treated as satisfied, as Ansible does (and a handler left out is not run).
  const resources = kept.map((r) =>
    [...r.dependsOn, ...(r.after ?? []), ...(r.notify ?? [])].every((d) => keptIds.has(d))
      ? r
      : {
          ...r,
          dependsOn: r.dependsOn.filter((d) => keptIds.has(d)),
          after: r.after?.filter((d) => keptIds.has(d)),
          notify: r.notify?.filter((d) => keptIds.has(d)),
        },
  );
  return resources;
}

/**
 * A play's resources for one host. A resource refusing its arguments without saying where they
 * came from is pointed at the host's entry in the inventory, so every input error has a place.
 */
function buildResources(pb: Playbook, play: Play, host: Host, inv: Inventory, memo: PlayMemo): Resource[] {
  let built: unknown;
  try {
    built = memo.resources(new HostContext(host, inv.hosts), (ctx) => play.resources(ctx));
  } catch (e) {
    if (e instanceof InputError) {
      if (!e.pos) throw new InputError(`host ${printable(host.name)}, play '${play.name}': ${e.detail}`, culpritPos(e, host) ?? host.pos);
      throw e;
    }
    // A bug or an unchecked value in the playbook: still bad input found before any host, not a crash.
    const err = e instanceof Error ? e : new Error(String(e));
    throw new InputError(
      `playbook ${pb.file ?? `'${pb.name}'`}, play '${play.name}', host ${host.name}: building its resources threw ${err.name}: ${printable(err.message.split('\n')[0])}`,
      throwSite(err),
    );
  }
  if (!Array.isArray(built))
    throw new InputError(
      `playbook ${pb.file ?? `'${pb.name}'`}, play '${play.name}', host ${host.name}: resources() must return an array of resources`,
    );
  return built as Resource[];
}

/**
 * Where a bad value a resource refused was set: the first variable of the host holding a string
 * with the same problem (a control character, an over-long word), else nowhere known.
 */
function culpritPos(e: InputError, host: Host): SourcePos | undefined {
  if (!(e instanceof BadValue)) return undefined;
  const has = (v: unknown, depth: number): boolean =>
    typeof v === 'string'
      ? e.culprit(v)
      : depth < 100 && v !== null && typeof v === 'object' && Object.values(v).some((x) => has(x, depth + 1));
  for (const [name, value] of Object.entries(host.vars)) if (has(value, 0)) return host.varSources[name];
  return undefined;
}

function withPlayTags(r: Resource, playTags: string[]): Resource {
  if (playTags.length === 0) return r;
  return { ...r, tags: [...new Set([...r.tags, ...playTags])] };
}

function tagSelected(tags: readonly string[], sel: RunSelection): boolean {
  if (sel.skipTags?.some((t) => tags.includes(t))) return false;
  if (!sel.tags || sel.tags.length === 0 || sel.tags.includes('all')) return true;
  return tags.includes('always') || sel.tags.some((t) => tags.includes(t));
}

export interface ExecuteOptions extends ConnectOptions {
  check: boolean;
  /** --yes: apply changes that need confirmation (Change.confirm) without a reviewed plan. */
  yes?: boolean;
  forks: number;
  /** Overrides each play's own `serial` / `maxFailPercent`. */
  serial?: Array<number | string>;
  maxFailPercent?: number;
  /** Attempts for transient connection errors (refused, reset, timeout). */
  connectAttempts: number;
  /** Fingerprint every resource's facts (`factHashes`): for writing or checking a saved plan. */
  hashFacts?: boolean;
  /** Saved-plan mode: per host and play, what was reviewed for each resource. */
  planned?: Map<string, Map<string, Map<string, PlannedResource>>>;
  /** Stop starting new hosts (Ctrl-C); hosts in flight finish the exec they are in. */
  signal?: AbortSignal;
  /** Give up on a host after this long (its connection is closed; it counts as unreachable). */
  hostTimeoutMs?: number;
  /**
   * Take each host's apply lock (apply-lock.ts) in every exec that applies, waiting this long for
   * another run's. The CLI always sets it; unset, no lock (a caller of its own, or test hosts that
   * are directories of this machine).
   */
  lockTimeoutSec?: number;
  /** Who this run is in the hosts' apply locks (default: controller host, pid, start time). */
  runId?: string;
  /** Connection factory, replaceable in tests. */
  connector?: (host: Host, o: ConnectOptions) => Promise<Connection>;
}

export interface RunOutcome extends Recap {
  results: ResourceResult[];
  /** Per host and play, sha256 of each resource's facts (for --plan-out; empty unless `hashFacts`). */
  factHashes: Map<string, Map<string, Map<string, string>>>;
}

/** Run prepared plays: plays in order, hosts concurrently up to `forks`, in batches if asked. */
export async function execute(plays: PreparedPlay[], o: ExecuteOptions, emit: EventSink): Promise<RunOutcome> {
  const t0 = Date.now();
  // Every host in flight listens for the interrupt (watch, below): --forks of them, not a leak.
  if (o.signal) setMaxListeners(Math.max(getMaxListeners(o.signal), o.forks + 10), o.signal);
  const recaps = new Map<string, HostRecap>();
  const conns = new Map<string, Promise<Connection>>();
  const results: ResourceResult[] = [];
  const factHashes = new Map<string, Map<string, Map<string, string>>>();
  const connector = o.connector ?? connect;
  // Changes take each host's apply lock (when asked: the CLI does); check mode never takes it.
  const lock =
    o.check || o.lockTimeoutSec === undefined
      ? undefined
      : { runId: o.runId ?? newRunId(hostname(), process.pid, new Date(t0)), timeoutSec: o.lockTimeoutSec };
  const recapOf = (host: string) => {
    let r = recaps.get(host);
    if (!r) {
      r = { host, ok: 0, changed: 0, pending: 0, failed: 0, skipped: 0, unreachable: false, execs: 0 };
      recaps.set(host, r);
    }
    return r;
  };

  // Hosts whose escalation was refused: not run again in this run (sudo is asked once per host:
  // pam_faillock counts every try); their error is sudo's message.
  const refused = new Set<string>();

  // One round trip per host for all its plays: a host's first exec also probes its later plays,
  // and a later play uses those answers while they hold: nothing was applied on that host since
  // (nor on any host, for resources that read shared state: apply-epochs.ts). Else it probes again.
  const epochs = new ApplyEpochs();
  const onApply = (host: string) => epochs.applied(host);
  const prefetched = new Map<string, Prefetched>();
  const resourcesOf = plays.map((pp) => new Map(pp.hosts.map((h) => [h.host.name, h.resources])));

  // Play objects differ in shape (optional fields): read once here, not in runOne, whose optimised
  // code would be thrown away at each play that brings a new shape.
  const playNames = plays.map((pp) => pp.play.name);

  // Why the run stopped (the current play's failures passed its budget), once it did: no wave,
  // handler, batch or play starts after, on any host (the execs in flight finish).
  let halt: string | undefined;
  const halted = () => halt;
  // The current play's budget and the hosts that failed in it so far (each counted once, as soon
  // as it fails: a failed resource, unreachable, not escalated).
  let budget: { play: string; hosts: number; members: ReadonlySet<string>; maxFail?: number; fatal: boolean } | undefined;
  const playFailed = new Set<string>();
  const hostFailed = (host: string) => {
    // (a host given up on in an earlier play may report late: it does not count against this one)
    if (!budget || !budget.members.has(host) || playFailed.has(host)) return;
    playFailed.add(host);
    if (halt !== undefined) return;
    if (budget.fatal) halt = `play '${budget.play}' stopped, ${host} failed (anyErrorsFatal)`;
    else if (budget.maxFail !== undefined && (playFailed.size / budget.hosts) * 100 > budget.maxFail)
      halt = `play '${budget.play}' stopped, ${playFailed.size} of ${budget.hosts} hosts failed (max ${budget.maxFail}%)`;
  };
  /** A host left out of play `playIndex` (and so of the rest of the run): why, in its recap (the first reason stands). */
  const leftOut = (host: string, playIndex: number, why: string) => {
    const r = recapOf(host);
    r.error ??= playIndex === 0 ? `not run: ${why}` : `not run from play '${playNames[playIndex]}' on: ${why}`;
  };

  // One function for every host's results (a closure per host would be one more V8 meets thousands of times).
  const onResult = (r: ResourceResult) => {
    results.push(r);
    const recap = recapOf(r.host);
    // (a check-mode change waiting on another's is not one the apply is known to make: apart)
    if (r.pending !== undefined) recap.pending!++;
    else recap[r.status]++;
    if (r.status === 'failed') hostFailed(r.host);
    emit(resourceEvent(r));
  };

  /** The host's one connection for the whole run (opened on first use, transient errors retried). */
  const connection = (host: Host): Promise<Connection> => {
    let p = conns.get(host.name);
    if (!p) {
      p = withRetry(
        () => connector(host, o),
        o.connectAttempts,
        (e) => e instanceof ConnectError && e.transient,
      );
      conns.set(host.name, p);
    }
    return p;
  };

  /**
   * A host's end, when its --host-timeout passes or the run is interrupted (Ctrl-C: after a grace
   * for the exec in flight): its connection is aborted (the remote process groups killed, the
   * socket dropped), so nothing of a host outlasts either.
   */
  const watch = (conn: Promise<Connection>) => {
    let reason: 'timeout' | 'interrupted' | undefined;
    let fire: (r: 'timeout' | 'interrupted') => void = () => {};
    const ended = new Promise<'timeout' | 'interrupted'>((r) => (fire = r));
    let grace: NodeJS.Timeout | undefined;
    const end = (r: 'timeout' | 'interrupted') => {
      if (reason) return;
      reason = r;
      fire(r);
      void conn.then(
        (c) => (c.abort ? c.abort() : c.close()),
        () => undefined,
      );
    };
    const timer = o.hostTimeoutMs ? setTimeout(() => end('timeout'), o.hostTimeoutMs) : undefined;
    const onAbort = () => (grace = setTimeout(() => end('interrupted'), INTERRUPT_GRACE_MS));
    if (o.signal?.aborted) onAbort();
    else o.signal?.addEventListener('abort', onAbort, { once: true });
    return {
      ended,
      get reason() {
        return reason;
      },
      clear() {
        clearTimeout(timer);
        clearTimeout(grace);
        o.signal?.removeEventListener('abort', onAbort);
      },
    };
  };
  /** What a host's recap says when its watch ended it. */
  const endedError = (reason: 'timeout' | 'interrupted') =>
    reason === 'timeout' ? `timed out after ${o.hostTimeoutMs! / 1000}s` : 'interrupted: the steps in flight were stopped';
  /** `p`, or undefined once the watch ended and the host's work did not finish within a moment more. */
  const until = <T>(p: Promise<T>, w: ReturnType<typeof watch>): Promise<T | undefined> =>
    Promise.race([p, w.ended.then(() => new Promise<undefined>((r) => setTimeout(r, ABANDON_AFTER_MS)))]);

  const runOne = async (
    playIndex: number,
    host: Host,
    resources: Resource[],
    fromStart: readonly Answer[] | undefined,
    fleet: FleetViews | undefined,
  ): Promise<boolean> => {
    const playName = playNames[playIndex];
    const recap = recapOf(host.name);
    if (recap.unreachable) return false;
    emit({ type: 'host_start', host: host.name, play: playName });
    const pending = connection(host);
    const w = watch(pending);
    let conn: Connection | undefined;
    try {
      conn = await until(pending, w);
    } catch (e) {
      w.clear();
      recap.unreachable = true;
      recap.error = (e as Error).message;
      return false;
    }
    if (!conn || w.reason) {
      w.clear();
      recap.unreachable = w.reason !== 'interrupted';
      recap.error = endedError(w.reason ?? 'timeout');
      return false;
    }
    // A host without answers reads an empty entry (the same code path and object shape as one
    // with them), and this play's answers are looked up and dropped whether current or not: the
    // first play makes these calls too, so V8 has their feedback and keeps its code for the later.
    const pre = prefetched.get(host.name) ?? NOT_PREFETCHED;
    const playAnswers = pre.byPlay.get(playIndex);
    const probed = fromStart ?? (epochs.holds(pre.at, host.name, resources) ? playAnswers : undefined);
    // Answers are used once, and are worth nothing after the host's own apply: do not keep them around.
    pre.byPlay.delete(playIndex);
    if (epochs.appliedOnHostSince(pre.at, host.name)) prefetched.delete(host.name);
    const later = probed ? NO_LATER_PLAYS : laterPlays(resourcesOf, playIndex, host.name);
    const prefetch = later.map(([, rs]) => rs);
    const sentAt = epochs.stamp(host.name);
    const res = await until(
      runHost(conn, resources, {
        probed,
        prefetch,
        onPrefetched: (answers) => {
          const byPlay = new Map<number, readonly Answer[]>();
          let k = 0;
          for (const [j, rs] of later) byPlay.set(j, answers.slice(k, (k += rs.length)));
          prefetched.set(host.name, { at: sentAt, byPlay });
        },
        onApply,
        hashFacts: o.hashFacts || o.planned !== undefined,
        host: host.name,
        play: playName,
        check: o.check,
        yes: o.yes,
        planned: o.planned ? (o.planned.get(host.name)?.get(playName) ?? new Map()) : undefined,
        signal: o.signal,
        halted,
        lock,
        onResult,
        fleet,
      }).catch((e: Error): undefined => {
        // A fault of the engine itself (resources' own errors fail those resources): this host
        // ends failed, with its recap; the run and the other hosts go on.
        recap.error = `internal error on this host: ${e.message}`;
        return undefined;
      }),
      w,
    ).finally(() => w.clear());
    if (w.reason) {
      recap.unreachable = w.reason === 'timeout';
      recap.error = endedError(w.reason);
      return false;
    }
    if (!res) return false;
    const byPlay = factHashes.get(host.name) ?? new Map<string, Map<string, string>>();
    byPlay.set(playName, res.factHashes);
    factHashes.set(host.name, byPlay);
    recap.execs = conn.execCount;
    if (res.becomeFailed) {
      recap.error = res.becomeFailed;
      refused.add(host.name);
    }
    if (res.drift) recap.error = `drift since the plan: ${res.drift.map((d) => d.id).join(', ')}`;
    if (res.lockWaits) recap.lockWaits = [...(recap.lockWaits ?? []), ...res.lockWaits];
    if (res.lostConnection) {
      recap.unreachable = true;
      recap.error = res.lostConnection;
      return false;
    }
    return !res.results.some((r) => r.status === 'failed');
  };

  /**
   * A fleet play's answers from its start (fleet.ts): every host probed before any of them
   * applies anything, in one exec that also probes its later plays (or, when still current, the
   * answers an earlier play's exec already brought: no exec at all). A host that cannot be
   * reached or whose exec fails is left out here: its runOne meets the same and reports it.
   */
  const gather = async (playIndex: number, hosts: PreparedPlay['hosts']): Promise<Map<string, readonly Answer[]>> => {
    const answers = new Map<string, readonly Answer[]>();
    await mapLimit(hosts, o.forks, async ({ host, resources }) => {
      if (o.signal?.aborted || halt !== undefined) return;
      const pre = prefetched.get(host.name);
      const ready = pre && epochs.holds(pre.at, host.name, resources) ? pre.byPlay.get(playIndex) : undefined;
      if (ready) {
        answers.set(host.name, ready);
        pre!.byPlay.delete(playIndex);
        return;
      }
      const pending = connection(host);
      const w = watch(pending);
      const later = laterPlays(resourcesOf, playIndex, host.name);
      const sentAt = epochs.stamp(host.name);
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
        const recap = recapOf(host.name);
        recap.unreachable = w.reason === 'timeout';
        recap.error = endedError(w.reason);
        return;
      }
      if (res === undefined || typeof res === 'string') return;
      answers.set(host.name, res.answers);
      const byPlay = new Map<number, readonly Answer[]>();
      let k = 0;
      for (const [j, rs] of later) byPlay.set(j, res.later.slice(k, (k += rs.length)));
      prefetched.set(host.name, { at: sentAt, byPlay });
    });
    return answers;
  };

  try {
    for (const [playIndex, pp] of plays.entries()) {
      const hosts = pp.hosts.filter((h) => !recapOf(h.host.name).unreachable && !refused.has(h.host.name));
      if (halt !== undefined || o.signal?.aborted) {
        // (a host already failed or unreachable keeps that as its reason)
        const why = halt ?? 'interrupted';
        for (const h of hosts) leftOut(h.host.name, playIndex, why);
        continue;
      }
      emit({ type: 'play_start', play: pp.play.name, hosts: hosts.map((h) => h.host.name) });
      const sizes = batchSizes(hosts.length, o.serial ?? pp.play.serial);
      const maxFail = o.maxFailPercent ?? pp.play.maxFailPercent;
      budget = {
        play: pp.play.name,
        hosts: hosts.length,
        members: new Set(hosts.map((h) => h.host.name)),
        maxFail,
        fatal: pp.play.anyErrorsFatal === true,
      };
      playFailed.clear();
      // A play with resources that must agree across hosts is probed on all of them first.
      let gathered: Map<string, readonly Answer[]> | undefined;
      let fleet: FleetViews | undefined;
      const gatheredAt = new Map<string, ApplyStamp>();
      if (playHasFleet(hosts)) {
        gathered = await gather(playIndex, hosts);
        for (const h of hosts) gatheredAt.set(h.host.name, epochs.stamp(h.host.name));
        fleet = fleetViews(
          hosts.map((h) => ({ name: h.host.name, resources: h.resources, answers: gathered!.get(h.host.name) })),
          isReadable,
        );
      }
      let start = 0;
      for (const size of sizes) {
        const stop = halt ?? (o.signal?.aborted ? 'interrupted' : undefined);
        if (stop !== undefined) {
          for (const h of hosts.slice(start)) leftOut(h.host.name, playIndex, stop);
          break;
        }
        const batch = hosts.slice(start, start + size);
        start += size;
        // The answers from the play's start hold for a batch while they hold when it starts (its
        // hosts run side by side, as if they had probed now); where they no longer do (a later
        // batch, answers of shared state), it probes again, while the agreement stays the one
        // reached at the start.
        const fromStart = new Map<string, readonly Answer[] | undefined>();
        for (const h of batch) {
          const at = gatheredAt.get(h.host.name);
          if (gathered && at && epochs.holds(at, h.host.name, h.resources)) fromStart.set(h.host.name, gathered.get(h.host.name));
        }
        await mapLimit(batch, o.forks, async (h) => {
          const why = halt ?? (o.signal?.aborted ? 'interrupted' : undefined);
          if (why !== undefined) return leftOut(h.host.name, playIndex, why);
          if (!(await runOne(playIndex, h.host, h.resources, fromStart.get(h.host.name), fleet))) hostFailed(h.host.name);
        });
      }
    }
  } finally {
    await Promise.all(
      [...conns.values()].map((p) =>
        p.then(
          (c) => c.close(),
          () => undefined,
        ),
      ),
    );
  }

  const hostRecaps = [...new Set(plays.flatMap((p) => p.hosts.map((h) => h.host.name)))].map(recapOf);
  for (const r of hostRecaps) emit({ type: 'host_recap', ...r });
  const bad = hostRecaps.some((r) => r.failed > 0 || r.unreachable || r.error !== undefined);
  const changed = hostRecaps.some((r) => r.changed > 0);
  const exitCode = bad ? 1 : o.check && changed ? 2 : 0;
  const recap: Recap = { hosts: hostRecaps, exitCode, check: o.check, elapsedMs: Date.now() - t0 };
  emit({ type: 'recap', ...recap });
  return { ...recap, results, factHashes };
}

/** After an interrupt, how long the steps in flight get to finish before their hosts are aborted. */
const INTERRUPT_GRACE_MS = 1500;
/** After a host's abort, how long its work gets to notice (its exec fails) before it is left behind. */
const ABANDON_AFTER_MS = 1500;

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

/** Run `fn` over items with at most `limit` in flight; one slow item never blocks the others. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  return out;
}
