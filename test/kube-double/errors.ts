import type { GroupResource, JsonObject } from './types.ts';
import { qualifiedResource } from './types.ts';

/** An error answered to the client as a `Status` object, like the real API server does. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: JsonObject,
  ) {
    super(message);
  }

  status(): JsonObject {
    const s: JsonObject = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) s.details = this.details;
    return s;
  }
}

function objDetails(gr: GroupResource, name: string): JsonObject {
  const d: JsonObject = { name, kind: gr.plural };
  if (gr.group) d.group = gr.group;
  return d;
}

export const errors = {
  notFound: (gr: GroupResource, name: string) =>
    new ApiError(404, 'NotFound', `${qualifiedResource(gr)} "${name}" not found`, objDetails(gr, name)),
  noResource: () => new ApiError(404, 'NotFound', 'the server could not find the requested resource'),
  alreadyExists: (gr: GroupResource, name: string) =>
    new ApiError(409, 'AlreadyExists', `${qualifiedResource(gr)} "${name}" already exists`, objDetails(gr, name)),
  conflict: (gr: GroupResource, name: string) =>
    new ApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${qualifiedResource(gr)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      objDetails(gr, name),
    ),
  badRequest: (message: string) => new ApiError(400, 'BadRequest', message),
  invalid: (gr: GroupResource, name: string, field: string, message: string) =>
    new ApiError(422, 'Invalid', `${gr.group ? `${gr.plural}.${gr.group}` : gr.plural} "${name}" is invalid: ${field}: ${message}`, {
      ...objDetails(gr, name),
      causes: [{ reason: 'FieldValueInvalid', message, field }],
    }),
  methodNotAllowed: () => new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'),
  unsupportedMediaType: (ct: string) =>
    new ApiError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got ${ct})`,
    ),
};
