// `runs show` lists a run's drains from its journal (--drain's drain and resume events): which nodes
// it took out of scheduling, which it put back, which failed, which were already out (someone
// else's) or taken over from a dead run; a run that left nodes out says so at the top and bottom
// of every view, in the text, --json and the page.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { drainLedger, ledgerDir } from '../../src/history/drain-ledger.ts';
import { newRunId, runsDir as runsDirOf, writeRecord, type RunRecord } from '../../src/history/record.ts';
import { runDrains } from '../../src/history/run-drains.ts';
import { runner } from '../../src/history/provenance.ts';
import { runDrainsText } from '../../src/report/drains.ts';
import type { RunDrainEvent } from '../../src/report/model.ts';
import { scratchStateDir } from './facts.ts';
import { cli } from './run-cli.ts';

const HOSTS = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
const counts = { ok: 1, changed: 1, failed: 0, skipped: 0, unreachable: false, groups: ['rack1'] };
const line = (e: object) => JSON.stringify({ ts: '2026-12-06T14:00:01.000Z', ...e });
const via = { via: 'slurm', controller: 'ctl1' };
const drain = (host: string, outcome: string, detail?: string): RunDrainEvent =>
  ({ type: 'drain', host, ...via, outcome, ...(detail ? { detail } : {}) }) as RunDrainEvent;
const resume = (host: string, ok: boolean, detail?: string): RunDrainEvent => ({
  type: 'resume',
  host,
  ...via,
  ok,
  ...(detail ? { detail } : {}),
});
const TAKEN = 'taken over from run 20261206T101500Z-3fa9c1, which did not finish: its process 4242 is gone';
const RESUME_FAILED = 'scontrol resume n4 failed (exit 1): slurm_update error: Invalid node state specified';

/** A run that ended: n1 drained and resumed, n2 someone else's, n3 taken over and resumed, n4 not put back, n5 failed before draining, n6 failed after. */
const ENDED: RunDrainEvent[] = [
  drain('n1', 'drained'),
  drain('n2', 'already', 'drained (maintenance by ops)'),
  drain('n3', 'drained', TAKEN),
  drain('n4', 'drained'),
  drain('n5', 'failed', 'sinfo -n n5 failed (exit 1): no controller'),
  drain('n6', 'failed', 'timed out after 5s waiting for the jobs on n6: job 41 still running'),
  resume('n6', true),
  resume('n1', true),
  resume('n3', true),
  resume('n4', false, RESUME_FAILED),
];

function recordedRun(events: RunDrainEvent[], o: { ended: boolean; check?: boolean; before?: string[]; controller?: string }): RunRecord {
  const dir = mkdtempSync(join(tmpdir(), 'rs-runs-drains-'));
  const journal = join(dir, 'j.ndjson');
  const start = '2026-12-06T14:00:00.000Z';
  writeFileSync(
    journal,
    [
      ...(o.before ?? []),
      JSON.stringify({ ts: start, type: 'run_start', playbooks: ['site.ts'], hosts: HOSTS, check: !!o.check }),
      ...events.map(line),
      '',
    ].join('\n'),
  );
  const r: RunRecord = {
    id: newRunId(),
    start,
    ...(o.ended ? { end: '2026-12-06T14:05:00.000Z', exitCode: 1 } : {}),
    user: 'ops',
    controller: o.controller ?? 'ctl',
    argv: ['apply', 'p.plan'],
    cwd: dir,
    playbooks: [],
    inventoryFingerprint: 'f',
    labels: {},
    check: !!o.check,
    journal,
    hosts: Object.fromEntries(HOSTS.map((h) => [h, counts])),
  };
  writeRecord(r);
  return r;
}

