// Whether a bed host's veth takes a channel count: a kernel feature (veth's ethtool set_channels, and
// as many queues as the runner has CPUs), read on the host before a test relies on it.
import * as tb from '../testbed/api.ts';

/** Why `ethtool -L IFACE rx N tx N` cannot work on HOST (ethtool must be installed there), or undefined when it can. */
export async function channelsUnsettable(host: string, iface: string, want: number): Promise<string | undefined> {
  const r = await tb.hostExec(host, `ethtool -l ${iface}`);
  if (r.code !== 0) return `${host} ${iface}: ethtool -l fails on this kernel (${(r.stderr || r.stdout).trim()})`;
  const maximums = /Pre-set maximums:([\s\S]*?)Current/.exec(r.stdout)?.[1] ?? '';
  const max = (name: string) => Number(new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(maximums)?.[1] ?? 0);
  if (max('RX') < want || max('TX') < want)
    return `${host} ${iface} takes at most rx ${max('RX')} tx ${max('TX')} channels on this kernel and CPU count: ${want} cannot be set`;
  return undefined;
}
