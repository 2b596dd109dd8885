import type { Recap } from '../engine/events.ts';
import { printable } from '../util/printable.ts';
import { playbookSources, runner } from './provenance.ts';
import { newRunId, readRecord, recordIds, removeRun, startOfId, writeRecord, type RunRecord } from './record.ts';
import { stillRunning, thisProcess } from './run-process.ts';
import { drainsLeft, keptLedgers, removeLedger } from './drain-ledger.ts';
import { DEFAULT_RETENTION, spareDrainers } from './select.ts';

export interface RunStart {
  argv: string[];
  playbooks: string[];
  inventoryFingerprint: string;
  labels: Record<string, string>;
  check: boolean;
  journal: string;
  /** The hosts the run reaches, with their groups. */
  hosts: Array<{ name: string; groups: string[] }>;
}

export interface RunRecorder {
  readonly id: string;
  /** Whether the record's last write succeeded: `provision runs show ID` can show it. */
  readonly written: boolean;
  /** Record the end (counts, exit code), then apply the default retention. */
  finish(recap: Recap): void;
}

/**
 * The run's history record, written when it starts (a run that never ends keeps a record with no
 * end) and when it ends. The history is a record, not a gate: a record that cannot be written is a
 * warning, never a failed run.
 */
export function startRecord(s: RunStart, warn: (message: string) => void): RunRecorder {
  const proc = thisProcess();
  const record: RunRecord = {
    id: newRunId(),
    start: new Date().toISOString(),
    ...runner(),
    ...(proc ? { process: proc } : {}),
    argv: s.argv,
    cwd: process.cwd(),
    playbooks: playbookSources(s.playbooks),
    inventoryFingerprint: s.inventoryFingerprint,
    labels: s.labels,
    check: s.check,
    journal: s.journal,
    hosts: Object.fromEntries(
      s.hosts.map((h) => [
        h.name,
        { ok: 0, changed: 0, failed: 0, skipped: 0, unreachable: false, groups: h.groups.filter((g) => g !== 'all') },
      ]),
    ),
  };
  let written = false;
  const save = () => {
    try {
      writeRecord(record);
      return (written = true);
    } catch (e) {
      warn(`run history: cannot write the record of run ${record.id}: ${printable((e as Error).message)}`);
      return (written = false);
    }
  };
  save();
  return {
    id: record.id,
    get written() {
      return written;
    },
    finish(recap) {
      record.end = new Date().toISOString();
      record.exitCode = recap.exitCode;
      for (const h of recap.hosts) {
        record.hosts[h.host] = {
          ok: h.ok,
          changed: h.changed,
          ...(h.pending ? { pending: h.pending } : {}),
          failed: h.failed,
          skipped: h.skipped,
          unreachable: h.unreachable,
          ...(h.error !== undefined ? { error: h.error } : {}),
          groups: record.hosts[h.host]?.groups ?? [],
        };
      }
      if (!save()) return;
      try {
        // by the ids alone (a fleet's records are large): only the runs to remove are read
        const before = Date.now() - DEFAULT_RETENTION.days * 86400e3;
        const old = recordIds().filter((id, i) => i >= DEFAULT_RETENTION.keep || startOfId(id) < before);
        // (a run that may have left nodes out of scheduling stays: drain-ledger.ts)
        const { gone } = spareDrainers(
          old.map((id) => ({ id })),
          drainsLeft(keptLedgers(warn)),
        );
        for (const { id } of gone) {
          try {
            const r = readRecord(id);
            if (stillRunning(r, record.controller)) continue; // (another run of this controller, still under way)
            removeRun(r);
            removeLedger(id); // (its nodes all taken over since, said so there)
          } catch (e) {
            warn(`run history: retention: ${printable((e as Error).message)}`);
          }
        }
      } catch (e) {
        warn(`run history: retention: ${printable((e as Error).message)}`);
      }
    },
  };
}
