import { createRequire } from 'node:module';
import { InputError, type SourcePos } from '../util/errors.ts';
import { INPUT_LIMITS, readInputText } from '../util/input-file.ts';
import { printable } from '../util/printable.ts';
import { globToRegExp } from './glob.ts';
import { addWarning, type Inventory } from './model.ts';
import { splitHostPattern } from './pattern-split.ts';
import { pyStrip } from './ini-reader.ts';

export interface PatternContext {
  /** Where the pattern was written, for its errors. */
  at?: SourcePos;
  /** Receives Ansible's warnings: a term that matches no host or group is ignored. */
  warn?: (message: string) => void;
}

/**
 * Host patterns exactly as ansible-core 2.14's InventoryManager reads them (get_hosts, subset):
 * terms split by splitHostPattern; a term is a host, a group (its hosts and its descendants'),
 * a glob (`rack*`, `n[12]*`, `node0[!1]`) or `~regex` matched against group and host names,
 * with an optional subscript (`group[0]`, `group[-1]`, `group[1:3]`, `group[2:]`). `&term`
 * intersects, `!term` excludes; the terms without a prefix are taken first, then `&`, then `!`.
 * The hosts come in Ansible's order: each term's hosts in turn, a group's as Group.get_hosts
 * gives them (see groupHosts), duplicates dropped.
 *
 * Stricter than Ansible: a term left empty by `!`/`&` (`!`, `web,!`: Ansible crashes), an
 * empty pattern (Ansible: every host) and a stray `[` or `]` (Ansible drops it) are exit 3. A
 * term matching no host or group is Ansible's warning, given to `ctx.warn`.
 */
export function selectHosts(inv: Inventory, pattern: string, what = 'pattern', allowEmpty = false, ctx: PatternContext = {}): string[] {
  return placed(ctx, () => {
    const terms = splitHostPattern(pattern);
    if (terms.length === 0) throw new InputError(`empty host ${what}`);
    return checked(inv, evaluate(inv, terms, what, pattern, ctx), what, pattern, allowEmpty);
  });
}

/** Errors about a pattern point where it was written. */
function placed<T>(ctx: PatternContext, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof InputError && !e.pos && ctx.at) throw new InputError(e.detail, ctx.at);
    throw e;
  }
}

/**
 * `--limit`: a pattern whose `@FILE` terms are replaced by the file's lines (one term each, as
 * Ansible reads its retry files). A limit that names nothing (`,`, an empty file) is exit 3:
 * Ansible takes it as no limit at all. Warnings go to the inventory's unless `ctx` takes them.
 */
export function selectLimit(inv: Inventory, limit: string, ctx: PatternContext = { warn: (m) => addWarning(inv, m) }): string[] {
  return placed(ctx, () => {
    const terms: string[] = [];
    for (const t of splitHostPattern(limit)) {
      if (t[0] !== '@') terms.push(t);
      else terms.push(...limitFile(t.slice(1)).filter(Boolean));
    }
    if (terms.length === 0) throw new InputError(`--limit '${printable(limit)}' names no host (Ansible would take it as no limit)`);
    return checked(inv, evaluate(inv, terms, '--limit', limit, ctx), '--limit', limit, false);
  });
}

/**
 * An `@FILE` limit's lines, as Ansible reads them: broken at \n, \r\n and a lone \r, stripped of
 * Python's whitespace (a regular file of bounded size, as every input file). A byte-order mark
 * (U+FEFF, an editor's) is refused: Python's strip keeps it, so Ansible matches '\ufeffnode4' to no
 * host, where the operator meant node4.
 */
function limitFile(path: string): string[] {
  const text = readInputText(path, '--limit file', INPUT_LIMITS.vars);
  const bom = text.indexOf('\ufeff');
  if (bom >= 0) {
    const line = text.slice(0, bom).split('\n').length;
    throw new InputError(
      "a byte-order mark (U+FEFF) in a --limit file: Ansible keeps it in the line's pattern, which then matches no host; save the file without it",
      { file: path, line, col: bom - text.lastIndexOf('\n', bom - 1) },
    );
  }
  // as Python reads a text file (universal newlines) and strips each line (Ansible's manager)
  return text.split(/\r\n|\r|\n/).map(pyStrip);
}

function checked(inv: Inventory, hosts: string[], what: string, pattern: string, allowEmpty: boolean): string[] {
  if (hosts.length === 0 && !allowEmpty) throw new InputError(`host ${what} '${printable(pattern)}' matches no host in ${inv.file}`);
  return hosts;
}

/** InventoryManager._evaluate_patterns (and get_hosts' de-duplication). */
function evaluate(inv: Inventory, terms: string[], what: string, pattern: string, ctx: PatternContext): string[] {
  const regular = terms.filter((t) => t[0] !== '&' && t[0] !== '!');
  const ordered = [...(regular.length ? regular : ['all']), ...terms.filter((t) => t[0] === '&'), ...terms.filter((t) => t[0] === '!')];
  const names = hostNames(inv);
  const warned = new Set<string>();
  const warn = (term: string) => {
    if (warned.has(term)) return;
    warned.add(term);
    ctx.warn?.(`host ${what} '${printable(pattern)}': '${printable(term)}' matches no host or group, ignored`);
  };
  let hosts: string[] = [];
  for (const p of ordered) {
    if (names.has(p)) {
      hosts.push(p); // a plain host name is that host, even where a group has the same name
      continue;
    }
    const that = matchOne(inv, p, what, pattern, ctx, warn);
    if (p[0] === '!' || p[0] === '&') {
      const set = new Set(that);
      hosts = hosts.filter((h) => set.has(h) === (p[0] === '&'));
    } else {
      const existing = new Set(hosts);
      for (const h of that) if (!existing.has(h)) hosts.push(h);
    }
  }
  return [...new Set(hosts)];
}

