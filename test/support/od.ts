import { execFileSync } from 'node:child_process';

/** `bytes` as the file probe sends them: the real `od -A n -v -t x1` (src/resources/core/file-common.ts). */
export function odDump(bytes: string | Buffer): string {
  return execFileSync('od', ['-A', 'n', '-v', '-t', 'x1'], { input: bytes, encoding: 'utf8' });
}
