import { exactNumber } from './yaml11.ts';

/**
 * The two Python routines that decide what an INI inventory line means in Ansible:
 * `ast.literal_eval` (every INI value: `1` is 1, `'1'` is "1", `[1, 2]` a list, `yes` and `0644`
 * stay strings) and `shlex.split(line, comments=True)` (the tokens of a host line).
 */

/** A literal Python has but JSON has not (a complex number, a set, bytes that are not UTF-8, `...`). */
export class UnsupportedLiteral extends Error {}

/** ast.literal_eval of `text`, or NOT_LITERAL where Python raises ValueError/SyntaxError (Ansible keeps the text). */
export const NOT_LITERAL: unique symbol = Symbol('not a literal');

export function literalEval(text: string): unknown {
  const src = text.replace(/^[ \t]+/, '');
  let toks: Tok[];
  try {
    toks = tokenize(src);
  } catch (e) {
    if (e instanceof NotLiteral) return NOT_LITERAL;
    throw e;
  }
  const p = new LiteralParser(toks);
  try {
    const v = p.expr(0);
    if (p.peek().t !== 'end') return NOT_LITERAL;
    return v;
  } catch (e) {
    if (e instanceof NotLiteral) return NOT_LITERAL;
    throw e;
  }
}

class NotLiteral extends Error {}
const notLiteral = (): never => {
  throw new NotLiteral();
};

type Tok =
  | { t: 'num'; v: number | bigint; imag: boolean; int: boolean }
  | { t: 'str'; v: string; bytes: boolean; f: boolean }
  | { t: 'name'; v: string }
  | { t: 'op'; v: string }
  | { t: 'end' };

