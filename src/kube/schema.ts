/**
 * Validate rendered custom resources against the openAPIV3Schema of their CRD, taken from the
 * manifest that will be applied (so a CR is checked against exactly the CRD version it meets).
 *
 * Stricter than the API server in one way: an unknown field is an error here (the server would
 * prune it silently and the setting would be lost), except under
 * `x-kubernetes-preserve-unknown-fields`. The schema is pruned to the paths the object uses
 * before compiling: the Installation CRD alone is 600 KB and compiling it whole costs ~1 s.
 */
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject } from 'ajv';
import type { KubeObject } from './objects.ts';

type Schema = Record<string, unknown>;

// Created on first use: only runs that render Kubernetes objects pay for importing ajv.
let instance: Ajv | undefined;
const crdAjv = (): Ajv => {
  const { Ajv: AjvClass } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
  return (instance ??= new AjvClass({ strict: false, allErrors: true, validateFormats: false }));
};

/** `group/version` + kind → schema, for every served version of every CRD among `objs`. */
export function crdSchemas(objs: KubeObject[]): Map<string, Schema> {
  const out = new Map<string, Schema>();
  for (const o of objs) {
    if (o.kind !== 'CustomResourceDefinition') continue;
    const spec = o.spec as {
      group: string;
      names: { kind: string };
      versions?: Array<{ name: string; served?: boolean; schema?: { openAPIV3Schema?: Schema } }>;
    };
    for (const v of spec.versions ?? []) {
      if (v.served === false || !v.schema?.openAPIV3Schema) continue;
      out.set(`${spec.group}/${v.name}/${spec.names.kind}`, v.schema.openAPIV3Schema);
    }
  }
  return out;
}

export function schemaKey(o: { apiVersion: string; kind: string }): string {
  return `${o.apiVersion}/${o.kind}`;
}

/** Close objects with declared properties to unknown keys (k8s structural-schema semantics minus pruning). */
function strictify(s: Schema): Schema {
  const out: Schema = { ...s };
  if (out.properties && typeof out.properties === 'object') {
    out.properties = Object.fromEntries(Object.entries(out.properties as Record<string, Schema>).map(([k, v]) => [k, strictify(v)]));
    if (out.additionalProperties === undefined && !out['x-kubernetes-preserve-unknown-fields'] && !out['x-kubernetes-embedded-resource'])
      out.additionalProperties = false;
  }
  if (out.additionalProperties && typeof out.additionalProperties === 'object')
    out.additionalProperties = strictify(out.additionalProperties as Schema);
  if (out.items && typeof out.items === 'object' && !Array.isArray(out.items)) out.items = strictify(out.items as Schema);
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) if (Array.isArray(out[k])) out[k] = (out[k] as Schema[]).map(strictify);
  return out;
}

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Keep only the parts of `s` that `values` reach: validation of those values is unchanged. */
export function pruneSchema(s: Schema, values: unknown[]): Schema {
  const out: Schema = { ...s };
  delete out.description;
  const objects = values.filter(isObj);
  if (out.properties && typeof out.properties === 'object') {
    const props = out.properties as Record<string, Schema>;
    const used: Record<string, Schema> = {};
    for (const k of Object.keys(props)) {
      const vs = objects.filter((o) => k in o).map((o) => o[k]);
      if (vs.length) used[k] = pruneSchema(props[k], vs);
    }
    out.properties = used;
  }
  if (isObj(out.additionalProperties)) {
    const declared = new Set(Object.keys((s.properties as object | undefined) ?? {}));
    const vs = objects.flatMap((o) =>
      Object.entries(o)
        .filter(([k]) => !declared.has(k))
        .map(([, v]) => v),
    );
    out.additionalProperties = vs.length ? pruneSchema(out.additionalProperties as Schema, vs) : {};
  }
  if (isObj(out.items)) out.items = pruneSchema(out.items as Schema, values.filter(Array.isArray).flat());
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const)
    if (Array.isArray(out[k])) out[k] = (out[k] as Schema[]).map((b) => pruneSchema(b, values));
  return out;
}

export interface SchemaProblem {
  /** Dotted path into the object: `spec.calicoNetwork.ipPools[0].encapsulation`. */
  path: string;
  message: string;
}

function pathOf(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

function describe(e: ErrorObject): SchemaProblem {
  const path = pathOf(e.instancePath);
  switch (e.keyword) {
    case 'additionalProperties':
      return {
        path: path ? `${path}.${String(e.params.additionalProperty)}` : String(e.params.additionalProperty),
        message: 'is not a field of this CRD version',
      };
    case 'enum':
      return { path, message: `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}` };
    case 'required':
      return { path: path ? `${path}.${String(e.params.missingProperty)}` : String(e.params.missingProperty), message: 'is required' };
    default:
      return { path, message: e.message ?? 'is invalid' };
  }
}

/** Problems of `obj` against `schema` (its CRD's openAPIV3Schema); empty when valid. */
export function validateCustomResource(obj: KubeObject, schema: Schema): SchemaProblem[] {
  const validate = crdAjv().compile(strictify(pruneSchema(schema, [obj])));
  if (validate(obj)) return [];
  const seen = new Set<string>();
  const out: SchemaProblem[] = [];
  for (const e of validate.errors ?? []) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    const p = describe(e);
    const k = `${p.path} ${p.message}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push(p);
    }
  }
  return out;
}
