// A run with no end (killed, or the exit-13 bug) was shown as all ok: its record holds only the zero
// counts it started with. `runs show` and `runs` now count its hosts from its journal and say
// unfinished for a host with no recap there.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { newRunId, writeRecord, type RunRecord } from '../../src/history/record.ts';
import { scratchStateDir } from './facts.ts';
import { cli } from './run-cli.ts';

const zero = { ok: 0, changed: 0, failed: 0, skipped: 0, unreachable: false };
const line = (e: object) => JSON.stringify({ ts: '2026-12-06T14:00:00.000Z', ...e });
const resource = (host: string, id: string, status: string, over: object = {}) =>
  line({ type: 'resource', host, play: 'p', id, kind: id.split(':')[0], status, changes: [], ...over });

/** An earlier run that ended, in the same journal (given again with --journal): not this run's. */
const earlierRun = [
  JSON.stringify({ ts: '2026-12-06T13:00:00.000Z', type: 'run_start', playbooks: ['site.ts'], hosts: ['h1', 'h2', 'h3'], check: false }),
  ...['h1', 'h2', 'h3'].map((host) =>
    JSON.stringify({
      ts: '2026-12-06T13:00:01.000Z',
      type: 'host_recap',
      host,
      ok: 2,
      changed: 0,
      failed: 0,
      skipped: 0,
      unreachable: false,
      execs: 1,
    }),
  ),
];

function unfinishedRun(o: { before?: string[] } = {}): RunRecord {
  const dir = mkdtempSync(join(tmpdir(), 'rs-unfinished-'));
  const journal = join(dir, 'j.ndjson');
  writeFileSync(
    journal,
    [
      ...(o.before ?? []),
      line({ type: 'run_start', playbooks: ['site.ts'], hosts: ['h1', 'h2', 'h3'], check: false }),
      resource('h1', 'file:/t/a', 'changed', { changes: [{ summary: 'create /t/a' }] }),
      resource('h1', 'file:/t/b', 'ok'),
      line({ type: 'host_recap', host: 'h1', ok: 1, changed: 1, pending: 0, failed: 0, skipped: 0, unreachable: false, execs: 2 }),
      resource('h2', 'file:/t/a', 'changed', { changes: [{ summary: 'create /t/a' }] }),
      resource('h2', 'line:/t/c:x', 'failed', { error: 'refused: /t/c does not exist' }),
      '{"ts":"2026-12-06T14:00:01.000Z","type":"resou', // cut short by the kill
    ].join('\n') + '\n',
  );
  const r: RunRecord = {
    id: newRunId(),
    start: '2026-12-06T14:00:00.000Z',
    user: 'ops',
    controller: 'ctl',
    argv: ['apply', 'p.plan'],
    cwd: dir,
    playbooks: [],
    inventoryFingerprint: 'f',
    labels: {},
    check: false,
    journal,
    hosts: { h1: { ...zero, groups: [] }, h2: { ...zero, groups: [] }, h3: { ...zero, groups: [] } },
  };
  writeRecord(r);
  return r;
}

/** Each host of unfinishedRun() as its journal shows it. */
const AS_THE_JOURNAL_SHOWS = [
  ['h1', 'changed'],
  ['h2', 'failed'],
  ['h3', 'unfinished'],
];
const statusOf = (shown: { hosts: Array<{ name: string; status: string }> }) => shown.hosts.map((h) => [h.name, h.status]);

describe('a run with no end', () => {
  scratchStateDir();

  it('runs show: unfinished, each host as its journal shows it', async () => {
    const r = unfinishedRun();
    const text = await cli(['runs', 'show', r.id]);
    expect(text.stdout).toMatch(/outcome: unfinished/);
    expect(text.stdout).toMatch(/hosts: 3 \(1 failed, 1 unfinished, 1 changed\)/);
    expect(text.stdout).toMatch(/line:\/t\/c:x \(failed\) on 1 host\(s\): h2\n +error: refused/);
    const json = JSON.parse((await cli(['runs', 'show', r.id, '--json'])).stdout);
    expect(statusOf(json)).toEqual(AS_THE_JOURNAL_SHOWS);
  });

  it('a journal holding an earlier run first (--journal given again): only this run is counted', async () => {
    const r = unfinishedRun({ before: earlierRun });
    const json = JSON.parse((await cli(['runs', 'show', r.id, '--json'])).stdout);
    expect(statusOf(json)).toEqual(AS_THE_JOURNAL_SHOWS);
  });

  it('runs: unfinished, with the changes and failures its journal counts', async () => {
    const r = unfinishedRun();
    const list = await cli(['runs']);
    expect(list.stdout).toContain(`${r.id}  2026-12-06T14:00:00Z  unfinished  3 host(s): 2 changed, 1 failed, 0 unreachable`);
    const json = JSON.parse((await cli(['runs', '--json'])).stdout.split('\n')[0]) as RunRecord;
    expect(json.hosts.h2).toMatchObject({ changed: 1, failed: 1 });
  });
});
