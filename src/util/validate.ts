import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { InputError, InputErrors, type SourcePos } from './errors.ts';

/** One ajv instance for the whole program: schemas compile once. */
// verbose: errors carry their parentSchema, so "unknown key" can list the allowed ones.
export const ajv = new Ajv({ allErrors: true, strict: false, allowUnionTypes: true, verbose: true });

/** Something that can say where a path inside the validated value was written. */
export interface Locator {
  pos(path: ReadonlyArray<string | number>, key?: boolean): SourcePos;
}

function splitPointer(p: string): string[] {
  return p === '' ? [] : p.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function describe(e: ErrorObject, path: string[]): { text: string; path: string[]; atKey: boolean } {
  const where = path.length ? path.join('.') : 'document';
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(e.params.additionalProperty);
      const allowed = Object.keys((e.parentSchema as { properties?: object })?.properties ?? {});
      return { text: `unknown key '${key}' in ${where}${allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}`, path: [...path, key], atKey: true };
    }
    case 'propertyNames': {
      const key = String(e.params.propertyName);
      return { text: `invalid name '${key}' in ${where}`, path: [...path, key], atKey: true };
    }
    case 'type':
      return { text: `${where} must be ${String(e.params.type).replace(',', ' or ')}`, path, atKey: false };
    case 'enum':
      return { text: `${where} must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`, path, atKey: false };
    case 'anyOf':
    case 'oneOf':
      return { text: `${where} has an invalid value`, path, atKey: false };
    default:
      return { text: `${where} ${e.message ?? 'is invalid'}`, path, atKey: false };
  }
}

/**
 * Validate `value` and raise every problem as an InputError at its file:line:col. Errors under
 * an anyOf, and the pattern error that ajv reports beside a propertyNames error, are folded
 * into their parent so each mistake is reported once.
 */
export function validateOrThrow(validate: ValidateFunction, value: unknown, where: Locator, prefix: string[] = []): void {
  if (validate(value)) return;
  const errors = validate.errors ?? [];
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.instancePath));
  const seen = new Set<string>();
  const out: InputError[] = [];
  for (const e of errors) {
    if (e.propertyName !== undefined && e.keyword !== 'propertyNames') continue;
    if (e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && anyOfPaths.has(e.instancePath)) continue;
    const d = describe(e, splitPointer(e.instancePath));
    const full = [...prefix, ...d.path];
    const text = d.text;
    if (seen.has(text)) continue;
    seen.add(text);
    out.push(new InputError(text, where.pos(full, d.atKey)));
  }
  if (out.length === 1) throw out[0];
  throw new InputErrors(out);
}
