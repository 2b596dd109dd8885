/**
 * Host names folded as pdsh/dshbak write them: `node[01-29,31]` for node01 … node29 and node31.
 * A name's last run of digits is its number; names with the same text around it share brackets.
 * Zero-padded numbers keep their width (node01 and node1 are different hosts), so they fold only
 * with numbers of that width (node10 among node01 … node09 too); unpadded numbers of any width
 * fold together (tb[1-30]). Names without digits stay as they are.
 */
export function foldHostNames(names: readonly string[]): string {
  return foldedTerms(names).join(',');
}

/** The terms of foldHostNames: `node[01-29,31]`, `db`, … in the order of each family's first host. */
export function foldedTerms(names: readonly string[]): string[] {
  const parsed = names.map((name) => {
    const m = /^(.*?)(\d+)(\D*)$/.exec(name);
    return m
      ? { name, prefix: m[1], digits: m[2] as string | undefined, suffix: m[3] }
      : { name, prefix: '', digits: undefined, suffix: '' };
  });
  const widthKey = (prefix: string, suffix: string, width: number) => JSON.stringify([prefix, suffix, width]);
  // (prefix, suffix, width) where some number is zero-padded: that width is fixed there
  const padded = new Set<string>();
  for (const p of parsed)
    if (p.digits && p.digits.length > 1 && p.digits[0] === '0') padded.add(widthKey(p.prefix, p.suffix, p.digits.length));
  const families = new Map<string, { prefix: string; suffix: string; numbers: Array<{ n: number; text: string }> }>();
  const order: string[] = [];
  for (const p of parsed) {
    if (p.digits === undefined) {
      order.push(JSON.stringify([p.name]));
      continue;
    }
    const fixed = widthKey(p.prefix, p.suffix, p.digits.length);
    const key = padded.has(fixed) ? fixed : widthKey(p.prefix, p.suffix, 0);
    let f = families.get(key);
    if (!f) {
      f = { prefix: p.prefix, suffix: p.suffix, numbers: [] };
      families.set(key, f);
      order.push(key);
    }
    f.numbers.push({ n: Number(p.digits), text: p.digits });
  }
  return order.map((key) => {
    const f = families.get(key);
    if (!f) return (JSON.parse(key) as string[])[0];
    if (f.numbers.length === 1) return `${f.prefix}${f.numbers[0].text}${f.suffix}`;
    return `${f.prefix}[${ranges(f.numbers)}]${f.suffix}`;
  });
}

const MAX_TERM = 60;

/**
 * Hosts for a header line: folded (`tb[1-30] (30 hosts)`), at most `maxTerms` terms, then `… (N
 * hosts)`: 1,000 hosts named without numbers still make one short line.
 */
export function hostList(hosts: readonly string[], maxTerms = 8): string {
  // (a family with many gaps is one long term: its first ranges stand for it)
  const terms = foldedTerms(hosts).map((t) => (t.length > MAX_TERM ? `${t.slice(0, MAX_TERM - 2)}…]` : t));
  const count = hosts.length > 1 ? ` (${hosts.length} hosts)` : '';
  if (terms.length <= maxTerms) return `${terms.join(', ')}${count}`;
  return `${terms.slice(0, maxTerms - 1).join(', ')}, … ${terms[terms.length - 1]}${count}`;
}

/** `1-3,5,7-9`: consecutive numbers as ranges, in numeric order, each written as given (padding kept). */
function ranges(numbers: Array<{ n: number; text: string }>): string {
  const sorted = [...numbers].sort((a, b) => a.n - b.n).filter((x, i, a) => i === 0 || a[i - 1].n !== x.n);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1].n === sorted[j].n + 1) j++;
    parts.push(j === i ? sorted[i].text : `${sorted[i].text}-${sorted[j].text}`);
    i = j + 1;
  }
  return parts.join(',');
}
