import type { SourcePos } from './errors.ts';
import { readInputText } from './input-file.ts';

// Far beyond any inventory racksmith reads; a bigger file is not worth reading again for a hint.
const MAX_BYTES = 16 * 1024 * 1024;

/**
 * The plain scalar written at a file's line:col (`0750`, `42`), read again from the file, or
 * undefined when that cannot be known (no line, no such regular file, a vault-encrypted file
 * whose line is cipher text: the caller checks the text against the value it read). For a hint
 * on an error only: never the value itself.
 */
export function writtenAt(pos: SourcePos): string | undefined {
  if (pos.line === undefined) return undefined;
  let text: string;
  try {
    text = readInputText(pos.file, 'file', MAX_BYTES);
  } catch {
    return undefined; // (no regular file within the bound: no hint)
  }
  const line = text.split(/\r?\n/)[pos.line - 1];
  return line === undefined ? undefined : /^[^\s,\]}#]+/.exec(line.slice((pos.col ?? 1) - 1))?.[0];
}
