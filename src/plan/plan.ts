import { createHmac, timingSafeEqual } from 'node:crypto';
import { sha256 } from '../util/sha256.ts';
import { writeFileAtomic, type OutputKind } from '../util/atomic-write.ts';
import type { Inventory } from '../inventory/model.ts';
import { InputError } from '../util/errors.ts';
import { scrub } from '../util/secret.ts';
import { installationKey } from '../util/state-dir.ts';
import { INPUT_LIMITS, readInputFile } from '../util/input-file.ts';
import { printable } from '../util/printable.ts';
import { lazySchema, validateOrThrow } from '../util/validate.ts';
import type { RunOutcome } from '../engine/run.ts';
import type { PlannedResource } from '../engine/host-run.ts';
import { changedCode, codeDigest, type CodeHashes } from './code.ts';
import type { HostFacts } from '../facts/types.ts';
import { factsFingerprint } from './host-facts.ts';
import { planDrainsSchema, type PlanDrains } from './drains.ts';

export const PLAN_FORMAT = 'racksmith-plan';
/** What --plan-out replaces: a plan written before (JSON, `format` its first key). */
export const PLAN_FILE: OutputKind = { name: 'a racksmith plan', head: /^\{\s*"format":\s*"racksmith-plan"/ };
// 5: failed resources and hosts recorded (a version 4 plan showed a failed check as no change)
// 6: hosts the check run never reached recorded with why (`unreached`), hosts it never ran for
//    another reason as failed (a version 5 plan counted both as "not reviewed", and apply skipped them)
// 7: drains recorded (`drains`: per host its provider and what the check run found, and the
//    timeout); a version 6 plan did not show them, and apply took --drain from its own command line
// 8: a drained host's node in its scheduler when not its name (`drains.hosts.H.node`); a version 7
//    plan drained the node named as the host
// 9: a host out under another racksmith run's drain recorded as `blocked` (its drain fails at the
//    apply); a version 8 plan showed it as `already`, left so with the change applied under it
export const PLAN_VERSION = 9;

/**
 * A resource as reviewed: what apply checks (PlannedResource), its kind, and the diffs that were
 * shown (masked as the terminal and the journal mask them), for `plan show`.
 */
export interface PlanEntry extends PlannedResource {
  kind?: string;
  diffs?: string[];
  /** The error it failed with in the check run: nothing was reviewed for it. */
  error?: string;
}

/**
 * A reviewed dry run, for a change window: per host and play, the hash of every resource's facts
 * and the change summaries that were shown. `provision apply` re-probes and refuses any host
 * whose facts moved. Secrets never appear: values serialise masked, facts only as hashes.
 */
export interface PlanFile {
  format: typeof PLAN_FORMAT;
  version: number;
  createdAt: string;
  /**
   * The provision arguments of the reviewed run: its selection, without --check/--plan-out and
   * without the security options (host keys, become: apply takes those from its own command
   * line), `-e` secrets as their masks.
   */
  argv: string[];
  cwd: string;
  /** Every host the recorded selection reached (`hosts` has those that were reviewed; `unreached` and `failed` say why the others were not). */
  selection: string[];
  inventoryFingerprint: string;
  /** The digest of `code`. */
  playbookFingerprint: string;
  /** sha256 of every module the playbooks load and of racksmith's sources (plan/code.ts). */
  code: CodeHashes;
  /** Per host whose facts a play used (`facts: true`), their fingerprint (host-facts.ts): apply refuses a host whose facts moved. */
  facts?: Record<string, Record<string, string>>;
  hosts: Record<string, Record<string, Record<string, PlanEntry>>>;
  /** Each reviewed host's inventory groups (for `plan show`'s filters). */
  groups: Record<string, string[]>;
  /**
   * Hosts whose check run failed (a resource failed, become failed, lost mid-review, never run:
   * facts not gathered, the run halted), with the host's error or a count: `plan show` lists them
   * and exits 1, `apply` refuses the plan.
   */
  failed?: Record<string, string>;
  /**
   * Hosts of the selection the check run never reached (connection refused or timed out, host key
   * or login refused), each with why: none of their changes was reviewed. `plan show` lists them
   * and exits 1, `apply` refuses the plan.
   */
  unreached?: Record<string, string>;
  /**
   * --drain / racksmith_drain: each host that has a drain provider, with what the check run found
   * (drains.ts); absent when no host of the selection is drained. `apply` drains exactly so.
   */
  drains?: PlanDrains;
  /**
   * `hmac-sha256:` of the rest of the file under this installation's key: an edit (an option
   * added to argv, a host added, createdAt moved) cannot be signed again without that key.
   */
  signature: string;
}

const planSchema = {
  type: 'object',
  required: [
    'format',
    'version',
    'createdAt',
    'argv',
    'cwd',
    'selection',
    'inventoryFingerprint',
    'playbookFingerprint',
    'code',
    'hosts',
    'groups',
    'signature',
  ],
  additionalProperties: false,
  properties: {
    format: { const: PLAN_FORMAT },
    version: { type: 'integer' },
    createdAt: { type: 'string' },
    argv: { type: 'array', items: { type: 'string' } },
    cwd: { type: 'string' },
    selection: { type: 'array', items: { type: 'string' } },
    signature: { type: 'string' },
    inventoryFingerprint: { type: 'string' },
    playbookFingerprint: { type: 'string' },
    code: { type: 'object', additionalProperties: { type: 'string' } },
    facts: { type: 'object', additionalProperties: { type: 'object', additionalProperties: { type: 'string' } } },
    groups: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
    failed: { type: 'object', additionalProperties: { type: 'string' } },
    unreached: { type: 'object', additionalProperties: { type: 'string' } },
    drains: planDrainsSchema,
    hosts: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        additionalProperties: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            required: ['factHash', 'changes'],
            properties: {
              factHash: { type: 'string' },
              changes: { type: 'array', items: { type: 'string' } },
              pending: { type: 'string' },
              kind: { type: 'string' },
              diffs: { type: 'array', items: { type: 'string' } },
              error: { type: 'string' },
            },
          },
        },
      },
    },
  },
};
const validatePlan = lazySchema(planSchema); // compiled when a plan is read, not at start-up

