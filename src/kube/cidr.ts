/** IPv4/IPv6 addresses, CIDRs and ranges, as inventories and clusters spell them. */
import { isIP } from 'node:net';

export interface Cidr {
  family: 4 | 6;
  /** Network address (host bits cleared). */
  base: bigint;
  prefix: number;
  /** As written. */
  text: string;
}

export function ipToBigInt(ip: string): { family: 4 | 6; value: bigint } | undefined {
  const family = isIP(ip);
  if (family === 4) {
    const parts = ip.split('.').map(Number);
    return { family: 4, value: parts.reduce((acc, p) => (acc << 8n) + BigInt(p), 0n) };
  }
  if (family === 6) {
    let s = ip;
    // an embedded IPv4 tail (::ffff:1.2.3.4)
    const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
    if (v4) {
      const n = ipToBigInt(v4[1])!.value;
      s = s.slice(0, -v4[1].length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
    }
    const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
    const h = head ? head.split(':') : [];
    const t = tail !== undefined ? (tail ? tail.split(':') : []) : [];
    const groups = tail !== undefined ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
    if (groups.length !== 8) return undefined;
    return { family: 6, value: groups.reduce((acc, g) => (acc << 16n) + BigInt(parseInt(g || '0', 16)), 0n) };
  }
  return undefined;
}

/** Parse `a.b.c.d/n` or `x::/n`; strict: host bits must be zero. */
export function parseCidr(text: string, opts: { strict?: boolean } = {}): Cidr | undefined {
  const m = /^([^/\s]+)\/(\d{1,3})$/.exec(text.trim());
  if (!m) return undefined;
  const ip = ipToBigInt(m[1]);
  if (!ip) return undefined;
  const prefix = Number(m[2]);
  const bits = ip.family === 4 ? 32 : 128;
  if (prefix > bits) return undefined;
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  if (opts.strict && (ip.value & hostMask) !== 0n) return undefined;
  return { family: ip.family, base: ip.value & ~hostMask & ((1n << BigInt(bits)) - 1n), prefix, text: text.trim() };
}

/** Is `inner` entirely inside `outer`? */
export function cidrWithin(inner: Cidr, outer: Cidr): boolean {
  if (inner.family !== outer.family || inner.prefix < outer.prefix) return false;
  const bits = outer.family === 4 ? 32 : 128;
  const mask = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - outer.prefix)) - 1n);
  return (inner.base & mask) === outer.base;
}

export function cidrEqual(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.prefix === b.prefix && a.base === b.base;
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return cidrWithin(a, b) || cidrWithin(b, a);
}

/**
 * A MetalLB pool address: a CIDR (`10.0.0.0/24`, host bits zero) or a range `first-last` of one
 * family with first <= last. Returns an error text, or undefined when valid.
 */
export function checkPoolAddress(a: string): string | undefined {
  if (typeof a !== 'string' || a.trim() === '') return 'empty address';
  if (a.includes('-')) {
    const parts = a.split('-').map((s) => s.trim());
    if (parts.length !== 2) return `'${a}' is not a range first-last`;
    const [x, y] = parts.map(ipToBigInt);
    if (!x || !y) return `'${a}' is not a range of two IP addresses`;
    if (x.family !== y.family) return `'${a}' mixes IPv4 and IPv6`;
    if (x.value > y.value) return `'${a}': the first address is after the last`;
    return undefined;
  }
  if (!a.includes('/')) return `'${a}' is neither a CIDR (a.b.c.d/n) nor a range (first-last)`;
  if (!parseCidr(a)) return `'${a}' is not a valid CIDR`;
  if (!parseCidr(a, { strict: true })) return `'${a}' has host bits set (did you mean ${cidrText(parseCidr(a)!)}?)`;
  return undefined;
}

/** How many addresses a valid pool entry (CIDR or first-last range) holds. */
export function poolAddressCount(a: string): bigint {
  if (a.includes('-')) {
    const [x, y] = a.split('-').map((t) => ipToBigInt(t.trim())!);
    return y.value - x.value + 1n;
  }
  const c = parseCidr(a)!;
  return 1n << BigInt((c.family === 4 ? 32 : 128) - c.prefix);
}

export function cidrText(c: Cidr): string {
  if (c.family === 4) {
    const o = [24n, 16n, 8n, 0n].map((s) => String((c.base >> s) & 255n));
    return `${o.join('.')}/${c.prefix}`;
  }
  const g: string[] = [];
  for (let i = 7; i >= 0; i--) g.push(((c.base >> BigInt(i * 16)) & 0xffffn).toString(16));
  return `${g.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}/${c.prefix}`;
}
