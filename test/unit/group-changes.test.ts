// The human view's "Changes made" list: identical changes folded across hosts, and only changes
// that were made (a failed resource's planned changes are not).
import { describe, expect, it } from 'vitest';
import { resourceResult } from '../../src/engine/events.ts';
import { groupChanges } from '../../src/output/group-changes.ts';

const mountChange = { summary: 'mount /srv/j on /mnt/jail (xfs, defaults)' };

describe('groupChanges', () => {
  it('folds the same change on several hosts into one entry, hosts in inventory order', () => {
    const results = ['h2', 'h1'].map((h) =>
      resourceResult(h, 'p', 'mount:/mnt/jail', 'mount', { status: 'changed', changes: [mountChange] }),
    );
    expect(groupChanges(results, ['h1', 'h2'])).toEqual([
      { id: 'mount:/mnt/jail', summaries: [mountChange.summary], diffs: [], hosts: ['h1', 'h2'] },
    ]);
  });

  it('a failed resource is not listed, even with the changes it meant to make', () => {
    const results = [
      resourceResult('h1', 'p', 'mount:/mnt/jail', 'mount', {
        status: 'failed',
        changes: [mountChange],
        error: 'step "mount /mnt/jail" exit 32',
      }),
      resourceResult('h2', 'p', 'mount:/mnt/jail', 'mount', { status: 'changed', changes: [mountChange] }),
    ];
    expect(groupChanges(results, ['h1', 'h2']).map((g) => g.hosts)).toEqual([['h2']]);
    expect(groupChanges(results.slice(0, 1))).toEqual([]);
  });
});