const sha = sha256;

/** Every host's merged variables (secrets as their masked hash) and groups. */
export function inventoryFingerprint(inv: Inventory): string {
  // integers beyond 2^53 are bigints in the inventory (exact, as in Ansible): hashed as their digits
  return sha(
    JSON.stringify(
      inv.hosts.map((h) => [h.name, h.groups, h.vars]),
      (_, v) => (typeof v === 'bigint' ? `${v}n` : v),
    ),
  );
}

export function makePlan(o: {
  argv: string[];
  cwd: string;
  selection: string[];
  inventory: Inventory;
  code: CodeHashes;
  outcome: RunOutcome;
  /** The facts the run's plays used, per host. */
  facts?: ReadonlyMap<string, HostFacts>;
  /** The check run's drains (drains.ts planDrains). */
  drains?: PlanDrains;
}): Omit<PlanFile, 'signature'> {
  // each result by host, then play and id: one pass over them, not a search per fact hash (and
  // no key string built per resource: 10,000 hosts x 50 resources are 500,000 of them)
  const results = new Map<string, Map<string, Map<string, RunOutcome['results'][number]>>>();
  for (const r of o.outcome.results) {
    let plays = results.get(r.host);
    if (!plays) results.set(r.host, (plays = new Map()));
    let ids = plays.get(r.play);
    if (!ids) plays.set(r.play, (ids = new Map()));
    ids.set(r.id, r);
  }
  const hosts: PlanFile['hosts'] = {};
  for (const [host, byPlay] of o.outcome.factHashes) {
    const plays: PlanFile['hosts'][string] = (hosts[host] = {});
    const resultsOf = results.get(host);
    for (const [play, hashes] of byPlay) {
      const planned: Record<string, PlanEntry> = (plays[play] = {});
      const byId = resultsOf?.get(play);
      for (const [id, factHash] of hashes) planned[id] = plannedResource(factHash, byId?.get(id));
    }
  }
  const { failed, unreached } = failedHosts(o.outcome, o.selection, hosts);
  // every host is in `all`: only the groups that tell hosts apart (of the hosts the plan names)
  const named = (h: string) => Object.hasOwn(hosts, h) || Object.hasOwn(unreached, h) || Object.hasOwn(failed, h);
  return {
    format: PLAN_FORMAT,
    version: PLAN_VERSION,
    createdAt: new Date().toISOString(),
    argv: o.argv,
    cwd: o.cwd,
    selection: o.selection,
    inventoryFingerprint: inventoryFingerprint(o.inventory),
    playbookFingerprint: codeDigest(o.code),
    code: o.code,
    hosts,
    ...(o.facts?.size ? { facts: Object.fromEntries([...o.facts].map(([h, f]) => [h, factsFingerprint(f)])) } : {}),
    groups: Object.fromEntries(o.inventory.hosts.filter((h) => named(h.name)).map((h) => [h.name, h.groups.filter((g) => g !== 'all')])),
    ...(Object.keys(failed).length ? { failed } : {}),
    ...(Object.keys(unreached).length ? { unreached } : {}),
    ...(o.drains ? { drains: o.drains } : {}),
  };
}

