const HOST_NAME = /^[A-Za-z0-9_]([A-Za-z0-9_.:-]*[A-Za-z0-9_])?$/;
const MAX_EXPANSION = 10_000;

/**
 * Expand Ansible host ranges: `node[01:03]` -> node01 node02 node03, `[a:c]` letters,
 * optional `:step`. Every resulting name must be a plain host name.
 */
export function expandHostRange(key: string): string[] {
  const m = /^(.*?)\[([0-9a-z]+):([0-9a-z]+)(?::([0-9]+))?\](.*)$/.exec(key);
  if (!m) {
    if (!HOST_NAME.test(key)) throw new Error(`invalid host name '${key}'`);
    return [key];
  }
  const [, head, from, to, stepText, tail] = m;
  const step = stepText ? Number(stepText) : 1;
  if (step < 1) throw new Error(`invalid step in host range '${key}'`);
  const numeric = /^[0-9]+$/.test(from) && /^[0-9]+$/.test(to);
  const letters = /^[a-z]$/.test(from) && /^[a-z]$/.test(to);
  if (!numeric && !letters) throw new Error(`invalid host range '${key}' (use [01:20] or [a:f])`);
  const start = numeric ? Number(from) : from.charCodeAt(0);
  const end = numeric ? Number(to) : to.charCodeAt(0);
  if (end < start) throw new Error(`host range '${key}' ends before it starts`);
  if ((end - start) / step + 1 > MAX_EXPANSION) throw new Error(`host range '${key}' expands to more than ${MAX_EXPANSION} hosts`);
  const width = numeric && from.length > 1 && from.startsWith('0') ? from.length : 0;
  const out: string[] = [];
  for (let i = start; i <= end; i += step) {
    const part = numeric ? String(i).padStart(width, '0') : String.fromCharCode(i);
    out.push(...expandHostRange(head + part + tail));
  }
  return out;
}
