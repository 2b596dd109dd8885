import { isSecret } from '../util/secret.ts';
import type { Host, Inventory } from './model.ts';
import { vaultTextOf } from './vault.ts';

/**
 * What racksmith resolved, in `ansible-inventory --list` / `--host` JSON (ansible-core 2.14,
 * non-export mode): every group reachable from `all` with its direct `hosts` and its `children`
 * (empty ones left out), and `_meta.hostvars` with each host's merged variables, printed as
 * Python's json.dumps(sort_keys=True, indent=4) prints, so the two tools' outputs can be diffed.
 * A vaulted value prints as its ciphertext (`{"__ansible_vault": ...}`, as Ansible prints it);
 * any other secret as its mask. The one difference: a float with no fraction prints as `1`, not
 * `1.0` (JavaScript has one number type).
 */

/** Variables Ansible adds itself and ansible-inventory leaves out (cli/inventory.py INTERNAL_VARS). */
const INTERNAL_VARS = new Set([
  'ansible_diff_mode',
  'ansible_config_file',
  'ansible_facts',
  'ansible_forks',
  'ansible_inventory_sources',
  'ansible_limit',
  'ansible_playbook_python',
  'ansible_run_tags',
  'ansible_skip_tags',
  'ansible_verbosity',
  'ansible_version',
  'inventory_dir',
  'inventory_file',
  'inventory_hostname',
  'inventory_hostname_short',
  'groups',
  'group_names',
  'omit',
  'playbook_dir',
]);

export function hostVarsOf(h: Host): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(h.vars)) if (!INTERNAL_VARS.has(k)) out[k] = v;
  return out;
}

export function inventoryList(inv: Inventory): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const seen = new Set<string>();
  const format = (name: string): void => {
    const g = inv.groups.get(name)!;
    const entry: Record<string, unknown> = {};
    if (name !== 'all' && g.hosts.length) entry.hosts = [...g.hosts];
    if (g.children.length) entry.children = [...g.children];
    for (const c of g.children) {
      if (seen.has(c)) continue;
      format(c);
      seen.add(c);
    }
    if (Object.keys(entry).length) out[name] = entry;
  };
  format('all');
  const hostvars: Record<string, unknown> = {};
  for (const h of inv.hosts) {
    const v = hostVarsOf(h);
    if (Object.keys(v).length) hostvars[h.name] = v;
  }
  out._meta = { hostvars };
  return out;
}

/** json.dumps(value, sort_keys=True, indent=4, ensure_ascii=False). */
export function pythonJson(value: unknown, indent = 0): string {
  const pad = ' '.repeat(indent + 4);
  const end = ' '.repeat(indent);
  if (value === null || value === undefined) return 'null';
  if (isSecret(value)) {
    const vt = vaultTextOf.get(value);
    return vt !== undefined ? pythonJson({ __ansible_vault: vt }, indent) : JSON.stringify(value.masked);
  }
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return value.toString();
    case 'number':
      if (Number.isNaN(value)) return 'NaN';
      if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
      return Object.is(value, -0) ? '-0.0' : String(value); // only a float is negative zero
    case 'string':
      return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((v) => pad + pythonJson(v, indent + 4)).join(',\n')}\n${end}]`;
  }
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o).sort(codePointOrder);
  if (keys.length === 0) return '{}';
  return `{\n${keys.map((k) => `${pad}${JSON.stringify(k)}: ${pythonJson(o[k], indent + 4)}`).join(',\n')}\n${end}}`;
}

/** Python's str order (and UTF-8 bytes' order): by code point, where JS's sort() compares UTF-16 units. */
export function codePointOrder(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0)! - y[i].codePointAt(0)!;
    if (d) return d;
  }
  return x.length - y.length;
}
