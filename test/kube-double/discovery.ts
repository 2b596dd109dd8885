/**
 * The resource types the double serves (built-ins + those registered by CRDs) and the discovery
 * documents kubectl reads: legacy (/api, /apis, /api/v1, /apis/<g>/<v>) and aggregated
 * (apidiscovery.k8s.io/v2, answered when the client asks for it in Accept).
 */
import type { GroupResource, JsonObject, KubeObject, ResourceType } from './types.ts';
import { gvString } from './types.ts';
import { isPlainObject } from './json.ts';

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

interface BuiltinSpec {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  status?: boolean;
  verbs?: string[];
}

const BUILTINS: BuiltinSpec[] = [
  {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    plural: 'namespaces',
    namespaced: false,
    shortNames: ['ns'],
    status: true,
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  },
  { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, shortNames: ['cm'] },
  { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true },
  { group: '', version: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true, shortNames: ['sa'] },
  {
    group: '',
    version: 'v1',
    kind: 'Service',
    plural: 'services',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    status: true,
  },
  { group: '', version: 'v1', kind: 'Endpoints', plural: 'endpoints', namespaced: true, shortNames: ['ep'] },
  { group: '', version: 'v1', kind: 'Node', plural: 'nodes', namespaced: false, shortNames: ['no'], status: true },
  {
    group: '',
    version: 'v1',
    kind: 'Pod',
    plural: 'pods',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    status: true,
    // create and delete as the kubelet and `kubectl drain` use them (tests seed pods on nodes);
    // the pods/eviction subresource: eviction.ts
    verbs: ['get', 'list', 'watch', 'create', 'delete'],
  },
  { group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true, shortNames: ['ev'] },
  {
    group: 'apps',
    version: 'v1',
    kind: 'DaemonSet',
    plural: 'daemonsets',
    namespaced: true,
    shortNames: ['ds'],
    categories: ['all'],
    status: true,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    plural: 'deployments',
    namespaced: true,
    shortNames: ['deploy'],
    categories: ['all'],
    status: true,
  },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole', plural: 'clusterroles', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding', plural: 'clusterrolebindings', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role', plural: 'roles', namespaced: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding', plural: 'rolebindings', namespaced: true },
  {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    kind: 'CustomResourceDefinition',
    plural: 'customresourcedefinitions',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    categories: ['api-extensions'],
    status: true,
  },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingWebhookConfiguration',
    plural: 'validatingwebhookconfigurations',
    namespaced: false,
    categories: ['api-extensions'],
  },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'MutatingWebhookConfiguration',
    plural: 'mutatingwebhookconfigurations',
    namespaced: false,
    categories: ['api-extensions'],
  },
  {
    group: 'policy',
    version: 'v1',
    kind: 'PodDisruptionBudget',
    plural: 'poddisruptionbudgets',
    namespaced: true,
    shortNames: ['pdb'],
    status: true,
  },
  { group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', plural: 'endpointslices', namespaced: true },
  { group: 'scheduling.k8s.io', version: 'v1', kind: 'PriorityClass', plural: 'priorityclasses', namespaced: false, shortNames: ['pc'] },
  { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true },
];

/** Kubernetes version priority: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > anything else (alphabetical). */
export function compareKubeVersions(a: string, b: string): number {
  const parse = (v: string): [number, number, number] | undefined => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return undefined;
    const stability = m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1;
    return [stability, Number(m[1]), Number(m[3] ?? 0)];
  };
  const pa = parse(a);
  const pb = parse(b);
  if (pa && pb) {
    for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pb[i] - pa[i];
    return 0;
  }
  if (pa) return -1;
  if (pb) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function grKey(gr: GroupResource): string {
  return `${gr.group}/${gr.plural}`;
}

export class ResourceRegistry {
  private readonly types = new Map<string, ResourceType>();
  /** Group names in registration order (built-ins first, like a real server). */
  private readonly groupOrder: string[] = [];

