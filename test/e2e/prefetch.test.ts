// Issue #39: a host's first exec probes every play; an earlier play's apply keeps the later
// plays' answers current when its steps say what they touch (Step.touches) and none of it is
// what those resources read (Resource.reads): on a fresh storage host the storage play then
// formats and mounts without probing its disks a second time. A step that says nothing (a
// command) still makes the later play probe again. Real hosts, real XFS on loop devices.
import { beforeEach, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory } from './helpers.ts';
import { needHddScheduler } from './hdd-scheduler.ts';

const H = 'tb7';
const PB = 'test/fixtures/playbooks/prefetch-storage.ts';

const inventory = (vars: Record<string, unknown> = {}) =>
  writeInventory({
    hosts: [H],
    hostVars: {
      [H]: {
        ...vars,
        storage_disks: tb
          .host(H)
          .disks.map((d, i) => ({ device: d.dev, name: `d${i + 1}`, match: { KERNEL: d.dev.replace('/dev/', '') } })),
      },
    },
    groups: { storage: { hosts: [H] } },
  });

const storagePlay = (events: Array<Record<string, unknown>>) => events.filter((e) => e.type === 'resource' && e.play === 'storage');

beforeEach(async () => {
  await tb.reset([H]);
});

describe("a later play's answers across an earlier play's apply", () => {
  it('stay current across a sysctl drop-in: the storage play formats and mounts with one exec fewer; re-run 0 changes; --check changes nothing', async (ctx) => {
    needHddScheduler(ctx);
    const inv = inventory();
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code, check.stderr).toBe(2);
    expect(recaps(check)[H]).toMatchObject({ failed: 0, execs: 1 });
    expect((await tb.hostExec(H, 'test -e /etc/sysctl.d/90-rs-prefetch.conf || echo absent')).stdout).toBe('absent\n');

    const first = await provision([PB, '-i', inv, '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(storagePlay(first.events).filter((e) => e.status === 'changed').length).toBeGreaterThan(0);
    // the probe of both plays, the drop-in's apply, the storage play's two waves (format, then
    // what mounts it): no probe of the storage play in between
    expect(recaps(first)[H]).toMatchObject({ failed: 0, execs: 4 });
    for (const [i, d] of tb.host(H).disks.entries()) {
      expect((await tb.hostExec(H, `blkid -p -s TYPE -o value ${d.dev}`)).stdout.trim()).toBe('xfs');
      expect((await tb.hostExec(H, `findmnt -n -o SOURCE /ais/d${i + 1}`)).stdout.trim()).toBe(d.dev);
    }

    const again = await provision([PB, '-i', inv, '--json']);
    expect(recaps(again)[H]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it('are probed again after a step that does not say what it touches (a command)', async (ctx) => {
    needHddScheduler(ctx);
    const first = await provision([PB, '-i', inventory({ prefetch_command: true }), '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.events.find((e) => e.id === 'command:marker')).toMatchObject({ status: 'changed' });
    expect(storagePlay(first.events).filter((e) => e.status === 'changed').length).toBeGreaterThan(0);
    // the same as above, and the storage play's own probe after the command
    expect(recaps(first)[H]).toMatchObject({ failed: 0, execs: 5 });
  });
});
