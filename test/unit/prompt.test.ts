// The password prompt without a terminal: the first line of stdin, and messages that name what
// was asked for (a BECOME password is not a vault password).
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { promptPassword } from '../../src/util/prompt.ts';

const quiet = () => new Writable({ write: (_c, _e, cb) => cb() }) as unknown as NodeJS.WriteStream;
const stdinOf = (text: string) => {
  const s = new PassThrough();
  s.end(text);
  return s as unknown as NodeJS.ReadStream;
};

describe('promptPassword without a terminal', () => {
  it('takes the first line of stdin', async () => {
    expect((await promptPassword('BECOME password: ', stdinOf('pw1\nrest\n'), quiet())).toString()).toBe('pw1');
  });
  it.each([
    ['BECOME password: ', 'no BECOME password given: stdin is closed'],
    ['SSH password: ', 'no SSH password given: stdin is closed'],
    ['Vault password (prod): ', 'no Vault password (prod) given: stdin is closed'],
  ])('stdin closed at once: %s names what was asked', async (prompt, msg) => {
    await expect(promptPassword(prompt, stdinOf(''), quiet())).rejects.toThrow(msg);
  });
});
