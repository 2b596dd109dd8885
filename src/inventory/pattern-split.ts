import { InputError } from '../util/errors.ts';
import { printable } from '../util/printable.ts';

/**
 * ansible-core 2.14's split_host_pattern: how a host pattern becomes terms. Commas always
 * separate. Without a comma, a pattern that reads as one address (a host name, IPv4 or IPv6
 * address, with ranges and an optional `:port`) is one term (`rack1:10` is host `rack1` port 10:
 * one term that names no host); anything else is split at `:` and whitespace, keeping `[...]`
 * whole (`web[0:1]`, `n[12]*`).
 */
export function splitHostPattern(pattern: string): string[] {
  let terms: string[];
  if (pattern.includes(',')) terms = pattern.split(',');
  else if (isAddress(pattern)) terms = [pattern];
  else {
    terms = pattern.match(TERM) ?? [];
    // Ansible drops a `[` or `]` that closes or opens no bracket (`~[` becomes `~`: every host)
    if (/[[\]]/.test(pattern.replace(TERM, '')))
      throw new InputError(`host pattern '${printable(pattern)}' has a '[' or ']' that is not part of a [...] (Ansible would drop it)`);
  }
  return terms.map(pyStrip).filter(Boolean);
}

// Python's \s also takes \x1c-\x1f (JS's does not)
const PY_SPACE = String.raw`\s\x1c-\x1f`;
const TERM = new RegExp(String.raw`(?:[^${PY_SPACE}:[\]]|\[[^\]]*\])+`, 'gu');
const EDGE_SPACE = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'gu');

/** Python's str.strip(). */
function pyStrip(s: string): string {
  return s.replace(EDGE_SPACE, '');
}

// ansible/parsing/utils/addresses.py, as compiled there (re.X, and re.I where it says). Python's
// `$` also matches before a final newline: hence `\n?$`.
const NUMERIC_RANGE = String.raw`\[(?:[0-9]+:[0-9]+)(?::[0-9]+)?\]`;
const HEX_RANGE = String.raw`\[(?:[0-9a-fA-F]+:[0-9a-fA-F]+)(?::[0-9]+)?\]`;
const ALNUM_RANGE = String.raw`\[(?:[a-zA-Z]:[a-zA-Z]|[0-9]+:[0-9]+)(?::[0-9]+)?\]`;
const V6 = String.raw`(?:[0-9a-fA-F]{1,4}|${HEX_RANGE})`;
const V4 = String.raw`(?:[01]?[0-9]{1,2}|2[0-4][0-9]|25[0-5]|${NUMERIC_RANGE})`;
const WORD = String.raw`[\p{L}\p{N}_]`;
const LABEL = String.raw`(?:${WORD}|${ALNUM_RANGE})(?:${WORD}|[_-]|${ALNUM_RANGE})*(?<![_-])`;

const BRACKETED_HOSTPORT = /^\[(.+)\]:([0-9]+)\n?$/u;
const HOSTPORT = /^((?:[^:[\]]|\[[^\]]*\])*):([0-9]+)\n?$/u;
const IPV4 = new RegExp(String.raw`^(?:${V4}\.){3}${V4}\n?$`, 'u');
// Only the last alternative is anchored at the end in Ansible's pattern (`^a|b|...|m$`), and
// re.match anchors every alternative at the start: a string that starts like IPv6 is one.
const IPV6 = new RegExp(
  '^(?:' +
    [
      String.raw`(?:${V6}:){7}${V6}`,
      String.raw`(?:${V6}:){1,6}:`,
      String.raw`(?:${V6}:)(?::${V6}){1,6}`,
      String.raw`(?:${V6}:){2}(?::${V6}){1,5}`,
      String.raw`(?:${V6}:){3}(?::${V6}){1,4}`,
      String.raw`(?:${V6}:){4}(?::${V6}){1,3}`,
      String.raw`(?:${V6}:){5}(?::${V6}){1,2}`,
      String.raw`(?:${V6}:){6}(?::${V6})`,
      String.raw`:(?::${V6}){1,6}`,
      String.raw`${V6}?::`,
      String.raw`(?:0:){6}(?:${V6}\.){3}${V6}`,
      String.raw`::(?:ffff:)?(?:${V6}\.){3}${V6}`,
      String.raw`(?:0:){5}ffff:(?:${V6}\.){3}${V6}\n?$`,
    ].join('|') +
    ')',
  'iu',
);
const HOSTNAME = new RegExp(String.raw`^${LABEL}(?:\.${LABEL})*\n?$`, 'iu');

/** parse_address(pattern, allow_ranges=True) succeeds: one host (and port), not a list. */
function isAddress(pattern: string): boolean {
  if (pattern.length > 4096) return false; // no address is this long; keeps the regexes cheap
  let address = pattern;
  for (const re of [BRACKETED_HOSTPORT, HOSTPORT]) {
    const m = re.exec(address);
    if (m) address = m[1];
  }
  return IPV4.test(address) || IPV6.test(address) || HOSTNAME.test(address);
}
