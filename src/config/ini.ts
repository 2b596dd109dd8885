import { InputError } from '../util/errors.ts';

/** One `key = value` of an INI file, with the line it starts on. */
export interface IniEntry {
  value: string;
  line: number;
}

/** Sections by name, each a map of lower-cased keys. `DEFAULT`'s keys are inherited by every section. */
export type IniFile = Map<string, Map<string, IniEntry>>;

const SECTION = /^\[(.+)\]/;
const OPTION = /^(.*?)\s*([=:])\s*(.*)$/;

/**
 * Parse INI text as Python's `configparser.ConfigParser(inline_comment_prefixes=(';',))` reads it,
 * which is how Ansible reads ansible.cfg: `#`/`;` comment lines, `;` after whitespace starts an
 * inline comment, `key = value` or `key: value` (keys lower-cased), indented lines continue a value,
 * no key before the first section, no section or key twice (configparser's strict mode, an error in
 * Ansible too). Interpolation is not done: Ansible reads every value raw.
 */
export function parseIni(text: string, file: string): IniFile {
  const sections: IniFile = new Map();
  let current: Map<string, IniEntry> | undefined;
  let last: { entry: IniEntry; indent: number } | undefined;
  let pendingBlank = 0;
  const lines = text.split(/\r\n|\n|\r/);
  for (let i = 0; i < lines.length; i++) {
    const line = i + 1;
    const raw = lines[i];
    const stripped = raw.trim();
    if (stripped.startsWith('#') || stripped.startsWith(';')) continue;
    const value = stripInlineComment(raw).trim();
    const indent = raw.length - raw.trimStart().length;
    if (value === '') {
      // blank lines inside a value are kept only when the value goes on after them
      if (last) pendingBlank++;
      continue;
    }
    if (last && current && indent > last.indent) {
      last.entry.value += '\n'.repeat(pendingBlank + 1) + value;
      pendingBlank = 0;
      continue;
    }
    pendingBlank = 0;
    last = undefined;
    const header = SECTION.exec(value);
    if (header) {
      const name = header[1];
      if (sections.has(name)) throw new InputError(`section [${name}] is given twice`, { file, line });
      current = new Map();
      sections.set(name, current);
      continue;
    }
    if (!current) throw new InputError('a setting before the first [section] header', { file, line });
    const option = OPTION.exec(value);
    if (!option || option[1].trim() === '') throw new InputError(`not a 'key = value' line`, { file, line });
    const key = option[1].trim().toLowerCase();
    if (current.has(key)) throw new InputError(`'${key}' is set twice in this section`, { file, line });
    const entry = { value: option[3].trim(), line };
    current.set(key, entry);
    last = { entry, indent };
  }
  return sections;
}

/** configparser's inline comments: a prefix (here only `;`) that follows whitespace. */
function stripInlineComment(line: string): string {
  for (let i = 1; i < line.length; i++) if (line[i] === ';' && /\s/.test(line[i - 1])) return line.slice(0, i);
  return line;
}

/** A key of a section, or of `[DEFAULT]` when the section has none (configparser's lookup). */
export function iniGet(ini: IniFile, section: string, key: string): IniEntry | undefined {
  return ini.get(section)?.get(key) ?? ini.get('DEFAULT')?.get(key);
}
