import type { Located } from './located.ts';
import { exactNumber } from './yaml11.ts';

/**
 * JSON as Ansible's loader reads it first, before trying YAML (Python's json.loads): integers
 * exact (a bigint beyond 2^53), `1e3` a float, NaN/Infinity accepted, strict strings. Keeps the
 * offset of every key and value (the plain reader's Located) for file:line errors. Duplicate
 * keys are refused, as in YAML files (json.loads keeps the last one). Nesting is bounded.
 */
export interface JsonText {
  value: unknown;
  root: Located;
}

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

export const MAX_DEPTH = 100;

/** The value of `text`, or undefined when it is not JSON (the caller reads it as YAML then). */
export function parseJson(text: string, strictErrors = false): JsonText | undefined {
  try {
    return new JsonReader(text).read();
  } catch (e) {
    if (e instanceof JsonSyntaxError && !strictErrors) return undefined;
    throw e;
  }
}

/** Whether a text may be JSON at all (json.loads is tried on every vars file; most are YAML). */
export function looksLikeJson(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) continue;
    return c === 123 || c === 91; // { [
  }
  return false;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;

class JsonReader {
  private i = 0;
  constructor(private readonly t: string) {}

  read(): JsonText {
    const r = this.value(0);
    this.ws();
    if (this.i < this.t.length) this.fail('extra data after the JSON value');
    return { value: r.value, root: r.loc };
  }

  private fail(msg: string, at = this.i): never {
    throw new JsonSyntaxError(msg, at);
  }

  private ws(): void {
    const t = this.t;
    while (this.i < t.length) {
      const c = t.charCodeAt(this.i);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.i++;
      else break;
    }
  }

  private value(depth: number): { value: unknown; loc: Located } {
    if (depth > MAX_DEPTH) this.fail(`nested more than ${MAX_DEPTH} levels deep`);
    this.ws();
    const t = this.t;
    const at = this.i;
    const c = t[at];
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') return { value: this.string(), loc: { at } };
    for (const [word, v] of LITERALS) {
      if (t.startsWith(word, at)) {
        this.i += word.length;
        return { value: v, loc: { at } };
      }
    }
    NUMBER.lastIndex = at;
    const m = NUMBER.exec(t);
    if (!m || m[0] === '-' || m[0] === '') this.fail('expecting a value');
    this.i += m[0].length;
    const value = m[1] === undefined && m[2] === undefined ? exactNumber(BigInt(m[0])) : Number(m[0]);
    return { value, loc: { at } };
  }

  private object(depth: number): { value: unknown; loc: Located } {
    const at = this.i++;
    const obj: Record<string, unknown> = {};
    const keys = new Map<string, { keyAt: number; value: Located }>();
    this.ws();
    if (this.t[this.i] === '}') {
      this.i++;
      return { value: obj, loc: { at, keys } };
    }
    for (;;) {
      this.ws();
      const keyAt = this.i;
      if (this.t[this.i] !== '"') this.fail('expecting a property name in double quotes');
      const key = this.string();
      if (keys.has(key)) this.fail(`duplicate key '${key}'`, keyAt);
      this.ws();
      if (this.t[this.i] !== ':') this.fail("expecting ':' delimiter");
      this.i++;
      const v = this.value(depth + 1);
      if (key === '__proto__') Object.defineProperty(obj, key, { value: v.value, writable: true, enumerable: true, configurable: true });
      else obj[key] = v.value;
      keys.set(key, { keyAt, value: v.loc });
      this.ws();
      const c = this.t[this.i++];
      if (c === '}') return { value: obj, loc: { at, keys } };
      if (c !== ',') this.fail("expecting ',' delimiter", this.i - 1);
    }
  }

  private array(depth: number): { value: unknown; loc: Located } {
    const at = this.i++;
    const arr: unknown[] = [];
    const items: Located[] = [];
    this.ws();
    if (this.t[this.i] === ']') {
      this.i++;
      return { value: arr, loc: { at, items } };
    }
    for (;;) {
      const v = this.value(depth + 1);
      arr.push(v.value);
      items.push(v.loc);
      this.ws();
      const c = this.t[this.i++];
      if (c === ']') return { value: arr, loc: { at, items } };
      if (c !== ',') this.fail("expecting ',' delimiter", this.i - 1);
    }
  }

  private string(): string {
    const t = this.t;
    let i = this.i + 1;
    let out = '';
    for (;;) {
      const start = i;
      while (i < t.length) {
        const c = t.charCodeAt(i);
        if (c === 34 || c === 92 || c < 32) break;
        i++;
      }
      out += t.slice(start, i);
      if (i >= t.length) this.fail('unterminated string', this.i);
      const c = t.charCodeAt(i);
      if (c === 34) {
        this.i = i + 1;
        return out;
      }
      if (c < 32) this.fail('invalid control character in a string', i);
      const e = t[i + 1];
      const simple = ESCAPES[e];
      if (simple !== undefined) {
        out += simple;
        i += 2;
      } else if (e === 'u') {
        const hex = t.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('invalid \\uXXXX escape', i);
        out += String.fromCharCode(parseInt(hex, 16));
        i += 6;
      } else this.fail('invalid escape', i);
    }
  }
}

const LITERALS: Array<[string, unknown]> = [
  ['true', true],
  ['false', false],
  ['null', null],
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
];
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