/**
 * The hosts of the selection whose check run did not end well, each with why: `failed`, a reviewed
 * host with a failed resource or error, or lost mid-review, and a host never run for another
 * reason (its facts could not be gathered, become failed, the run halted or was interrupted);
 * `unreached`, a host never reached (nothing of it reviewed).
 */
function failedHosts(
  outcome: RunOutcome,
  selection: string[],
  hosts: PlanFile['hosts'],
): { failed: Record<string, string>; unreached: Record<string, string> } {
  const failed: Record<string, string> = {};
  const unreached: Record<string, string> = {};
  const recaps = new Map(outcome.hosts.map((r) => [r.host, r]));
  for (const host of new Set([...selection, ...recaps.keys()])) {
    const r = recaps.get(host);
    if (Object.hasOwn(hosts, host)) {
      // (a host lost mid-review is in `hosts` with part of its review: failed)
      if (r && (r.failed > 0 || r.error !== undefined || r.unreachable))
        failed[host] = r.error ?? (r.unreachable ? 'unreachable' : `${r.failed} resource(s) failed`);
    } else if (r?.unreachable) unreached[host] = r.error ?? 'unreachable';
    else failed[host] = r?.error ?? 'not run by the check run';
  }
  return { failed, unreached };
}

/** Hosts as a refusal or a warning names them: a count and the first ten. */
function hostsText(hosts: string[]): string | undefined {
  if (!hosts.length) return undefined;
  return `${hosts.length} host(s) (${hosts.slice(0, 10).join(', ')}${hosts.length > 10 ? ', ...' : ''})`;
}

/** The hosts whose check run failed, as a refusal or a warning names them. */
export function failedHostsText(plan: Pick<PlanFile, 'failed'>): string | undefined {
  return hostsText(Object.keys(plan.failed ?? {}));
}

/** The hosts whose drain the check run found blocked by another racksmith run's drain (drains.ts), as a warning names them. */
export function blockedHostsText(plan: Pick<PlanFile, 'drains'>): string | undefined {
  return hostsText(Object.entries(plan.drains?.hosts ?? {}).flatMap(([h, d]) => (d.outcome === 'blocked' ? [h] : [])));
}

/** The hosts the check run never reached, as a refusal or a warning names them. */
export function unreachedHostsText(plan: Pick<PlanFile, 'unreached'>): string | undefined {
  return hostsText(Object.keys(plan.unreached ?? {}));
}

/**
 * A plan whose check run failed or did not reach some host, refused whole (as Atlantis refuses a
 * plan that errored): what failed or was not reached was never reviewed, and the review of the
 * rest was of a fleet with a hole in it (a fleet play's agreement reached without those hosts).
 */
