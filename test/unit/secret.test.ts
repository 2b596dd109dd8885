// Secrets: keyed masks (per-installation key, 0600, atomic), scrubbing of every rendering, and
// refusal of a secret in a field that takes none.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { maskSecret, refuseSecrets, scrub, scrubbingStream, Secret, secretText } from '../../src/util/secret.ts';
import { installationKey } from '../../src/util/state-dir.ts';
import { command, file, line } from '../../src/index.ts';
import { shq } from '../../src/shell/quote.ts';
import { InputError } from '../../src/util/errors.ts';
import { scratchStateDir } from './facts.ts';

scratchStateDir();

describe('masks', () => {
  it('are keyed by the installation key: same secret same mask, another installation another mask, no plain hash', () => {
    const a = maskSecret('hunter2');
    expect(a).toMatch(/^<secret hmac:[0-9a-f]{16}…>$/);
    expect(maskSecret('hunter2')).toBe(a);
    expect(maskSecret('hunter3')).not.toBe(a);
    // a dictionary guess with the unkeyed hash confirms nothing
    expect(a).not.toContain(createHash('sha256').update('hunter2').digest('hex').slice(0, 12));
    const keyFile = join(process.env.XDG_STATE_HOME!, 'racksmith', 'installation.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(keyFile)).toHaveLength(32);
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-state-'));
    expect(maskSecret('hunter2')).not.toBe(a);
  });

  it('the key is read again, not remade; a key file readable by others is refused', () => {
    const k = installationKey();
    expect(installationKey().equals(k)).toBe(true);
    const keyFile = join(process.env.XDG_STATE_HOME!, 'racksmith', 'installation.key');
    expect(readFileSync(keyFile).equals(k)).toBe(true);
  });
});

describe('scrub', () => {
  it('masks a known secret wherever it stands: inside a line, JSON-escaped, line by line when multi-line', () => {
    const s = new Secret('tok"en\\Zq9-1');
    const m = s.masked;
    expect(scrub(' password=tok"en\\Zq9-1;')).toBe(` password=${m};`);
    expect(scrub(JSON.stringify({ diff: '+pw=tok"en\\Zq9-1\n' }))).toBe(JSON.stringify({ diff: `+pw=${m}\n` }));
    const key = new Secret('-----BEGIN KEY-----\nAAAAsecretline1\nBBBBsecretline2\n-----END KEY-----\n');
    const out = scrub(' -----BEGIN KEY-----\n+AAAAsecretline1\n+BBBBsecretline2\n');
    expect(out).not.toMatch(/secretline/);
    expect(out).toBe(`+${key.masked}\n+${key.masked}\n`.replace(/^/, ` ${key.masked}\n`));
  });
});

describe('a secret where secrets are not taken', () => {
  const at = { file: 'inv.yaml', line: 7, col: 12 };
  it.each([
    ['a command argv word', (s: Secret) => command({ name: 'x', run: ['curl', '-H', s as never], creates: '/x' })],
    ['a string built from it', (s: Secret) => command({ name: 'x', run: ['sh', '-c', `echo ${s}`], creates: '/x' })],
    ['a line', (s: Secret) => line({ path: '/etc/x', line: `token=${s}` })],
    ['a line given the Secret itself', (s: Secret) => line({ path: '/etc/x', line: s as never })],
    ['a file content string built from it', (s: Secret) => file({ path: '/etc/x', content: `token=${s}\n` })],
  ])('%s: exit 3 at the secret’s file:line', (_, build) => {
    const s = new Secret('v4lue-' + Math.random(), at);
    let err: unknown;
    try {
      build(s);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).message).toMatch(/^inv\.yaml:7:12: a secret cannot be used in /);
    // and says how to compose one
    expect((err as InputError).message).toContain(
      "compose it with text as secretText`KEY=${secret}\\n` (from 'racksmith') and give that to file({ content })",
    );
  });

  it('a file content that is the Secret itself is taken', () => {
    expect(() => file({ path: '/etc/x', content: new Secret('v') })).not.toThrow();
    expect(() => refuseSecrets({ a: [{ b: 'plain' }] }, 'x')).not.toThrow();
  });

  it('shq refuses a secret or its mask as a shell word', () => {
    const s = new Secret('v');
    expect(() => shq(s as never)).toThrow(InputError);
    expect(() => shq(`x${s}`)).toThrow(InputError);
    expect(() => shq(`x${s}`)).toThrow(/compose it with text as secretText`KEY=\$\{secret\}`/);
  });
});

describe('secretText', () => {
  const s = () => new Secret('Zq9-' + Math.random().toString(36).slice(2), { file: 'inv.yaml', line: 3, col: 5 });
  it.each<[string, (a: Secret) => Secret, (a: string) => string]>([
    ['a secret between text', (a) => secretText`password = ${a}\n`, (a) => `password = ${a}\n`],
    ['the secret alone', (a) => secretText`${a}`, (a) => a],
    ['no secret at all', () => secretText`plain`, () => 'plain'],
    ['plain values as String(v)', (a) => secretText`${1}:${true}:${undefined}:${null}:${a}`, (a) => `1:true:undefined:null:${a}`],
    [
      'a secret twice, and a composed one inside',
      (a) => secretText`[x]\n${secretText`k=${a}`}\nk2=${a}\n`,
      (a) => `[x]\nk=${a}\nk2=${a}\n`,
    ],
  ])('%s: one Secret of the whole text, masked as a whole', (_, make, want) => {
    const a = s();
    const c = make(a);
    expect(c).toBeInstanceOf(Secret);
    expect(c.reveal()).toBe(want(a.reveal()));
    expect(c.masked).toBe(maskSecret(want(a.reveal())));
    expect(String(c)).toBe(c.masked);
    expect(JSON.stringify({ c })).not.toContain(a.reveal());
  });

  it('keeps the first secret’s origin; a file takes it as content', () => {
    const a = s();
    const c = secretText`k=${a}`;
    expect(c.origin).toEqual(a.origin);
    expect(() => file({ path: '/etc/x', content: c })).not.toThrow();
  });

  it('its plain lines are not masked elsewhere; the secret and the whole are', () => {
    const a = s();
    const c = secretText`[default]\nkey = ${a}\n`;
    expect(scrub('[default]\n')).toBe('[default]\n');
    expect(scrub(`+key = ${a.reveal()}`)).toBe(`+key = ${a.masked}`);
    expect(scrub(`x${c.reveal()}x`)).toBe(`x${c.masked}x`);
  });

  it('refuses a string already built from a secret with ${} (it holds the mask): exit 3 at the secret’s file:line', () => {
    const a = s();
    expect(() => secretText`k=${`${a}`}`).toThrow(/^inv\.yaml:3:5: secretText: value 1 is a string built from a secret/);
  });
});

describe('scrubbingStream', () => {
  it('outlives its write being replaced and put back (listr2 does that in a terminal)', () => {
    const written: unknown[] = [];
    const raw = { write: (chunk: unknown) => written.push(chunk) > 0 } as unknown as NodeJS.WritableStream;
    const s = scrubbingStream(raw);
    const read = s.write; // what listr2 keeps as "the stream's write"
    s.write = () => true; // its hijack (set on the stream itself)
    s.write = read; // its release
    expect(() => s.write('after release')).not.toThrow();
    expect(written).toEqual(['after release']);
  });
});
