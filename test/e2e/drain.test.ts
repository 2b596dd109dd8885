// --drain slurm on the bed's real Slurm (tb.slurm: tb7 the controller, tb8 and tb9 compute
// nodes): an MTU change (Change.disruptive) waits for the node's running job, drains the node,
// changes, resumes; a node drained by hand stays drained; a drain that times out applies nothing
// disruptive and still resumes the node. Each test resets its hosts and makes the cluster again.
import { beforeEach, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory, type CliRun } from './helpers.ts';

const PB = 'playbooks/node.ts';
const CTL = 'tb7';
const NODES = ['tb8', 'tb9'];
const IFACES = 'auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet manual\n';

const inventory = () =>
  writeInventory({
    hosts: [CTL, ...NODES],
    groups: { slurm_controller: { hosts: [CTL] } },
    hostVars: Object.fromEntries(NODES.map((h) => [h, { nic_mtu: [{ name: 'eth0', mtu: 9000 }] }])),
  });

const onCtl = async (cmd: string): Promise<string> => {
  const r = await tb.hostExec(CTL, cmd);
  if (r.code !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return r.stdout.trim();
};
/** sinfo's state of a node (idle, allocated, draining, drained, ...) and its reason. */
const nodeState = async (node: string) => {
  const [state, reason] = (await onCtl(`sinfo -h -N -n ${node} -o '%T|%E'`)).split('\n')[0].split('|');
  // (without sinfo's flags: `*` is a node that missed one of the controller's pings)
  return { state: state.replace(/[*~#!%$@^-]+$/, ''), reason };
};
const liveMtu = async (h: string) => (await tb.hostExec(h, 'cat /sys/class/net/eth0/mtu')).stdout.trim();
/** Submit a sleep job on `node` and wait until it runs (the scheduler starts it within a second or two). */
async function runningJob(node: string, secs: number): Promise<string> {
  const id = await onCtl(`sbatch --parsable -w ${node} --chdir=/tmp -o /dev/null --wrap 'sleep ${secs}'`);
  for (let i = 0; i < 100 && (await onCtl(`squeue -h -j ${id} -o %T`)) !== 'RUNNING'; i++) await new Promise((r) => setTimeout(r, 100));
  expect(await onCtl(`squeue -h -j ${id} -o %T`)).toBe('RUNNING');
  return id;
}
/** The run's drain and resume events, without their time stamps. */
const drainEvents = (run: CliRun) => run.events.filter((e) => e.type === 'drain' || e.type === 'resume').map(({ ts: _ts, ...e }) => e);

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

    const again = await provision([PB, '-i', inventory(), '-l', 'tb8', '--drain', 'slurm', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(recaps(again).tb8).toMatchObject({ changed: 0, failed: 0 });
    expect(drainEvents(again)).toEqual([]);
  }, 120_000);

  it('a node drained by hand beforehand is changed and stays drained with its reason', async () => {
    await onCtl(`scontrol update nodename=tb9 state=drain reason='maintenance by ops'`);
    const run = await provision([PB, '-i', inventory(), '-l', 'tb9', '--drain', 'slurm', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(drainEvents(run)).toEqual([
      { type: 'drain', host: 'tb9', via: 'slurm', controller: CTL, outcome: 'already', detail: 'drained (maintenance by ops)' },
    ]);
    expect(await liveMtu('tb9')).toBe('9000');
    expect(await nodeState('tb9')).toEqual({ state: 'drained', reason: 'maintenance by ops' });
  }, 120_000);

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
