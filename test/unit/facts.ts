// Hand-made probe facts for table tests.
import { createHash } from 'node:crypto';
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
