/**
 * The least OpenAPI v3 kubectl needs. `kubectl apply` (default --validate=strict) asks OpenAPI v3
 * whether the PATCH operation of each kind takes the `fieldValidation` query parameter; when it
 * does, kubectl leaves validation to the server and sends `fieldValidation=Strict`. Without any
 * OpenAPI, kubectl refuses to apply ("failed to download openapi").
 *
 * Each group-version document lists one PATCH operation per kind with that parameter and no
 * requestBody and no schemas, so client-side apply falls back to kubectl's built-in strategic
 * merge metadata (or JSON merge patch for custom resources).
 *
 * /openapi/v2 answers an empty protobuf document (zero bytes is a valid empty message): kubectl
 * falls back to it for kinds it cannot verify in v3 (unknown kinds), finds no schema there and
 * skips client-side validation, so an unknown kind ends in "no matches for kind", as with a real
 * server. A 404 there would instead fail with "failed to download openapi".
 */
// (the dotted form: Go's mime parser rejects the '@' that clients put in Accept)
export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';
import { createHash } from 'node:crypto';
import type { JsonObject } from './types.ts';
import { gvString } from './types.ts';
import type { ResourceRegistry } from './discovery.ts';

function gvPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

function groupVersions(registry: ResourceRegistry): Array<{ group: string; version: string }> {
  const seen = new Map<string, { group: string; version: string }>();
  for (const t of registry.all()) for (const v of t.versions) seen.set(gvString(t.group, v), { group: t.group, version: v });
  return [...seen.values()];
}

/** The OpenAPI v3 document of one group/version, or undefined if it is not served. */
export function openApiV3Document(registry: ResourceRegistry, group: string, version: string): JsonObject | undefined {
  const types = registry.all().filter((t) => t.group === group && t.versions.includes(version));
  if (types.length === 0) return undefined;
  const paths: JsonObject = {};
  for (const t of types) {
    if (!t.verbs.includes('patch')) continue;
    const base = `/${gvPath(group, version)}${t.namespaced ? '/namespaces/{namespace}' : ''}/${t.plural}/{name}`;
    paths[base] = {
      patch: {
        description: `partially update the specified ${t.kind}`,
        operationId: `patch${t.kind}`,
        parameters: ['dryRun', 'fieldManager', 'fieldValidation', 'force'].map((name) => ({
          name,
          in: 'query',
          schema: { type: 'string', uniqueItems: true },
        })),
        responses: { '200': { description: 'OK' } },
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group, version, kind: t.kind },
      },
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes (test double)', version: 'v1.32.4' }, paths, components: { schemas: {} } };
}

/** /openapi/v3: where each group/version document is, with a hash that changes with the document. */
export function openApiV3Root(registry: ResourceRegistry): JsonObject {
  const paths: JsonObject = {};
  for (const { group, version } of groupVersions(registry)) {
    const doc = openApiV3Document(registry, group, version);
    const hash = createHash('sha512').update(JSON.stringify(doc)).digest('hex').slice(0, 32).toUpperCase();
    paths[gvPath(group, version)] = { serverRelativeURL: `/openapi/v3/${gvPath(group, version)}?hash=${hash}` };
  }
  return { paths };
}
