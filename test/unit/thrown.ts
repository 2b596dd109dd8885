import { InputError } from '../../src/util/errors.ts';

/** The InputError `fn` throws (anything else thrown is rethrown; nothing thrown fails the test). */
export function inputErrorOf(fn: () => unknown): InputError {
  try {
    fn();
  } catch (e) {
    if (e instanceof InputError) return e;
    throw e;
  }
  throw new Error('expected an InputError');
}
