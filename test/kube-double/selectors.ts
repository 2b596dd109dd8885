/** Label and field selectors, as list and watch requests pass them. */
import type { KubeObject } from './types.ts';
import { ApiError } from './errors.ts';
import { getDotted } from './json.ts';

type Matcher = (o: KubeObject) => boolean;

function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

export function parseLabelSelector(selector: string | null): Matcher {
  if (!selector) return () => true;
  const matchers: Matcher[] = splitTerms(selector).map((term) => {
    const labels = (o: KubeObject): Record<string, string> => o.metadata.labels ?? {};
    let m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (m) {
      const [, key, op, list] = m;
      const values = list.split(',').map((v) => v.trim());
      return op === 'in'
        ? (o) => key in labels(o) && values.includes(labels(o)[key])
        : (o) => !(key in labels(o)) || !values.includes(labels(o)[key]);
    }
    m = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (m) {
      const [, key, op, value] = m;
      return op === '!=' ? (o) => labels(o)[key] !== value : (o) => labels(o)[key] === value;
    }
    m = /^(!?)([^!=\s]+)$/.exec(term);
    if (m) {
      const [, not, key] = m;
      return not ? (o) => !(key in labels(o)) : (o) => key in labels(o);
    }
    throw new ApiError(400, 'BadRequest', `unable to parse requirement: invalid label selector "${selector}"`);
  });
  return (o) => matchers.every((f) => f(o));
}

export function parseFieldSelector(selector: string | null): Matcher {
  if (!selector) return () => true;
  const matchers: Matcher[] = splitTerms(selector).map((term) => {
    const m = /^([^!=\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw new ApiError(400, 'BadRequest', `invalid field selector "${selector}"`);
    const [, path, op, value] = m;
    const read = (o: KubeObject): string => {
      const v = getDotted(o, path);
      return v === undefined || v === null ? '' : String(v);
    };
    return op === '!=' ? (o) => read(o) !== value : (o) => read(o) === value;
  });
  return (o) => matchers.every((f) => f(o));
}
