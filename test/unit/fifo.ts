import { execFileSync, spawn } from 'node:child_process';

/**
 * A FIFO made at `path`, and a writer process that feeds it `text` once, after 2 s: a reader that
 * opens it as a plain file (blocking for a writer) then reads `text` and goes on, so that a test
 * of code that must not read it fails rather than hangs. Returns the writer's kill (it waits for
 * a reader for good when none comes).
 */
export function fifoAt(path: string, text: string): () => void {
  execFileSync('mkfifo', [path]);
  const writer = spawn(
    process.execPath,
    ['-e', `setTimeout(() => require('fs').writeFileSync(process.argv[1], process.argv[2]), 2000)`, path, text],
    { stdio: 'ignore' },
  );
  return () => void writer.kill();
}
