// Issue #37, run history: which runs a listing keeps (host, label, since, failed), which runs
// retention removes (--keep, --older-than), labels and ages as given on the command line, run ids.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isRunId, newRunId, startOfId, type RunRecord } from '../../src/history/record.ts';
import { parseAge, parseLabels, parseSince, runFailed, runsToPrune, selectRuns } from '../../src/history/select.ts';
import { InputError } from '../../src/util/errors.ts';

const counts = { ok: 1, changed: 0, failed: 0, skipped: 0, unreachable: false };
const run = (id: string, start: string, over: Partial<RunRecord> = {}): RunRecord => ({
  id,
  start,
  end: start,
  user: 'ops',
  controller: 'ctl',
  argv: [],
  cwd: '/srv',
  playbooks: [],
  inventoryFingerprint: 'f',
  labels: {},
  check: false,
  journal: '/tmp/j',
  exitCode: 0,
  hosts: { h1: counts },
  ...over,
});

// newest first, as readRecords gives them
const runs = [
  run('r4', '2026-12-04T10:00:00Z', { labels: { change: 'CHG-2' }, hosts: { h2: { ...counts, failed: 1 } }, exitCode: 1 }),
  run('r3', '2026-12-03T10:00:00Z', { labels: { change: 'CHG-1', team: 'storage' }, end: undefined, exitCode: undefined }),
  run('r2', '2026-12-02T10:00:00Z', { hosts: { h1: counts, h2: { ...counts, unreachable: true } }, exitCode: 1 }),
  run('r1', '2026-12-01T10:00:00Z', { labels: { change: 'CHG-1' }, check: true, exitCode: 2 }),
];
const ids = (rs: RunRecord[]) => rs.map((r) => r.id);

describe('selectRuns', () => {
  it.each<[string, Parameters<typeof selectRuns>[1], string[]]>([
    ['no filter: all, newest first', {}, ['r4', 'r3', 'r2', 'r1']],
    ['--host h2', { host: 'h2' }, ['r4', 'r2']],
    ['--host nobody', { host: 'nobody' }, []],
    ['--label change=CHG-1', { labels: { change: 'CHG-1' } }, ['r3', 'r1']],
    ['two labels: both must match', { labels: { change: 'CHG-1', team: 'storage' } }, ['r3']],
    ['--since 2026-12-02T10:00Z (inclusive)', { since: Date.parse('2026-12-02T10:00:00Z') }, ['r4', 'r3', 'r2']],
    ['--failed: a failed host, an unreachable one, or no end', { failed: true }, ['r4', 'r3', 'r2']],
    ['--failed --host h1', { failed: true, host: 'h1' }, ['r3', 'r2']],
  ])('%s', (_, f, want) => expect(ids(selectRuns(runs, f))).toEqual(want));

  it('a check run that found changes (exit 2) did not fail', () => expect(runFailed(runs[3])).toBe(false));
});

describe('runsToPrune', () => {
  const now = Date.parse('2026-12-04T12:00:00Z');
  it.each<[string, { keep?: number; before?: number }, string[]]>([
    ['--keep 2: the older ones', { keep: 2 }, ['r2', 'r1']],
    ['--keep 0: all', { keep: 0 }, ['r4', 'r3', 'r2', 'r1']],
    ['--keep 10: none', { keep: 10 }, []],
    ['--older-than 2d', { before: now - parseAge('--older-than', '2d') }, ['r2', 'r1']],
    ['both: either removes', { keep: 3, before: now - parseAge('--older-than', '3d') }, ['r1']],
  ])('%s', (_, o, want) => expect(ids(runsToPrune(runs, o))).toEqual(want));
});

