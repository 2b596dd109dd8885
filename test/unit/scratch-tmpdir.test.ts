// The test run's one scratch directory (test/support/scratch-tmpdir.ts): the workers' temporary
// directories go into it, and its removal never reaches into a mount or a directory it did not make.
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { isRunScratchDir, mountsUnder } from '../support/scratch-tmpdir.ts';

describe('the run scratch directory', () => {
  it("is this worker's tmpdir(), set before the worker started", () => {
    expect(process.env.RS_TEST_SCRATCH).toBe(tmpdir());
    expect(isRunScratchDir(tmpdir())).toBe(true);
  });

  it.each([
    ['/tmp/racksmith-tests-Ab12Cd', true],
    ['/var/tmp/racksmith-tests-xyzXYZ', true],
    ['/', false],
    ['/tmp', false],
    ['/tmp/racksmith-tests-', false],
    ['/tmp/racksmith-tests-Ab12Cd/x', false],
    ['/tmp/racksmith-tests-Ab12C/', false],
    ['racksmith-tests-Ab12Cd', false],
    ['/tmp/other-Ab12Cd', false],
  ])('%s is one it may remove: %s', (dir, want) => {
    expect(isRunScratchDir(dir)).toBe(want);
  });

  it('finds the mounts at or under the directory, names with spaces included, and no others', () => {
    const mountinfo = [
      '22 1 0:21 / / rw - ext4 /dev/sda1 rw',
      '40 22 0:30 / /tmp/racksmith-tests-Ab12Cd/jail/proc rw - proc proc rw',
      '41 22 0:31 / /tmp/racksmith-tests-Ab12Cd/a\\040b rw - tmpfs tmpfs rw',
      '42 22 0:32 / /tmp/racksmith-tests-Ab12Cd rw - tmpfs tmpfs rw',
      '43 22 0:33 / /tmp/racksmith-tests-Ab12Cdx rw - tmpfs tmpfs rw',
      '',
    ].join('\n');
    expect(mountsUnder('/tmp/racksmith-tests-Ab12Cd', mountinfo)).toEqual([
      '/tmp/racksmith-tests-Ab12Cd/jail/proc',
      '/tmp/racksmith-tests-Ab12Cd/a b',
      '/tmp/racksmith-tests-Ab12Cd',
    ]);
    expect(mountsUnder('/tmp/elsewhere', mountinfo)).toEqual([]);
  });
});
