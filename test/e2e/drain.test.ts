// --drain around an MTU change (Change.disruptive). Slurm on the bed's real Slurm (tb.slurm: tb7
// the controller, tb8 and tb9 compute nodes): the node's running job is waited for, the node
// drained, changed, resumed; a node drained by hand is listed by the check as already out and
// stays drained; a node left drained by a run killed with SIGKILL is taken over by the next run
// and resumed (and `runs show` of each run says so), and `runs prune` keeps that killed run's
// record until then (said so); of two runs that find a dead run's drained node at once (a barrier
// over sinfo) exactly one takes it over; one drained by a racksmith run this controller cannot
// vouch for stays drained, its host's drain failing (blocked: check mode says so), said whose and what
// to do, nothing disruptive applied (so does the loser of the two runs); nodes in a reservation (reserved,
// maint) are drained and resumed all the same; a NIC queue change that waits on a package install
// is listed by the check as a drain that may come; a drain that times out applies
// nothing disruptive and still resumes the node. Kubernetes against the API double on the runner
// (kubectl on tb1, the control-plane host; tb3 the node): cordon, evictions, uncordon; a
// PodDisruptionBudget that holds an eviction past the timeout; Ctrl-C while it does, and the host's
// --host-timeout (as for the Slurm wait): the drain stopped at once, the node put back; a node
// left cordoned by a run killed with SIGKILL is taken over and uncordoned; a node cordoned
// beforehand is listed by the check as already out, and stays so, and so does an operator's cordon
// over a dead run's leftover mark; one cordoned by a live racksmith run is blocked (check and apply). A check run whose Slurm controller cannot be reached asks it
// once, and says the same reason on every node's line.
// Each test resets its hosts.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { startKubeApiDouble, type KubeApiDouble } from '../kube-double/server.ts';
import { provision, recaps, repoRoot, writeInventory, type CliRun } from './helpers.ts';
import { localAptRepo } from './local-repo.ts';
import { CTL, drainEvents, IFACES, inventory, liveMtu, NODES, nodeState, onCtl, PB } from './slurm-mtu-bed.ts';
import { newRunId, runsDir } from '../../src/history/record.ts';
import { bootId, processStart } from '../../src/history/run-process.ts';
import { channelsUnsettable } from './nic-channels.ts';

/** Submit a sleep job on `node` and wait until it runs (the scheduler starts it within a second or two). */
async function runningJob(node: string, secs: number): Promise<string> {
  const id = await onCtl(`sbatch --parsable -w ${node} --chdir=/tmp -o /dev/null --wrap 'sleep ${secs}'`);
  for (let i = 0; i < 100 && (await onCtl(`squeue -h -j ${id} -o %T`)) !== 'RUNNING'; i++) await new Promise((r) => setTimeout(r, 100));
  expect(await onCtl(`squeue -h -j ${id} -o %T`)).toBe('RUNNING');
  return id;
}
/**
 * A run of this controller's history that died (its process gone, as a SIGKILL leaves it): its
 * record (removed by the test), its mark and its pid.
 */
function deadRunRecord(): { id: string; mark: string; pid: number; record: string } {
  const dead = spawnSync('true');
  const id = newRunId();
  const record = join(runsDir(), `${id}.json`);
  const proc = { pid: dead.pid, start: 1, boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() };
  const fields = { start: new Date().toISOString(), user: 'ops', controller: hostname(), argv: [], cwd: '/', playbooks: [] };
  const rest = { inventoryFingerprint: '', labels: {}, check: false, journal: '/nonexistent', hosts: {} };
  mkdirSync(runsDir(), { recursive: true });
  writeFileSync(record, JSON.stringify({ id, ...fields, process: proc, ...rest }));
  return { id, mark: `racksmith ${id} on ${hostname()}`, pid: dead.pid!, record };
}
/**
 * A run of `args` started, and SIGKILLed once tb8 is draining with its mark (`racksmith <run id> on
 * <controller>`): the mark's match (null when it never came: the run is killed all the same) and its pid.
 */
async function killedWhileDraining(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ mark: RegExpExecArray | null; pid: number }> {
  const crashed = spawn(process.execPath, [join(repoRoot, 'bin/provision.js'), ...args], {
    cwd: repoRoot,
    stdio: 'ignore',
    env: { ...process.env, ...env },
  });
  const gone = new Promise((r) => crashed.on('close', r));
  let mark: RegExpExecArray | null = null;
  for (let i = 0; i < 300 && !mark; i++) {
    const s = await nodeState('tb8');
    mark = s.state === 'draining' ? /^racksmith (\S+) on (\S+)$/.exec(s.reason) : null;
    if (!mark) await new Promise((r) => setTimeout(r, 100));
  }
  // (killed before any check: a failed one leaves no run behind to disturb the next test)
  crashed.kill('SIGKILL');
  await gone;
  return { mark, pid: crashed.pid! };
}

