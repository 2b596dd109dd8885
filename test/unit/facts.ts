// Hand-made probe facts for table tests.
import { createHash } from 'node:crypto';
import type { FileFacts } from '../../src/resources/core/file-common.ts';

export const absent: FileFacts = { type: 'absent' };

/** A root-owned 0644 regular file with this content, as the file probe reports it. */
export function fileWith(text: string): FileFacts {
  return {
    type: 'file',
    mode: '644',
    uid: 0,
    user: 'root',
    gid: 0,
    group: 'root',
    size: Buffer.byteLength(text),
    sha256: createHash('sha256').update(text).digest('hex'),
    content: Buffer.from(text),
  };
}
