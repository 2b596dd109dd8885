/**
 * YAML 1.1 scalars as Ansible's loader (PyYAML's SafeConstructor and Resolver) types them: the
 * one resolution used by the fast plain reader (plain-yaml.ts) and by the yaml library's tags
 * (yaml-source.ts), so the two cannot disagree.
 *
 * - `yes/no/on/off` (and `true/false`, in three spellings) are booleans; `y`, `n` are strings.
 * - integers: `0644` is octal (420), `0b101`, `0x1F`, `1_000`, sexagesimal `1:30` (90); exact
 *   beyond 2^53 as a bigint (`0xFFFFFFFFFFFFFFFF`); `0o17` and `09` are strings.
 * - floats need a dot: `1.5`, `1.`, `.5`, `1.0e+3`, `.inf`, `.nan`; `1e3` is a string.
 * - timestamps become the text Python's isoformat() gives (what ansible-inventory prints).
 * - a bare `=` (PyYAML's `value` tag) or `<<` as a value has no constructor: an error.
 */

// PyYAML's implicit resolvers (resolver.py), verbatim (verbose mode spelled out).
const BOOL = /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/;
const FLOAT =
  /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
const INT = /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/;
const NULL = /^(?:~|null|Null|NULL|)$/;
const TIMESTAMP =
  /^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$/;
const TIMESTAMP_PARTS =
  /^([0-9]{4})-([0-9][0-9]?)-([0-9][0-9]?)(?:(?:[Tt]|[ \t]+)([0-9][0-9]?):([0-9][0-9]):([0-9][0-9])(?:\.([0-9]*))?(?:[ \t]*(Z|([-+])([0-9][0-9]?)(?::([0-9][0-9]))?))?)?$/;

export const YAML11_PATTERNS = { BOOL, FLOAT, INT, NULL, TIMESTAMP } as const;

/** A scalar that PyYAML cannot construct (Ansible fails on it too). */
export class Yaml11Error extends Error {}

/**
 * The value of a plain (unquoted, untagged) scalar. PyYAML picks candidate types by the first
 * character; the patterns are disjoint, so testing them in its order gives its answer.
 */
export function resolvePlain11(s: string): unknown {
  if (s === '') return null;
  const c = s.charCodeAt(0);
  // 0-9 + - .
  if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 46) {
    // two dots (an IPv4 address, a version): no number and no date has them
    if (s.indexOf('.') !== s.lastIndexOf('.')) return s;
    if (FLOAT.test(s)) return pyFloat(s);
    if (INT.test(s)) return pyInt(s);
    if (c >= 48 && c <= 57 && TIMESTAMP.test(s)) return pyTimestamp(s);
    return s;
  }
  // every boolean and null word is at most 5 letters (`false`)
  if (s.length > 5) return s;
  switch (s[0]) {
    case 'y':
    case 'Y':
    case 't':
    case 'T':
    case 'f':
    case 'F':
    case 'o':
    case 'O':
      return BOOL.test(s) ? pyBool(s) : s;
    case 'n':
    case 'N':
      if (BOOL.test(s)) return pyBool(s);
      return NULL.test(s) ? null : s;
    case '~':
      return s === '~' ? null : s;
    case '=':
      if (s === '=') throw new Yaml11Error("a bare '=' is not a value in YAML 1.1 (quote it)");
      return s;
    case '<':
      if (s === '<<') throw new Yaml11Error("'<<' is a merge key, not a value (quote it)");
      return s;
    default:
      return s;
  }
}

/** First characters of a plain scalar that resolvePlain11 may turn into something other than itself. */
export function maybeTyped(s: string): boolean {
  if (s === '') return true;
  const c = s.charCodeAt(0);
  if (c >= 48 && c <= 57) return true;
  return '-+.yYtTfFoOnN~=<'.includes(s[0]);
}

export function pyBool(s: string): boolean {
  const l = s.toLowerCase();
  return l === 'yes' || l === 'true' || l === 'on';
}

/** construct_yaml_int: exact, a bigint when beyond Number's safe range. */
export function pyInt(text: string): number | bigint {
  let v = text.replace(/_/g, '');
  let sign = 1n;
  if (v[0] === '-') sign = -1n;
  if (v[0] === '+' || v[0] === '-') v = v.slice(1);
  let n: bigint;
  if (v === '0') return 0;
  if (v.length < 16 && v[0] !== '0' && !v.includes(':')) return Number(text.replace(/_/g, '')); // decimal, exact as a number
  if (v === '' || v === '0b' || v === '0x') throw new Yaml11Error(`'${text}' is not a number`);
  if (v.startsWith('0b')) n = BigInt(v);
  else if (v.startsWith('0x')) n = BigInt(v);
  else if (v[0] === '0') n = BigInt('0o' + v.slice(1));
  else if (v.includes(':')) {
    n = 0n;
    for (const part of v.split(':')) n = n * 60n + BigInt(part);
  } else n = BigInt(v);
  return exactNumber(sign * n);
}

/** A bigint as a number when that loses nothing. */
export function exactNumber(n: bigint): number | bigint {
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

/** construct_yaml_float. */
export function pyFloat(text: string): number {
  let v = text.replace(/_/g, '').toLowerCase();
  let sign = 1;
  if (v[0] === '-') sign = -1;
  if (v[0] === '+' || v[0] === '-') v = v.slice(1);
  if (v === '.inf') return sign * Infinity;
  if (v === '.nan') return NaN;
  if (v.includes(':')) {
    let n = 0;
    for (const part of v.split(':')) n = n * 60 + Number(part);
    return sign * n;
  }
  return sign * Number(v);
}

/** construct_yaml_timestamp, as the text datetime.isoformat() / date.isoformat() gives. */
export function pyTimestamp(text: string): string {
  const m = TIMESTAMP_PARTS.exec(text);
  if (!m) throw new Yaml11Error(`'${text}' is not a timestamp`);
  const [, y, mo, d, hh, mi, ss, frac, tz, tzSign, tzH, tzM] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const daysIn = [31, (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn[month - 1]) throw new Yaml11Error(`'${text}' is not a valid date`);
  const p2 = (n: number) => String(n).padStart(2, '0');
  const date = `${y}-${p2(month)}-${p2(day)}`;
  if (hh === undefined) return date;
  const hour = Number(hh);
  if (hour > 23 || Number(mi) > 59 || Number(ss) > 59) throw new Yaml11Error(`'${text}' is not a valid time`);
  let out = `${date}T${p2(hour)}:${mi}:${ss}`;
  const micro = frac ? Number((frac.slice(0, 6) + '000000').slice(0, 6)) : 0;
  if (micro) out += '.' + String(micro).padStart(6, '0');
  if (tzSign) {
    const minutes = Number(tzH) * 60 + Number(tzM ?? 0);
    if (minutes >= 24 * 60) throw new Yaml11Error(`'${text}' has an invalid time zone`);
    out += `${minutes === 0 ? '+' : tzSign}${p2(Math.floor(minutes / 60))}:${p2(minutes % 60)}`;
  } else if (tz) out += '+00:00';
  return out;
}