describe.skipIf(!tb.slurmAvailable())('--drain slurm around an MTU change (real Slurm on the bed)', () => {
  beforeEach(async () => {
    await tb.reset([CTL, ...NODES]);
    await tb.slurm([CTL, ...NODES]);
    for (const h of NODES) await tb.hostExec(h, `mkdir -p /etc/network && printf '%s' '${IFACES}' > /etc/network/interfaces`);
  }, 60_000);

  it('check mode lists the node; the apply waits for its job, drains, changes, resumes; a re-run drains nothing', async () => {
    const job = await runningJob('tb8', 6);
    const check = await provision([PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm', '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(drainEvents(check)).toEqual([{ type: 'drain', host: 'tb8', via: 'slurm', controller: CTL, outcome: 'would' }]);
    expect(check.stderr).toContain('tb8: would be drained (it has disruptive changes) (slurm via tb7)');
    expect((await nodeState('tb8')).state).toBe('allocated');
    expect(await liveMtu('tb8')).toBe('1500');

    const running = provision([PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm', '--json']);
    // while the job runs the node is draining and the MTU untouched
    let seen = '';
    for (let i = 0; i < 100 && seen !== 'draining'; i++) {
      seen = (await nodeState('tb8')).state;
      if (seen !== 'draining') await new Promise((r) => setTimeout(r, 100));
    }
    expect(seen).toBe('draining');
    expect((await nodeState('tb8')).reason).toMatch(/^racksmith /);
    expect(await liveMtu('tb8')).toBe('1500');
    const run = await running;
    expect(run.code, run.stderr).toBe(0);
    expect(await onCtl(`squeue -h -j ${job} -o %T`)).toBe(''); // the job ran to its end
    expect(await liveMtu('tb8')).toBe('9000');
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });
    // drain, then the MTU change, then resume: in that order in the event stream
    const order = run.events
      .filter((e) => e.type === 'drain' || e.type === 'resume' || (e.type === 'resource' && e.id === 'mtu:eth0'))
      .map((e) => (e.type === 'resource' ? `${e.id} ${e.status}` : `${e.type} ${e.outcome ?? e.ok}`));
    expect(order).toEqual(['drain drained', 'mtu:eth0 changed', 'resume true']);
    expect(run.stderr).toContain('tb8: resumed (slurm via tb7)');
    // the journal has them too
    const journal = readFileSync(/journal: (\S+)/.exec(run.stderr)![1], 'utf8');
    expect(journal).toMatch(/"type":"drain".*"outcome":"drained"/);
    expect(journal).toMatch(/"type":"resume".*"ok":true/);

    const again = await provision([PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(recaps(again).tb8).toMatchObject({ changed: 0, failed: 0 });
    expect(drainEvents(again)).toEqual([]);
  }, 120_000);

  it('an operator who drains the node with a reason of their own while the run holds it keeps it out: the run leaves it drained at its end, and says so', async () => {
    const job = await runningJob('tb8', 6);
    const running = provision([PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm', '--json']);
    let seen = { state: '', reason: '' };
    for (let i = 0; i < 100 && seen.state !== 'draining'; i++) {
      seen = await nodeState('tb8');
      if (seen.state !== 'draining') await new Promise((r) => setTimeout(r, 100));
    }
    expect(seen.reason).toMatch(/^racksmith /);
    // a fault found on it meanwhile: the operator's own drain, while this run waits for the job
    await onCtl(`scontrol update nodename=tb8 state=drain reason='ops: bad DIMM'`);
    const run = await running;
    expect(run.code, run.stderr).toBe(0);
    expect(await onCtl(`squeue -h -j ${job} -o %T`)).toBe('');
    expect(await liveMtu('tb8')).toBe('9000');
    expect(await nodeState('tb8')).toEqual({ state: 'drained', reason: 'ops: bad DIMM' });
    const left = "drained (ops: bad DIMM): out of scheduling under someone else's drain since this run took it out; left so, not put back";
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: 'tb8', via: 'slurm', controller: CTL, outcome: 'drained' },
      { type: 'resume', host: 'tb8', via: 'slurm', controller: CTL, ok: false, detail: left, someoneElses: true },
    ]);
    expect(run.stderr).toContain(`tb8: left out, someone else's drain now (slurm via tb7): ${left}`);
    // not this run's: its history does not call it NOT PUT BACK
    const id = /^run: (\S+) /m.exec(run.stderr)![1];
    const shown = await provision(['runs', 'show', id]);
    expect(shown.stdout).not.toContain('NOT PUT BACK');
    expect(shown.stdout).toContain("tb8: left out, someone else's drain now");
  }, 120_000);

  it('a host named otherwise in the inventory than in Slurm (racksmith_slurm_node): that node is drained, changed and resumed, and every line names it', async () => {
    // the operator's inventory name for tb8, and tb8 its NodeName in slurm.conf
    const file = inventory();
    const text = readFileSync(file, 'utf8');
    writeFileSync(
      file,
      file.endsWith('.ini')
        ? text.replace(/^tb8 /m, 'rack1-n8 racksmith_slurm_node="tb8" ')
        : text.replace(/^ {4}tb8:\n/m, '    rack1-n8:\n      racksmith_slurm_node: tb8\n'),
    );
    const check = await provision([PB, '-i', file, '-l', 'rack1-n8', '--drain', 'slurm', '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(drainEvents(check)).toEqual([{ type: 'drain', host: 'rack1-n8', via: 'slurm', controller: CTL, node: 'tb8', outcome: 'would' }]);
    // (a job on tb8 that outlasts the apply's connection and drain: tb8 is seen draining)
    const job = await runningJob('tb8', 6);
    const running = provision([PB, '-i', file, '-l', 'rack1-n8', '--drain', 'slurm', '--json']);
    // Slurm's own node tb8 is the one draining while its job runs
    let seen = '';
    for (let i = 0; i < 100 && seen !== 'draining'; i++) {
      seen = (await nodeState('tb8')).state;
      if (seen !== 'draining') await new Promise((r) => setTimeout(r, 100));
    }
    expect(seen).toBe('draining');
    const run = await running;
    expect(run.code, run.stderr).toBe(0);
    expect(await onCtl(`squeue -h -j ${job} -o %T`)).toBe('');
    expect(await liveMtu('tb8')).toBe('9000');
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: 'rack1-n8', via: 'slurm', controller: CTL, node: 'tb8', outcome: 'drained' },
      { type: 'resume', host: 'rack1-n8', via: 'slurm', controller: CTL, node: 'tb8', ok: true },
    ]);
    expect(run.stderr).toContain('rack1-n8: resumed (slurm via tb7, node tb8)');
  }, 120_000);

  it('a node drained by hand beforehand: the check lists it as already out; it is changed and stays drained with its reason', async () => {
    await onCtl(`scontrol update nodename=tb9 state=drain reason='maintenance by ops'`);
    const check = await provision([PB, '-i', inventory(), '-l', 'tb9', '--drain', 'slurm', '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(drainEvents(check)).toEqual([
      { type: 'drain', host: 'tb9', via: 'slurm', controller: CTL, outcome: 'already', detail: 'drained (maintenance by ops)' },
    ]);
    expect(check.stderr).toContain('tb9: already out of scheduling, left as it is (slurm via tb7): drained (maintenance by ops)');
    const run = await provision([PB, '-i', inventory(), '-l', 'tb9', '--drain', 'slurm', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: 'tb9', via: 'slurm', controller: CTL, outcome: 'already', detail: 'drained (maintenance by ops)' },
    ]);
    expect(await liveMtu('tb9')).toBe('9000');
    expect(await nodeState('tb9')).toEqual({ state: 'drained', reason: 'maintenance by ops' });
  }, 120_000);

  it('a node left drained by a run killed mid-drain (SIGKILL): the next run takes it over, says so, changes it and resumes it', async () => {
    await runningJob('tb8', 8);
    const args = [PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm'];
    const { mark, pid } = await killedWhileDraining(args);
    expect(mark?.[2]).toBe(hostname());
    const left = await nodeState('tb8');
    expect(left).toEqual({ state: 'draining', reason: mark![0] }); // out of scheduling, nobody to put it back

    const run = await provision([...args, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const why = `taken over from run ${mark![1]}, which did not finish: its process ${pid} is gone`;
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: 'tb8', via: 'slurm', controller: CTL, outcome: 'drained', detail: why },
      { type: 'resume', host: 'tb8', via: 'slurm', controller: CTL, ok: true },
    ]);
    expect(run.stderr).toContain(`tb8: drained (slurm via tb7): ${why}`);
    expect(readFileSync(/journal: (\S+)/.exec(run.stderr)![1], 'utf8')).toContain(why);
    expect(await liveMtu('tb8')).toBe('9000');
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });

    // runs show: the killed run (its drain under way never reached its journal) says where its mark
    // is; the next run lists the takeover and the resume, and nothing left out
    const killedShown = await provision(['runs', 'show', mark![1]]);
    expect(killedShown.code, killedShown.stderr).toBe(0);
    expect(killedShown.stdout).toContain(`any node it took out of scheduling carries its mark "${mark![0]}"`);
    const id = /^run: (\S+)/m.exec(run.stderr)![1];
    const shown = await provision(['runs', 'show', id, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ warnings: [], runDrains: { events: drainEvents(run), stillOut: [] } });
    expect((await provision(['runs', 'show', id])).stdout).toContain(
      `Drains (--drain, in the order they happened):\n  tb8: drained (slurm via tb7): ${why}\n  tb8: resumed (slurm via tb7)\n`,
    );
  }, 120_000);

  it('`runs prune` keeps a killed run that left a node drained (said so); the next run takes it over, then the run is pruned', async () => {
    // a state directory of the test's own: `runs prune --keep 0` prunes every other run in it
    const env = { XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'rs-drain-prune-')) };
    await runningJob('tb8', 8);
    const args = [PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm'];
    const { mark, pid } = await killedWhileDraining(args, env);
    expect(mark).not.toBeNull();
    const dead = mark![1];

    // `runs` marks it: the node its ledger names
    const listed = await provision(['runs'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${dead}  \\S+  unfinished  NODES OUT: tb8 \\(slurm via [^)]+\\)  \\d+ host\\(s\\)`, 'm'));

    const prune = await provision(['runs', 'prune', '--keep', '0', '--json'], { env });
    expect(prune.code, prune.stderr).toBe(0);
    const ledger = join(env.XDG_STATE_HOME, 'racksmith/runs', `${dead}.drains`);
    // (named by its scheduler, its controller as the run reaches it, and its name)
    expect(readdirSync(ledger)).toEqual([expect.stringMatching(/^slurm~[^~]+~tb8\.json$/)]);
    expect(
      prune.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([{ id: dead, pruned: false, drains: [{ via: 'slurm', controller: expect.any(String), node: 'tb8' }] }]);
    expect(prune.stderr).toMatch(
      new RegExp(
        `kept run ${dead}: it may have left tb8 \\(slurm via [^)]+\\) out of scheduling \\(its drain ledger ${ledger}\\); the next run`,
      ),
    );

    const run = await provision([...args, '--json'], { env });
    expect(run.code, run.stderr).toBe(0);
    const why = `taken over from run ${dead}, which did not finish: its process ${pid} is gone`;
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: 'tb8', via: 'slurm', controller: CTL, outcome: 'drained', detail: why },
      { type: 'resume', host: 'tb8', via: 'slurm', controller: CTL, ok: true },
    ]);
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });
    // the dead run's ledger says who took tb8 over: `runs show` of it names that run and warns of nothing, `runs` marks it no more
    const taker = /^run: (\S+)/m.exec(run.stderr)![1];
    const shown = await provision(['runs', 'show', dead, '--json'], { env });
    expect(shown.code, shown.stderr).toBe(0);
    const report = JSON.parse(shown.stdout) as { warnings: string[]; runDrains: { stillOut: unknown[]; takenOver: unknown[] } };
    expect(report.runDrains).toMatchObject({
      stillOut: [],
      takenOver: [{ host: 'tb8', via: 'slurm', controller: expect.any(String), by: taker, at: expect.any(String) }],
    });
    expect(report.warnings.join('\n')).not.toContain('NOT PUT BACK');
    expect((await provision(['runs', 'show', dead], { env })).stdout).toMatch(
      new RegExp(`^  tb8 \\(slurm via [^)]+\\): taken over by run ${taker} at \\S+: no longer this run's to put back`, 'm'),
    );
    expect((await provision(['runs'], { env })).stdout).not.toContain('NODES OUT');
    // taken over and put back: neither run has a node out, both are pruned, the dead run's ledger with it
    const again = await provision(['runs', 'prune', '--keep', '0', '--json'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(
      again.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: string; pruned: boolean }).pruned),
    ).toEqual([true, true]);
    expect(again.stdout).toContain(`"id":"${dead}"`);
    expect(readdirSync(join(env.XDG_STATE_HOME, 'racksmith/runs'))).toEqual([]);
  }, 180_000);

  it('a node put back by hand after its run was killed while draining it: the next run finds it in scheduling, and the dead run no longer counts it out', async () => {
    const env = { XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'rs-drain-found-')) };
    const job = await runningJob('tb8', 30);
    const args = [PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm'];
    const { mark } = await killedWhileDraining(args, env);
    expect(mark).not.toBeNull();
    const dead = mark![1];
    // the operator puts it back by hand (and ends the job)
    await onCtl(`scontrol update nodename=tb8 state=resume; scancel ${job}`);
    expect((await provision(['runs'], { env })).stdout).toContain('NODES OUT: tb8');

    const run = await provision([...args, '--json'], { env });
    expect(run.code, run.stderr).toBe(0);
    // drained anew (found in scheduling), not taken over
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: 'tb8', via: 'slurm', controller: CTL, outcome: 'drained' },
      { type: 'resume', host: 'tb8', via: 'slurm', controller: CTL, ok: true },
    ]);
    const finder = /^run: (\S+)/m.exec(run.stderr)![1];
    const shown = JSON.parse((await provision(['runs', 'show', dead, '--json'], { env })).stdout) as {
      warnings: string[];
      runDrains: { stillOut: unknown[]; takenOver: unknown[] };
    };
    expect(shown.runDrains).toMatchObject({
      stillOut: [],
      takenOver: [{ host: 'tb8', via: 'slurm', by: finder, found: true }],
    });
    expect(shown.warnings.join('\n')).not.toContain('NOT PUT BACK');
    expect((await provision(['runs'], { env })).stdout).not.toContain('NODES OUT');
    // nothing keeps it: pruned with the finder's own run
    const pruned = await provision(['runs', 'prune', '--keep', '0', '--json'], { env });
    expect(
      pruned.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { pruned: boolean }).pruned),
    ).toEqual([true, true]);
  }, 180_000);

  it('two runs that find a dead run’s drained node at once: one takes it over and puts it back, the other waits for its claim, said, then drains the node anew (its stale change refused)', async () => {
    // a run of this controller's history that died (its process gone) leaving tb8 draining, its job
    // still running: the run that claims tb8 first takes it over and waits for the job (seconds),
    // holding its claim all the while; the other, started with it, reaches its own drain meanwhile
    const { id, mark, pid, record } = deadRunRecord();
    const job = await runningJob('tb8', 6);
    await onCtl(`scontrol update nodename=tb8 state=drain reason='${mark}'`);
    let runs;
    try {
      const args = [PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm', '--json'];
      runs = await Promise.all([provision(args), provision(args)]);
    } finally {
      rmSync(record, { force: true });
    }
    const taken = `taken over from run ${id}, which did not finish: its process ${pid} is gone`;
    const winner = runs.find((r) => drainEvents(r).some((e) => e.outcome === 'drained' && e.detail === taken))!;
    expect(winner, runs.map((r) => r.stdout).join('\n')).toBeDefined();
    const loser = runs.find((r) => r !== winner)!;
    expect(winner.code, winner.stderr).toBe(0);
    // the other's change, probed before the winner's, finds the file the winner wrote: not overwritten (exit 1)
    expect(loser.code, loser.stderr).toBe(1);
    expect(loser.events.find((e) => e.type === 'resource' && e.id === 'mtu:eth0')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/changed since it was probed; not overwriting$/),
    });
    expect(drainEvents(winner)).toEqual([
      { type: 'drain', host: 'tb8', via: 'slurm', controller: CTL, outcome: 'drained', detail: taken },
      { type: 'resume', host: 'tb8', via: 'slurm', controller: CTL, ok: true },
    ]);
    // the other said it waits for the winner's claim, once, then drained the node the winner had put back:
    // an idle node drained anew (not taken over, not blocked by the winner's mark), after the winner's resume
    const winnerId = /^run: (\S+) /m.exec(winner.stderr)![1];
    expect(loser.events.filter((e) => e.type === 'warning' && String(e.message).includes('let go of the node'))).toEqual([
      {
        type: 'warning',
        ts: expect.any(String),
        message: expect.stringMatching(
          new RegExp(
            `^tb8: its drain \\(slurm via ${CTL}\\) waits up to 600s for another run of this controller to let go of the node: ` +
              `run ${winnerId} of this controller holds it \\(pid \\d+, claim /.*/drain-claims/slurm~racksmith-bed~tb8/\\d+\\.json\\)$`,
          ),
        ),
      },
    ]);
    expect(drainEvents(loser)).toEqual([
      { type: 'drain', host: 'tb8', via: 'slurm', controller: CTL, outcome: 'drained' },
      { type: 'resume', host: 'tb8', via: 'slurm', controller: CTL, ok: true },
    ]);
    const at = (r: CliRun, type: string) => Date.parse(String(r.events.find((e) => e.type === type)!.ts));
    expect(at(loser, 'drain')).toBeGreaterThanOrEqual(at(winner, 'resume'));
    expect(await onCtl(`squeue -h -j ${job} -o %T`)).toBe(''); // the job ran to its end
    expect(await liveMtu('tb8')).toBe('9000');
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });
    // both let go of their claims when they put the node back (a run SIGKILLed by a test before leaves its own, stale)
    const claims = join(dirname(runsDir()), 'drain-claims');
    const loserId = /^run: (\S+) /m.exec(loser.stderr)![1];
    const left = readdirSync(claims).flatMap((d) => readdirSync(join(claims, d)).map((f) => readFileSync(join(claims, d, f), 'utf8')));
    expect(left.filter((c) => c.includes(winnerId) || c.includes(loserId))).toEqual([]);
  }, 180_000);

  it("a node drained by a racksmith run this controller cannot vouch for (not in its history; another controller's): the check says blocked, the apply fails its drain, nothing applied, the node left drained", async () => {
    const unknown = `racksmith 20260101T000000Z-abcdef on ${hostname()}`;
    const elsewhere = 'racksmith 20260101T000000Z-abcdef on rack2-ctl';
    await onCtl(`scontrol update nodename=tb8 state=drain reason='${unknown}'`);
    await onCtl(`scontrol update nodename=tb9 state=drain reason='${elsewhere}'`);
    const runs = join(process.env.XDG_STATE_HOME ?? join(homedir(), '.local/state'), 'racksmith/runs');
    const todo = (node: string) =>
      "; no disruptive change is applied under another racksmith run's drain, which that run ends (puts the node back) when its own work ends, " +
      "maybe in the middle of this host's changes: run again once that run has ended; if it never will (another controller's run that died, " +
      `a pruned run), put the node back by hand (scontrol update nodename=${node} state=resume) and run again`;
    const detail = {
      tb8: `drained (${unknown}): run 20260101T000000Z-abcdef is not in this controller's run history (${runs}): another user's or another controller's run, or pruned${todo('tb8')}`,
      tb9: `drained (${elsewhere}): run 20260101T000000Z-abcdef is controller rack2-ctl's, not this one's (${hostname()}): only its run history can tell whether it still runs${todo('tb9')}`,
    };
    const byHost = (r: CliRun) => drainEvents(r).sort((a, b) => String(a.host).localeCompare(String(b.host)));
    // check mode: each host said blocked (before the change window), not already out
    const check = await provision([PB, '-i', inventory(), '-l', 'tb8,tb9', '--drain', 'slurm', '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(byHost(check)).toEqual(
      NODES.map((h) => ({ type: 'drain', host: h, via: 'slurm', controller: CTL, outcome: 'blocked', detail: detail[h as 'tb8'] })),
    );
    expect(check.stderr).toContain(
      `tb9: BLOCKED by another racksmith run's drain, its drain would fail and nothing disruptive be applied (slurm via tb7): ${detail.tb9}`,
    );

    const run = await provision([PB, '-i', inventory(), '-l', 'tb8,tb9', '--drain', 'slurm', '--json']);
    expect(run.code, run.stderr).toBe(1);
    expect(byHost(run)).toEqual(
      NODES.map((h) => ({
        type: 'drain',
        host: h,
        via: 'slurm',
        controller: CTL,
        outcome: 'failed',
        detail: detail[h as 'tb8'],
        tookOut: false,
      })),
    );
    for (const h of NODES)
      expect(run.events.find((e) => e.type === 'resource' && e.host === h && e.id === 'mtu:eth0')).toMatchObject({
        status: 'failed',
        error: `not applied: drain (slurm via tb7) failed: ${detail[h as 'tb8']}`,
      });
    expect(run.stderr).toContain(`tb9: DRAIN FAILED, nothing disruptive applied (slurm via tb7): ${detail.tb9}`);
    for (const h of NODES) expect(await liveMtu(h)).toBe('1500');
    expect(await nodeState('tb8')).toEqual({ state: 'drained', reason: unknown });
    expect(await nodeState('tb9')).toEqual({ state: 'drained', reason: elsewhere });
  }, 120_000);

  it('nodes in a reservation (reserved, maint) still take its jobs: drained, said so, changed, resumed into their reservation', async () => {
    await onCtl(`scontrol create reservation reservationname=rs_res starttime=now duration=60 nodes=tb8 users=root`);
    await onCtl(`scontrol create reservation reservationname=rs_maint starttime=now duration=60 nodes=tb9 users=root flags=maint`);
    // (the controller marks a reservation's nodes within its next pass, some seconds)
    const inReservation = async () => {
      for (let i = 0; i < 300; i++) {
        if ((await nodeState('tb8')).state === 'reserved' && (await nodeState('tb9')).state === 'maint') return true;
        await new Promise((r) => setTimeout(r, 100));
      }
      return false;
    };
    expect(await inReservation()).toBe(true);
    const run = await provision([PB, '-i', inventory(), '-l', 'tb8,tb9', '--drain', 'slurm', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const byHost = (h: string) => drainEvents(run).filter((e) => e.host === h);
    expect(byHost('tb8')).toEqual([
      {
        type: 'drain',
        host: 'tb8',
        via: 'slurm',
        controller: CTL,
        outcome: 'drained',
        detail: "was reserved (still open to its reservation's jobs)",
      },
      { type: 'resume', host: 'tb8', via: 'slurm', controller: CTL, ok: true },
    ]);
    expect(byHost('tb9')).toEqual([
      {
        type: 'drain',
        host: 'tb9',
        via: 'slurm',
        controller: CTL,
        outcome: 'drained',
        detail: "was maint (still open to its reservation's jobs)",
      },
      { type: 'resume', host: 'tb9', via: 'slurm', controller: CTL, ok: true },
    ]);
    expect(run.stderr).toContain("tb9: drained (slurm via tb7): was maint (still open to its reservation's jobs)");
    for (const h of NODES) expect(await liveMtu(h)).toBe('9000');
    // back in their reservations, not drained
    expect(await inReservation()).toBe(true);
    expect((await nodeState('tb8')).reason).toBe('none');
    await onCtl('scontrol delete reservationname=rs_res && scontrol delete reservationname=rs_maint');
  }, 120_000);

  it('a NIC queue change that waits on the ethtool install: the check says the node may be drained, the apply drains it', async (ctx) => {
    // (the bed's hosts have no ethtool: nic_queues depends on the packages' change, playbooks/node.ts)
    const inv = writeInventory({
      hosts: [CTL, 'tb8'],
      groups: { slurm_controller: { hosts: [CTL] } },
      hostVars: { tb8: { package_mirror: { apt: localAptRepo(['ethtool']) }, nic_queues: [{ name: 'eth0', channels: 2 }] } },
    });
    const check = await provision([PB, '-i', inv, '-l', 'tb8', '--drain', 'slurm', '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.events.find((e) => e.type === 'resource' && e.id === 'nic-channels:eth0')).toMatchObject({ pending: 'packages:node' });
    expect(drainEvents(check)).toEqual([
      {
        type: 'drain',
        host: 'tb8',
        via: 'slurm',
        controller: CTL,
        outcome: 'would',
        detail: 'may be: nic-channels:eth0 waits on a pending change',
        may: ['nic-channels:eth0'],
      },
    ]);
    const run = await provision([PB, '-i', inv, '-l', 'tb8', '--drain', 'slurm', '--json']);
    // without settable channels the change is "not supported", not disruptive: nothing to drain for
    const unsettable = await channelsUnsettable('tb8', 'eth0', 2); // ethtool is there now
    if (unsettable) ctx.skip(unsettable);
    expect(run.code, run.stderr).toBe(0);
    expect(drainEvents(run).map((e) => `${e.type} ${e.outcome ?? e.ok}`)).toEqual(['drain drained', 'resume true']);
    expect(await nodeState('tb8')).toEqual({ state: 'idle', reason: 'none' });
  }, 120_000);

  it('--host-timeout while the jobs are waited for: the wait stops at once, the node resumed, the host timed out', async () => {
    const job = await runningJob('tb8', 300);
    const t0 = Date.now();
    const args = [PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm', '--drain-timeout', '120', '--host-timeout', '15', '--json'];
    const run = await provision(args, { timeoutMs: 180_000 });
    // (the drain would wait its 120 s for the job)
    expect(Date.now() - t0).toBeLessThan(90_000);
    expect(run.code, run.stderr).toBe(1);
    expect(recaps(run).tb8).toMatchObject({ unreachable: true, error: 'timed out after 15s', changed: 0 });
    expect(drainEvents(run)).toEqual([
      {
        type: 'drain',
        host: 'tb8',
        via: 'slurm',
        controller: CTL,
        outcome: 'failed',
        detail: `host timed out after 15s while waiting for the jobs on tb8: job ${job} still running`,
        tookOut: true,
      },
      { type: 'resume', host: 'tb8', via: 'slurm', controller: CTL, ok: true },
    ]);
    expect(await liveMtu('tb8')).toBe('1500');
    expect((await nodeState('tb8')).state).toBe('allocated'); // back in scheduling, its job untouched
    await onCtl(`scancel ${job}`);
  }, 240_000);

  it('a drain that times out applies nothing disruptive, fails the host and resumes the node', async () => {
    const job = await runningJob('tb8', 300);
    const run = await provision([PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm', '--drain-timeout', '2', '--json']);
    expect(run.code).toBe(1);
    const mtu = run.events.find((e) => e.type === 'resource' && e.host === 'tb8' && e.id === 'mtu:eth0');
    expect(mtu).toMatchObject({
      status: 'failed',
      error: `not applied: drain (slurm via tb7) failed: timed out after 2s waiting for the jobs on tb8: job ${job} still running`,
    });
    expect(await liveMtu('tb8')).toBe('1500');
    expect(drainEvents(run).map((e) => `${e.type} ${e.outcome ?? e.ok}`)).toEqual(['drain failed', 'resume true']);
    expect((await nodeState('tb8')).state).toBe('allocated'); // back in scheduling, its job untouched
    await onCtl(`scancel ${job}`);
  }, 120_000);
});

describe('--drain slurm, check mode, with the controller unreachable', () => {
  beforeEach(async () => {
    await tb.reset(NODES);
    for (const h of NODES) await tb.hostExec(h, `mkdir -p /etc/network && printf '%s' '${IFACES}' > /etc/network/interfaces`);
  }, 60_000);

  /** The bed's Slurm inventory with the controller's address made `address:port` (no Slurm needed: it is never reached). */
  const unreachableCtl = (port: number) =>
    writeInventory({
      hosts: [CTL, ...NODES],
      groups: { slurm_controller: { hosts: [CTL] } },
      hostVars: {
        [CTL]: { ansible_host: '127.0.0.1', ansible_port: port },
        ...Object.fromEntries(NODES.map((h) => [h, { nic_mtu: [{ name: 'eth0', mtu: 9000 }] }])),
      },
    });
  /** A loopback port, free again: connections to it are refused. */
  const freePort = async () => {
    const s = createServer().listen(0, '127.0.0.1');
    await once(s, 'listening');
    const { port } = s.address() as AddressInfo;
    s.close();
    await once(s, 'close');
    return port;
  };

  it('a controller address that refuses connections: every node would be drained, each line saying the same reason', async () => {
    const check = await provision([
      PB,
      '-i',
      unreachableCtl(await freePort()),
      '-l',
      NODES.join(','),
      '--drain',
      'slurm',
      '--check',
      '--json',
      '-f',
      '1',
    ]);
    expect(check.code, check.stderr).toBe(2);
    const events = drainEvents(check);
    expect(events.map((e) => [e.host, e.outcome])).toEqual(NODES.map((h) => [h, 'would']));
    const detail = String(events[0].detail);
    expect(detail).toMatch(
      /^whether it is already out of scheduling, or held by another run of this controller, is not known \(controller tb7: .*ECONNREFUSED/,
    );
    expect(events.map((e) => e.detail)).toEqual(NODES.map(() => detail));
  }, 120_000);

  it('one that drops every connection at once: it is tried once for the run (its 3 attempts), not once per node', async () => {
    // (a listener that counts the connections and closes each at once: a refused port cannot be counted)
    let connections = 0;
    const dropper = createServer((sock) => {
      connections++;
      sock.destroy();
    }).listen(0, '127.0.0.1');
    await once(dropper, 'listening');
    try {
      const inv = unreachableCtl((dropper.address() as AddressInfo).port);
      // forks 1: the nodes ask one after the other, each after the last one's failure
      const check = await provision([PB, '-i', inv, '-l', NODES.join(','), '--drain', 'slurm', '--check', '--json', '-f', '1']);
      expect(check.code, check.stderr).toBe(2);
      const events = drainEvents(check);
      expect(events.map((e) => [e.host, e.outcome])).toEqual(NODES.map((h) => [h, 'would']));
      expect(new Set(events.map((e) => e.detail)).size).toBe(1);
      expect(String(events[0].detail)).toMatch(
        /^whether it is already out of scheduling, or held by another run of this controller, is not known \(controller tb7: /,
      );
      // one connection for the run, with the 3 attempts every connection gets for a dropped one (not 3 per node)
      expect(connections).toBe(3);
    } finally {
      dropper.close();
    }
  }, 120_000);
});

describe('--drain kubernetes around an MTU change (the API double)', () => {
  const CP = 'tb1';
  const NODE = 'tb3';
  let double: KubeApiDouble | undefined;
  const kubeInventory = () =>
    writeInventory({
      hosts: [CP, NODE],
      groups: { kube_control_plane: { hosts: [CP] } },
      hostVars: { [NODE]: { nic_mtu: [{ name: 'eth0', mtu: 9000 }] } },
    });
  /** A pod on the node, owned as given (a ReplicaSet's pod is evicted, a DaemonSet's is left). */
  const pod = (name: string, namespace: string, owner: { kind: string; name: string }, labels: Record<string, string> = {}) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels,
      ownerReferences: [{ apiVersion: 'apps/v1', ...owner, uid: `uid-${owner.name}`, controller: true }],
    },
    spec: { nodeName: NODE, containers: [{ name: 'c', image: 'x' }] },
  });
  const unschedulable = () => (double!.get('Node', NODE)?.spec as { unschedulable?: boolean } | undefined)?.unschedulable === true;
  const requested = (method: string, path: RegExp) =>
    double!.requests.some((r) => r.method === method && path.test(`${r.path}?${r.query}`));
  /** Whether, within 30 s, the node is cordoned and kubectl drain asks for web-1's eviction (which the budget refuses). */
  const cordonedAndEvicting = async (): Promise<boolean> => {
    const evicting = () => requested('POST', /\/namespaces\/default\/pods\/web-1\/eviction/);
    for (let i = 0; i < 300 && !(unschedulable() && evicting()); i++) await new Promise((r) => setTimeout(r, 100));
    return unschedulable() && evicting();
  };
  const annotations = () => (double!.get('Node', NODE)?.metadata as { annotations?: Record<string, string> }).annotations ?? {};

  beforeEach(async () => {
    await tb.reset([CP, NODE]);
    await double?.stop();
    double = await startKubeApiDouble({ host: tb.runnerIp, nodes: [{ name: CP }, { name: NODE }] });
    const r = await tb.hostExec(
      CP,
      'mkdir -p /etc/kubernetes && cat > /etc/kubernetes/admin.conf && chmod 600 /etc/kubernetes/admin.conf',
      {
        input: double.kubeconfig(),
      },
    );
    expect(r.code, r.stderr).toBe(0);
    await tb.hostExec(NODE, `mkdir -p /etc/network && printf '%s' '${IFACES}' > /etc/network/interfaces`);
    double.cluster.seed(pod('web-1', 'default', { kind: 'ReplicaSet', name: 'web' }, { app: 'web' }), 'kubelet');
    double.cluster.seed(pod('kube-proxy-x', 'kube-system', { kind: 'DaemonSet', name: 'kube-proxy' }), 'kubelet');
  }, 60_000);
  afterAll(async () => {
    await double?.stop();
    await tb.reset([NODE]); // (no host keeps the jumbo MTU after this file)
  });

  it("cordons, evicts the node's pods (DaemonSets left), changes, uncordons; check mode lists it", async () => {
    const check = await provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(drainEvents(check)).toEqual([{ type: 'drain', host: NODE, via: 'kubernetes', controller: CP, outcome: 'would' }]);
    expect(unschedulable()).toBe(false);

    const run = await provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: NODE, via: 'kubernetes', controller: CP, outcome: 'drained' },
      { type: 'resume', host: NODE, via: 'kubernetes', controller: CP, ok: true },
    ]);
    expect(await liveMtu(NODE)).toBe('9000');
    // what kubectl drain asked of the API: the node's pods, an eviction, cordon and uncordon
    expect(requested('GET', /\/api\/v1\/pods\?.*fieldSelector=spec.nodeName%3Dtb3/)).toBe(true);
    expect(requested('POST', /\/api\/v1\/namespaces\/default\/pods\/web-1\/eviction/)).toBe(true);
    expect(double!.requests.filter((r) => r.method === 'PATCH' && r.path === `/api/v1/nodes/${NODE}`)).toHaveLength(2);
    expect(double!.get('Pod', 'web-1', 'default')).toBeUndefined();
    expect(double!.get('Pod', 'kube-proxy-x', 'kube-system')).toBeDefined();
    expect(unschedulable()).toBe(false);
  }, 120_000);

  /** A PodDisruptionBudget over web-1 that allows no eviction: kubectl drain waits on it. */
  const budgetAllowingNoEviction = () =>
    double!.cluster.seed(
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'web', namespace: 'default' },
        spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'web' } } },
      },
      'kubectl',
    );

  it('a PodDisruptionBudget that allows no eviction: the drain times out, nothing applied, the node uncordoned', async () => {
    budgetAllowingNoEviction();
    const run = await provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--drain-timeout', '3', '--json']);
    expect(run.code).toBe(1);
    const mtu = run.events.find((e) => e.type === 'resource' && e.host === NODE && e.id === 'mtu:eth0');
    expect(mtu?.status).toBe('failed');
    expect(mtu?.error).toMatch(/^not applied: drain \(kubernetes via tb1\) failed: kubectl drain tb3 failed \(exit 1\): /);
    expect(mtu?.error).toContain('error when evicting pods/"web-1" -n "default": global timeout reached: 3s');
    // the budget answered 429 (kubectl asks again every 5 s, until its timeout)
    const evictions = double!.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/pods/web-1/eviction'));
    expect(evictions.length).toBeGreaterThanOrEqual(1);
    expect(await liveMtu(NODE)).toBe('1500');
    expect(double!.get('Pod', 'web-1', 'default')).toBeDefined();
    expect(drainEvents(run).map((e) => `${e.type} ${e.outcome ?? e.ok}`)).toEqual(['drain failed', 'resume true']);
    expect(unschedulable()).toBe(false);
  }, 120_000);

  it('an operator who removes the annotation while the run holds the node (to keep it out) keeps it cordoned: the run leaves it so, and says so', async () => {
    budgetAllowingNoEviction();
    const running = provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--drain-timeout', '15', '--json']);
    // cordoned, and kubectl drain asking for the eviction the budget refuses: then the operator's
    // `kubectl annotate`, as docs/cli.md tells them to keep the node out
    expect(await cordonedAndEvicting()).toBe(true);
    const off = await tb.hostExec(CP, `KUBECONFIG=/etc/kubernetes/admin.conf kubectl annotate node ${NODE} racksmith.io/drained-by-`);
    expect(off.code, off.stderr).toBe(0);
    const run = await running;
    expect(run.code).toBe(1); // (the drain timed out on the budget: nothing applied)
    expect(await liveMtu(NODE)).toBe('1500');
    const left =
      "cordoned (spec.unschedulable): out of scheduling under someone else's drain since this run took it out; left so, not put back";
    expect(drainEvents(run).map((e) => [e.type, e.outcome ?? e.ok, e.type === 'resume' ? e.detail : undefined, e.someoneElses])).toEqual([
      ['drain', 'failed', undefined, undefined],
      ['resume', false, left, true],
    ]);
    expect(run.stderr).toContain(`${NODE}: left out, someone else's drain now (kubernetes via ${CP}): ${left}`);
    expect(unschedulable()).toBe(true);
    // (the patches: racksmith's cordon and the operator's annotate; no uncordon)
    expect(double!.requests.filter((r) => r.method === 'PATCH' && r.path === `/api/v1/nodes/${NODE}`)).toHaveLength(2);
  }, 120_000);

  it('an operator who uncordons the node by hand while the run holds it: the run finds it back, and takes its mark off', async () => {
    budgetAllowingNoEviction();
    const running = provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--drain-timeout', '15', '--json']);
    expect(await cordonedAndEvicting()).toBe(true);
    const back = await tb.hostExec(CP, `KUBECONFIG=/etc/kubernetes/admin.conf kubectl uncordon ${NODE}`);
    expect(back.code, back.stderr).toBe(0);
    expect(annotations()).toHaveProperty(['racksmith.io/drained-by']);
    const run = await running;
    expect(run.code).toBe(1); // (the drain timed out on the budget: nothing applied)
    const said = 'uncordoned by someone else while this run held it; its mark taken off';
    expect(drainEvents(run).map((e) => [e.type, e.outcome ?? e.ok, e.type === 'resume' ? e.detail : undefined])).toEqual([
      ['drain', 'failed', undefined],
      ['resume', true, said],
    ]);
    expect(run.stderr).toContain(`${NODE}: resumed (kubernetes via ${CP}): ${said}`);
    expect(unschedulable()).toBe(false);
    expect(annotations()).not.toHaveProperty(['racksmith.io/drained-by']);
    // (the patches: racksmith's cordon, the operator's uncordon, racksmith's unmark; no uncordon of its own)
    const patches = double!.requests.filter((r) => r.method === 'PATCH' && r.path === `/api/v1/nodes/${NODE}`);
    expect(patches).toHaveLength(3);
  }, 120_000);

  it('Ctrl-C while kubectl drain waits on an eviction: kubectl drain killed on the control plane, the node uncordoned, the resume journaled', async () => {
    budgetAllowingNoEviction();
    const journal = join(mkdtempSync(join(tmpdir(), 'rs-drain-int-')), 'j.ndjson');
    const args = [PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--drain-timeout', '300', '--journal', journal];
    const child = spawn(process.execPath, [join(repoRoot, 'bin/provision.js'), ...args], { cwd: repoRoot });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const closed = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    // cordoned, and kubectl drain asking for the eviction the budget refuses
    expect(await cordonedAndEvicting(), stderr).toBe(true);
    const kubectlDrain = `pgrep -f '^kubectl drain ${NODE} '`;
    expect((await tb.hostExec(CP, kubectlDrain)).code).toBe(0);
    child.kill('SIGINT');
    // kubectl drain would wait 5 minutes: a watchdog stands in for "never"
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await closed;
    clearTimeout(watchdog);
    expect(code, stderr).toBe(1);
    expect(unschedulable()).toBe(false);
    expect((await tb.hostExec(CP, kubectlDrain)).code).toBe(1); // no kubectl drain left behind
    expect(await liveMtu(NODE)).toBe('1500');
    expect(double!.get('Pod', 'web-1', 'default')).toBeDefined();
    const events = readFileSync(journal, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((e) => e.type === 'drain' || e.type === 'resume')
      .map(({ ts: _ts, ...e }) => e);
    expect(events).toEqual([
      {
        type: 'drain',
        host: NODE,
        via: 'kubernetes',
        controller: CP,
        outcome: 'failed',
        detail: `interrupted: kubectl drain ${NODE} was stopped`,
        tookOut: true,
      },
      { type: 'resume', host: NODE, via: 'kubernetes', controller: CP, ok: true },
    ]);
    expect(stderr).toContain(`${NODE}: resumed (kubernetes via ${CP})`);
  }, 120_000);

  it('--host-timeout while kubectl drain waits on an eviction: kubectl drain killed on the control plane at once, the node uncordoned, the host timed out', async () => {
    budgetAllowingNoEviction();
    const t0 = Date.now();
    const args = [
      PB,
      '-i',
      kubeInventory(),
      '-l',
      NODE,
      '--drain',
      'kubernetes',
      '--drain-timeout',
      '120',
      '--host-timeout',
      '15',
      '--json',
    ];
    const run = await provision(args, { timeoutMs: 180_000 });
    // (kubectl drain would wait its 120 s on the budget)
    expect(Date.now() - t0).toBeLessThan(90_000);
    expect(run.code, run.stderr).toBe(1);
    expect(recaps(run)[NODE]).toMatchObject({ unreachable: true, error: 'timed out after 15s', changed: 0 });
    expect(drainEvents(run)).toEqual([
      {
        type: 'drain',
        host: NODE,
        via: 'kubernetes',
        controller: CP,
        outcome: 'failed',
        detail: `host timed out after 15s: kubectl drain ${NODE} was stopped`,
        tookOut: true,
      },
      { type: 'resume', host: NODE, via: 'kubernetes', controller: CP, ok: true },
    ]);
    expect((await tb.hostExec(CP, `pgrep -f '^kubectl drain ${NODE} '`)).code).toBe(1); // no kubectl drain left behind
    expect(unschedulable()).toBe(false);
    expect(await liveMtu(NODE)).toBe('1500');
    expect(double!.get('Pod', 'web-1', 'default')).toBeDefined();
  }, 240_000);

  it('a node left cordoned by a run killed mid-drain (SIGKILL): the next run takes it over, says so, and uncordons it, its mark gone', async () => {
    budgetAllowingNoEviction();
    const args = [PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--drain-timeout', '300'];
    const crashed = spawn(process.execPath, [join(repoRoot, 'bin/provision.js'), ...args], { cwd: repoRoot, stdio: 'ignore' });
    const gone = new Promise((r) => crashed.on('close', r));
    await cordonedAndEvicting();
    // (killed before any check: a failed one leaves no run behind to disturb the next test)
    crashed.kill('SIGKILL');
    await gone;
    const mark = /^racksmith (\S+) on (\S+)$/.exec(annotations()['racksmith.io/drained-by'] ?? '');
    expect(mark?.[2]).toBe(hostname());
    expect(unschedulable()).toBe(true); // out of scheduling, nobody to put it back

    const r = await tb.hostExec(CP, 'KUBECONFIG=/etc/kubernetes/admin.conf kubectl delete pdb web -n default');
    expect(r.code, r.stderr).toBe(0);
    const run = await provision([...args, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const why = `taken over from run ${mark![1]}, which did not finish: its process ${crashed.pid} is gone`;
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: NODE, via: 'kubernetes', controller: CP, outcome: 'drained', detail: why },
      { type: 'resume', host: NODE, via: 'kubernetes', controller: CP, ok: true },
    ]);
    expect(run.stderr).toContain(`${NODE}: drained (kubernetes via ${CP}): ${why}`);
    expect(await liveMtu(NODE)).toBe('9000');
    expect(double!.get('Pod', 'web-1', 'default')).toBeUndefined();
    expect(unschedulable()).toBe(false);
    expect(annotations()).not.toHaveProperty(['racksmith.io/drained-by']);
  }, 120_000);

  it("an operator's `kubectl cordon` over a dead run's mark is the operator's: left cordoned", async () => {
    // a run of this controller's history, dead (its process gone), whose mark stayed on the node
    // (an operator's `kubectl uncordon` leaves the annotation); then the operator cordons it by hand
    const dead = spawn('true');
    await new Promise((r) => dead.on('close', r));
    const id = newRunId();
    const record = join(runsDir(), `${id}.json`);
    const proc = { pid: dead.pid, start: 1, boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() };
    const fields = { start: new Date().toISOString(), user: 'ops', controller: hostname(), argv: [], cwd: '/', playbooks: [] };
    const rest = { inventoryFingerprint: '', labels: {}, check: false, journal: '/nonexistent', hosts: {} };
    mkdirSync(runsDir(), { recursive: true });
    writeFileSync(record, JSON.stringify({ id, ...fields, process: proc, ...rest }));
    try {
      const k = (cmd: string) => tb.hostExec(CP, `KUBECONFIG=/etc/kubernetes/admin.conf kubectl ${cmd}`);
      const mark = `racksmith ${id} on ${hostname()}`;
      const patch = JSON.stringify({ metadata: { annotations: { 'racksmith.io/drained-by': mark } } });
      expect((await k(`patch node ${NODE} --field-manager=racksmith -p '${patch}'`)).code).toBe(0);
      expect((await k(`cordon ${NODE}`)).code).toBe(0);
      const run = await provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--json']);
      expect(run.code, run.stderr).toBe(0);
      expect(drainEvents(run)).toEqual([
        { type: 'drain', host: NODE, via: 'kubernetes', controller: CP, outcome: 'already', detail: 'cordoned (spec.unschedulable)' },
      ]);
      expect(unschedulable()).toBe(true);
    } finally {
      rmSync(record, { force: true });
    }
  }, 120_000);

  it("a node cordoned by another racksmith run still running on this controller: the check says blocked; the apply fails its drain (no eviction), nothing applied, the node left cordoned with that run's mark", async () => {
    // a run of this controller's history that is alive (its process is this test's own), whose
    // cordon is on the node as racksmith's patch leaves it (field manager racksmith, its mark)
    const id = newRunId();
    const record = join(runsDir(), `${id}.json`);
    const proc = { pid: process.pid, start: processStart(process.pid), boot: bootId() };
    const fields = { start: new Date().toISOString(), user: 'ops', controller: hostname(), argv: [], cwd: '/', playbooks: [] };
    const rest = { inventoryFingerprint: '', labels: {}, check: false, journal: '/nonexistent', hosts: {} };
    mkdirSync(runsDir(), { recursive: true });
    writeFileSync(record, JSON.stringify({ id, ...fields, process: proc, ...rest }));
    try {
      const mark = `racksmith ${id} on ${hostname()}`;
      const patch = JSON.stringify({ spec: { unschedulable: true }, metadata: { annotations: { 'racksmith.io/drained-by': mark } } });
      const p = await tb.hostExec(
        CP,
        `KUBECONFIG=/etc/kubernetes/admin.conf kubectl patch node ${NODE} --field-manager=racksmith -p '${patch}'`,
      );
      expect(p.code, p.stderr).toBe(0);
      const detail =
        `cordoned (spec.unschedulable): run ${id} is still running on this controller (pid ${process.pid}); no disruptive change is applied ` +
        "under another racksmith run's drain, which that run ends (puts the node back) when its own work ends, maybe in the middle of this " +
        "host's changes: run again once that run has ended; if it never will (another controller's run that died, a pruned run), put the " +
        `node back by hand (kubectl uncordon ${NODE}) and run again`;
      const check = await provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--check', '--json']);
      expect(check.code, check.stderr).toBe(2);
      expect(drainEvents(check)).toEqual([{ type: 'drain', host: NODE, via: 'kubernetes', controller: CP, outcome: 'blocked', detail }]);

      const run = await provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--json']);
      expect(run.code, run.stderr).toBe(1);
      expect(drainEvents(run)).toEqual([
        { type: 'drain', host: NODE, via: 'kubernetes', controller: CP, outcome: 'failed', detail, tookOut: false },
      ]);
      expect(run.events.find((e) => e.type === 'resource' && e.host === NODE && e.id === 'mtu:eth0')).toMatchObject({
        status: 'failed',
        error: `not applied: drain (kubernetes via ${CP}) failed: ${detail}`,
      });
      expect(await liveMtu(NODE)).toBe('1500');
      // left as that run has it: cordoned, its mark, its pods not evicted
      expect(unschedulable()).toBe(true);
      expect((double!.get('Node', NODE)?.metadata as { annotations?: Record<string, string> }).annotations).toMatchObject({
        'racksmith.io/drained-by': mark,
      });
      expect(requested('POST', /\/eviction/)).toBe(false);
      expect(double!.get('Pod', 'web-1', 'default')).toBeDefined();
    } finally {
      rmSync(record, { force: true });
    }
  }, 120_000);

  it('a node cordoned beforehand: the check lists it as already out; it is drained and changed, and stays cordoned', async () => {
    const r = await tb.hostExec(CP, `KUBECONFIG=/etc/kubernetes/admin.conf kubectl cordon ${NODE}`);
    expect(r.code, r.stderr).toBe(0);
    const check = await provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(drainEvents(check)).toEqual([
      { type: 'drain', host: NODE, via: 'kubernetes', controller: CP, outcome: 'already', detail: 'cordoned (spec.unschedulable)' },
    ]);
    const run = await provision([PB, '-i', kubeInventory(), '-l', NODE, '--drain', 'kubernetes', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: NODE, via: 'kubernetes', controller: CP, outcome: 'already', detail: 'cordoned (spec.unschedulable)' },
    ]);
    expect(await liveMtu(NODE)).toBe('9000');
    expect(unschedulable()).toBe(true);
    expect(double!.get('Pod', 'web-1', 'default')).toBeUndefined();
  }, 120_000);
});