const DEC_INT = /^(?:0(?:_?0)*|[1-9](?:_?[0-9])*)/;
const HEX_INT = /^0[xX](?:_?[0-9a-fA-F])+/;
const OCT_INT = /^0[oO](?:_?[0-7])+/;
const BIN_INT = /^0[bB](?:_?[01])+/;
const DIGITS = '[0-9](?:_?[0-9])*';
const FLOAT = new RegExp(
  `^(?:(?:${DIGITS})?\\.${DIGITS}(?:[eE][-+]?${DIGITS})?|${DIGITS}\\.(?:[eE][-+]?${DIGITS})?|${DIGITS}[eE][-+]?${DIGITS})`,
);
const IMAG_DIGITS = new RegExp(`^${DIGITS}[jJ]`);
const NAME = /^[\p{L}\p{Nl}_][\p{L}\p{N}\p{Mn}\p{Mc}\p{Pc}]*/u;
const STRING_PREFIX = /^(?:[rR][bBfF]?|[bBfF][rR]?|[uU])?(?=['"])/;
const OPS = [
  '**',
  '//',
  '->',
  ':=',
  '==',
  '!=',
  '<=',
  '>=',
  '<<',
  '>>',
  '+',
  '-',
  '*',
  '/',
  '%',
  '@',
  '&',
  '|',
  '^',
  '~',
  '<',
  '>',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  '.',
  ';',
  '=',
  '!',
];

function tokenize(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === ' ' || c === '\t' || c === '\f') {
      i++;
      continue;
    }
    if (c === '#') break; // a comment to the end of the line
    if (c === '\\' || c === '\n' || c === '\r' || c === '\0') notLiteral();
    const rest = s.slice(i);
    const pre = STRING_PREFIX.exec(rest);
    if (pre) {
      const prefix = pre[0].toLowerCase();
      const q = rest[prefix.length];
      const triple = rest.startsWith(q.repeat(3), prefix.length);
      const qs = triple ? q.repeat(3) : q;
      let j = prefix.length + qs.length;
      let body = '';
      for (;;) {
        if (j >= rest.length) notLiteral();
        if (rest.startsWith(qs, j)) break;
        if (rest[j] === '\\') {
          if (j + 1 >= rest.length) notLiteral();
          body += rest.slice(j, j + 2);
          j += 2;
        } else {
          if (!triple && (rest[j] === '\n' || rest[j] === '\r')) notLiteral();
          body += rest[j++];
        }
      }
      const bytes = prefix.includes('b');
      const raw = prefix.includes('r');
      if (bytes && /[^ -~\t]/.test(body)) notLiteral(); // bytes literals are printable ASCII
      out.push({ t: 'str', v: raw ? body : unescape(body, bytes), bytes, f: prefix.includes('f') });
      i += j + qs.length;
      continue;
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(s[i + 1] ?? ''))) {
      let m: RegExpExecArray | null;
      let len = 0;
      let tok: Tok | undefined;
      if ((m = IMAG_DIGITS.exec(rest))) {
        len = m[0].length;
        tok = { t: 'num', v: Number(m[0].slice(0, -1).replace(/_/g, '')), imag: true, int: false };
      } else if ((m = FLOAT.exec(rest))) {
        len = m[0].length;
        const imag = /[jJ]/.test(rest[len] ?? '');
        tok = { t: 'num', v: Number(m[0].replace(/_/g, '')), imag, int: false };
        if (imag) len++;
      } else if ((m = HEX_INT.exec(rest) ?? OCT_INT.exec(rest) ?? BIN_INT.exec(rest))) {
        len = m[0].length;
        const t = m[0].replace(/_/g, '');
        tok = {
          t: 'num',
          v: exactNumber(
            BigInt(t[1] === 'x' || t[1] === 'X' ? '0x' + t.slice(2) : t[1] === 'o' || t[1] === 'O' ? '0o' + t.slice(2) : '0b' + t.slice(2)),
          ),
          imag: false,
          int: true,
        };
      } else if ((m = DEC_INT.exec(rest))) {
        len = m[0].length;
        const t = m[0].replace(/_/g, '');
        if (t.length > 4300) notLiteral(); // Python 3.11 refuses longer decimal integer literals
        tok = { t: 'num', v: exactNumber(BigInt(t)), imag: false, int: true };
      } else notLiteral();
      // `0644`, `1_`, `1x`: Python's tokenizer refuses a number run into a name or a digit
      if (/[\p{L}\p{N}_]/u.test(rest[len] ?? '')) notLiteral();
      out.push(tok!);
      i += len;
      continue;
    }
    const nm = NAME.exec(rest);
    if (nm) {
      out.push({ t: 'name', v: nm[0] });
      i += nm[0].length;
      continue;
    }
    const op = OPS.find((o) => rest.startsWith(o));
    if (!op) notLiteral();
    out.push({ t: 'op', v: op! });
    i += op!.length;
  }
  out.push({ t: 'end' });
  return out;
}

const SIMPLE_ESCAPES: Record<string, string> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
};

function unescape(body: string, bytes: boolean): string {
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[i + 1];
    i++;
    if (SIMPLE_ESCAPES[e] !== undefined) out += SIMPLE_ESCAPES[e];
    else if (e === '\n') continue;
    else if (/[0-7]/.test(e)) {
      const m = /^[0-7]{1,3}/.exec(body.slice(i))![0];
      out += String.fromCharCode(parseInt(m, 8));
      i += m.length - 1;
    } else if (e === 'x') {
      const h = body.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(h)) notLiteral();
      out += String.fromCharCode(parseInt(h, 16));
      i += 2;
    } else if (!bytes && (e === 'u' || e === 'U')) {
      const n = e === 'u' ? 4 : 8;
      const h = body.slice(i + 1, i + 1 + n);
      if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(h)) notLiteral();
      const cp = parseInt(h, 16);
      if (cp > 0x10ffff) notLiteral();
      out += String.fromCodePoint(cp);
      i += n;
    } else if (!bytes && e === 'N') throw new UnsupportedLiteral('\\N{...} escapes in INI values are not supported (write the character)');
    else out += '\\' + e; // an unknown escape keeps its backslash
  }
  return out;
}

class LiteralParser {
  private i = 0;
  constructor(private readonly toks: Tok[]) {}

