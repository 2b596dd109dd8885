import { describe, expect, it } from 'vitest';
import { anyOverlap, fileTopic, topicsOverlap } from '../../src/contract/state-topics.ts';

describe('whether a touched part of a host can change a read one (state-topics)', () => {
  it.each<[string, string, boolean]>([
    ['sysctl', 'sysctl', true],
    ['sysctl', 'mounts', false],
    ['file:/etc/fstab', 'file:/etc/fstab', true],
    ['file:/etc', 'file:/etc/fstab', true],
    ['file:/etc/fstab', 'file:/etc', true],
    ['file:/', 'file:/etc/fstab', true],
    ['file:/etc/', 'file:/etc/fstab', true],
    ['file:/etc/fstab', 'file:/etc/fstab.d', false],
    ['file:/etc/fstab.d/x', 'file:/etc/fstab', false],
    ['file:/mnt/jail', 'file:/mnt/jail2/x', false],
    ['file:/etc/fstab', 'mounts', false],
    ['mounts', 'file:/proc/self/mountinfo', false],
  ])('%s against %s: %s', (touched, read, want) => {
    expect(topicsOverlap(touched, read)).toBe(want);
  });

  it('any of several against any of several', () => {
    expect(anyOverlap([fileTopic('/etc/sysctl.d/a.conf'), 'sysctl'], ['mounts', fileTopic('/etc/fstab')])).toBe(false);
    expect(anyOverlap([fileTopic('/etc/sysctl.d/a.conf'), 'mounts'], ['block-devices', 'mounts'])).toBe(true);
    expect(anyOverlap([], ['mounts'])).toBe(false);
  });
});
