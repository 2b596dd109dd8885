import { InputError, type SourcePos } from '../util/errors.ts';
import { validateOrThrow } from '../util/validate.ts';
import { validateVars } from './schema.ts';
import type { Vars } from './model.ts';
import { YamlSource } from './yaml-source.ts';
import { settle } from './values.ts';
import type { VaultKeyring } from './vault.ts';

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `-e` values as ansible-playbook takes them: `@file.yaml`, a YAML/JSON mapping, or
 * `key=value` pairs (values stay strings). Later `-e` win over earlier ones.
 */
export function parseExtraVars(args: string[], vault?: VaultKeyring): { vars: Vars; sources: Record<string, SourcePos> } {
  const vars: Vars = {};
  const sources: Record<string, SourcePos> = {};
  args.forEach((arg, i) => {
    const label = `-e #${i + 1}`;
    if (arg.startsWith('@')) {
      if (arg === '@') throw new InputError(`${label}: '@' names no file: give @FILE (a YAML or JSON file of variables)`);
      const src = YamlSource.read(arg.slice(1), 'extra-vars file', { vault });
      if (src.value === null || typeof src.value !== 'object' || Array.isArray(src.value)) {
        throw new InputError('extra-vars file must hold a mapping of variables', src.pos([]));
      }
      validateOrThrow(validateVars, src.value, src);
      for (const [k, v] of Object.entries(src.value as Vars)) {
        vars[k] = settle(v, [k], (p) => src.pos(p), src).value;
        sources[k] = src.pos([k]);
      }
      return;
    }
    const trimmed = arg.trim();
    if (trimmed.startsWith('{')) {
      const src = YamlSource.parse(label, trimmed, { vault });
      if (src.value === null || typeof src.value !== 'object' || Array.isArray(src.value))
        throw new InputError(`${label}: expected a mapping of variables`);
      validateOrThrow(validateVars, src.value, src);
      for (const [k, v] of Object.entries(src.value as Vars)) {
        vars[k] = settle(v, [k], (p) => src.pos(p), src).value;
        sources[k] = { file: label };
      }
      return;
    }
    const pairs: Vars = {};
    for (const pair of splitPairs(trimmed)) {
      const eq = pair.indexOf('=');
      if (eq < 0) throw new InputError(`${label}: expected key=value, @file.yaml or a mapping, got '${pair}'`);
      const key = pair.slice(0, eq);
      if (!VAR_NAME.test(key))
        throw new InputError(`${label}: '${key}' is not a variable name (letters, digits and _, not starting with a digit)`);
      pairs[key] = pair.slice(eq + 1);
    }
    // the connection variables' checks too (ansible_port=0 is refused here, not at connect)
    validateOrThrow(validateVars, pairs, { pos: () => ({ file: label }) });
    for (const [key, value] of Object.entries(pairs)) {
      vars[key] = value;
      sources[key] = { file: label };
    }
  });
  return { vars, sources };
}

/**
 * Split `a=1 b='two words'` on unquoted whitespace, removing the quotes; a `{{ }}`, `{% %}` or
 * `{# #}` block stays whole, as Ansible's split_args keeps it (`a={{ x }}` is one pair).
 */
function splitPairs(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | null = null;
  let any = false;
  let jinja = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    const two = s.slice(i, i + 2);
    if (quote) {
      if (c === quote) quote = null;
      else cur += c;
    } else if (/^\{[{%#]$/.test(two) || (jinja > 0 && /^[}%#]\}$/.test(two))) {
      jinja += two[0] === '{' ? 1 : -1;
      cur += two;
      i++;
    } else if (jinja === 0 && (c === '"' || c === "'")) {
      quote = c;
      any = true;
    } else if (jinja === 0 && /\s/.test(c)) {
      if (cur || any) out.push(cur);
      cur = '';
      any = false;
    } else cur += c;
  }
  if (quote) throw new InputError(`-e: unterminated quote in '${s}'`);
  if (cur || any) out.push(cur);
  return out;
}
