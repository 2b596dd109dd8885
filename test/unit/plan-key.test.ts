// --plan-key FILE: a file that is no 32-byte key is refused with what to do about a plan key
// (make one), never the installation key's advice (remove it: here that could be /dev/zero).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useTeamKey } from '../../src/util/state-dir.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-plan-key-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('--plan-key', () => {
  it.each([
    ['a device', '/dev/zero'],
    ['a file of the wrong size', join(dir, 'short.key')],
  ])('%s: not a key, and how to make one', (_, file) => {
    if (!file.startsWith('/dev/')) writeFileSync(file, 'short', { mode: 0o600 });
    expect(() => useTeamKey(file)).toThrow(
      `${file}: not a 32-byte key file (a plan key: make one with head -c 32 /dev/urandom > FILE && chmod 600 FILE)`,
    );
    expect(() => useTeamKey(file)).not.toThrow(/remove it/);
  });
  it('a missing one says how to make one', () => {
    expect(() => useTeamKey(join(dir, 'none.key'))).toThrow(/no such plan key file \(make one:/);
  });
});