describe('runDrains: the nodes a run left out of scheduling, from its drain and resume events', () => {
  it('a run that ended: only the node whose resume failed', () => {
    expect(runDrains(ENDED, true).stillOut).toEqual([{ host: 'n4', ...via, why: `its resume failed: ${RESUME_FAILED}` }]);
  });

  it('a run with no end (killed): the nodes drained with no resume after, and those whose drain failed with none (not known)', () => {
    const killed = [drain('n1', 'drained'), resume('n1', true), drain('n2', 'drained', TAKEN), drain('n3', 'failed', 'timed out')];
    expect(runDrains(killed, false).stillOut).toEqual([
      { host: 'n2', ...via, why: 'no resume in the journal: the run was killed, or is still running' },
      {
        host: 'n3',
        ...via,
        why: 'its drain failed (timed out) and the run has no end: whether it had taken the node out is not known',
      },
    ]);
  });

  it('a run with no end: a failed drain that took nothing out (blocked) is not out; one that did, with no resume after, is', () => {
    const blocked = { ...drain('n1', 'failed', 'drained (racksmith R0 on c): run R0 is still running (pid 9); ...'), tookOut: false };
    const timedOut = { ...drain('n2', 'failed', 'timed out'), tookOut: true };
    expect(runDrains([blocked, timedOut] as RunDrainEvent[], false).stillOut).toEqual([
      {
        host: 'n2',
        ...via,
        why: 'its drain failed (timed out) after taking the node out, and the run has no end: no resume in the journal',
      },
    ]);
  });

  it('a node whose resume failed stays out, whatever a later drain of it that took nothing out came to', () => {
    const later = { ...drain('n1', 'failed', 'controller ctl: connection refused'), tookOut: false } as RunDrainEvent;
    for (const ended of [true, false])
      expect(runDrains([drain('n1', 'drained'), resume('n1', false, 'exit 1'), later], ended).stillOut).toEqual([
        { host: 'n1', ...via, why: 'its resume failed: exit 1' },
      ]);
  });

  it("a node drained since by someone else, left out by the resume on purpose: not this run's, not still out", () => {
    const left = { ...resume('n1', false), detail: 'drained (ops: bad DIMM): ...', someoneElses: true } as RunDrainEvent;
    expect(runDrains([drain('n1', 'drained'), left], true).stillOut).toEqual([]);
  });

  it("a node not named as its host (racksmith_slurm_node): the node said with the host, in every view's line", () => {
    const named = { ...drain('rack1-n8', 'drained'), node: 'tb8' } as RunDrainEvent;
    const out = runDrains([named], false).stillOut;
    expect(out).toEqual([
      { host: 'rack1-n8', ...via, node: 'tb8', why: 'no resume in the journal: the run was killed, or is still running' },
    ]);
    expect(runDrainsText({ events: [named], stillOut: out, takenOver: [] })).toContain(
      `  STILL OUT OF SCHEDULING: rack1-n8 (${via.via} via ${via.controller}, node tb8): no resume in the journal: the run was killed, or is still running`,
    );
  });

  it('drained twice (--serial batches in two plays): out only after the second drain with no resume', () => {
    const twice = [drain('n1', 'drained'), resume('n1', true), drain('n1', 'drained')];
    expect(runDrains(twice, false).stillOut.map((s) => s.host)).toEqual(['n1']);
    expect(runDrains([...twice, resume('n1', true)], false).stillOut).toEqual([]);
  });
});