function checkPlanSucceeded(plan: PlanFile, file: string): void {
  const failed = failedHostsText(plan);
  if (failed)
    throw new InputError(
      `plan's check run failed on ${failed}: what failed was never reviewed; fix it and make a new plan (\`provision plan show\` lists the failures)`,
      { file },
    );
  const unreached = unreachedHostsText(plan);
  if (unreached)
    throw new InputError(
      `plan's check run did not reach ${unreached}: their changes were never reviewed, and apply changes no host of a plan with a hole in it; make a new plan once they are reachable, or one whose --limit leaves them out (\`provision plan show\` says why each was not reached)`,
      { file },
    );
}

function plannedResource(factHash: string, r: RunOutcome['results'][number] | undefined): PlanEntry {
  const changed = r?.status === 'changed' ? r.changes : [];
  const diffs = changed.map((c) => c.diff).filter((d): d is string => !!d);
  return {
    factHash,
    changes: changed.map((c) => c.summary),
    ...(r?.pending ? { pending: r.pending } : {}),
    ...(r ? { kind: r.kind } : {}),
    ...(diffs.length ? { diffs } : {}),
    ...(r?.status === 'failed' ? { error: r.error ?? 'failed' } : {}),
  };
}

/** The plan's signature: its content without `signature`, as written, under a key derived from the installation key (exported for tests that forge plans). */
export function signatureOf(body: Omit<PlanFile, 'signature'>): string {
  return signatureOfText(JSON.stringify(body));
}

function signatureOfText(bodyJson: string): string {
  const key = createHmac('sha256', installationKey()).update('racksmith plan signature v1').digest();
  return 'hmac-sha256:' + createHmac('sha256', key).update(bodyJson).digest('hex');
}

export function writePlan(file: string, plan: Omit<PlanFile, 'signature'>): void {
  // scrubbed first (a change summary may quote a file that holds a secret), then signed as written;
  // parsed back only when scrubbing changed it (a plan of 1,000 hosts is megabytes of JSON)
  const json = JSON.stringify(plan);
  const scrubbed = scrub(json);
  const body = scrubbed === json ? plan : (JSON.parse(scrubbed) as Omit<PlanFile, 'signature'>);
  const signature = scrubbed === json ? signatureOfText(json) : signatureOf(body);
  writeFileAtomic(file, JSON.stringify({ ...body, signature }, null, 2) + '\n', 0o600, '--plan-out', PLAN_FILE);
}

/** A saved plan, refused (exit 3) unless it is exactly as this installation wrote it. */
export function readPlan(file: string): PlanFile {
  const plan = readPlanUnverified(file);
  if (!signatureVerifies(plan))
    throw new InputError(
      'plan was edited since it was made, or made by another racksmith installation (its signature does not match); make a new one',
      { file },
    );
  return plan;
}

/** Whether the plan is exactly as written under this process's key (the installation's or --plan-key's). */
export function signatureVerifies(plan: PlanFile): boolean {
  const { signature, ...body } = plan;
  const want = Buffer.from(signatureOf(body));
  const got = Buffer.from(signature);
  return got.length === want.length && timingSafeEqual(got, want);
}

/** A saved plan of this format (exit 3 otherwise), its signature not checked yet: `plan show` shows an unverified plan with a warning. */
export function readPlanUnverified(file: string): PlanFile {
  let value: unknown;
  try {
    value = JSON.parse(readInputFile(file, 'plan', INPUT_LIMITS.plan).toString('utf8'));
  } catch (e) {
    if (e instanceof InputError) throw e;
    // (JSON.parse's message quotes the text: a file given by mistake may be a password file)
    throw new InputError('cannot read plan: it is not JSON (a saved plan is what --check --plan-out wrote)', { file });
  }
  const v = value as Partial<PlanFile> | null;
  if (v && typeof v === 'object' && v.format === PLAN_FORMAT && v.version !== PLAN_VERSION) {
    const by =
      typeof v.version !== 'number' ? '' : v.version < PLAN_VERSION ? ' (made by an older racksmith)' : ' (made by a newer racksmith)';
    throw new InputError(
      `plan format version ${printable(String(v.version))}${by} is not supported (this racksmith reads ${PLAN_VERSION}); make a new one`,
      { file },
    );
  }
  validateOrThrow(validatePlan, value, { pos: () => ({ file }) });
  return value as PlanFile;
}

