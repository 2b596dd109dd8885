// Issue #37, run history: every run recorded (id, user, argv without secrets, playbooks with their
// git revision, labels, per-host counts); `provision runs` lists newest first and filters by host,
// label and failure; `runs show` gives a run per host and resource with diffs; `runs prune` and
// the default retention remove runs and their journals; `--resume ID` re-runs a run's failures.
// A label describes the run it is given to: a plan made with --label does not record it, and its
// apply's run carries only apply's own --label.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, repoRoot, writeInventory, type CliRun } from './helpers.ts';

const PB = 'test/fixtures/playbooks/secrets.ts';
const HOSTS = ['tb3', 'tb4'];
const SECRET = 'RunsSecret-' + Math.random().toString(36).slice(2, 10);
const state = mkdtempSync(join(tmpdir(), 'rs-runs-state-'));
const env = { XDG_STATE_HOME: state };
const runs = (args: string[]) => provision(['runs', ...args], { env });
const lines = (r: CliRun) => r.stdout.split('\n').filter(Boolean);
const ids = (r: CliRun) => lines(r).map((l) => JSON.parse(l).id as string);

let inv: string;
/** run ids: a directory made on tb3 (CHG-1), a failing edit on tb4 (CHG-2), a dry run of both */
const id: Record<'ok' | 'failed' | 'check', string> = { ok: '', failed: '', check: '' };
const runId = (r: CliRun) => /^run: (\S+)/m.exec(r.stderr)?.[1] ?? '';

beforeAll(async () => {
  await tb.reset(HOSTS);
  inv = writeInventory({ hosts: HOSTS, groups: { rackA: { hosts: ['tb3'] }, rackB: { hosts: ['tb4'] } } });
  const e = JSON.stringify({ fx_secret: { secret: SECRET } });
  const ok = await provision([PB, '-i', inv, '-l', 'tb3', '-e', 'fx_stage=none', '-e', e, '--label', 'change=CHG-1'], { env });
  expect(ok.code, ok.stderr).toBe(0);
  id.ok = runId(ok);
  const failed = await provision([PB, '-i', inv, '-l', 'tb4', '--label', 'change=CHG-2', '--label', 'team=storage'], { env });
  expect(failed.code, failed.stderr).toBe(1);
  id.failed = runId(failed);
  const check = await provision([PB, '-i', inv, '-e', 'fx_stage=none', '--check'], { env });
  expect(check.code, check.stderr).toBe(0); // both converged by now: nothing to change
  id.check = runId(check);
}, 120_000);

