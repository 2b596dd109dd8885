// --drain with --serial over a playbook of two disruptive plays, on the bed's real Slurm (tb7 the
// controller, tb8 and tb9 compute nodes): a rolling rollout keeps one batch out of scheduling at
// a time in every play, as a drain and resume around each batch of an Ansible play would. Before,
// a host drained in the first play stayed out until its last play, so by the end of the first
// play every node was drained at once.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, writeInventory, type CliRun } from './helpers.ts';

const PB = 'test/fixtures/playbooks/mtu-two-plays.ts';
const CTL = 'tb7';
const NODES = ['tb8', 'tb9'];
const IFACES = 'auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet manual\n\niface rsx0 inet manual\n';
// the second play's interface: a veth pair in each node's namespace, gone after each test (other
// tests read the hosts' NICs)
const VETH = 'ip link del rsx0 2>/dev/null; ip link add rsx0 type veth peer name rsx1';

const inventory = () =>
  writeInventory({ hosts: [CTL, ...NODES], groups: { slurm_controller: { hosts: [CTL] }, compute: { hosts: NODES } } });

/** The most nodes this run had out of scheduling at once, from its drain and resume events in order. */
function mostDrainedAtOnce(run: CliRun): number {
  const out = new Set<string>();
  let most = 0;
  for (const e of run.events) {
    if (e.type === 'drain' && e.outcome === 'drained') out.add(e.host);
    if (e.type === 'resume') out.delete(e.host);
    most = Math.max(most, out.size);
  }
  return most;
}

describe.skipIf(!tb.slurmAvailable())('--drain slurm with --serial over two disruptive plays (real Slurm on the bed)', () => {
  beforeEach(async () => {
    await tb.reset([CTL, ...NODES]);
    await tb.slurm([CTL, ...NODES]);
    for (const h of NODES) {
      await tb.hostExec(h, `mkdir -p /etc/network && printf '%s' '${IFACES}' > /etc/network/interfaces`);
      expect((await tb.hostExec(h, VETH)).code).toBe(0);
    }
  }, 60_000);
  afterEach(async () => {
    for (const h of NODES) await tb.hostExec(h, 'ip link del rsx0 2>/dev/null; true');
  });

  it('--serial 1: one node drained at a time, in each play; every node back in scheduling at the end', async () => {
    const run = await provision([PB, '-i', inventory(), '-l', 'compute', '--drain', 'slurm', '--serial', '1', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const seq = run.events
      .filter((e) => e.type === 'drain' || e.type === 'resume')
      .map((e) => `${e.type} ${e.host}${e.type === 'drain' ? ` ${e.outcome}` : ''}`);
    expect(seq).toEqual([
      'drain tb8 drained',
      'resume tb8',
      'drain tb9 drained',
      'resume tb9',
      'drain tb8 drained',
      'resume tb8',
      'drain tb9 drained',
      'resume tb9',
    ]);
    expect(mostDrainedAtOnce(run)).toBe(1);
    for (const n of NODES) {
      const state = (await tb.hostExec(CTL, `sinfo -h -N -n ${n} -o %T`)).stdout.trim().split('\n')[0];
      expect(state.replace(/[*~#!%$@^-]+$/, ''), n).toBe('idle');
    }
  }, 120_000);

  it('without --serial: each node drained once for both plays', async () => {
    const run = await provision([PB, '-i', inventory(), '-l', 'compute', '--drain', 'slurm', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const drains = run.events.filter((e) => e.type === 'drain').map((e) => `${e.host} ${e.outcome}`);
    expect(drains.sort()).toEqual(['tb8 drained', 'tb9 drained']);
    expect(run.events.filter((e) => e.type === 'resume').length).toBe(2);
  }, 120_000);
});
