// Runs the CLI in-process with captured output, for unit tests of its input handling.
import { Writable } from 'node:stream';
import { run } from '../../src/cli.ts';

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

export async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await run(args, { stdout: stdout as unknown as NodeJS.WriteStream, stderr: stderr as unknown as NodeJS.WriteStream });
  return { code, stdout: stdout.text, stderr: stderr.text };
}
