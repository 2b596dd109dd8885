import { createRequire } from 'node:module';
import { InputError } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import type { Inventory } from './model.ts';

/**
 * Ansible host patterns: terms separated by `:` or `,`; a term is a host, a group, `all`/`*`,
 * a glob (`rack1*`) or `~regex`. `&term` intersects, `!term` excludes. Result keeps inventory order.
 */
export function selectHosts(inv: Inventory, pattern: string, what = 'pattern', allowEmpty = false): string[] {
  const terms = splitTerms(pattern);
  if (terms.length === 0) throw new InputError(`empty host ${what}`);
  const union = new Set<string>();
  const intersections: Set<string>[] = [];
  const exclusions = new Set<string>();
  for (const raw of terms) {
    const op = raw[0] === '&' || raw[0] === '!' ? raw[0] : '';
    const term = op ? raw.slice(1) : raw;
    const matched = matchTerm(inv, term);
    if (matched.size === 0 && !op && !allowEmpty)
      throw new InputError(`host ${what} '${printable(term)}' matches no host or group in ${inv.file}`);
    if (op === '&') intersections.push(matched);
    else if (op === '!') for (const h of matched) exclusions.add(h);
    else for (const h of matched) union.add(h);
  }
  // A pattern made only of exclusions/intersections starts from all hosts, as in Ansible.
  const base = terms.every((t) => t[0] === '&' || t[0] === '!') ? new Set(inv.hosts.map((h) => h.name)) : union;
  return inv.hosts.map((h) => h.name).filter((h) => base.has(h) && !exclusions.has(h) && intersections.every((s) => s.has(h)));
}

function splitTerms(pattern: string): string[] {
  // Commas always separate. `:` separates too, except inside a `[a:b]` subscript, and not at
  // all once a `~regex` term appears (regexes may contain `:`; use commas with them).
  if (pattern.includes(',') || pattern.includes('~'))
    return pattern
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
  const parts: string[] = [];
  let cur = '';
  let depth = 0;
  for (const c of pattern) {
    if (c === '[') depth++;
    else if (c === ']') depth = Math.max(0, depth - 1);
    if (c === ':' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += c;
  }
  parts.push(cur);
  return parts.map((t) => t.trim()).filter(Boolean);
}

function matchTerm(inv: Inventory, term: string): Set<string> {
  const sub = term.startsWith('~') ? null : /^(.+)\[(-?\d+)(?::(-?\d*))?\]$/.exec(term);
  if (sub) {
    // `group[0]`, `group[1:3]` (inclusive, as in Ansible): hosts by position in the group.
    const members = [...matchTerm(inv, sub[1])];
    const at = (i: number) => (i < 0 ? members.length + i : i);
    const from = at(Number(sub[2]));
    const to = sub[3] === undefined ? from : sub[3] === '' ? members.length - 1 : at(Number(sub[3]));
    return new Set(members.slice(from, to + 1));
  }
  if (term === 'all' || term === '*') return new Set(inv.hosts.map((h) => h.name));
  const group = inv.groups.get(term);
  if (group) return new Set(inv.hosts.filter((h) => h.groups.includes(term)).map((h) => h.name));
  let re: { test(s: string): boolean };
  if (term.startsWith('~')) {
    re = linearRegex(term);
  } else if (/[*?[]/.test(term)) {
    re = globToRegExp(term);
  } else {
    return new Set(inv.hosts.some((h) => h.name === term) ? [term] : []);
  }
  const out = new Set<string>();
  for (const h of inv.hosts) if (re.test(h.name)) out.add(h.name);
  for (const g of inv.groups.values()) {
    if (re.test(g.name)) for (const h of inv.hosts) if (h.groups.includes(g.name)) out.add(h.name);
  }
  return out;
}

let re2: typeof import('re2js') | undefined;

/**
 * A `~regex` term, matched as Ansible matches it (Python's re.match: anchored at the start of
 * the name) but by RE2's linear-time engine (re2js), so no pattern can hang the run on
 * backtracking (`~^(a+)+$`). RE2 has no backreferences or lookaround: such a pattern is exit 3.
 */
function linearRegex(term: string): { test(s: string): boolean } {
  re2 ??= createRequire(import.meta.url)('re2js') as typeof import('re2js');
  let p: import('re2js').RE2JS;
  try {
    p = re2.RE2JS.compile(term.slice(1));
  } catch (e) {
    throw new InputError(
      `invalid regular expression in host pattern '${printable(term)}': ${printable((e as Error).message)} (RE2 syntax: no backreferences or lookaround)`,
    );
  }
  return { test: (s) => p.matcher(s).lookingAt() };
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (const c of glob) {
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else re += c.replace(/[.+^${}()|\\\][]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}