/** `24h`, `90m`, `3600s`, `2d` -> milliseconds. */
export function parseDuration(s: string): number {
  const m = /^(\d+)\s*(s|m|h|d)$/.exec(s.trim());
  if (!m) throw new InputError(`--max-plan-age must look like 90m, 24h or 2d, got '${printable(s)}'`);
  const ms = Number(m[1]) * { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[m[2] as 's' | 'm' | 'h' | 'd'];
  // A plan is a review of the hosts as they were: a year old, it says nothing about them now.
  if (!(ms >= 1000 && ms <= MAX_PLAN_AGE_MS)) throw new InputError(`--max-plan-age must be from 1s to 366d, got '${printable(s)}'`);
  return ms;
}

export const MAX_PLAN_AGE_MS = 366 * 86400e3;

/** A duration in the unit a person reads it in: `45 s`, `1 minute`, `90 minutes`, `26 hours`, `3 days`. */
export function durationText(ms: number): string {
  const [n, unit] =
    ms < 120e3
      ? [Math.round(ms / 1e3), 'second']
      : ms < 7200e3
        ? [Math.round(ms / 60e3), 'minute']
        : ms < 172800e3
          ? [Math.round(ms / 3600e3), 'hour']
          : [Math.round(ms / 86400e3), 'day'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** Refuse plans that are too old or were made for other inputs. */
export function checkPlan(
  plan: PlanFile,
  file: string,
  now: { inventory: Inventory; code: CodeHashes; maxAgeMs: number; selection: string[] },
): void {
  checkPlanSucceeded(plan, file);
  const age = Date.now() - Date.parse(plan.createdAt);
  if (age < 0 || Number.isNaN(age)) throw new InputError(`plan's createdAt (${plan.createdAt}) is not a time in the past`, { file });
  if (!(age <= now.maxAgeMs)) {
    throw new InputError(`plan is ${durationText(age)} old; the limit is ${durationText(now.maxAgeMs)} (--max-plan-age). Make a new one`, {
      file,
    });
  }
  if (plan.inventoryFingerprint !== inventoryFingerprint(now.inventory)) {
    throw new InputError('plan was made for another version of the inventory (hosts, groups or variables changed since); make a new one', {
      file,
    });
  }
  const same = (a: string[], b: string[]) => a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);
  if (!same(plan.selection, now.selection))
    throw new InputError(
      `plan's hosts are not the hosts its selection reaches in this inventory (plan: ${plan.selection.length}, now: ${now.selection.length}); make a new one`,
      { file },
    );
  const stray = Object.keys(plan.hosts).filter((h) => !plan.selection.includes(h));
  if (stray.length) throw new InputError(`plan lists hosts outside its selection: ${stray.slice(0, 10).join(', ')}`, { file });
  const changed = changedCode(plan.code, now.code);
  if (changed.length || plan.playbookFingerprint !== codeDigest(plan.code)) {
    const list = changed.length > 10 ? [...changed.slice(0, 10), `and ${changed.length - 10} more`] : changed;
    throw new InputError(
      `plan was made for other code: ${list.join(', ') || 'its code fingerprint does not match its file list'} changed since; make a new one`,
      { file },
    );
  }
}

export function plannedFrom(plan: PlanFile): Map<string, Map<string, Map<string, PlannedResource>>> {
  // what apply checks: the reviewed fact hashes and summaries (kind and diffs are for reading)
  const planned = ({ factHash, changes, pending }: PlanEntry): PlannedResource => ({ factHash, changes, ...(pending ? { pending } : {}) });
  return new Map(
    Object.entries(plan.hosts).map(([h, plays]) => [
      h,
      new Map(Object.entries(plays).map(([p, rs]) => [p, new Map(Object.entries(rs).map(([id, e]) => [id, planned(e)]))])),
    ]),
  );
}
