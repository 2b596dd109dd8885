/**
 * Host patterns as Ansible's inventory plugins read them (parse_address, expand_hostname_range
 * of ansible-core 2.14): `web1:2222` is host web1 with port 2222, `[::1]:22` an IPv6 address with
 * a port, `node[01:20]` zero-padded, `node[:2]` from 0, `rack[A:C]` and `[a:Z]` over Python's
 * ascii_letters, `[1:9:2]` with a step. What does not parse as an address is taken whole, as
 * there, and then refused by hostNameProblem (racksmith's rule: a name must be a plain host name).
 */
const W = '[\\p{L}\\p{N}_]'; // Python's Unicode \w
const NUMERIC_RANGE = '\\[(?:[0-9]+:[0-9]+)(?::[0-9]+)?\\]';
const HEX_RANGE = '\\[(?:[0-9a-f]+:[0-9a-f]+)(?::[0-9]+)?\\]';
const ALNUM_RANGE = '\\[(?:[a-z]:[a-z]|[0-9]+:[0-9]+)(?::[0-9]+)?\\]';
const IPV6_PART = `(?:[0-9a-f]{1,4}|${HEX_RANGE})`;
const IPV4_PART = `(?:[01]?[0-9]{1,2}|2[0-4][0-9]|25[0-5]|${NUMERIC_RANGE})`;
const LABEL = `(?:${W}|${ALNUM_RANGE})(?:[\\p{L}\\p{N}_-]|${ALNUM_RANGE})*(?<![_-])`;

