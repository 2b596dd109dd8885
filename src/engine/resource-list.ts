import type { Resource } from '../contract/resource.ts';
import { printable } from '../util/printable.ts';

/**
 * Why element `i` of what a play's resources() returned is not a resource, or undefined when it
 * is one. `false` and `undefined` are refused rather than skipped: a `cond && r` that yields one
 * is as likely a bug (a forgotten return, a wrong variable) as a deliberate skip, and saying so
 * costs the author only a spread.
 */
export function notAResource(x: unknown, i: number): string | undefined {
  if (isResource(x)) return undefined;
  const hint =
    x === false || x === undefined || x === null || x === '' || x === 0
      ? ` (to declare a resource on some hosts only, spread it: ...(cond ? [r] : []))`
      : '';
  return `resources() returned ${what(x)} at index ${i}, not a resource${hint}`;
}

function isResource(x: unknown): x is Resource {
  if (typeof x !== 'object' || x === null) return false;
  const r = x as Partial<Resource>;
  return (
    typeof r.id === 'string' &&
    typeof r.kind === 'string' &&
    Array.isArray(r.dependsOn) &&
    Array.isArray(r.tags) &&
    typeof r.probe === 'function' &&
    typeof r.diff === 'function' &&
    typeof r.apply === 'function'
  );
}

/** A short description of a value that is not a resource (its type, and its text when short). */
function what(x: unknown): string {
  if (x === null || x === undefined || typeof x === 'boolean') return String(x);
  if (typeof x === 'string') return `a string '${printable(x.length > 40 ? `${x.slice(0, 40)}…` : x)}'`;
  if (typeof x === 'number' || typeof x === 'bigint') return `a number ${String(x)}`;
  if (typeof x === 'function') return 'a function (not called?)';
  if (Array.isArray(x)) return 'an array (a nested list: spread it with ...)';
  if (x instanceof Promise) return 'a promise (resources() must not be async)';
  return 'an object';
}
