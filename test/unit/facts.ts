// Hand-made probe facts for table tests, and a scratch state directory for the tests that mask.
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { FileFacts } from '../../src/resources/core/file-common.ts';

export const absent: FileFacts = { type: 'absent' };

/** A root-owned 0644 regular file with this content, as the file probe reports it (`over` changes any field). */
export function fileWith(content: string | Buffer, over: Partial<FileFacts> = {}): FileFacts {
  const buf = Buffer.from(content);
  return {
    type: 'file',
    mode: '644',
    uid: 0,
    user: 'root',
    gid: 0,
    group: 'root',
    size: buf.length,
    sha256: createHash('sha256').update(buf).digest('hex'),
    content: buf,
    ...over,
  };
}

/** Each test of the calling file with a fresh state directory (its own installation key for masks). */
export function scratchStateDir(): void {
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.XDG_STATE_HOME;
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-state-'));
  });
  afterEach(() => {
    process.env.XDG_STATE_HOME = saved;
  });
}
