import { InputError, type SourcePos } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import type { InventoryBuilder } from './builder.ts';
import { expandHostPattern } from './host-range.ts';
import { literalEval, NOT_LITERAL, shlexSplit, UnsupportedLiteral } from './py-literal.ts';

/**
 * An INI inventory, read as ansible-core 2.14's ini plugin reads it: lines before any section
 * are hosts of `ungrouped`; `[g]` hosts (a host pattern, then `key=value` tokens split as by
 * shlex), `[g:vars]` `key=value` lines (split at the first `=`, the value not tokenized, so
 * quotes and `# ...` stay part of it), `[g:children]` group names, declared before or after.
 * Every value goes through Python's literal_eval: `port=22` is 22, `x="22"` in a host line is 22
 * too (shlex removed the quotes) but the string "22" in a `:vars` section; `yes` and `0644`
 * stay strings.
 */
export interface IniVar {
  key: string;
  value: unknown;
  pos: SourcePos;
  template?: SourcePos;
}

export interface IniReaderHooks {
  /** Called for every variable before it is set: checks it, settles its value, notes a template. */
  vars(vars: IniVar[]): void;
  checkGroupName(name: string, pos: SourcePos): void;
  checkHostName(name: string, pos: SourcePos): void;
}

const PY_SPACE = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const SECTION = new RegExp(`^\\[([^:\\]${PY_SPACE}]+)(?::([\\p{L}\\p{N}_]+))?\\][${PY_SPACE}]*(?:#.*)?$`, 'su');
const GROUP_NAME = new RegExp(`^([^:\\]${PY_SPACE}]+)[${PY_SPACE}]*(?:#.*)?$`, 'su');
const STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'gu');
/** str.splitlines(): every line boundary Python knows. */
// eslint-disable-next-line no-control-regex -- Python's line boundaries include these
const LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

/** Python's str.strip(): its whitespace (U+FEFF is not; \x1c-\x1f and \x85 are), as Ansible strips. */
export const pyStrip = (s: string) => s.replace(STRIP, '');

