/**
 * What the control plane would do, done instantly and deterministically:
 * - server-side defaults the product relies on (Deployment replicas/strategy, DaemonSet
 *   updateStrategy, Service clusterIP, Secret type, Namespace label and phase);
 * - status: CRDs Established/NamesAccepted, Deployments and DaemonSets fully rolled out on every
 *   (matching) node;
 * - the endpoints controller: Endpoints + EndpointSlice for Services with a selector.
 */
import { createHash } from 'node:crypto';
import type { Json, JsonObject, KubeObject, ResourceType } from './types.ts';
import { clone, isPlainObject } from './json.ts';

export interface ControlPlaneView {
  nodes(): KubeObject[];
  allocateClusterIP(): string;
}

type Condition = JsonObject & { type: string; status: string };

function conditionsOf(obj: KubeObject | undefined): Condition[] {
  const s = obj?.status;
  const c = isPlainObject(s) ? s.conditions : undefined;
  return Array.isArray(c) ? (c.filter((x) => isPlainObject(x) && typeof x.type === 'string') as Condition[]) : [];
}

/** A condition that keeps its times when its status did not change. */
function condition(
  prev: Condition[],
  type: string,
  status: string,
  reason: string,
  message: string,
  now: string,
  withUpdateTime = false,
): Condition {
  const old = prev.find((c) => c.type === type);
  const same = old && old.status === status && old.reason === reason && old.message === message;
  const c: Condition = { type, status, reason, message } as Condition;
  if (withUpdateTime) c.lastUpdateTime = same && old.lastUpdateTime ? old.lastUpdateTime : now;
  c.lastTransitionTime = old && old.status === status && old.lastTransitionTime ? old.lastTransitionTime : now;
  return c;
}

const obj = (v: Json | undefined): JsonObject => (isPlainObject(v) ? v : {});

function setDefault(o: JsonObject, key: string, value: Json): void {
  if (o[key] === undefined) o[key] = value;
}

/** Defaults a real API server fills in (only those the double's users observe). */
export function applyDefaults(type: ResourceType, o: KubeObject, view: ControlPlaneView): void {
  const spec = obj(o.spec as Json);
  const key = `${type.group}/${type.kind}`;
  switch (key) {
    case '/Namespace':
      o.metadata.labels = { ...(o.metadata.labels ?? {}), 'kubernetes.io/metadata.name': o.metadata.name };
      o.spec = { finalizers: ['kubernetes'], ...spec };
      break;
    case '/Service': {
      setDefault(spec, 'type', 'ClusterIP');
      if (spec.type !== 'ExternalName') {
        if (spec.clusterIP === undefined) spec.clusterIP = view.allocateClusterIP();
        setDefault(spec, 'clusterIPs', [spec.clusterIP as string]);
        setDefault(spec, 'ipFamilies', ['IPv4']);
        setDefault(spec, 'ipFamilyPolicy', 'SingleStack');
        setDefault(spec, 'internalTrafficPolicy', 'Cluster');
      }
      setDefault(spec, 'sessionAffinity', 'None');
      if (Array.isArray(spec.ports)) {
        for (const p of spec.ports.filter(isPlainObject)) {
          setDefault(p, 'protocol', 'TCP');
          if (p.port !== undefined) setDefault(p, 'targetPort', p.port);
        }
      }
      o.spec = spec;
      break;
    }
    case '/Secret':
      if (o.type === undefined) o.type = 'Opaque';
      break;
    case 'apps/Deployment':
      setDefault(spec, 'replicas', 1);
      setDefault(spec, 'strategy', { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } });
      setDefault(spec, 'revisionHistoryLimit', 10);
      setDefault(spec, 'progressDeadlineSeconds', 600);
      o.spec = spec;
      break;
    case 'apps/DaemonSet':
      setDefault(spec, 'updateStrategy', { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } });
      setDefault(spec, 'revisionHistoryLimit', 10);
      o.spec = spec;
      break;
  }
}

/** Structural-schema defaults of a custom resource (`default:` in its CRD's openAPIV3Schema). */
export function applySchemaDefaults(value: Json | undefined, schema: Json | undefined): void {
  if (!isPlainObject(schema)) return;
  if (isPlainObject(value)) {
    if (isPlainObject(schema.properties)) {
      for (const [k, s] of Object.entries(schema.properties)) {
        if (!isPlainObject(s) || k === 'metadata') continue;
        if (value[k] === undefined && s.default !== undefined) value[k] = clone(s.default);
        applySchemaDefaults(value[k], s);
      }
    }
    if (isPlainObject(schema.additionalProperties))
      for (const v of Object.values(value)) applySchemaDefaults(v, schema.additionalProperties);
  } else if (Array.isArray(value) && isPlainObject(schema.items)) {
    for (const e of value) applySchemaDefaults(e, schema.items);
  }
}

/** The openAPIV3Schema of one version of a CRD. */
export function crdSchema(crd: KubeObject | undefined, version: string): Json | undefined {
  const spec = crd?.spec;
  const versions = isPlainObject(spec) && Array.isArray(spec.versions) ? spec.versions.filter(isPlainObject) : [];
  const v = versions.find((x) => x.name === version);
  return v && isPlainObject(v.schema) ? v.schema.openAPIV3Schema : undefined;
}

function matchingNodes(ds: KubeObject, nodes: KubeObject[]): number {
  const tpl = obj(obj(obj(ds.spec as Json).template).spec);
  const selector = obj(tpl.nodeSelector);
  return nodes.filter((n) => Object.entries(selector).every(([k, v]) => n.metadata.labels?.[k] === v)).length;
}

