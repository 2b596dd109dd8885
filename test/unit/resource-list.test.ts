import { describe, expect, it } from 'vitest';
import { notAResource } from '../../src/engine/resource-list.ts';
import { file } from '../../src/index.ts';

describe('notAResource: what a play returned in place of a resource, said by index', () => {
  it.each<[unknown, string]>([
    [
      false,
      'resources() returned false at index 3, not a resource (to declare a resource on some hosts only, spread it: ...(cond ? [r] : []))',
    ],
    [undefined, 'returned undefined at index 3'],
    [null, 'returned null at index 3'],
    ['/etc/motd', "returned a string '/etc/motd' at index 3"],
    [[file({ path: '/tmp/a', content: '' })], 'returned an array (a nested list: spread it with ...) at index 3'],
    [{ id: 'file:/x' }, 'returned an object at index 3'],
    [file, 'returned a function (not called?) at index 3'],
  ])('%o', (x, says) => {
    expect(notAResource(x, 3)).toContain(says);
  });

  it('a resource is one', () => {
    expect(notAResource(file({ path: '/tmp/a', content: '' }), 0)).toBeUndefined();
  });
});