  constructor() {
    for (const b of BUILTINS) {
      this.add({
        group: b.group,
        versions: [b.version],
        kind: b.kind,
        listKind: `${b.kind}List`,
        plural: b.plural,
        singular: b.kind.toLowerCase(),
        namespaced: b.namespaced,
        shortNames: b.shortNames ?? [],
        categories: b.categories ?? [],
        verbs: b.verbs ?? ALL_VERBS,
        statusSubresource: b.status ?? false,
      });
    }
  }

  private add(t: ResourceType): void {
    this.types.set(grKey(t), t);
    if (!this.groupOrder.includes(t.group)) this.groupOrder.push(t.group);
  }

  /** The type served at group/version/plural, if that version is served. */
  lookup(group: string, version: string, plural: string): ResourceType | undefined {
    const t = this.types.get(`${group}/${plural}`);
    return t && t.versions.includes(version) ? t : undefined;
  }

  byGroupResource(gr: GroupResource): ResourceType | undefined {
    return this.types.get(grKey(gr));
  }

  /** The type for an object's apiVersion + kind (any served version). */
  byKind(group: string, version: string, kind: string): ResourceType | undefined {
    for (const t of this.types.values()) if (t.group === group && t.kind === kind && t.versions.includes(version)) return t;
    return undefined;
  }

  /** The type for a bare kind name (`ConfigMap`, `IPAddressPool`), first match. */
  byKindName(kind: string): ResourceType | undefined {
    for (const t of this.types.values()) if (t.kind === kind) return t;
    return undefined;
  }

  all(): ResourceType[] {
    return [...this.types.values()];
  }

  /** Registers (or updates) the type a CRD defines. Returns the type, or undefined for an unusable CRD. */
  registerCrd(crd: KubeObject): ResourceType | undefined {
    const spec = crd.spec;
    if (!isPlainObject(spec) || !isPlainObject(spec.names) || typeof spec.group !== 'string') return undefined;
    const names = spec.names;
    const versions = Array.isArray(spec.versions) ? spec.versions.filter(isPlainObject) : [];
    const served = versions.filter((v) => v.served !== false && typeof v.name === 'string');
    if (served.length === 0 || typeof names.kind !== 'string' || typeof names.plural !== 'string') return undefined;
    const storage = served.find((v) => v.storage === true) ?? served[0];
    const sorted = served.map((v) => v.name as string).sort(compareKubeVersions);
    const str = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
    const t: ResourceType = {
      group: spec.group,
      versions: sorted,
      kind: names.kind,
      listKind: typeof names.listKind === 'string' ? names.listKind : `${names.kind}List`,
      plural: names.plural,
      singular: typeof names.singular === 'string' ? names.singular : names.kind.toLowerCase(),
      namespaced: spec.scope !== 'Cluster',
      shortNames: str(names.shortNames),
      categories: str(names.categories),
      verbs: ALL_VERBS,
      statusSubresource: isPlainObject(storage.subresources) && storage.subresources.status !== undefined,
      crd: crd.metadata.name,
    };
    this.add(t);
    return t;
  }

  unregisterCrd(name: string): ResourceType | undefined {
    for (const [k, t] of this.types) {
      if (t.crd === name) {
        this.types.delete(k);
        return t;
      }
    }
    return undefined;
  }

  /** Groups with their served versions, preferred version first. Core ('') is included. */
  private groups(): Array<{ name: string; versions: string[] }> {
    const out: Array<{ name: string; versions: string[] }> = [];
    for (const g of this.groupOrder) {
      const versions = new Set<string>();
      for (const t of this.types.values()) if (t.group === g) t.versions.forEach((v) => versions.add(v));
      if (versions.size > 0) out.push({ name: g, versions: [...versions].sort(compareKubeVersions) });
    }
    return out;
  }

  hasGroupVersion(group: string, version: string): boolean {
    return this.groups().some((g) => g.name === group && g.versions.includes(version));
  }

