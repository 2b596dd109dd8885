import { InputError } from '../util/errors.ts';
import type { CliStreams } from './streams.ts';

export const EXIT = { OK: 0, FAILED: 1, CHANGES: 2, BAD_INPUT: 3 } as const;

/**
 * Bad input (an InputError) as exit 3, its message on stderr as `shown` writes it; anything else
 * is no bad input and goes on up (main reports it as an internal error).
 */
export function exitBadInput(out: CliStreams, e: unknown, shown: (message: string) => string = (m) => m): number {
  if (!(e instanceof InputError)) throw e;
  out.stderr.write(`error: ${shown(e.message)}\n`);
  return EXIT.BAD_INPUT;
}