const BRACKETED_HOSTPORT = /^\[(.+)\]:([0-9]+)$/su;
const HOSTPORT = /^((?:[^:[\]]|\[[^\]]*\])*):([0-9]+)$/su;
const IPV4 = new RegExp(`^(?:${IPV4_PART}\\.){3}${IPV4_PART}$`, 'iu');
const P = IPV6_PART;
// As written in Ansible: `^` binds to the first alternative and `$` to the last only (re.match
// anchors every alternative at the start); a quirk kept, since it decides what is an address.
const IPV6 = new RegExp(
  `^(?:(?:${P}:){7}${P}|(?:${P}:){1,6}:|(?:${P}:)(?::${P}){1,6}|(?:${P}:){2}(?::${P}){1,5}|(?:${P}:){3}(?::${P}){1,4}|` +
    `(?:${P}:){4}(?::${P}){1,3}|(?:${P}:){5}(?::${P}){1,2}|(?:${P}:){6}(?::${P})|:(?::${P}){1,6}|${P}?::|` +
    `(?:0:){6}(?:${P}\\.){3}${P}|::(?:ffff:)?(?:${P}\\.){3}${P}|(?:0:){5}ffff:(?:${P}\\.){3}${P}$)`,
  'iu',
);
const HOSTNAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`, 'iu');

const MAX_EXPANSION = 10_000;
const ASCII_LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** parse_address(address, allow_ranges=True): the host and port, or undefined when it is no address. */
export function parseAddress(address: string): { host: string; port?: number } | undefined {
  let port: number | undefined;
  for (const re of [BRACKETED_HOSTPORT, HOSTPORT]) {
    const m = re.exec(address);
    if (m) {
      address = m[1];
      port = Number(m[2]);
    }
  }
  if (IPV4.test(address) || IPV6.test(address) || HOSTNAME.test(address)) return { host: address, port };
  return undefined;
}

/** _expand_hostpattern: the host names of a pattern and the port given with it. */
export function expandHostPattern(pattern: string): { names: string[]; port?: number } {
  // without ':' (a port) or '[' (a range) the pattern is the name, address or not
  if (!pattern.includes(':') && !pattern.includes('[')) return { names: [pattern] };
  const a = parseAddress(pattern);
  const host = a ? a.host : pattern;
  return { names: host.includes('[') ? expandHostRange(host) : [host], port: a?.port };
}

/** expand_hostname_range: the first `[...]` expanded, then the rest of each result. */
export function expandHostRange(line: string): string[] {
  const out: string[] = [];
  expandInto(line, out);
  return out;
}

function expandInto(line: string, out: string[]): void {
  const open = line.indexOf('[');
  const close = line.indexOf(']');
  // Python: line.replace('[', '|', 1).replace(']', '|', 1).split('|') must give three parts
  if (open < 0 || close < open || line.includes('|')) throw new Error(`invalid host range in '${line}'`);
  const head = line.slice(0, open);
  const range = line.slice(open + 1, close);
  const tail = line.slice(close + 1);
  const bounds = range.split(':');
  if (bounds.length !== 2 && bounds.length !== 3) throw new Error(`host range must be begin:end or begin:end:step in '${line}'`);
  const beg = bounds[0] || '0';
  const end = bounds[1];
  if (!end) throw new Error(`host range must specify an end value in '${line}'`);
  const step = bounds.length === 3 ? pyIntText(bounds[2], line) : 1;
  let width = 0;
  if (beg[0] === '0' && beg.length > 1) {
    if (beg.length !== end.length) throw new Error(`host range must have begin and end of equal length in '${line}'`);
    width = beg.length;
  }
  const fill = (x: string) => (width ? x.padStart(width, '0') : x);
  let seq: string[];
  // string.ascii_letters.index(): a substring's position (`[ab:cd]` is a..c there too)
  const ib = ASCII_LETTERS.indexOf(beg);
  const ie = ASCII_LETTERS.indexOf(end);
  if (ib >= 0 && ie >= 0) {
    if (ib > ie) throw new Error(`host range must have begin <= end in '${line}'`);
    if (step <= 0) throw new Error(`host range step must be positive in '${line}'`);
    seq = [];
    for (let i = ib; i <= ie; i += step) seq.push(ASCII_LETTERS[i]);
  } else {
    const b = pyIntText(beg, line);
    const e = pyIntText(end, line);
    if (step <= 0) throw new Error(`host range step must be positive in '${line}'`);
    if (e < b) throw new Error(`host range '${line}' ends before it starts`);
    if ((e - b) / step + 1 > MAX_EXPANSION) throw new Error(`host range '${line}' expands to more than ${MAX_EXPANSION} hosts`);
    seq = [];
    for (let i = b; i <= e; i += step) seq.push(String(i));
  }
  for (const r of seq) {
    const name = head + fill(r) + tail;
    if (name.includes('[')) expandInto(name, out);
    else out.push(name);
    if (out.length > MAX_EXPANSION) throw new Error(`host range '${line}' expands to more than ${MAX_EXPANSION} hosts`);
  }
}

function pyIntText(s: string, line: string): number {
  const t = s.trim();
  if (!/^[-+]?[0-9](?:_?[0-9])*$/.test(t)) throw new Error(`invalid number '${s}' in host range '${line}'`);
  return Number(t.replace(/_/g, ''));
}

const PLAIN_IPV4 = /^(?:(?:[01]?[0-9]{1,2}|2[0-4][0-9]|25[0-5])\.){3}(?:[01]?[0-9]{1,2}|2[0-4][0-9]|25[0-5])$/;
const PLAIN_LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9])?';
const PLAIN_HOSTNAME = new RegExp(`^${PLAIN_LABEL}(?:\\.${PLAIN_LABEL})*$`);
const PLAIN_IPV6 = /^[0-9A-Fa-f:.]+$/;

/**
 * Why racksmith refuses a host name, or undefined: a name must be an IPv4 address, an IPv6
 * address or an ASCII DNS-style name (letters, digits, `_`, `-` inside labels). Ansible takes
 * any text that is not an address literally (`host;rm`, `-oProxyCommand`, `ünï`); racksmith
 * passes names to ssh as addresses and refuses these.
 */
export function hostNameProblem(name: string): string | undefined {
  if (PLAIN_IPV4.test(name) || PLAIN_HOSTNAME.test(name)) return undefined;
  if (name.includes(':') && PLAIN_IPV6.test(name) && IPV6.test(name) && isIpv6(name)) return undefined;
  return `invalid host name '${name}' (a host name, IPv4 or IPv6 address)`;
}

function isIpv6(s: string): boolean {
  // the whole text must be an address (Ansible's pattern only anchors its last alternative)
  const parts = s.split('::');
  if (parts.length > 2) return false;
  const groups = parts.flatMap((p) => (p === '' ? [] : p.split(':')));
  const last = groups[groups.length - 1] ?? '';
  const v4 = last.includes('.');
  if (v4 && !PLAIN_IPV4.test(last)) return false;
  const hex = v4 ? groups.slice(0, -1) : groups;
  if (!hex.every((g) => /^[0-9A-Fa-f]{1,4}$/.test(g))) return false;
  const n = hex.length + (v4 ? 2 : 0);
  return parts.length === 2 ? n < 8 : n === 8;
}