describe('provision runs', () => {
  it('lists every run newest first, one JSON object per line with its id', async () => {
    const r = await runs(['--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(ids(r)).toEqual([id.check, id.failed, id.ok]);
    const text = await runs([]);
    expect(lines(text).map((l) => l.split('  ')[0])).toEqual([id.check, id.failed, id.ok]);
    expect(lines(text)[1]).toMatch(/ FAILED {2}1 host\(s\): 1 changed, 1 failed, 0 unreachable {2}\S+@\S+ {2}change=CHG-2,team=storage/);
  });

  it('a record: who, where, argv without the secret, playbooks with their git revision, labels, per-host counts', async () => {
    const r = JSON.parse(lines(await runs(['--json'])).find((l) => l.includes(id.ok))!);
    expect(r.argv).toEqual(expect.arrayContaining([PB, '--limit', 'tb3', '--label', 'change=CHG-1']));
    expect(JSON.stringify(r)).not.toContain(SECRET);
    expect(JSON.stringify(r.argv)).toMatch(/<secret hmac:[0-9a-f]{16}…>/);
    const head = execFileSync('git', ['-C', repoRoot, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    expect(r.playbooks).toEqual([{ path: join(repoRoot, PB), git: { revision: head, dirty: expect.any(Boolean) } }]);
    expect(r.labels).toEqual({ change: 'CHG-1' });
    expect(r.hosts).toEqual({
      tb3: expect.objectContaining({ changed: 1, failed: 0, unreachable: false, groups: expect.arrayContaining(['rackA']) }),
    });
    expect(r.exitCode).toBe(0);
    expect(Date.parse(r.end)).toBeGreaterThanOrEqual(Date.parse(r.start));
    expect(r.user).toBeTruthy();
    expect(r.controller).toBeTruthy();
    expect(existsSync(r.journal)).toBe(true);
  });

  it.each<[string, string[], Array<keyof typeof id>]>([
    ['--host tb3', ['--host', 'tb3'], ['check', 'ok']],
    ['--host tb4', ['--host', 'tb4'], ['check', 'failed']],
    ['--label change=CHG-2', ['--label', 'change=CHG-2'], ['failed']],
    ['--label change=CHG-1 --host tb4', ['--label', 'change=CHG-1', '--host', 'tb4'], []],
    ['--failed', ['--failed'], ['failed']],
    ['--since 1h', ['--since', '1h'], ['check', 'failed', 'ok']],
  ])('filters: %s', async (_, args, want) => {
    const r = await runs([...args, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(ids(r)).toEqual(want.map((k) => id[k]));
    if (!want.length) expect(r.stderr).toMatch(/no run of the \d+ in .* matches/);
  });

  it('runs show: per host and resource, the failure and the change, as text, JSON and a page', async () => {
    const text = await runs(['show', id.failed]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/labels: change=CHG-2, team=storage/);
    expect(text.stdout).toMatch(/line:\/srv\/rs-secrets\/app.conf:\^mode = +\(failed\) on 1 host\(s\): tb4\n +error: refused: /);
    expect(text.stdout).toMatch(/tb4 \(failed\): \[\d\] line:/);
    const json = JSON.parse((await runs(['show', id.ok, '--json'])).stdout);
    expect(json.groups).toEqual([expect.objectContaining({ id: 'directory:/srv/rs-secrets', status: 'changed', hosts: ['tb3'] })]);
    const page = join(mkdtempSync(join(tmpdir(), 'rs-runs-')), 'run.html');
    const html = await runs(['show', id.failed, '--html', page]);
    expect(html.code, html.stderr).toBe(0);
    expect(readFileSync(page, 'utf8')).toMatch(/<tr data-host="tb4" data-groups="[^"]*rackB[^"]*" data-status="failed"/);
  });

  it('bad input is exit 3: an unknown run, a filter that is no filter, an option of another subcommand', async () => {
    for (const args of [
      ['show', '20200101T000000Z-000000'],
      ['show', '../x'],
      ['--since', 'yesterday'],
      ['--label', 'nokey'],
      ['prune'],
      ['--keep', '1'],
      ['show'],
    ]) {
      const r = await runs(args);
      expect(r.code, args.join(' ')).toBe(3);
      expect(r.stderr).toMatch(/^error: /);
    }
  });
});

describe('--resume ID', () => {
  it("runs that run's playbooks and options on the hosts that failed there, and is recorded as such", async () => {
    const seed = await tb.hostExec('tb4', "mkdir -p /srv/rs-secrets && printf 'mode = off\\n' > /srv/rs-secrets/app.conf");
    expect(seed.code, seed.stderr).toBe(0);
    const r = await provision(['--resume', id.failed, '--json'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect([...new Set(r.events.filter((e) => e.type === 'host_recap').map((e) => e.host))]).toEqual(['tb4']);
    const rec = JSON.parse(lines(await runs(['--json']))[0]);
    expect(rec.labels).toEqual({ change: 'CHG-2', team: 'storage' });
    expect(rec.argv).toEqual(expect.arrayContaining([PB, '--limit', 'tb4', '--resume']));
    expect(rec.exitCode).toBe(0);
    const playbook = await provision(['--resume', id.failed, PB], { env });
    expect(playbook.code).toBe(3);
    expect(playbook.stderr).toMatch(/give no playbook here/);
  });
});

describe('retention', () => {
  it('runs prune --keep N keeps the N newest and removes the others with their journals', async () => {
    const before = lines(await runs(['--json'])).map((l) => JSON.parse(l) as { id: string; journal: string });
    expect(before.length).toBeGreaterThanOrEqual(3);
    const r = await runs(['prune', '--keep', '2']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`pruned ${before.length - 2} run\\(s\\)`));
    expect(ids(await runs(['--json']))).toEqual(before.slice(0, 2).map((b) => b.id));
    for (const gone of before.slice(2)) expect(existsSync(gone.journal)).toBe(false);
    for (const kept of before.slice(0, 2)) expect(existsSync(kept.journal)).toBe(true);
  });

  it('after each run, runs older than 90 days are removed (the default retention)', async () => {
    const dir = join(state, 'racksmith', 'runs');
    mkdirSync(dir, { recursive: true });
    const old = '20200101T000000Z-abcdef';
    writeFileSync(
      join(dir, `${old}.json`),
      JSON.stringify({
        id: old,
        start: '2020-01-01T00:00:00.000Z',
        end: '2020-01-01T00:00:01.000Z',
        user: 'u',
        controller: 'c',
        argv: [],
        cwd: '/',
        playbooks: [],
        inventoryFingerprint: 'f',
        labels: {},
        check: false,
        journal: join(state, 'racksmith', 'journal', 'old.ndjson'),
        exitCode: 0,
        hosts: {},
      }),
    );
    expect(ids(await runs(['--json']))).toContain(old);
    const r = await provision([PB, '-i', inv, '-l', 'tb3', '-e', 'fx_stage=none'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(readdirSync(dir)).not.toContain(`${old}.json`);
    expect(ids(await runs(['--json']))).not.toContain(old);
  });

  it("runs prune --older-than 1d keeps today's runs", async () => {
    const n = ids(await runs(['--json'])).length;
    const r = await runs(['prune', '--older-than', '1d', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/pruned 0 run\(s\)/);
    expect(ids(await runs(['--json'])).length).toBe(n);
  });
});

describe('provision exec in the history', () => {
  it('an exec is a run: its command and label recorded, a host that exited non-zero counted failed; --resume refuses it', async () => {
    const own = { XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'rs-runs-exec-')) };
    const line = '[ "$(hostname)" = tb4 ] && exit 3; echo fine';
    const ex = await provision(['exec', 'tb3:tb4', '-i', inv, '--label', 'change=CHG-9', '--', line], { env: own });
    expect(ex.code, ex.stderr).toBe(1);
    const execId = runId(ex);
    const listed = await provision(['runs', '--json', '--failed', '--label', 'change=CHG-9'], { env: own });
    expect(ids(listed)).toEqual([execId]);
    const r = JSON.parse(lines(listed)[0]);
    expect(r.argv).toEqual(['exec', 'tb3:tb4', '--inventory', inv, '--label', 'change=CHG-9', '--', line]);
    expect(r.hosts.tb3).toMatchObject({ ok: 1, failed: 0, unreachable: false });
    expect(r.hosts.tb4).toMatchObject({ ok: 0, failed: 1, error: 'exit 3' });
    const resumed = await provision(['--resume', execId, '-i', inv], { env: own });
    expect(resumed.code).toBe(3);
    expect(resumed.stderr).toContain(`run ${execId} was an exec: --resume takes a run of playbooks`);
  });
});

describe('labels and saved plans', () => {
  it("a plan records no --label: apply's run is labelled by apply's own --label only", async () => {
    const own = { XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'rs-runs-plan-')) };
    const plan = join(mkdtempSync(join(tmpdir(), 'rs-runs-plan-')), 'p.plan');
    const check = await provision(
      [PB, '-i', inv, '-l', 'tb3', '-e', 'fx_stage=none', '--check', '--plan-out', plan, '--label', 'change=CHG-7'],
      {
        env: own,
      },
    );
    expect(check.code, check.stderr).toBe(0);
    expect((JSON.parse(readFileSync(plan, 'utf8')) as { argv: string[] }).argv).not.toContain('--label');
    const record = async (r: CliRun) =>
      JSON.parse(lines(await provision(['runs', '--json'], { env: own })).find((l) => l.includes(runId(r)))!) as { labels: object };
    expect((await record(check)).labels).toEqual({ change: 'CHG-7' });
    const bare = await provision(['apply', plan], { env: own });
    expect(bare.code, bare.stderr).toBe(0);
    expect((await record(bare)).labels).toEqual({});
    const labelled = await provision(['apply', plan, '--label', 'window=W1'], { env: own });
    expect(labelled.code, labelled.stderr).toBe(0);
    expect((await record(labelled)).labels).toEqual({ window: 'W1' });
    // the review's label finds the review, not the applies
    expect(ids(await provision(['runs', '--json', '--label', 'change=CHG-7'], { env: own }))).toEqual([runId(check)]);
  });
});
