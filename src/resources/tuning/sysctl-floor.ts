/**
 * Sysctl floors (`sysctl_never_lower`): racksmith's value is a minimum, a live value already higher
 * is kept (and persisted at that value), as Kubespray's "only raise sysctl values". Pure: the
 * sysctl resource (what it writes and sets) and the boot-effect check (what the loader must leave)
 * decide with the same functions, so both follow the kept value.
 */

/** `true`: every key whose value is numeric; a list: those keys. */
export type NeverLower = boolean | readonly string[];

/** A sysctl value of whole numbers (one, or a vector such as `tcp_rmem`'s three), signed. */
const NUMERIC = /^-?\d+( -?\d+)*$/;

export const isNumericSysctl = (v: string): boolean => NUMERIC.test(v);

/**
 * Fields where a lower number is "more": a range's lower bound (a wider port range has more
 * ports). Every other field of a numeric key counts up.
 */
const LOWER_IS_MORE: Readonly<Record<string, readonly number[]>> = {
  'net.ipv4.ip_local_port_range': [0],
};

export interface FloorDecision {
  /** What to write and set: racksmith's value, or the host's where it has more (field by field). */
  value: string;
  /** Some field of the host's value was kept. */
  kept: boolean;
}

/**
 * The value to converge to when `want` is a floor: each field the larger of racksmith's and the
 * live one (the smaller, for a range's lower bound). A live value that cannot be compared (missing,
 * unreadable, not numeric, another number of fields) keeps racksmith's.
 */
export function floorValue(key: string, want: string, live: string | null | undefined): FloorDecision {
  if (!live || !NUMERIC.test(want) || !NUMERIC.test(live)) return { value: want, kept: false };
  const w = want.split(' ');
  const l = live.split(' ');
  if (w.length !== l.length) return { value: want, kept: false };
  const lowerIsMore = LOWER_IS_MORE[key] ?? [];
  const fields = w.map((x, i) => {
    const [a, b] = [BigInt(x), BigInt(l[i])];
    const hostHasMore = lowerIsMore.includes(i) ? b < a : b > a;
    return hostHasMore ? l[i] : x;
  });
  const value = fields.join(' ');
  return { value, kept: value !== want };
}

/** The keys of `want` (computed values) that are floors under `neverLower`. */
export function flooredKeys(neverLower: NeverLower | undefined, want: Readonly<Record<string, string>>): string[] {
  if (!neverLower) return [];
  const keys = Object.keys(want);
  return neverLower === true ? keys.filter((k) => NUMERIC.test(want[k])) : keys.filter((k) => neverLower.includes(k));
}

export interface FlooredValues {
  /** The values to converge to. */
  values: Record<string, string>;
  /** Each kept key as `key VALUE (racksmith's WANT)`, for the report. */
  kept: string[];
}

/** `want` with every floored key raised to what the host has more of. */
export function applyFloors(
  neverLower: NeverLower | undefined,
  want: Readonly<Record<string, string>>,
  live: Readonly<Record<string, string | null | undefined>>,
): FlooredValues {
  const values = { ...want };
  const kept: string[] = [];
  for (const k of flooredKeys(neverLower, want)) {
    const d = floorValue(k, want[k], live[k]);
    if (!d.kept) continue;
    values[k] = d.value;
    kept.push(`${k} ${d.value} (racksmith's ${want[k]})`);
  }
  return { values, kept };
}

/** The summary suffix of a write that keeps host values. */
export const keptText = (kept: readonly string[]): string => (kept.length ? ` (kept: the host has more: ${kept.join(', ')})` : '');