  peek(): Tok {
    return this.toks[this.i];
  }
  private next(): Tok {
    return this.toks[this.i++];
  }
  private isOp(v: string): boolean {
    const t = this.peek();
    return t.t === 'op' && t.v === v;
  }

  /** A whole expression: a tuple when commas separate items at the top (`1, 2`). */
  expr(depth: number): unknown {
    if (depth > 100) notLiteral();
    const first = this.binary(depth);
    if (!this.isOp(',')) return first;
    const items = [first];
    while (this.isOp(',')) {
      this.next();
      if (this.peek().t === 'end' || this.isOp(')') || this.isOp(']') || this.isOp('}')) break;
      items.push(this.binary(depth));
    }
    return items;
  }

  /** `a + bj` / `a - bj`: the only binary operation literal_eval takes (a complex number). */
  private binary(depth: number): unknown {
    const left = this.unary(depth);
    if (this.isOp('+') || this.isOp('-')) {
      this.next();
      const right = this.unary(depth);
      void left;
      void right;
      // only real +/- imaginary is a literal; complex numbers have no JSON form
      if (isNum(left) && right instanceof Imag) throw new UnsupportedLiteral('complex numbers have no JSON form');
      notLiteral();
    }
    if (this.isOp('*') || this.isOp('/') || this.isOp('%') || this.isOp('@') || this.isOp('**') || this.isOp('//')) notLiteral();
    if (left instanceof Imag) throw new UnsupportedLiteral('complex numbers have no JSON form');
    return left;
  }

  private unary(depth: number): unknown {
    if (this.isOp('-') || this.isOp('+')) {
      const neg = (this.next() as { v: string }).v === '-';
      const t = this.next();
      if (t.t !== 'num') notLiteral(); // only a number may carry a sign (`--1`, `-x` are not literals)
      const n = t as Extract<Tok, { t: 'num' }>;
      if (n.imag) return new Imag();
      if (!neg) return n.v;
      return typeof n.v === 'bigint' ? exactNumber(-n.v) : n.v === 0 && !n.int ? -0 : -n.v;
    }
    return this.atom(depth);
  }

  private atom(depth: number): unknown {
    const t = this.next();
    switch (t.t) {
      case 'num':
        return t.imag ? new Imag() : t.v;
      case 'str': {
        let s = t;
        const parts = [t];
        while (this.peek().t === 'str') parts.push((s = this.next() as typeof t));
        void s;
        if (parts.some((p) => p.bytes) && !parts.every((p) => p.bytes)) notLiteral(); // bytes + str: SyntaxError
        if (parts.some((p) => p.f)) notLiteral(); // an f-string is no literal
        const value = parts.map((p) => p.v).join('');
        if (parts[0].bytes) {
          const buf = Buffer.from(value, 'latin1');
          const text = buf.toString('utf8');
          if (!Buffer.from(text, 'utf8').equals(buf)) throw new UnsupportedLiteral('a bytes value that is not UTF-8');
          return text;
        }
        return value;
      }
      case 'name':
        if (t.v === 'True') return true;
        if (t.v === 'False') return false;
        if (t.v === 'None') return null;
        if (t.v === 'set' && this.isOp('(')) {
          this.next();
          if (this.isOp(')')) throw new UnsupportedLiteral('sets have no JSON form');
        }
        return notLiteral();
      case 'op':
        if (t.v === '(') {
          if (this.isOp(')')) {
            this.next();
            return [];
          }
          const first = this.binary(depth + 1);
          if (this.isOp(')')) {
            this.next();
            return first; // parentheses, not a tuple
          }
          const items = [first];
          while (this.isOp(',')) {
            this.next();
            if (this.isOp(')')) break;
            items.push(this.binary(depth + 1));
          }
          if (!this.isOp(')')) notLiteral();
          this.next();
          return items;
        }
        if (t.v === '[') return this.list(depth + 1, ']');
        if (t.v === '{') return this.dictOrSet(depth + 1);
        if (t.v === '.' && this.isOp('.') && this.toks[this.i + 1]?.t === 'op' && (this.toks[this.i + 1] as { v: string }).v === '.')
          throw new UnsupportedLiteral('Ellipsis has no JSON form');
        return notLiteral();
      default:
        return notLiteral();
    }
  }

