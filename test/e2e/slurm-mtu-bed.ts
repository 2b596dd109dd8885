// The drain tests' Slurm on the bed (tb.slurm: tb7 the controller, tb8 and tb9 compute nodes), each
// node with an MTU change (playbooks/node.ts): a disruptive change, so --drain takes it out first.
import * as tb from '../testbed/api.ts';
import { writeInventory, type CliRun } from './helpers.ts';

export const PB = 'playbooks/node.ts';
export const CTL = 'tb7';
export const NODES = ['tb8', 'tb9'];
/** An ifupdown stanza for eth0, for the MTU to be persisted in. */
export const IFACES = 'auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet manual\n';

/** The controller in slurm_controller, each node with nic_mtu 9000. */
export const inventory = () =>
  writeInventory({
    hosts: [CTL, ...NODES],
    groups: { slurm_controller: { hosts: [CTL] } },
    hostVars: Object.fromEntries(NODES.map((h) => [h, { nic_mtu: [{ name: 'eth0', mtu: 9000 }] }])),
  });

/** A command on the controller; its stdout, trimmed (a failure throws). */
export const onCtl = async (cmd: string): Promise<string> => {
  const r = await tb.hostExec(CTL, cmd);
  if (r.code !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return r.stdout.trim();
};

/** sinfo's state of a node (idle, allocated, draining, drained, ...) and its reason. */
export const nodeState = async (node: string) => {
  const [state, reason] = (await onCtl(`sinfo -h -N -n ${node} -o '%T|%E'`)).split('\n')[0].split('|');
  // (without sinfo's flags: `*` is a node that missed one of the controller's pings)
  return { state: state.replace(/[*~#!%$@^-]+$/, ''), reason };
};

export const liveMtu = async (h: string) => (await tb.hostExec(h, 'cat /sys/class/net/eth0/mtu')).stdout.trim();

/** A run's drain and resume events, without their timestamps. */
export const drainEvents = (run: CliRun) =>
  run.events.filter((e) => e.type === 'drain' || e.type === 'resume').map(({ ts: _ts, ...e }) => e);
