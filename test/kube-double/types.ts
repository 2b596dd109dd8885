/** Shared types of the Kubernetes API server test double. */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export type ManagedFieldsEntry = {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: JsonObject;
  subresource?: string;
};

export type ObjectMeta = {
  name: string;
  namespace?: string;
  generateName?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  managedFields?: ManagedFieldsEntry[];
  [key: string]: Json | undefined;
};

/** A stored object: `apiVersion`, `kind`, `metadata` plus anything else (spec, status, data...). */
export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: Json | ObjectMeta | undefined;
};

/** One resource type known to the double (a built-in or one registered by a CRD). */
export interface ResourceType {
  group: string;
  /** Versions served, preferred (storage) first. */
  versions: string[];
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  verbs: string[];
  /** status is a subresource: writes to the main resource keep the stored status. */
  statusSubresource: boolean;
  /** The CRD that defines this type, if any. */
  crd?: string;
}

/** A group/resource pair: the storage identity of a type, independent of version. */
export interface GroupResource {
  group: string;
  plural: string;
}

export function gvString(group: string, version: string): string {
  return group === '' ? version : `${group}/${version}`;
}

export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

/** `configmaps` or `customresourcedefinitions.apiextensions.k8s.io`, as the real server names them in messages. */
export function qualifiedResource(gr: GroupResource): string {
  return gr.group === '' ? gr.plural : `${gr.plural}.${gr.group}`;
}