export function readIni(file: string, text: string, inv: InventoryBuilder, hooks: IniReaderHooks): void {
  // (Ansible's ini plugin keeps it too: its first line then fails, or names a host with it)
  if (text.startsWith('\ufeff'))
    throw new InputError(
      'a byte-order mark (U+FEFF) starts this INI inventory, which Ansible does not take off either: save the file without it',
      {
        file,
        line: 1,
        col: 1,
      },
    );
  const lines = text.split(LINE_BREAK);
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const pending = new Map<string, { line: number; state: 'vars' | 'children'; parents: string[] }>();
  let group = 'ungrouped';
  let state = 'hosts';
  lines.forEach((raw, i) => {
    const lineno = i + 1;
    const line = pyStrip(raw);
    const indent = raw.length - raw.replace(/^\s+/u, '').length;
    const at = (col = indent + 1): SourcePos => ({ file, line: lineno, col });
    const fail = (msg: string, col?: number): never => {
      throw new InputError(msg, at(col));
    };
    if (!line || line[0] === ';' || line[0] === '#') return;

    const m = SECTION.exec(line);
    if (m) {
      group = m[1];
      state = m[2] ?? 'hosts';
      if (!['hosts', 'children', 'vars'].includes(state))
        fail(`section [${printable(m[1])}:${printable(state)}] has unknown type '${printable(state)}' (hosts, children or vars)`);
      hooks.checkGroupName(group, at(indent + 2));
      if (!inv.groups.has(group)) {
        // [g:vars] alone does not declare g: it must be declared somewhere (checked at the end)
        if (state === 'vars' && !pending.has(group)) pending.set(group, { line: lineno, state: 'vars', parents: [] });
        inv.addGroup(group, at(indent + 2));
      }
      const p = pending.get(group);
      if (p && state !== 'vars') {
        if (p.state === 'children') addPendingChildren(group);
        else pending.delete(group);
      }
      return;
    }
    if (line.startsWith('[') && line.endsWith(']'))
      fail(`invalid section '${printable(line)}': no spaces or other invalid characters in a section name`);

    if (state === 'hosts') {
      let toks;
      try {
        toks = shlexSplit(line);
      } catch (e) {
        return fail(`cannot parse the host line: ${(e as Error).message}`);
      }
      const col = (t: { at: number }) => indent + 1 + t.at;
      if (toks.length === 0) return;
      const pattern = toks[0].value;
      if (pattern.trim().endsWith(':') && expandHostPattern(pattern).port === undefined)
        fail(`invalid host pattern '${printable(pattern)}': a trailing ':' is reserved for a port`, col(toks[0]));
      let names: string[];
      let port: number | undefined;
      try {
        ({ names, port } = expandHostPattern(pattern));
      } catch (e) {
        return fail(printable((e as Error).message), col(toks[0]));
      }
      if (names.some((n) => n.trim() === '---')) fail(`invalid host pattern '---': this looks like a YAML file`, col(toks[0]));
      const vars: IniVar[] = [];
      for (const t of toks.slice(1)) {
        const eq = t.value.indexOf('=');
        // (the word is not quoted back: `ansible_password= PW` leaves the password alone)
        if (eq < 0) fail(`expected key=value host variable, got a word without '=' (a value with blanks needs quotes)`, col(t));
        vars.push({ key: t.value.slice(0, eq), value: iniValue(t.value.slice(eq + 1), at(col(t))), pos: at(col(t)) });
      }
      const hostPos = at(col(toks[0]));
      for (const n of names) hooks.checkHostName(n, hostPos);
      hooks.vars(vars);
      for (const n of names) {
        inv.addHost(n, hostPos, group, port !== undefined ? { value: port, pos: hostPos } : undefined);
        for (const v of vars) inv.setHostVar(n, v.key, { value: v.value, pos: v.pos, template: v.template });
      }
    } else if (state === 'vars') {
      const eq = line.indexOf('=');
      if (eq < 0) fail(`expected key=value, got a line without '=' (not quoted: it may hold a secret)`);
      const key = pyStrip(line.slice(0, eq));
      const v: IniVar = { key, value: iniValue(pyStrip(line.slice(eq + 1)), at()), pos: at() };
      hooks.vars([v]);
      inv.setGroupVar(group, v.key, { value: v.value, pos: v.pos, template: v.template });
    } else {
      const gm = GROUP_NAME.exec(line);
      if (!gm) fail(`expected a group name, got '${printable(line)}'`);
      const child = gm![1];
      hooks.checkGroupName(child, at());
      if (!inv.groups.has(child)) {
        const p = pending.get(child);
        if (p) p.parents.push(group);
        else pending.set(child, { line: lineno, state: 'children', parents: [group] });
      } else inv.addChild(group, child, at());
    }
  });

  function addPendingChildren(g: string): void {
    const p = pending.get(g)!;
    for (const parent of p.parents) {
      inv.addChild(parent, g);
      const pp = pending.get(parent);
      if (pp && pp.state === 'children') addPendingChildren(parent);
    }
    pending.delete(g);
  }

  // Anything still pending names a group that was never declared: the first one is reported.
  for (const [name, p] of pending) {
    if (p.state === 'vars')
      throw new InputError(`section [${printable(name)}:vars] is for an undefined group '${printable(name)}'`, {
        file,
        line: p.line,
        col: 1,
      });
    throw new InputError(`section [${printable(p.parents[p.parents.length - 1])}:children] names an undefined group '${printable(name)}'`, {
      file,
      line: p.line,
      col: 1,
    });
  }
}

/** _parse_value: literal_eval, else the text as it is. */
function iniValue(text: string, pos: SourcePos): unknown {
  try {
    const v = literalEval(text);
    return v === NOT_LITERAL ? text : v;
  } catch (e) {
    if (e instanceof UnsupportedLiteral) throw new InputError(`value: ${e.message}`, pos);
    throw e;
  }
}
