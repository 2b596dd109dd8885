// The host tables of core/host-tables.ts as rs_ht_load would have read them for root '' (a mount
// table given as text): shell that sets them, for a script that runs MOUNTINFO_FN's walks over
// a table of the test's own instead of this machine's.
import { shq } from '../../src/shell/quote.ts';

export function presetHostTables(mountTable: string): string {
  const lines = mountTable
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => `/proc/self/mountinfo:${l}`)
    .join('\n');
  return `rs_ht_root='='; rs_ht=${shq(lines)}; rs_ht_udev=`;
}
