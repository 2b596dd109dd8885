import type { JournalSink } from '../output/journal.ts';
import type { CliStreams } from './streams.ts';

/**
 * Ctrl-C (or SIGTERM): the first one aborts the returned signal (the command stops what is in
 * flight and still writes its journal and recap), after saying so with `what`; a second one is
 * final (exit 130). The journal is flushed at each, so a kill right after loses nothing buffered.
 */
export function interruptOnSignals(journal: JournalSink, out: CliStreams, what: string): { signal: AbortSignal; dispose(): void } {
  const abort = new AbortController();
  const onSignal = () => {
    journal.flush();
    if (abort.signal.aborted) process.exit(130);
    out.stderr.write(`\ninterrupted: ${what} (Ctrl-C again to quit now)\n`);
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: abort.signal,
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
