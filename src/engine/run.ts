import type { Host, Inventory } from '../inventory/model.ts';
import { selectLimit } from '../inventory/limit.ts';
import type { Resource } from '../contract/resource.ts';
import { formatPos, InputError, type SourcePos } from '../util/errors.ts';
import { BadValue, shown } from '../util/input-value.ts';
import { printable } from '../util/printable.ts';
import type { EventSink } from './events.ts';
import { PlayMemo } from './play-memo.ts';
import { FactsUnavailable, HostContext, NoFacts, type Play, type Playbook } from '../contract/playbook.ts';
import type { HostFacts } from '../facts/types.ts';
import { batchSizes } from './batches.ts';
import { playHosts, withPlayGroups } from './play-hosts.ts';
import { resolveBecome } from '../connection/become.ts';
import { callSite, throwSite } from './throw-site.ts';
import { RunChecks } from './run-checks.ts';
import { notAResource } from './resource-list.ts';
import { PlaysRun } from './plays-run.ts';
import type { ExecuteOptions, FactsOf, PreparedPlay, RunOutcome, RunSelection } from './run-types.ts';

export type { ExecuteOptions, FactsOf, PreparedPlay, RunOutcome, RunSelection } from './run-types.ts';
export { mapLimit } from './map-limit.ts';

/**
 * Build every resource of every play for every selected host before anything connects: bad
 * input (a wrong variable, an invalid path, a duplicate id) is found while nothing has run.
 * A play with `facts: true` is built from `factsOf` (its hosts' gathered facts); without it, its
 * hosts are listed with no resources (`awaitsFacts`), and so is a host whose facts are missing.
 */
export function prepare(written: Inventory, playbooks: Playbook[], sel: RunSelection, factsOf?: FactsOf): PreparedPlay[] {
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
      const awaitsFacts = play.facts === true && !factsOf;
      const hosts = names.map((n) => {
        const host = byName.get(n)!;
        const facts = play.facts === true ? (factsOf?.(n) ?? NO_FACTS_YET) : undefined;
        if (facts instanceof NoFacts) return { host: reachedAs(host, play), resources: [] };
        const built = buildResources(pb, play, host, inv, memo, facts);
        let resources = checked.get(built);
        if (!resources) {
          resources = checkResources(play, n, built, sel);
          checked.set(built, resources);
        }
        runOf.add(n, play, built, resources);
        return { host: reachedAs(host, play), resources };
      });
      out.push({ play, hosts, variables: memo.variables, ...(awaitsFacts ? { awaitsFacts } : {}) });
    }
  }
  runOf.check();
  return out;
}

