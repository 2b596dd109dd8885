// The storage play tunes the bed's rotational disks (every host's first) with the HDD profile, whose
// scheduler a kernel may be built without. A test that converges the storage play reads first
// whether this kernel offers it, and skips with the reason when not: never a failure, never a
// silent pass. Every block device offers the kernel's schedulers, so one of the bed's loop
// devices, read on the runner, answers for all hosts.
import { readFileSync } from 'node:fs';
import type { TestContext } from 'vitest';
import * as tb from '../testbed/api.ts';

/** The HDD profile's scheduler (playbooks/storage.ts). */
export const HDD_SCHEDULER = 'mq-deadline';

let missing: string | undefined;

/** Why the storage play cannot converge on this kernel, or '' when it can. */
export function hddSchedulerMissing(): string {
  if (missing === undefined) {
    const dev = tb.host('tb1').disks[0].dev.replace('/dev/', '');
    const offered = readFileSync(`/sys/block/${dev}/queue/scheduler`, 'utf8')
      .split(/\s+/)
      .filter(Boolean)
      .map((w) => w.replace(/^\[|\]$/g, ''));
    missing = offered.includes(HDD_SCHEDULER)
      ? ''
      : `the bed's disks offer no ${HDD_SCHEDULER} (only ${offered.join(' ')}): the storage play's HDD profile cannot be applied on this kernel`;
  }
  return missing;
}

/** Skips the test, saying why, on a kernel without the HDD profile's scheduler. */
export function needHddScheduler(ctx: TestContext): void {
  const why = hddSchedulerMissing();
  if (why) ctx.skip(why);
}