describe('runs show lists the drains of a run', () => {
  scratchStateDir();

  it('text: each drain and resume as the recap said it, the node not put back in a warning at the top and bottom', async () => {
    const r = recordedRun(ENDED, { ended: true });
    const { code, stdout } = await cli(['runs', 'show', r.id]);
    expect(code).toBe(0);
    const warning = `WARNING: NOT PUT BACK: 1 node(s) this run took out of scheduling are still out: n4 (slurm via ctl1: its resume failed: ${RESUME_FAILED}); put each back when it is safe (scontrol update nodename=N state=resume; kubectl uncordon N), or the next racksmith run of this controller that drains it takes it over`;
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(warning);
    expect(lines.at(-1)).toBe(warning);
    const section = stdout.slice(stdout.indexOf('Drains (--drain, in the order they happened):'));
    expect(section.split('\n').slice(0, 12)).toEqual([
      'Drains (--drain, in the order they happened):',
      '  n1: drained (slurm via ctl1)',
      '  n2: already out of scheduling, left as it is (slurm via ctl1): drained (maintenance by ops)',
      `  n3: drained (slurm via ctl1): ${TAKEN}`,
      '  n4: drained (slurm via ctl1)',
      '  n5: DRAIN FAILED, nothing disruptive applied (slurm via ctl1): sinfo -n n5 failed (exit 1): no controller',
      '  n6: DRAIN FAILED, nothing disruptive applied (slurm via ctl1): timed out after 5s waiting for the jobs on n6: job 41 still running',
      '  n6: resumed (slurm via ctl1)',
      '  n1: resumed (slurm via ctl1)',
      '  n3: resumed (slurm via ctl1)',
      `  n4: NOT RESUMED (slurm via ctl1): ${RESUME_FAILED}`,
      `  STILL OUT OF SCHEDULING: n4 (slurm via ctl1): its resume failed: ${RESUME_FAILED}`,
    ]);
  });

  it('--json: the events in order (no time stamps) and the nodes still out; the warning', async () => {
    const r = recordedRun(ENDED, { ended: true });
    const j = JSON.parse((await cli(['runs', 'show', r.id, '--json'])).stdout);
    expect(j.runDrains).toEqual({
      events: ENDED,
      stillOut: [{ host: 'n4', ...via, why: `its resume failed: ${RESUME_FAILED}` }],
      takenOver: [],
    });
    expect(j.warnings).toEqual([expect.stringMatching(/^NOT PUT BACK: 1 node\(s\) .* are still out: n4 /)]);
  });

  it('--html: a Drains table (taken over told apart from drained) and the nodes still out, a warning banner', async () => {
    const r = recordedRun(ENDED, { ended: true });
    const page = join(mkdtempSync(join(tmpdir(), 'rs-runs-drains-')), 'run.html');
    expect((await cli(['runs', 'show', r.id, '--html', page])).code).toBe(0);
    const html = readFileSync(page, 'utf8');
    expect(html).toContain('<p class="warning">WARNING: NOT PUT BACK: 1 node(s) this run took out of scheduling are still out: n4');
    const drains = html.slice(html.indexOf('<section id="drains">'), html.indexOf('</section>', html.indexOf('<section id="drains">')));
    expect([...drains.matchAll(/<tr data-host="([^"]+)" data-drain="([^"]+)">/g)].map((m) => `${m[1]} ${m[2]}`)).toEqual([
      'n4 still-out',
      'n1 drained',
      'n2 already',
      'n3 taken-over',
      'n4 drained',
      'n5 failed',
      'n6 failed',
      'n6 resumed',
      'n1 resumed',
      'n3 resumed',
      'n4 not-resumed',
    ]);
    expect(drains).toContain('Still out of scheduling: 1 node this run took out and did not put back');
    expect(drains).toContain('<span class="st s-drain-taken-over">taken over from a dead run</span>');
    expect(drains).toContain(
      `<span class="st s-drain-not-resumed">NOT PUT BACK (the resume failed)</span><div class="note">${RESUME_FAILED}</div>`,
    );
  });

  it('a run killed (no end): the nodes it drained are said to be still out, and where its mark is for a drain not in the journal', async () => {
    const r = recordedRun([drain('n1', 'drained'), resume('n1', true), drain('n2', 'drained')], { ended: false });
    const { stdout } = await cli(['runs', 'show', r.id]);
    expect(stdout).toContain(
      `a drain it had under way is not in its journal: any node it took out of scheduling carries its mark "racksmith ${r.id} on ctl"`,
    );
    expect(stdout).toMatch(
      /^WARNING: NOT PUT BACK: 1 node\(s\) this run took out of scheduling may still be out: n2 \(slurm via ctl1: no resume in the journal: the run was killed, or is still running\); if the run is still running it puts them back at its end; if it was killed, put each back/m,
    );
    expect(stdout).toContain(
      '  STILL OUT OF SCHEDULING: n2 (slurm via ctl1): no resume in the journal: the run was killed, or is still running',
    );
  });

  it('a run killed while a drain was under way (no event in its journal): the node its drain ledger names is said to be still out', async () => {
    const r = recordedRun([drain('n1', 'drained'), resume('n1', true)], { ended: false });
    drainLedger(r.id, () => undefined).taking({ via: 'slurm', controller: '10.0.0.7', node: 'n2' });
    const { stdout } = await cli(['runs', 'show', r.id]);
    expect(stdout).toContain(
      `  STILL OUT OF SCHEDULING: n2 (slurm via 10.0.0.7): its drain ledger ${ledgerDir(r.id)} names it: a drain was under way (or its resume failed) when the run ended or was killed`,
    );
    expect(stdout).toMatch(/^WARNING: NOT PUT BACK: 1 node\(s\) this run took out of scheduling may still be out: n2 /m);
    // a node both the journal and the ledger show is said once
    const both = recordedRun([drain('n3', 'drained')], { ended: false });
    drainLedger(both.id, () => undefined).taking({ via: 'slurm', controller: 'ctl1', node: 'n3' });
    expect(
      JSON.parse((await cli(['runs', 'show', both.id, '--json'])).stdout).runDrains.stillOut.map((s: { host: string }) => s.host),
    ).toEqual(['n3']);
  });

  it('a node a later run took over: said taken over by that run, in the text, --json and the page, and not NOT PUT BACK', async () => {
    // killed after draining n2 (as rack1-n2: its Slurm node n2) and n3: a later run takes n2 over
    const r = recordedRun([{ ...drain('rack1-n2', 'drained'), node: 'n2' } as RunDrainEvent, drain('n3', 'drained')], { ended: false });
    const ledger = drainLedger(r.id, () => undefined);
    for (const node of ['n2', 'n3']) ledger.taking({ ...via, node });
    const later = newRunId();
    const at = new Date('2026-12-06T15:00:00.000Z');
    const laterLedger = drainLedger(
      later,
      () => undefined,
      () => at,
    );
    laterLedger.taking({ ...via, node: 'n2' });
    laterLedger.takenOver(r.id, { ...via, node: 'n2' });

    const text = (await cli(['runs', 'show', r.id])).stdout;
    const taken = `taken over by run ${later} at 2026-12-06T15:00:00.000Z: no longer this run's to put back (provision runs show ${later} says whether that run did)`;
    expect(text).toContain(`  rack1-n2 (slurm via ctl1, node n2): ${taken}\n`);
    expect(text).not.toContain('STILL OUT OF SCHEDULING: rack1-n2');
    expect(text).toMatch(/^WARNING: NOT PUT BACK: 1 node\(s\) this run took out of scheduling may still be out: n3 \(/m);
    expect(text).not.toMatch(/NOT PUT BACK: .*rack1-n2/);
    const j = JSON.parse((await cli(['runs', 'show', r.id, '--json'])).stdout);
    expect(j.runDrains.takenOver).toEqual([{ host: 'rack1-n2', ...via, node: 'n2', by: later, at: at.toISOString() }]);
    expect(j.runDrains.stillOut.map((s: { host: string }) => s.host)).toEqual(['n3']);
    const page = join(mkdtempSync(join(tmpdir(), 'rs-runs-drains-')), 'run.html');
    expect((await cli(['runs', 'show', r.id, '--html', page])).code).toBe(0);
    const html = readFileSync(page, 'utf8');
    expect([...html.matchAll(/<tr data-host="([^"]+)" data-drain="(still-out|taken-over-by)">/g)].map((m) => `${m[1]} ${m[2]}`)).toEqual([
      'n3 still-out',
      'rack1-n2 taken-over-by',
    ]);
    expect(html).toContain(`<table class="taken-over-by">`);
    expect(html).toContain(`<span class="st s-drain-taken-over-by">taken over by run ${later}</span>`);

    // n3 taken over too: nothing left for this run to put back, no warning
    laterLedger.taking({ ...via, node: 'n3' });
    laterLedger.takenOver(r.id, { ...via, node: 'n3' });
    const after = JSON.parse((await cli(['runs', 'show', r.id, '--json'])).stdout);
    expect(after.runDrains.stillOut).toEqual([]);
    expect(after.warnings.filter((w: string) => w.includes('NOT PUT BACK'))).toEqual([]);
    expect(after.runDrains.takenOver.map((t: { host: string }) => t.host)).toEqual(['rack1-n2', 'n3']);
  });

  it('a node a later run found not out (a run killed before its drain took it out; a node put back by hand): said so, not NOT PUT BACK, the run no longer kept', async () => {
    // (ended without putting it back, on this controller: provably not running)
    const r = recordedRun([], { ended: true, controller: runner().controller });
    drainLedger(r.id, () => undefined).taking({ ...via, node: 'n4' });
    expect((await cli(['runs'])).stdout).toContain('NODES OUT');
    const later = newRunId();
    const at = new Date('2026-12-06T16:00:00.000Z');
    drainLedger(
      later,
      () => undefined,
      () => at,
    ).foundNotOut({ ...via, node: 'n4' });
    const text = (await cli(['runs', 'show', r.id])).stdout;
    expect(text).toContain(
      `  n4 (slurm via ctl1): found not out by run ${later} at 2026-12-06T16:00:00.000Z (in scheduling, or out under someone else's drain: never taken out by this run, or put back by hand since): not this run's to put back\n`,
    );
    expect(text).not.toContain('NOT PUT BACK');
    const j = JSON.parse((await cli(['runs', 'show', r.id, '--json'])).stdout);
    expect(j.runDrains.takenOver).toEqual([{ host: 'n4', ...via, by: later, at: at.toISOString(), found: true }]);
    expect(j.runDrains.stillOut).toEqual([]);
    const page = join(mkdtempSync(join(tmpdir(), 'rs-runs-drains-')), 'run.html');
    expect((await cli(['runs', 'show', r.id, '--html', page])).code).toBe(0);
    expect(readFileSync(page, 'utf8')).toContain(`<span class="st s-drain-taken-over-by">found not out by run ${later}</span>`);
    expect((await cli(['runs'])).stdout).not.toContain('NODES OUT');
  });

  it('two clusters each with a node n1: the one taken over is said so, the other still out', async () => {
    const on = (host: string, controller: string) => ({ ...drain(host, 'drained'), controller, node: 'n1' }) as RunDrainEvent;
    const r = recordedRun([on('a-n1', 'ctlA'), on('b-n1', 'ctlB')], { ended: false });
    const ledger = drainLedger(r.id, () => undefined);
    for (const controller of ['ctlA', 'ctlB']) ledger.taking({ via: 'slurm', controller, node: 'n1' });
    const later = drainLedger(newRunId(), () => undefined);
    later.taking({ via: 'slurm', controller: 'ctlA', node: 'n1' });
    later.takenOver(r.id, { via: 'slurm', controller: 'ctlA', node: 'n1' });
    const j = JSON.parse((await cli(['runs', 'show', r.id, '--json'])).stdout);
    expect(j.runDrains.stillOut.map((s: { host: string }) => s.host)).toEqual(['b-n1']);
    expect(j.runDrains.takenOver.map((t: { host: string }) => t.host)).toEqual(['a-n1']);
  });

  it('a drain ledger with an entry that cannot be read: said in a warning', async () => {
    const r = recordedRun([], { ended: true });
    drainLedger(r.id, () => undefined).taking({ ...via, node: 'n1' });
    writeFileSync(join(ledgerDir(r.id), 'slurm~ctl1~n1.json'), 'not json');
    const j = JSON.parse((await cli(['runs', 'show', r.id, '--json'])).stdout);
    expect(j.warnings).toEqual([
      `its drain ledger ${ledgerDir(r.id)} holds 1 entry that cannot be read (not a node, or not readable): it may name nodes left out of scheduling, and keeps the run from pruning; remove such an entry once its node is known to be back`,
    ]);
  });

  it('a check run: the nodes the apply would drain, nothing still out; a run with no drain: no Drains section', async () => {
    const check = recordedRun([drain('n1', 'would'), drain('n2', 'already', 'drained (ops)')], { ended: true, check: true });
    const j = JSON.parse((await cli(['runs', 'show', check.id, '--json'])).stdout);
    expect(j.runDrains.stillOut).toEqual([]);
    expect(j.warnings).toEqual([]);
    expect((await cli(['runs', 'show', check.id])).stdout).toContain('  n1: would be drained (it has disruptive changes) (slurm via ctl1)');
    const none = recordedRun([], { ended: true });
    expect((await cli(['runs', 'show', none.id])).stdout).not.toContain('Drains');
    expect(JSON.parse((await cli(['runs', 'show', none.id, '--json'])).stdout).runDrains).toBeUndefined();
  });

  it('a journal edited to hold markup or control characters: escaped on the page, shown escaped in the text', async () => {
    const evil = '"><img src=x onerror=alert(1)>';
    const r = recordedRun([{ type: 'drain', host: 'n1', via: `slurm\x1b[2J${evil}`, controller: 'ctl1', outcome: evil } as never], {
      ended: true,
    });
    const page = join(mkdtempSync(join(tmpdir(), 'rs-runs-drains-')), 'run.html');
    expect((await cli(['runs', 'show', r.id, '--html', page])).code).toBe(0);
    expect(readFileSync(page, 'utf8')).not.toContain('<img');
    expect((await cli(['runs', 'show', r.id])).stdout).not.toContain('\x1b');
  });

  it("a journal holding an earlier run first (--journal given again): only this run's drains", async () => {
    const earlier = [
      JSON.stringify({ ts: '2026-12-06T13:00:00.000Z', type: 'run_start', playbooks: ['site.ts'], hosts: ['n5'], check: false }),
      JSON.stringify({ ts: '2026-12-06T13:00:01.000Z', ...drain('n5', 'drained') }),
    ];
    const r = recordedRun([drain('n1', 'drained'), resume('n1', true)], { ended: true, before: earlier });
    const j = JSON.parse((await cli(['runs', 'show', r.id, '--json'])).stdout);
    expect(j.runDrains.events.map((e: RunDrainEvent) => e.host)).toEqual(['n1', 'n1']);
    expect(j.runDrains.stillOut).toEqual([]);
  });
});

