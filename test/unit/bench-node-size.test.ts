// The bench's storage node at its size (bench/lib/node-size.ts): a fake root the disk probes read
// as a host of 24 data disks given by serial. Checked here so that the bench's figure stays the
// probe of 24 disks it says it is (a probe that found none would be fast and wrong).
import { describe, expect, it } from 'vitest';
import { NODE_DISKS, storageNodeProbeMs } from '../../bench/lib/node-size.ts';

describe('bench: a storage node at its size', () => {
  it('every data disk is found by its serial and seen mounted', async () => {
    const { ms, found } = await storageNodeProbeMs(NODE_DISKS, 1);
    expect(found).toBe(NODE_DISKS);
    expect(ms).toBeGreaterThan(0);
  });
});
