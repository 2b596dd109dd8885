import type { SourcePos } from '../util/errors.ts';
import { Secret } from '../util/secret.ts';
import { Unsafe } from './yaml-source.ts';

/** Jinja2's openers: a string holding one is a template to Ansible. */
export const TEMPLATE = /\{[{%#]/;

export interface Settled {
  value: unknown;
  /** Where the first string Ansible would template stands (not `!unsafe`), if any. */
  template?: SourcePos;
}

/**
 * A variable's value as racksmith keeps it: `!unsafe` marks removed (plain strings, never counted
 * as templates), every string a Secret when the file was vault-encrypted, and where the first
 * templated string is (racksmith refuses it only if it reads the variable). Walks the value only
 * when the file can hold any of these.
 */
export function settle(
  value: unknown,
  path: ReadonlyArray<string | number>,
  pos: (path: ReadonlyArray<string | number>) => SourcePos,
  o: { mayTemplate: boolean; mayUnsafe: boolean; encrypted: boolean },
): Settled {
  if (!o.mayTemplate && !o.mayUnsafe && !o.encrypted) return { value };
  let template: SourcePos | undefined;
  const walk = (v: unknown, p: ReadonlyArray<string | number>): unknown => {
    if (v instanceof Unsafe) return o.encrypted ? new Secret(v.value) : v.value;
    if (typeof v === 'string') {
      if (!template && o.mayTemplate && TEMPLATE.test(v)) template = pos(p);
      return o.encrypted ? new Secret(v) : v;
    }
    if (v === null || typeof v !== 'object' || v instanceof Secret) return v;
    const obj = v as Record<string, unknown>;
    for (const k of Object.keys(obj)) obj[k] = walk(obj[k], [...p, Array.isArray(v) ? Number(k) : k]);
    return v;
  };
  return { value: walk(value, path), template };
}
