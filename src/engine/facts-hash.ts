import { createHash } from 'node:crypto';

/**
 * A fingerprint of a resource's parsed facts, for saved plans: apply refuses when it differs.
 * Facts, not raw probe output: shared probe parts (the whole mount table) and one-off values
 * (the xattr check's random attribute value) would make every raw output differ while nothing
 * the diff looks at changed.
 */
export function factsHash(facts: unknown): string {
  return createHash('sha256').update(JSON.stringify(facts, replacer) ?? 'undefined').digest('hex');
}

function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  // Buffers as base64 (their toJSON is an array of numbers: large and slow), Maps and Sets as arrays.
  if (Buffer.isBuffer(raw)) return `base64:${raw.toString('base64')}`;
  if (raw instanceof Map) return [...raw.entries()];
  if (raw instanceof Set) return [...raw.values()];
  return value;
}
