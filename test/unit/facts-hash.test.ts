import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { factsHash } from '../../src/engine/facts-hash.ts';

// The hash as it was made with a JSON.stringify replacer: saved plans hold such hashes.
function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  if (Buffer.isBuffer(raw)) return `base64:${raw.toString('base64')}`;
  if (raw instanceof Map) return [...raw.entries()];
  if (raw instanceof Set) return [...raw.values()];
  return value;
}
const before = (facts: unknown) =>
  createHash('sha256')
    .update(JSON.stringify(facts, replacer) ?? 'undefined')
    .digest('hex');

describe('factsHash', () => {
  it.each<[string, unknown]>([
    ['undefined', undefined],
    ['null', null],
    ['a string', 'x'],
    ['a Buffer alone', Buffer.from('abc')],
    ['file facts', { type: 'file', mode: '644', uid: 0, size: 6, sha256: 'ab', content: Buffer.from('x = 1\n'), gid: undefined }],
    [
      'nested: fstab in mount facts',
      {
        fstab: { type: 'file', content: Buffer.from('/dev/a /b xfs defaults 0 0\n') },
        live: { source: '/dev/a', options: ['rw', 'noatime'] },
      },
    ],
    [
      'Maps and Sets, with Buffers and Maps inside',
      {
        live: new Map<string, unknown>([
          ['k', '1'],
          ['b', Buffer.from([1, 2])],
          ['m', new Map([['x', new Set([1])]])],
        ]),
        set: new Set(['a', Buffer.from('z')]),
      },
    ],
    // eslint-disable-next-line no-sparse-arrays -- a hole is the case under test
    ['arrays of Buffers, holes, undefined', [Buffer.from('a'), undefined, , 3, { a: [Buffer.from('b')] }]],
    [
      'toJSON (Date, masked secrets), also with Buffers inside its result',
      { at: new Date(0), secret: { toJSON: () => '***' }, wrapped: { toJSON: () => ({ b: Buffer.from('q'), m: new Map([[1, 2]]) }) } },
    ],
    ['typed arrays that are not Buffers', { u: new Uint8Array([1, 2]) }],
    ['integer-like keys', { b: 1, 2: Buffer.from('x'), a: 3, 1: 'y' }],
  ])('%s: same hash as the replacer made', (_, facts) => expect(factsHash(facts)).toBe(before(facts)));

  it('leaves the facts as they were', () => {
    const f = { file: { content: Buffer.from('x') }, live: new Map([['k', '1']]) };
    factsHash(f);
    expect(Buffer.isBuffer(f.file.content)).toBe(true);
    expect(f.live).toBeInstanceOf(Map);
  });
});
