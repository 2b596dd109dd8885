import { shJoin, shq } from '../shell/quote.ts';
import { InputError } from '../util/errors.ts';
import { scrub } from '../util/secret.ts';

/**
 * What runs on each host for `exec -- CMD [ARGS...]`: several words are one command, each word
 * quoted (shq: passed literally, no globbing, no `$`); a single word is a shell command line, as
 * `ansible -m shell -a` takes it (`'xfs_info /ais/d1 | grep bsize'`), run by `/bin/sh -c`.
 * A word holding a secret of the run (an `-e` or inventory secret, its text or its mask) is
 * refused: a command's argv is readable by every user of the host (`ps`), and lands in the journal.
 */
export function commandLine(words: readonly string[]): string {
  if (words.length === 0 || (words.length === 1 && words[0].trim() === ''))
    throw new InputError('exec needs a command after --: provision exec PATTERN -i INV -- CMD [ARGS...]');
  words.forEach((w, i) => {
    if (scrub(w) !== w)
      throw new InputError(
        `exec: word ${i + 1} of the command holds a secret of this run: a command's arguments are visible to every user of the host (ps) and are journaled; give the secret to a file's content in a playbook instead`,
      );
  });
  return words.length === 1 ? `/bin/sh -c ${shq(words[0])}` : shJoin(words);
}