const NO_FACTS_YET = new NoFacts('facts not gathered yet');

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
  const ids = new Map<string, Resource>();
  for (const r of all) {
    const first = ids.get(r.id);
    if (first)
      throw new InputError(
        `play '${play.name}' declares ${r.id} twice for host ${n}: at ${declaredAt(first)} and at ${declaredAt(r)}`,
        throwSite(r.declaredAt ?? {}),
      );
    ids.set(r.id, r);
  }
  const declared = new Set<string>();
  for (const r of all) {
    // (read from the declaration's stack only for an error: every host's every resource passes here)
    const at = () => throwSite(r.declaredAt ?? {});
    for (const d of r.dependsOn)
      if (!ids.has(d)) throw new InputError(`${r.id} depends on ${d}, which play '${play.name}' does not declare for host ${n}`, at());
    for (const d of r.after ?? [])
      if (!declared.has(d))
        throw new InputError(
          `${r.id} must come after ${d}, which play '${play.name}' does not declare before it for host ${n}${ids.has(d) ? ` (it is declared later: move it up)` : ''}`,
          at(),
        );
    declared.add(r.id);
  }
  const handlers = new Set(all.filter((r) => r.handler).map((r) => r.id));
  for (const r of all)
    for (const h of r.notify ?? [])
      if (!handlers.has(h))
        throw new InputError(
          `${r.id} notifies ${h}, which play '${play.name}' does not declare as a handler for host ${n}`,
          throwSite(r.declaredAt ?? {}),
        );
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
 * came from is pointed at the variable that set the value when one did, else at the playbook's
 * call of the resource (else the host's entry), so every input error has a place.
 */
function buildResources(pb: Playbook, play: Play, host: Host, inv: Inventory, memo: PlayMemo, facts?: HostFacts): Resource[] {
  let built: unknown;
  try {
    built = memo.resources(new HostContext(host, inv.hosts, facts), (ctx) => play.resources(ctx));
  } catch (e) {
    if (e instanceof InputError) {
      if (e.pos) throw e;
      // A resource refused its options: where the playbook called it, and where the value was set.
      const site = callSite(e);
      const call = site ? `${site.callee ? `${site.callee}() ` : 'a resource '}at ${formatPos(site.pos)}` : undefined;
      const culprit = culpritOf(e, host);
      const at = culprit?.pos ?? site?.pos ?? host.pos;
      const shownCall = call && at !== site?.pos ? `, ${call}` : site?.callee ? `, ${site.callee}()` : '';
      const from = culprit ? ` (from variable ${printable(culprit.name)})` : '';
      throw new InputError(`host ${printable(host.name)}, play '${play.name}'${shownCall}: ${e.detail}${from}`, at);
    }
    if (e instanceof FactsUnavailable)
      throw new InputError(`playbook ${pb.file ?? `'${pb.name}'`}, play '${play.name}', host ${host.name}: ${e.message}`, throwSite(e));
    // A bug or an unchecked value in the playbook: still bad input found before any host, not a crash.
    const err = e instanceof Error ? e : new Error(String(e));
    throw new InputError(
      `playbook ${pb.file ?? `'${pb.name}'`}, play '${play.name}', host ${host.name}: building its resources threw ${err.name}: ${printable(err.message.split('\n')[0])}`,
      throwSite(err),
    );
  }
  const where = `playbook ${pb.file ?? `'${pb.name}'`}, play '${play.name}', host ${host.name}`;
  const file = pb.file !== undefined ? { file: pb.file } : undefined;
  if (!Array.isArray(built)) throw new InputError(`${where}: resources() must return an array of resources`, file);
  for (const [i, x] of built.entries()) {
    const why = notAResource(x, i);
    if (why) throw new InputError(file ? `play '${play.name}', host ${host.name}: ${why}` : `${where}: ${why}`, file);
  }
  return built as Resource[];
}

/**
 * Where a bad value a resource refused was set: the first variable of the host holding a string
 * with the same problem (a control character, an over-long word), or the string the message
 * quotes ('rel/x' in "path must be an absolute path, got 'rel/x'"); else nowhere known.
 */
function culpritOf(e: InputError, host: Host): { name: string; pos: SourcePos | undefined } | undefined {
  // (the value refused, after "got": a quote in the message's own wording, '0644' in "like '0644'", is no culprit)
  const quoted = (s: string) => s !== '' && e.detail.includes(`got ${shown(s)}`);
  const culprit = e instanceof BadValue ? (s: string) => e.culprit(s) || quoted(s) : quoted;
  const has = (v: unknown, depth: number): boolean =>
    typeof v === 'string'
      ? culprit(v)
      : depth < 100 && v !== null && typeof v === 'object' && Object.values(v).some((x) => has(x, depth + 1));
  for (const [name, value] of Object.entries(host.vars)) if (has(value, 0)) return { name, pos: host.varSources[name] };
  return undefined;
}

/** Where a resource was declared, for a message naming two of them. */
function declaredAt(r: Resource): string {
  const at = throwSite(r.declaredAt ?? {});
  return at ? formatPos(at) : 'an unknown line';
}

function withPlayTags(r: Resource, playTags: string[]): Resource {
  if (playTags.length === 0) return r;
  return { ...r, tags: [...new Set([...r.tags, ...playTags])] };
}

function tagSelected(tags: readonly string[], sel: RunSelection): boolean {
  // Ansible's rule: --skip-tags all skips every resource but those tagged always (unless skipped too)
  if (sel.skipTags?.includes('all') && !(tags.includes('always') && !sel.skipTags.includes('always'))) return false;
  if (sel.skipTags?.some((t) => tags.includes(t))) return false;
  if (!sel.tags || sel.tags.length === 0 || sel.tags.includes('all')) return true;
  return tags.includes('always') || sel.tags.some((t) => tags.includes(t));
}

/** Run prepared plays: plays in order, hosts concurrently up to `forks`, in batches if asked (plays-run.ts). */
export async function execute(plays: PreparedPlay[], o: ExecuteOptions, emit: EventSink): Promise<RunOutcome> {
  return new PlaysRun(plays, o, emit).run();
}
