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
