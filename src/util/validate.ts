import { sha256 } from './sha256.ts';
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import { InputError, InputErrors, type SourcePos } from './errors.ts';

const require = createRequire(import.meta.url);

// verbose: errors carry their parentSchema, so "unknown key" can list the allowed ones.
export const AJV_OPTIONS: Options = { allErrors: true, strict: false, allowUnionTypes: true, verbose: true };

/** A schema the program validates with, and the schemas its $refs point into. */
export interface DeclaredSchema {
  schema: object;
  refs: readonly object[];
}

/** Every schema declared with `lazySchema` (the build precompiles them: scripts/build.mjs). */
export const declaredSchemas = new Map<string, DeclaredSchema>();

export function schemaKey(d: DeclaredSchema): string {
  return sha256(JSON.stringify([d.schema, d.refs]));
}

/**
 * Validators compiled at build time (dist/schemas.cjs, ajv's standalone code): compiling the
 * built-in schemas at every start cost ~80 ms, and importing ajv ~25 ms more. Only used from
 * dist/, where the build wrote them next to this file's build.
 */
function loadPrecompiled(): Record<string, ValidateFunction> {
  if (!/\/dist\/src\/util\/validate\.js$/.test(import.meta.url)) return {};
  try {
    return require('../../schemas.cjs') as Record<string, ValidateFunction>;
  } catch {
    return {};
  }
}
const precompiled = loadPrecompiled();

let shared: Ajv | undefined;
/** The one ajv instance of the program, created when a schema is not precompiled. */
export function ajvInstance(): Ajv {
  if (!shared) {
    const { Ajv: AjvClass } = require('ajv') as typeof import('ajv');
    shared = new AjvClass(AJV_OPTIONS);
  }
  return shared;
}

/** Compile `schema` (its $refs resolved in `refs`, schemas with an $id), or take its precompiled validator. */
export function compileSchema(schema: object, refs: readonly object[] = []): ValidateFunction {
  const found = precompiled[schemaKey({ schema, refs })];
  if (found) return found;
  const ajv = ajvInstance();
  for (const r of refs) {
    const id = (r as { $id?: string }).$id;
    if (id && !ajv.getSchema(id)) ajv.addSchema(r);
  }
  return ajv.compile(schema);
}

/**
 * A validator compiled on first use (a run pays only for what it validates), declared now so the
 * build can precompile it.
 */
export function lazySchema(schema: object, refs: readonly object[] = []): ValidateFunction {
  declaredSchemas.set(schemaKey({ schema, refs }), { schema, refs });
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    compiled ??= compileSchema(schema, refs);
    const ok = compiled(data) as boolean;
    validate.errors = compiled.errors;
    return ok;
  }) as ValidateFunction;
  // what it checks, known before compiling (HostContext.validate reads the variable names)
  Object.defineProperty(validate, 'schema', { value: schema });
  return validate;
}

/** Something that can say where a path inside the validated value was written. */
export interface Locator {
  pos(path: ReadonlyArray<string | number>, key?: boolean): SourcePos;
}

function splitPointer(p: string): string[] {
  return p === ''
    ? []
    : p
        .slice(1)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function describe(e: ErrorObject, path: string[]): { text: string; path: string[]; atKey: boolean } {
  const where = path.length ? path.join('.') : 'document';
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(e.params.additionalProperty);
      const allowed = Object.keys((e.parentSchema as { properties?: object })?.properties ?? {});
      return {
        text: `unknown key '${key}' in ${where}${allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}`,
        path: [...path, key],
        atKey: true,
      };
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
    // the prefix names where the value stands (`all.vars`): part of the message and the position
    const d = describe(e, [...prefix, ...splitPointer(e.instancePath)]);
    const full = d.path;
    const text = d.text;
    if (seen.has(text)) continue;
    seen.add(text);
    out.push(new InputError(text, where.pos(full, d.atKey)));
  }
  if (out.length === 1) throw out[0];
  throw new InputErrors(out);
}
