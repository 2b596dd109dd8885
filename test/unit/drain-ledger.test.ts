// Which nodes a run may have left out of scheduling (history/drain-ledger.ts), and retention and
// `runs prune` keeping such a run (select.ts spareDrainers): the ledger file through a run's drains,
// a takeover taking the node off the dead run's ledger, and the split of the runs to prune.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { drainLedger, drainsLeft, ledgerFile } from '../../src/history/drain-ledger.ts';
import { recordIds, runsDir } from '../../src/history/record.ts';
import { startRecord } from '../../src/history/recorder.ts';
import { spareDrainers } from '../../src/history/select.ts';

const A = '20261206T101500Z-aaaaaa';
const B = '20261206T111500Z-bbbbbb';
const n7 = { via: 'slurm', controller: 'ctl1', node: 'n7' };
const n8 = { via: 'slurm', controller: 'ctl1', node: 'n8' };

describe('spareDrainers: the runs to prune but those that may have left nodes out', () => {
  it('keeps each run with a ledger, with its nodes; prunes the others', () => {
    const gone = [{ id: A }, { id: B }, { id: 'C' }];
    expect(spareDrainers(gone, new Map([[B, [n7]]]))).toEqual({ gone: [{ id: A }, { id: 'C' }], kept: [{ run: { id: B }, nodes: [n7] }] });
    expect(spareDrainers(gone, new Map())).toEqual({ gone, kept: [] });
  });
});

describe('drainLedger: the nodes a run may have out, in its file beside its record', () => {
  const saved = process.env.XDG_STATE_HOME;
  const warnings: string[] = [];
  beforeEach(() => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-ledger-'));
    warnings.length = 0;
  });
  afterEach(() => {
    process.env.XDG_STATE_HOME = saved;
  });
  const warn = (m: string) => warnings.push(m);

  it('lists a node from before its drain until it is back; the file goes with the last node', () => {
    const a = drainLedger(A, warn);
    a.taking(n7);
    a.taking(n8);
    expect(drainsLeft()).toEqual(new Map([[A, [n7, n8]]]));
    expect(JSON.parse(readFileSync(ledgerFile(A), 'utf8'))).toEqual({ run: A, nodes: [n7, n8] });
    a.back(n7);
    expect(drainsLeft()).toEqual(new Map([[A, [n8]]]));
    a.back(n8);
    expect(existsSync(ledgerFile(A))).toBe(false);
    expect(drainsLeft()).toEqual(new Map());
    expect(warnings).toEqual([]);
  });

  it('a run that takes a node over takes it off the dead run’s ledger (only that node)', () => {
    const dead = drainLedger(A, warn);
    dead.taking(n7);
    dead.taking(n8);
    const b = drainLedger(B, warn);
    b.taking(n7);
    b.takenOver(A, n7);
    expect(drainsLeft()).toEqual(
      new Map([
        [A, [n8]],
        [B, [n7]],
      ]),
    );
    b.takenOver(A, n8);
    expect(drainsLeft()).toEqual(new Map([[B, [n7]]]));
    b.takenOver('not-a-run-id', n7); // (a mark of an older racksmith: nothing to do)
    expect(warnings).toEqual([]);
  });

  it('a ledger that cannot be written is a warning', () => {
    process.env.XDG_STATE_HOME = '/dev/null';
    drainLedger(A, warn).taking(n7);
    expect(warnings).toEqual([expect.stringMatching(/^run history: cannot write the drain ledger of run 20261206T101500Z-aaaaaa: /)]);
  });
});

describe('the retention after every run keeps a run that may have left nodes out', () => {
  const saved = process.env.XDG_STATE_HOME;
  afterEach(() => {
    process.env.XDG_STATE_HOME = saved;
  });
  it('a run older than 90 days with a ledger stays; one without goes', () => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-retention-'));
    const OLD_OUT = '20200101T000000Z-aaaaaa';
    const OLD = '20200101T000000Z-bbbbbb';
    mkdirSync(runsDir(), { recursive: true });
    for (const id of [OLD_OUT, OLD])
      writeFileSync(
        join(runsDir(), `${id}.json`),
        JSON.stringify({ id, start: '2020-01-01T00:00:00.000Z', journal: '/nonexistent', hosts: {} }),
      );
    drainLedger(OLD_OUT, () => undefined).taking(n7);
    const warnings: string[] = [];
    const run = startRecord(
      { argv: [], playbooks: [], inventoryFingerprint: '', labels: {}, check: false, journal: '/nonexistent', hosts: [] },
      (m) => warnings.push(m),
    );
    run.finish({ hosts: [], exitCode: 0, check: false, elapsedMs: 0 });
    expect(warnings).toEqual([]);
    expect(recordIds()).toEqual([run.id, OLD_OUT]);
  });
});
