import { printable } from '../util/printable.ts';
import { scrubbingStream } from '../util/secret.ts';

/** Where a command writes: the process's streams, or captured ones in tests. */
export interface CliStreams {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

/** Every secret of the run masked in whatever reaches the terminal or a pipe. */
export function scrubbing(out: CliStreams): CliStreams {
  return { stdout: scrubbingStream(out.stdout), stderr: scrubbingStream(out.stderr) };
}

/** Loading's notices (a skipped .ini, a bundled playbook) as warnings on stderr, where no run reports them. */
export function writeNotices(out: { stderr: { write(s: string): unknown } }, notices: string[]): void {
  for (const message of notices) out.stderr.write(`warning: ${printable(message)}\n`);
}
