import { createHash } from 'node:crypto';

/** SHA-256 of `data`, hex (base64 for SSH fingerprints): the one digest helper of racksmith. */
export function sha256(data: string | Buffer, encoding: 'hex' | 'base64' = 'hex'): string {
  return createHash('sha256').update(data).digest(encoding);
}