const SUBSCRIPT = /^([^\n]+)\[(?:(-?[0-9]+)|([0-9]+)([:-])([0-9]*))\]$/;

/** _match_one_pattern: a term without its `&`/`!`, its subscript applied. */
function matchOne(
  inv: Inventory,
  term: string,
  what: string,
  pattern: string,
  ctx: PatternContext,
  warn: (term: string) => void,
): string[] {
  const op = term[0] === '&' || term[0] === '!' ? term[0] : '';
  const expr = op ? term.slice(1) : term;
  if (expr === '') throw new InputError(`host ${what} '${printable(pattern)}' has nothing after '${op}' (Ansible fails on it)`);
  const m = expr[0] === '~' ? null : SUBSCRIPT.exec(expr);
  const hosts = enumerate(inv, m ? m[1] : expr, warn);
  if (!m || hosts.length === 0) return hosts;
  if (m[2] !== undefined) {
    const i = Number(m[2]);
    const at = i < 0 ? hosts.length + i : i;
    if (at < 0 || at >= hosts.length)
      throw new InputError(
        `host ${what} '${printable(pattern)}': no host at '${printable(expr)}' (${hosts.length} match '${printable(m[1])}')`,
        ctx.at,
      );
    return [hosts[at]];
  }
  if (m[4] === '-') ctx.warn?.(`host ${what} '${printable(pattern)}': use [x:y] inclusive subscripts instead of [x-y]`);
  const start = Number(m[3]);
  const end = m[5] === '' ? -1 : Number(m[5]);
  // Ansible reads `[x:0]` as `[x]` (0 is false in its test)
  if (end === 0) {
    if (start >= hosts.length)
      throw new InputError(
        `host ${what} '${printable(pattern)}': no host at '${printable(expr)}' (${hosts.length} match '${printable(m[1])}')`,
        ctx.at,
      );
    return [hosts[start]];
  }
  return hosts.slice(start, (end === -1 ? hosts.length - 1 : end) + 1);
}

/**
 * _enumerate_matches: the hosts of every group whose name matches (in the order the groups
 * were created, `all` and `ungrouped` included), then, when no group matched or the term is a
 * glob or regex (or has a `.`), the hosts whose name matches. Duplicates stay: a subscript
 * counts them, as Ansible's does.
 */
function enumerate(inv: Inventory, expr: string, warn: (term: string) => void): string[] {
  const re = expr[0] === '~' ? linearRegex(expr) : globToRegExp(expr);
  const groups = [...inv.groups.keys()].filter((g) => re.test(g));
  const out = groups.flatMap((g) => groupHosts(inv, g));
  if (groups.length === 0 || expr[0] === '~' || /[.?*[]/.test(expr)) for (const h of inv.hosts) if (re.test(h.name)) out.push(h.name);
  if (out.length === 0 && groups.length === 0 && expr !== 'all') warn(expr);
  return out;
}

const HOST_NAMES = new WeakMap<Inventory, Set<string>>();
const GROUP_HOSTS = new WeakMap<Inventory, Map<string, string[]>>();

function hostNames(inv: Inventory): Set<string> {
  let s = HOST_NAMES.get(inv);
  if (!s) HOST_NAMES.set(inv, (s = new Set(inv.hosts.map((h) => h.name))));
  return s;
}

/**
 * Group.get_hosts: the group's own hosts, then its children's, then theirs, level by level
 * (each group once, at its shortest distance), each group's hosts in the order they were added.
 * Ansible walks the levels below the children through a Python set of groups, in an order that
 * changes from run to run; racksmith takes the one order that set can give in which each level
 * keeps the order its groups were found in (parents in order, each parent's children in order).
 */
export function groupHosts(inv: Inventory, name: string): string[] {
  let cache = GROUP_HOSTS.get(inv);
  if (!cache) GROUP_HOSTS.set(inv, (cache = new Map()));
  let hosts = cache.get(name);
  if (hosts) return hosts;
  const group = inv.groups.get(name)!;
  const ordered = [group, ...group.children.map((c) => inv.groups.get(c)!)];
  const seen = new Set(ordered);
  let level = ordered;
  while (level.length) {
    const next = [];
    for (const g of level)
      for (const c of g.children) {
        const child = inv.groups.get(c)!;
        if (!seen.has(child)) {
          seen.add(child);
          next.push(child);
        }
      }
    ordered.push(...next);
    level = next;
  }
  hosts = [...new Set(ordered.flatMap((g) => g.hosts))];
  cache.set(name, hosts);
  return hosts;
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
