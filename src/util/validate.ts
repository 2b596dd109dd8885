import { sha256 } from './sha256.ts';
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import { InputError, InputErrors, type SourcePos } from './errors.ts';
import { isSecret } from './secret.ts';
import { writtenAt } from './written-text.ts';

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
 * dist/, where the build wrote them: this file's build is dist/src/util/validate.js, or a part of
 * dist/racksmith.js (scripts/bundle.mjs).
 */
function loadPrecompiled(): Record<string, ValidateFunction> {
  const built = /\/dist\/(src\/util\/validate|racksmith)\.js$/.exec(import.meta.url);
  if (!built) return {};
  try {
    return require(built[1] === 'racksmith' ? './schemas.cjs' : '../../schemas.cjs') as Record<string, ValidateFunction>;
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

/**
 * A string (a file mode, say) given as an integer: how to write it. YAML 1.1, as Ansible's
 * inventories are read, takes an unquoted 0750 for the octal number 488: that is named only when
 * the file says it was written so (`written`, the text at the value's position), else the text
 * as written is to be quoted. Unknown (a nested value, no file): the octal reading is a guess.
 */
function quoteHint(e: ErrorObject, written: string | undefined): string {
  const schema = e.parentSchema as { type?: unknown; pattern?: unknown } | undefined;
  if (schema?.type !== 'string' || !Number.isSafeInteger(e.data) || (e.data as number) < 0) return '';
  const n = e.data as number;
  const fits = (text: string) => typeof schema.pattern !== 'string' || new RegExp(schema.pattern, 'u').test(text);
  const octal = `0${n.toString(8)}`;
  const readAs = (w: string) => (/^0[0-7]+$/.test(w) ? parseInt(w, 8) : /^[0-9]+$/.test(w) ? Number(w) : undefined);
  if (written !== undefined && readAs(written) === n) {
    return /^0[0-7]+$/.test(written) ? `: YAML 1.1 read ${written} as ${n}: quote it ('${written}')` : `: quote it ('${written}')`;
  }
  if (typeof schema.pattern === 'string' && fits(octal) && !fits(String(n)))
    return `: quote it as written ('${octal}' if it was written ${octal}, which YAML 1.1 reads as ${n})`;
  return fits(String(n)) ? `: quote it ('${n}')` : '';
}

type SchemaNode = {
  description?: unknown;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  const?: unknown;
  enum?: unknown[];
  type?: unknown;
  minimum?: number;
  maximum?: number;
  required?: string[];
  properties?: Record<string, SchemaNode>;
};

/**
 * What a schema accepts, in words, for the errors of its alternatives: its `description` when it
 * has one, else built from simple branches (ranges, constants, mappings); undefined when a branch
 * cannot be said shortly (a pattern: the caller falls back to "has an invalid value").
 */
export function validText(schema: unknown): string | undefined {
  const n = schema as SchemaNode | undefined;
  if (!n || typeof n !== 'object') return undefined;
  if (typeof n.description === 'string') return n.description;
  const branches = n.anyOf ?? n.oneOf;
  if (branches) {
    const parts = branches.map(validText);
    return parts.every((p) => p !== undefined) ? [...new Set(parts)].join(' or ') : undefined;
  }
  if ('const' in n) return JSON.stringify(n.const);
  if (n.enum) return `one of ${n.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  switch (n.type) {
    case 'boolean':
      return 'true or false';
    case 'null':
      return 'null';
    case 'integer':
    case 'number': {
      const what = n.type === 'integer' ? 'a whole number' : 'a number';
      if (n.minimum !== undefined && n.maximum !== undefined) return `${what} from ${n.minimum} to ${n.maximum}`;
      if (n.minimum !== undefined) return `${what} >= ${n.minimum}`;
      if (n.maximum !== undefined) return `${what} <= ${n.maximum}`;
      return what;
    }
    case 'object': {
      const keys = Object.entries(n.properties ?? {});
      if (!keys.length) return 'a mapping';
      const inner = keys.map(([k, v]) => `${k}: ${validText(v) ?? 'a value'}${n.required?.includes(k) ? '' : ' (optional)'}`);
      return `a mapping { ${inner.join(', ')} }`;
    }
    default:
      return undefined;
  }
}

/** Whether one of the schema's simple branches takes the number `n` (a string of digits refused for being a string). */
function acceptsNumber(schema: unknown, n: number): boolean {
  const b = schema as SchemaNode | undefined;
  if (!b || typeof b !== 'object') return false;
  const branches = b.anyOf ?? b.oneOf;
  if (branches) return branches.some((x) => acceptsNumber(x, n));
  if (b.type !== 'integer' && b.type !== 'number') return false;
  return (
    (b.type === 'number' || Number.isInteger(n)) &&
    (b.minimum === undefined || n >= b.minimum) &&
    (b.maximum === undefined || n <= b.maximum)
  );
}

/**
 * The value that was refused, when showing it is safe and helps (numbers, booleans, numeric
 * strings: no secret is one), and how a number given as a string should be written.
 */
function gotText(schema: unknown, data: unknown, path: string[], pos: SourcePos): string {
  if (typeof data === 'number' || typeof data === 'boolean') return `, got ${String(data)}`;
  if (typeof data !== 'string') return data === null ? ', got null' : '';
  if (!/^-?[0-9]+(\.[0-9]+)?$/.test(data)) return ', got a string';
  if (!acceptsNumber(schema, Number(data))) return `, got '${data}'`;
  // `-e key=value` (a position with no line): a string, as in Ansible; JSON gives a number
  if (/^-e #\d+$/.test(pos.file) && pos.line === undefined && path.length === 1) {
    return `, got the string '${data}' (-e key=value gives strings: give a number as -e '{"${path[0]}": ${data}}')`;
  }
  return `, got the string '${data}' (a number is written unquoted)`;
}

function describe(e: ErrorObject, path: string[], at: Locator): { text: string; path: string[]; atKey: boolean } {
  const where = path.length ? path.join('.') : 'document';
  // a vaulted or !secret value where a plain one is wanted: 'must be string' would puzzle
  if (isSecret(e.data) && ['type', 'anyOf', 'oneOf', 'enum'].includes(e.keyword))
    return { text: `${where} must be a plain value, not a secret (vaulted or !secret)`, path, atKey: false };
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
      return {
        text: `${where} must be ${String(e.params.type).replace(',', ' or ')}${quoteHint(e, Number.isSafeInteger(e.data) ? writtenAt(at.pos(path)) : undefined)}`,
        path,
        atKey: false,
      };
    case 'enum':
      return { text: `${where} must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`, path, atKey: false };
    case 'anyOf':
    case 'oneOf': {
      const valid = validText(e.parentSchema);
      const got = gotText(e.parentSchema, e.data, path, at.pos(path));
      return { text: `${where} ${valid ? `must be ${valid}` : 'has an invalid value'}${got}`, path, atKey: false };
    }
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
    const d = describe(e, [...prefix, ...splitPointer(e.instancePath)], where);
    const full = d.path;
    const text = d.text;
    if (seen.has(text)) continue;
    seen.add(text);
    out.push(new InputError(text, where.pos(full, d.atKey)));
  }
  if (out.length === 1) throw out[0];
  throw new InputErrors(out);
}
