import { InputError } from '../util/errors.ts';

/**
 * Batch sizes for `serial: [1, '10%', '25%']` over `total` hosts, as Ansible computes them:
 * each entry is a count or a percentage of the play's hosts (rounded down, at least 1), the
 * last entry repeats until every host is in a batch. No serial: one batch with every host.
 */
export function batchSizes(total: number, serialOption?: number | string | Array<number | string>): number[] {
  // (one size alone is a list of one, as Ansible reads `serial: 5`)
  const serial = serialOption === undefined || Array.isArray(serialOption) ? serialOption : [serialOption];
  if (!serial || serial.length === 0) return total === 0 ? [] : [total];
  for (const spec of serial) toCount(spec, Math.max(total, 1)); // every entry is checked, used or not
  if (total === 0) return [];
  const sizes: number[] = [];
  let left = total;
  let i = 0;
  while (left > 0) {
    const spec = serial[Math.min(i, serial.length - 1)];
    const size = Math.min(left, Math.max(1, toCount(spec, total)));
    sizes.push(size);
    left -= size;
    i++;
  }
  return sizes;
}

function toCount(spec: number | string, total: number): number {
  if (typeof spec === 'number') {
    if (!Number.isSafeInteger(spec) || spec < 1) throw new InputError(`serial: ${spec} is not a positive whole number`);
    return spec;
  }
  const m = /^(\d+(?:\.\d+)?)%$/.exec(spec.trim());
  if (m) {
    // Under 1% is a batch of (almost) nobody, over 100% more than the play has: both are typos.
    const pct = Number(m[1]);
    if (!(pct >= 1 && pct <= 100)) throw new InputError(`serial: '${spec.trim()}' is not a percentage from 1 to 100`);
    return Math.floor((pct / 100) * total);
  }
  if (/^\d+$/.test(spec.trim())) return toCount(Number(spec), total);
  throw new InputError(`serial: '${spec}' is neither a count nor a percentage`);
}
