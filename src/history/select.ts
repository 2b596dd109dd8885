import { InputError } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import type { DrainNode } from '../contract/drain.ts';
import type { RunRecord } from './record.ts';

/** What `provision runs` is asked to list. */
export interface RunFilter {
  host?: string;
  labels?: Record<string, string>;
  /** Runs that started at or after this time (ms since the epoch). */
  since?: number;
  failed?: boolean;
}

/** A run that did not end well: a host failed or was unreachable, or it never finished (no end). */
export function runFailed(r: RunRecord): boolean {
  if (r.end === undefined || r.exitCode === undefined) return true;
  return r.exitCode === 1 || r.exitCode === 3 || Object.values(r.hosts).some((h) => h.failed > 0 || h.unreachable || h.error !== undefined);
}

/** The runs a filter keeps, in the order given (newest first). */
export function selectRuns(records: RunRecord[], f: RunFilter): RunRecord[] {
  return records.filter(
    (r) =>
      (f.host === undefined || f.host in r.hosts) &&
      Object.entries(f.labels ?? {}).every(([k, v]) => r.labels[k] === v) &&
      (f.since === undefined || Date.parse(r.start) >= f.since) &&
      (!f.failed || runFailed(r)),
  );
}

/** The runs that retention removes: beyond the `keep` newest, or started before `before` (ms). Records come newest first. */
export function runsToPrune(records: RunRecord[], o: { keep?: number; before?: number }): RunRecord[] {
  return records.filter((r, i) => (o.keep !== undefined && i >= o.keep) || (o.before !== undefined && Date.parse(r.start) < o.before));
}

/**
 * Of the runs retention would remove, those that may have left nodes out of scheduling (a drain
 * ledger, drain-ledger.ts) are kept: without its record a later run cannot prove the run dead, and
 * its nodes would stay out for ever.
 */
export function spareDrainers<T extends { id: string }>(
  gone: readonly T[],
  left: ReadonlyMap<string, DrainNode[]>,
): { gone: T[]; kept: Array<{ run: T; nodes: DrainNode[] }> } {
  return {
    gone: gone.filter((r) => !left.has(r.id)),
    kept: gone.filter((r) => left.has(r.id)).map((run) => ({ run, nodes: left.get(run.id)! })),
  };
}

/** Kept after every run: the 200 newest runs, none older than 90 days (docs/cli.md). */
export const DEFAULT_RETENTION = { keep: 200, days: 90 } as const;

const UNIT_MS = { m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 } as const;

/** `90m`, `24h`, `7d`, `2w` -> milliseconds (from 1 minute to 100 years). */
export function parseAge(flag: string, s: string): number {
  const m = /^(\d+)(m|h|d|w)$/.exec(s.trim());
  if (!m) throw new InputError(`${flag} must look like 90m, 24h, 7d or 2w, got '${printable(s)}'`);
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  if (ms === 0) throw new InputError(`${flag} ${printable(s)}: an age of 0 (give at least 1m)`);
  if (ms > MAX_AGE_MS) throw new InputError(`${flag} ${printable(s)}: more than 100 years`);
  return ms;
}

const MAX_AGE_MS = 100 * 365.25 * 86400e3;

/** --since: an age (`24h`, `7d`) or a date/time (`2026-12-01`, `2026-12-01T08:00Z`) -> ms since the epoch. */
export function parseSince(s: string, now = Date.now()): number {
  const date = /^(\d{4})-(\d{2})-(\d{2})([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.exec(s.trim());
  if (date) {
    // (Date.parse rolls 2026-02-30 over into March: a day the month does not have is a typo)
    const [y, mo, d] = [Number(date[1]), Number(date[2]), Number(date[3])];
    if (mo >= 1 && mo <= 12 && d > new Date(Date.UTC(y, mo, 0)).getUTCDate())
      throw new InputError(`--since ${printable(s)}: ${date[1]}-${date[2]} has no day ${d}`);
    const t = Date.parse(s.trim());
    if (!Number.isNaN(t)) return t;
  }
  if (/^\d+[mhdw]$/.test(s.trim())) return now - parseAge('--since', s);
  throw new InputError(`--since must be an age (24h, 7d) or a date (2026-12-01, 2026-12-01T08:00Z), got '${printable(s)}'`);
}

/** `--label KEY=VALUE` (repeatable) -> labels; a key given again takes the last value (--resume's own labels win over the recorded run's; a plan records none, apply's run has its own). */
export function parseLabels(given: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of given) {
    const m = /^([A-Za-z0-9_.-]{1,64})=(.{1,256})$/su.exec(l);
    if (!m || /[\p{Cc}\u2028\u2029]/u.test(m[2]))
      throw new InputError(
        `--label must be KEY=VALUE (KEY: letters, digits, _ . -; VALUE: 1 to 256 printable characters), got '${printable(l)}'`,
      );
    out[m[1]] = m[2];
  }
  return out;
}