  private list(depth: number, close: string): unknown[] {
    if (depth > 100) notLiteral();
    const items: unknown[] = [];
    while (!this.isOp(close)) {
      items.push(this.binary(depth));
      if (this.isOp(',')) this.next();
      else if (!this.isOp(close)) notLiteral();
    }
    this.next();
    return items;
  }

  private dictOrSet(depth: number): unknown {
    if (depth > 100) notLiteral();
    const out: Record<string, unknown> = {};
    if (this.isOp('}')) {
      this.next();
      return out;
    }
    let isSet: boolean | undefined;
    while (!this.isOp('}')) {
      if (this.isOp('**')) notLiteral();
      const k = this.binary(depth);
      if (this.isOp(':')) {
        if (isSet === true) notLiteral();
        isSet = false;
        this.next();
        const v = this.binary(depth);
        setKey(out, pyKey(k), v);
      } else {
        if (isSet === false) notLiteral();
        isSet = true;
      }
      if (this.isOp(',')) this.next();
      else if (!this.isOp('}')) notLiteral();
    }
    this.next();
    if (isSet) throw new UnsupportedLiteral('sets have no JSON form');
    return out;
  }
}

class Imag {}
const isNum = (v: unknown) => typeof v === 'number' || typeof v === 'bigint';

/** A dict key as json.dumps writes it (str, int, float, bool, None); other keys cannot be written. */
function pyKey(k: unknown): string {
  if (typeof k === 'string') return k;
  if (typeof k === 'boolean') return k ? 'true' : 'false';
  if (k === null) return 'null';
  if (typeof k === 'bigint') return k.toString();
  if (typeof k === 'number') return Number.isInteger(k) ? String(k) : pyFloatRepr(k);
  throw new UnsupportedLiteral('a dict key that is a list or a dict (unhashable in Python)');
}

function pyFloatRepr(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
  return String(n);
}

function setKey(o: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else {
    delete o[k]; // Python keeps the first key's position but the last value; order of a value's keys does not matter
    o[k] = v;
  }
}

/** A token of shlex.split(line, comments=True) and where it started. */
export interface ShlexToken {
  value: string;
  at: number;
}

/** shlex.split(s, comments=True) in POSIX mode; throws on an unclosed quote or a trailing escape. */
export function shlexSplit(s: string): ShlexToken[] {
  const out: ShlexToken[] = [];
  const WS = ' \t\r\n';
  let tok = '';
  let quoted = false;
  let at = -1;
  let state: ' ' | 'a' | "'" | '"' = ' ';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (state === ' ' || state === 'a') {
      if (WS.includes(c)) {
        if (state === 'a') {
          out.push({ value: tok, at });
          tok = '';
          quoted = false;
        }
        state = ' ';
      } else if (c === '#') {
        break; // the rest of the line is a comment
      } else {
        if (state === ' ') at = i;
        state = 'a';
        if (c === "'" || c === '"') {
          state = c;
          quoted = true;
        } else if (c === '\\') {
          if (i + 1 >= s.length) throw new Error('No escaped character');
          tok += s[++i];
        } else tok += c;
      }
    } else if (state === "'") {
      if (c === "'") state = 'a';
      else tok += c;
    } else {
      if (c === '"') state = 'a';
      else if (c === '\\') {
        if (i + 1 >= s.length) throw new Error('No escaped character');
        const n = s[++i];
        if (n !== '"' && n !== '\\') tok += '\\';
        tok += n;
      } else tok += c;
    }
  }
  if (state === "'" || state === '"') throw new Error('No closing quotation');
  if (state === 'a' && (tok || quoted)) out.push({ value: tok, at });
  return out;
}