describe('command-line values', () => {
  it.each([
    [['change=CHG-1234'], { change: 'CHG-1234' }],
    [['change=CHG-1', 'team=storage'], { change: 'CHG-1', team: 'storage' }],
    [['change=a=b'], { change: 'a=b' }],
    [['change=CHG-1', 'change=CHG-2'], { change: 'CHG-2' }],
    [[], {}],
  ])('--label %j', (given, want) => expect(parseLabels(given)).toEqual(want));

  it.each([['change'], ['=x'], ['change='], ['a b=c'], ['k=line\nbreak'], [`k=${'x'.repeat(257)}`]])('--label %j is bad input', (l) =>
    expect(() => parseLabels([l])).toThrow(InputError),
  );

  it.each([
    ['90m', 90 * 60e3],
    ['24h', 86400e3],
    ['7d', 7 * 86400e3],
    ['2w', 14 * 86400e3],
  ])('age %s', (s, ms) => expect(parseAge('--older-than', s)).toBe(ms));

  it.each([['1y'], ['-1d'], ['d'], ['1.5d'], ['']])('age %j is bad input', (s) =>
    expect(() => parseAge('--older-than', s)).toThrow(/--older-than must look like/),
  );

  it.each([
    ['0d', '--older-than 0d: an age of 0 (give at least 1m)'],
    ['0m', '--older-than 0m: an age of 0'],
    ['1000000w', '--older-than 1000000w: more than 100 years'],
  ])('age %j says what is wrong with it', (s, says) => expect(() => parseAge('--older-than', s)).toThrow(says));

  it('--since: an age back from now, or a date', () => {
    const now = Date.parse('2026-12-04T12:00:00Z');
    expect(parseSince('1d', now)).toBe(Date.parse('2026-12-03T12:00:00Z'));
    expect(parseSince('2026-12-01', now)).toBe(Date.parse('2026-12-01T00:00:00Z'));
    expect(parseSince('2026-12-01T08:00Z', now)).toBe(Date.parse('2026-12-01T08:00:00Z'));
    expect(() => parseSince('yesterday', now)).toThrow(/--since must be an age/);
    expect(() => parseSince('2026-13-45', now)).toThrow(/--since must be an age/);
    // a day the month does not have, not rolled over into the next month
    expect(() => parseSince('2026-02-30', now)).toThrow('--since 2026-02-30: 2026-02 has no day 30');
    expect(parseSince('2028-02-29', now)).toBe(Date.parse('2028-02-29T00:00:00Z'));
  });

  it('run ids sort by start time and are recognised', () => {
    const a = newRunId(new Date('2026-12-04T23:30:12.345Z'));
    expect(a).toMatch(/^20261204T233012Z-[0-9a-f]{6}$/);
    expect(isRunId(a)).toBe(true);
    expect(newRunId(new Date('2026-12-05T00:00:00Z')) > a).toBe(true);
    expect(isRunId('../../etc/passwd')).toBe(false);
    expect(isRunId('journal.ndjson')).toBe(false);
  });
});

describe('ids on disk', () => {
  it('a run id gives its start second back', () => {
    const at = new Date('2026-12-04T23:30:12.345Z');
    expect(startOfId(newRunId(at))).toBe(Date.parse('2026-12-04T23:30:12Z'));
  });
});

describe('a record that cannot be written', () => {
  it('is a warning, and the run prints no run id to look up', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-norecord-'));
    // where the history would go is a file: no record can be written there
    mkdirSync(join(dir, 'state', 'racksmith'), { recursive: true });
    writeFileSync(join(dir, 'state', 'racksmith', 'runs'), 'not a directory\n');
    writeFileSync(join(dir, 'hosts.yml'), 'all:\n  hosts:\n    here:\n      ansible_connection: local\n');
    writeFileSync(
      join(dir, 'pb.ts'),
      `import { file, playbook } from ${JSON.stringify(join(import.meta.dirname, '../../src/index.ts'))};
export default playbook({ name: 't', hosts: 'all', resources: () => [file({ path: ${JSON.stringify(join(dir, 'out'))}, content: 'x\\n' })] });
`,
    );
    const r = spawnSync(
      process.execPath,
      [join(import.meta.dirname, '../../bin/provision.js'), join(dir, 'pb.ts'), '-i', join(dir, 'hosts.yml'), '--check'],
      {
        encoding: 'utf8',
        env: { ...process.env, XDG_STATE_HOME: join(dir, 'state') },
      },
    );
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^warning: run history: cannot write the record of run /m);
    expect(r.stderr).not.toMatch(/^run: /m);
    expect(r.stderr).toMatch(/^journal: /m);
  });
});
