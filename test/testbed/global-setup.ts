// vitest globalSetup of the e2e project: one bed for all e2e files.
//   RS_TESTBED_HOSTS  number of hosts (default 10), 2 disks each
//   RS_TESTBED_KEEP=1 leave the bed up after the run (it is reused by the next run if it matches)
import { down, matches, up } from './api.ts';

export default async function setup(): Promise<() => Promise<void>> {
  const want = { hosts: Number(process.env.RS_TESTBED_HOSTS ?? 10), disks: 2 };
  if (!Number.isInteger(want.hosts) || want.hosts < 1) throw new Error('RS_TESTBED_HOSTS must be a positive integer');
  if (await matches(want)) {
    console.error(`[testbed] reusing the running bed (${want.hosts} hosts x ${want.disks} disks)`);
  } else {
    await up(want);
  }
  return async () => {
    if (process.env.RS_TESTBED_KEEP === '1') {
      console.error('[testbed] RS_TESTBED_KEEP=1: leaving the bed up (npm run testbed -- down)');
      return;
    }
    await down();
  };
}