  // ---- legacy discovery ----

  apiVersions(serverAddress: string): JsonObject {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
    };
  }

  private apiGroup(g: { name: string; versions: string[] }): JsonObject {
    const versions = g.versions.map((v) => ({ groupVersion: gvString(g.name, v), version: v }));
    return { name: g.name, versions, preferredVersion: versions[0] };
  }

  apiGroupList(): JsonObject {
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: this.groups()
        .filter((g) => g.name !== '')
        .map((g) => this.apiGroup(g)),
    };
  }

  apiGroupDoc(group: string): JsonObject | undefined {
    const g = this.groups().find((x) => x.name === group && group !== '');
    return g ? { kind: 'APIGroup', apiVersion: 'v1', ...this.apiGroup(g) } : undefined;
  }

  apiResourceList(group: string, version: string): JsonObject | undefined {
    if (!this.hasGroupVersion(group, version)) return undefined;
    const resources: JsonObject[] = [];
    for (const t of this.types.values()) {
      if (t.group !== group || !t.versions.includes(version)) continue;
      const r: JsonObject = {
        name: t.plural,
        singularName: t.singular,
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: t.verbs,
      };
      if (t.shortNames.length) r.shortNames = t.shortNames;
      if (t.categories.length) r.categories = t.categories;
      resources.push(r);
      if (t.statusSubresource) {
        resources.push({
          name: `${t.plural}/status`,
          singularName: '',
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: ['get', 'patch', 'update'],
        });
      }
      // kubectl drain evicts (policy/v1) only where discovery lists pods/eviction, else it deletes
      if (isPods(t))
        resources.push({
          name: 'pods/eviction',
          singularName: '',
          namespaced: true,
          group: 'policy',
          version: 'v1',
          kind: 'Eviction',
          verbs: ['create'],
        });
    }
    return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gvString(group, version), resources };
  }

  // ---- aggregated discovery (apidiscovery.k8s.io/v2) ----

  aggregated(core: boolean): JsonObject {
    const items = this.groups()
      .filter((g) => (g.name === '') === core)
      .map((g) => ({
        metadata: (core ? {} : { name: g.name }) as JsonObject,
        versions: g.versions.map((v) => ({
          version: v,
          resources: this.all()
            .filter((t) => t.group === g.name && t.versions.includes(v))
            .map((t) => {
              const r: JsonObject = {
                resource: t.plural,
                responseKind: { group: t.group, version: v, kind: t.kind },
                scope: t.namespaced ? 'Namespaced' : 'Cluster',
                singularResource: t.singular,
                verbs: t.verbs,
              };
              if (t.shortNames.length) r.shortNames = t.shortNames;
              if (t.categories.length) r.categories = t.categories;
              if (t.statusSubresource) {
                r.subresources = [
                  { subresource: 'status', responseKind: { group: t.group, version: v, kind: t.kind }, verbs: ['get', 'patch', 'update'] },
                ];
              }
              if (isPods(t))
                r.subresources = [
                  ...((r.subresources as JsonObject[]) ?? []),
                  { subresource: 'eviction', responseKind: { group: 'policy', version: 'v1', kind: 'Eviction' }, verbs: ['create'] },
                ];
              return r;
            }),
          freshness: 'Current',
        })),
      }));
    return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: items as unknown as JsonObject[] };
  }
}

/** The core pods resource (the one with the eviction subresource). */
const isPods = (t: ResourceType): boolean => t.group === '' && t.plural === 'pods';

export const AGGREGATED_DISCOVERY_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** True when the Accept header asks for aggregated discovery v2 (kubectl >= 1.30 does, with a fallback). */
export function wantsAggregatedDiscovery(accept: string | undefined): boolean {
  return !!accept && /g=apidiscovery\.k8s\.io;\s*v=v2;\s*as=APIGroupDiscoveryList/.test(accept);
}
