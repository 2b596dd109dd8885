import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Inventory } from '../inventory/model.ts';
import { InputError } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import { lazySchema, validateOrThrow } from '../util/validate.ts';
import type { RunOutcome } from '../engine/run.ts';
import type { PlannedResource } from '../engine/host-run.ts';
import { changedCode, codeDigest, type CodeHashes } from './code.ts';

export const PLAN_FORMAT = 'racksmith-plan';
export const PLAN_VERSION = 2;

/**
 * A reviewed dry run, for a change window: per host and play, the hash of every resource's facts
 * and the change summaries that were shown. `provision apply` re-probes and refuses any host
 * whose facts moved. Secrets never appear: values serialise masked, facts only as hashes.
 */
export interface PlanFile {
  format: typeof PLAN_FORMAT;
  version: number;
  createdAt: string;
  /** The provision arguments of the reviewed run (without --check/--plan-out). */
  argv: string[];
  cwd: string;
  inventoryFingerprint: string;
  /** The digest of `code`. */
  playbookFingerprint: string;
  /** sha256 of every module the playbooks load and of racksmith's sources (plan/code.ts). */
  code: CodeHashes;
  hosts: Record<string, Record<string, Record<string, PlannedResource>>>;
}

const planSchema = {
  type: 'object',
  required: ['format', 'version', 'createdAt', 'argv', 'cwd', 'inventoryFingerprint', 'playbookFingerprint', 'code', 'hosts'],
  properties: {
    format: { const: PLAN_FORMAT },
    version: { type: 'integer' },
    createdAt: { type: 'string' },
    argv: { type: 'array', items: { type: 'string' } },
    cwd: { type: 'string' },
    inventoryFingerprint: { type: 'string' },
    playbookFingerprint: { type: 'string' },
    code: { type: 'object', additionalProperties: { type: 'string' } },
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
            },
          },
        },
      },
    },
  },
};
const validatePlan = lazySchema(planSchema); // compiled when a plan is read, not at start-up

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

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

export function makePlan(o: { argv: string[]; cwd: string; inventory: Inventory; code: CodeHashes; outcome: RunOutcome }): PlanFile {
  // each result by host, play and id: one pass over them, not a search per fact hash
  const results = new Map<string, RunOutcome['results'][number]>();
  for (const r of o.outcome.results) results.set(`${r.host}\0${r.play}\0${r.id}`, r);
  const hosts: PlanFile['hosts'] = {};
  for (const [host, byPlay] of o.outcome.factHashes) {
    hosts[host] = {};
    for (const [play, hashes] of byPlay) {
      hosts[host][play] = {};
      for (const [id, factHash] of hashes) {
        const r = results.get(`${host}\0${play}\0${id}`);
        hosts[host][play][id] = {
          factHash,
          changes: r?.status === 'changed' ? r.changes.map((c) => c.summary) : [],
          ...(r?.pending ? { pending: r.pending } : {}),
        };
      }
    }
  }
  return {
    format: PLAN_FORMAT,
    version: PLAN_VERSION,
    createdAt: new Date().toISOString(),
    argv: o.argv,
    cwd: o.cwd,
    inventoryFingerprint: inventoryFingerprint(o.inventory),
    playbookFingerprint: codeDigest(o.code),
    code: o.code,
    hosts,
  };
}

export function writePlan(file: string, plan: PlanFile): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(plan, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, file);
}

export function readPlan(file: string): PlanFile {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`cannot read plan: ${(e as Error).message}`, { file });
  }
  validateOrThrow(validatePlan, value, { pos: () => ({ file }) });
  const plan = value as PlanFile;
  if (plan.version !== PLAN_VERSION)
    throw new InputError(`plan format version ${plan.version} is not supported (this racksmith reads ${PLAN_VERSION})`, { file });
  return plan;
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

/** Refuse plans that are too old or were made for other inputs. */
export function checkPlan(plan: PlanFile, file: string, now: { inventory: Inventory; code: CodeHashes; maxAgeMs: number }): void {
  const age = Date.now() - Date.parse(plan.createdAt);
  if (!(age <= now.maxAgeMs)) {
    throw new InputError(
      `plan is ${Math.round(age / 60000)} minutes old; the limit is ${Math.round(now.maxAgeMs / 60000)} (--max-plan-age). Make a new one`,
      { file },
    );
  }
  if (plan.inventoryFingerprint !== inventoryFingerprint(now.inventory)) {
    throw new InputError('plan was made for another version of the inventory (hosts, groups or variables changed since); make a new one', {
      file,
    });
  }
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
  return new Map(
    Object.entries(plan.hosts).map(([h, plays]) => [h, new Map(Object.entries(plays).map(([p, rs]) => [p, new Map(Object.entries(rs))]))]),
  );
}