/** Writes the status a healthy cluster would report, keeping condition times when nothing changed. */
export function reconcileStatus(type: ResourceType, o: KubeObject, view: ControlPlaneView, now: string): void {
  const key = `${type.group}/${type.kind}`;
  const prev = conditionsOf(o);
  const spec = obj(o.spec as Json);
  const generation = o.metadata.generation ?? 1;
  switch (key) {
    case '/Namespace':
      o.status = { phase: 'Active' };
      break;
    case '/Service':
      if (o.status === undefined) o.status = { loadBalancer: {} };
      break;
    case 'apiextensions.k8s.io/CustomResourceDefinition': {
      const names = obj(spec.names);
      const versions = Array.isArray(spec.versions) ? spec.versions.filter(isPlainObject) : [];
      const storage = versions.find((v) => v.storage === true)?.name ?? versions[0]?.name;
      const stored = obj(o.status as Json).storedVersions;
      const storedVersions = Array.isArray(stored) ? [...stored] : [];
      if (typeof storage === 'string' && !storedVersions.includes(storage)) storedVersions.push(storage);
      const accepted: JsonObject = {
        plural: names.plural ?? '',
        singular: names.singular ?? '',
        kind: names.kind ?? '',
        listKind: names.listKind ?? `${names.kind}List`,
      };
      if (names.shortNames) accepted.shortNames = names.shortNames;
      if (names.categories) accepted.categories = names.categories;
      o.status = {
        acceptedNames: accepted,
        conditions: [
          condition(prev, 'NamesAccepted', 'True', 'NoConflicts', 'no conflicts found', now),
          condition(prev, 'Established', 'True', 'InitialNamesAccepted', 'the initial names have been accepted', now),
        ],
        storedVersions,
      };
      break;
    }
    case 'apps/Deployment': {
      const n = typeof spec.replicas === 'number' ? spec.replicas : 1;
      const status: JsonObject = { observedGeneration: generation };
      if (n > 0) Object.assign(status, { replicas: n, updatedReplicas: n, readyReplicas: n, availableReplicas: n });
      const rs = `${o.metadata.name}-${shortHash(JSON.stringify(spec.template ?? {}), 10)}`;
      status.conditions = [
        condition(prev, 'Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.', now, true),
        condition(prev, 'Progressing', 'True', 'NewReplicaSetAvailable', `ReplicaSet "${rs}" has successfully progressed.`, now, true),
      ];
      o.status = status;
      break;
    }
    case 'apps/DaemonSet': {
      const n = matchingNodes(o, view.nodes());
      o.status = {
        currentNumberScheduled: n,
        desiredNumberScheduled: n,
        numberAvailable: n,
        numberMisscheduled: 0,
        numberReady: n,
        observedGeneration: generation,
        updatedNumberScheduled: n,
      };
      break;
    }
  }
}

export function shortHash(s: string, len = 5): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  const h = createHash('sha256').update(s).digest();
  let out = '';
  for (let i = 0; i < len; i++) out += alphabet[h[i] % alphabet.length];
  return out;
}

function podIP(svc: KubeObject, nodes: KubeObject[]): string {
  const cidr = nodes.map((n) => obj(n.spec as Json).podCIDR).find((c): c is string => typeof c === 'string') ?? '10.244.0.0/24';
  const base = cidr.split('/')[0].split('.').map(Number);
  const h = createHash('sha256').update(`${svc.metadata.namespace}/${svc.metadata.name}`).digest();
  return `${base[0]}.${base[1]}.${base[2]}.${10 + (h[0] % 240)}`;
}

/**
 * The Endpoints and EndpointSlice the endpoints controllers would keep for a Service with a
 * selector: one backend pod on the first node, ready or not.
 */
export function endpointsFor(
  svc: KubeObject,
  ready: boolean,
  nodes: KubeObject[],
): { endpoints: KubeObject; slice: KubeObject } | undefined {
  const spec = obj(svc.spec as Json);
  if (!isPlainObject(spec.selector) || Object.keys(spec.selector).length === 0) return undefined;
  const ns = svc.metadata.namespace ?? 'default';
  const name = svc.metadata.name;
  const ip = podIP(svc, nodes);
  const nodeName = nodes[0]?.metadata.name;
  const podName = `${name}-${shortHash(name, 10)}-${shortHash(`${ns}/${name}`)}`;
  const targetRef: JsonObject = { kind: 'Pod', name: podName, namespace: ns };
  const ports = (Array.isArray(spec.ports) ? spec.ports.filter(isPlainObject) : []).map((p) => {
    const port: JsonObject = { port: typeof p.targetPort === 'number' ? p.targetPort : (p.port ?? 0), protocol: p.protocol ?? 'TCP' };
    if (typeof p.name === 'string' && p.name) port.name = p.name;
    return port;
  });
  const address: JsonObject = { ip, targetRef };
  if (nodeName) address.nodeName = nodeName;
  const endpoints: KubeObject = {
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name, namespace: ns, labels: { ...(svc.metadata.labels ?? {}) } },
    subsets: [{ [ready ? 'addresses' : 'notReadyAddresses']: [address], ports }],
  };
  const endpoint: JsonObject = { addresses: [ip], conditions: { ready, serving: ready, terminating: false }, targetRef };
  if (nodeName) endpoint.nodeName = nodeName;
  const slice: KubeObject = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${name}-${shortHash(`${ns}/${name}`)}`,
      namespace: ns,
      labels: {
        ...(svc.metadata.labels ?? {}),
        'kubernetes.io/service-name': name,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
      ownerReferences: [
        { apiVersion: 'v1', kind: 'Service', name, uid: svc.metadata.uid ?? '', controller: true, blockOwnerDeletion: true },
      ],
    },
    addressType: 'IPv4',
    endpoints: [endpoint],
    ports,
  };
  return { endpoints, slice };
}