describe('provision runs marks the runs whose drain ledger still names nodes', () => {
  scratchStateDir();

  it('a marker in the line and drainsLeft in --json, from the ledgers; gone once the nodes are taken over', async () => {
    const out = recordedRun([drain('n2', 'drained')], { ended: false });
    const clean = recordedRun([drain('n1', 'drained'), resume('n1', true)], { ended: true });
    const ledger = drainLedger(out.id, () => undefined);
    ledger.taking({ ...via, node: 'n2' });
    ledger.taking({ ...via, node: 'n3' });
    const lineOf = (stdout: string, id: string) => stdout.split('\n').find((l) => l.startsWith(id))!;
    const listed = await cli(['runs']);
    expect(listed.code).toBe(0);
    expect(lineOf(listed.stdout, out.id)).toMatch(
      /^\S+ {2}\S+ {2}unfinished {2}NODES OUT: n2 \(slurm via ctl1\), n3 \(slurm via ctl1\) {2}6 host\(s\)/,
    );
    expect(lineOf(listed.stdout, clean.id)).not.toContain('NODES OUT');
    const json = (await cli(['runs', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; drainsLeft?: unknown });
    expect(json.find((r) => r.id === out.id)?.drainsLeft).toEqual([
      { ...via, node: 'n2' },
      { ...via, node: 'n3' },
    ]);
    expect(json.find((r) => r.id === clean.id)).not.toHaveProperty('drainsLeft');

    // taken over by a later run: no longer this run's, no marker (the later run's now)
    const laterRun = recordedRun([], { ended: false });
    const later = drainLedger(laterRun.id, () => undefined);
    for (const node of ['n2', 'n3']) {
      later.taking({ ...via, node });
      later.takenOver(out.id, { ...via, node });
    }
    const after = await cli(['runs']);
    expect(lineOf(after.stdout, out.id)).not.toContain('NODES OUT');
    expect(lineOf(after.stdout, laterRun.id)).toContain('NODES OUT: n2 (slurm via ctl1), n3 (slurm via ctl1)');
    expect(after.stderr).not.toContain('no record');
    const jsonAfter = (await cli(['runs', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; drainsLeft?: unknown });
    expect(jsonAfter.find((r) => r.id === out.id)).not.toHaveProperty('drainsLeft');
  });

  it('ledgers naming nodes whose run has no record: said on stderr, listed after the runs (newest first) unless a filter is given', async () => {
    const r = recordedRun([], { ended: true });
    const [older, orphan] = ['20261205T101500Z-aaaaaa', '20261206T101500Z-bbbbbb'];
    drainLedger(older, () => undefined).taking({ ...via, node: 'n4' });
    drainLedger(orphan, () => undefined).taking({ ...via, node: 'n5' });
    const listed = await cli(['runs']);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${r.id}  `)),
      `${orphan}  (no record)  NODES OUT: n5 (slurm via ctl1)`,
      `${older}  (no record)  NODES OUT: n4 (slurm via ctl1)`,
      '',
    ]);
    expect(listed.stderr).toContain(`warning: run ${orphan}: it has no record in `);
    expect(listed.stderr).toContain(
      `but its drain ledger ${ledgerDir(orphan)} says: NODES OUT: n5 (slurm via ctl1); unless that run is still going`,
    );
    const json = (await cli(['runs', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as object);
    expect(json).toContainEqual({ id: orphan, recorded: false, drainsLeft: [{ ...via, node: 'n5' }] });
    // a filter cannot tell whether it matches: said, not listed
    for (const args of [
      ['runs', '--failed'],
      ['runs', '--failed', '--json'],
    ]) {
      const filtered = await cli(args);
      expect(filtered.stdout).not.toContain(orphan);
      expect(filtered.stderr).toContain(`warning: run ${orphan}: it has no record in `);
    }
  });

  it('a ledger naming nodes whose record cannot be read: said so, not "no record"', async () => {
    const r = recordedRun([], { ended: true });
    drainLedger(r.id, () => undefined).taking({ ...via, node: 'n6' });
    writeFileSync(join(runsDirOf(), `${r.id}.json`), 'not json');
    const listed = await cli(['runs']);
    expect(listed.stdout).toBe(`${r.id}  (record unreadable)  NODES OUT: n6 (slurm via ctl1)\n`);
    expect(listed.stderr).toContain(`warning: run ${r.id}: its record in `);
    expect(listed.stderr).not.toContain('has no record');
    expect(JSON.parse((await cli(['runs', '--json'])).stdout)).toEqual({
      id: r.id,
      recorded: false,
      recordUnreadable: true,
      drainsLeft: [{ ...via, node: 'n6' }],
    });
  });

  it('a ledger entry that cannot be read: marked all the same, said so', async () => {
    const r = recordedRun([], { ended: true });
    drainLedger(r.id, () => undefined).taking({ ...via, node: 'n1' });
    writeFileSync(join(ledgerDir(r.id), 'slurm~ctl1~n1.json'), 'not json');
    expect((await cli(['runs'])).stdout).toContain('  NODES OUT: 1 unreadable entry in its drain ledger  ');
    expect(JSON.parse((await cli(['runs', '--json'])).stdout)).toMatchObject({ drainsLeft: [], drainsLeftUnreadable: 1 });
  });
});
