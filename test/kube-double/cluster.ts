/**
 * The API server's semantics without HTTP: reads, the write funnel (admission, defaults, generation,
 * status, no-op detection, dry-run, storage) and what happens after writes and deletes.
 */
import { randomUUID } from 'node:crypto';
import type { GroupResource, Json, KubeObject, ManagedFieldsEntry, ResourceType } from './types.ts';
import { gvString, splitApiVersion } from './types.ts';
import { ApiError, errors } from './errors.ts';
import { clone, deepEqual, isPlainObject, nowRfc3339 } from './json.ts';
import { ResourceRegistry } from './discovery.ts';
import { ObjectStore } from './store.ts';
import { type WriteContext, jsonMergePatch, jsonPatch, prepareBody, recordUpdate, serverSideApply, strategicMergePatch } from './apply.ts';
import { applyDefaults, applySchemaDefaults, crdSchema, endpointsFor, reconcileStatus, shortHash } from './controllers.ts';
import {
  METALLB_CERT_SECRET,
  METALLB_NAMESPACE,
  METALLB_WEBHOOK_CONFIG,
  METALLB_WEBHOOK_SERVICE,
  type Operation,
  WebhookSimulator,
  withCertificates,
  withConversionCaBundle,
  withWebhookCaBundles,
} from './webhook.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';

export type PatchType = 'apply' | 'merge' | 'strategic' | 'json';

export interface WriteOptions {
  dryRun: boolean;
  manager: string;
  section?: 'main' | 'status';
}

export interface WriteResult {
  object: KubeObject;
  created: boolean;
}

const NAMESPACES: GroupResource = { group: '', plural: 'namespaces' };
const SERVICES: GroupResource = { group: '', plural: 'services' };
const CONTROLLER_MANAGER = 'kube-controller-manager';
const METALLB_CONTROLLER = 'controller';

const gr = (t: ResourceType): GroupResource => ({ group: t.group, plural: t.plural });
const isKind = (t: ResourceType, group: string, kind: string) => t.group === group && t.kind === kind;

/** Equal, ignoring managedFields timestamps. */
function sameObject(a: KubeObject, b: KubeObject): boolean {
  const times = (o: KubeObject) => (o.metadata.managedFields ?? []).map((e) => ({ ...e, time: '' }));
  return deepEqual(
    { ...a, metadata: { ...a.metadata, managedFields: times(a) } },
    { ...b, metadata: { ...b.metadata, managedFields: times(b) } },
  );
}

/** The fields whose change bumps metadata.generation: everything but metadata and status. */
function specPart(o: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = o;
  return rest;
}

export class Cluster {
  readonly registry = new ResourceRegistry();
  readonly store = new ObjectStore();
  readonly webhook: WebhookSimulator;
  private nextServiceIP = 11;

  constructor(opts: { webhookReady: boolean; webhookReadyAfterMs?: number }) {
    this.webhook = new WebhookSimulator(opts.webhookReady, opts.webhookReadyAfterMs, () => this.webhookReadinessChanged());
  }

  // ---- reads ----

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const o = this.store.get(gr(type), type.namespaced ? namespace : undefined, name);
    if (!o) throw errors.notFound(gr(type), name);
    return o;
  }

  list(type: ResourceType, namespace: string | undefined, labelSelector: string | null, fieldSelector: string | null): KubeObject[] {
    const byLabel = parseLabelSelector(labelSelector);
    const byField = parseFieldSelector(fieldSelector);
    return this.store.list(gr(type), type.namespaced ? namespace : undefined).filter((o) => byLabel(o) && byField(o));
  }

  nodes(): KubeObject[] {
    return this.store.list({ group: '', plural: 'nodes' });
  }

  // ---- writes ----

  private context(type: ResourceType, version: string, opts: WriteOptions): WriteContext {
    return { type, manager: opts.manager, apiVersion: gvString(type.group, version), now: nowRfc3339(), section: opts.section ?? 'main' };
  }

  private checkBody(type: ResourceType, version: string, body: unknown): KubeObject {
    if (!isPlainObject(body)) throw errors.badRequest('the body of the request must be an object');
    const o = body as unknown as KubeObject;
    if (o.kind !== undefined && o.kind !== type.kind) {
      throw errors.badRequest(`the kind of the object (${String(o.kind)}) does not match the resource (${type.kind})`);
    }
    if (o.apiVersion !== undefined) {
      const { group } = splitApiVersion(String(o.apiVersion));
      if (group !== type.group)
        throw errors.badRequest(
          `the API version in the data (${String(o.apiVersion)}) does not match the expected API version (${gvString(type.group, version)})`,
        );
    }
    if (!isPlainObject(o.metadata)) o.metadata = { name: '' };
    return o;
  }

  private placeIn(type: ResourceType, o: KubeObject, namespace: string | undefined): void {
    if (!type.namespaced) {
      delete o.metadata.namespace;
      return;
    }
    if (o.metadata.namespace && namespace && o.metadata.namespace !== namespace) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    o.metadata.namespace = namespace ?? o.metadata.namespace ?? 'default';
  }

  create(type: ResourceType, version: string, namespace: string | undefined, body: unknown, opts: WriteOptions): WriteResult {
    if (!type.verbs.includes('create')) throw errors.methodNotAllowed();
    const o = this.checkBody(type, version, body);
    const ctx = this.context(type, version, opts);
    if (!o.metadata.name && typeof o.metadata.generateName === 'string')
      o.metadata.name = o.metadata.generateName + shortHash(randomUUID());
    if (!o.metadata.name) throw errors.invalid(gr(type), '', 'metadata.name', 'Required value: name or generateName is required');
    this.placeIn(type, o, namespace);
    if (this.store.get(gr(type), o.metadata.namespace, o.metadata.name)) throw errors.alreadyExists(gr(type), o.metadata.name);
    const next = recordUpdate(undefined, prepareBody(o, { ...ctx, section: 'main' }), ctx);
    return { object: this.commit(type, undefined, next, ctx, opts.dryRun, 'CREATE'), created: true };
  }

  replace(
    type: ResourceType,
    version: string,
    namespace: string | undefined,
    name: string,
    body: unknown,
    opts: WriteOptions,
  ): WriteResult {
    const o = this.checkBody(type, version, body);
    const ctx = this.context(type, version, opts);
    this.placeIn(type, o, namespace);
    if (o.metadata.name && o.metadata.name !== name) throw errors.badRequest('the name of the object does not match the name on the URL');
    const existing = this.get(type, namespace, name);
    if (o.metadata.resourceVersion && o.metadata.resourceVersion !== existing.metadata.resourceVersion)
      throw errors.conflict(gr(type), name);
    let next: KubeObject;
    if (ctx.section === 'status') {
      next = { ...clone(existing), status: clone(o.status) };
    } else {
      next = prepareBody(o, ctx);
      next.metadata = { ...next.metadata, name, namespace: existing.metadata.namespace };
      if (type.statusSubresource) next.status = clone(existing.status);
    }
    this.keepServerMetadata(existing, next);
    return { object: this.commit(type, existing, recordUpdate(existing, next, ctx), ctx, opts.dryRun, 'UPDATE'), created: false };
  }

  patch(
    type: ResourceType,
    version: string,
    namespace: string | undefined,
    name: string,
    patchType: PatchType,
    patch: unknown,
    opts: WriteOptions & { force: boolean },
  ): WriteResult {
    if (!type.verbs.includes('patch')) throw errors.methodNotAllowed();
    const ctx = this.context(type, version, opts);
    const existing = this.store.get(gr(type), type.namespaced ? namespace : undefined, name);
    if (patchType === 'apply') {
      const o = this.checkBody(type, version, patch);
      if (!o.apiVersion || !o.kind) throw errors.badRequest('apiVersion and kind must be set in an apply patch');
      if (o.metadata.name !== name)
        throw errors.badRequest(`the name of the object (${String(o.metadata.name)}) does not match the name on the URL (${name})`);
      this.placeIn(type, o, namespace);
      if (!existing && ctx.section === 'status') throw errors.notFound(gr(type), name);
      // a resourceVersion in an applied configuration is a precondition
      const rv = o.metadata.resourceVersion;
      if (rv && (!existing || existing.metadata.resourceVersion !== rv)) {
        if (!existing) throw errors.notFound(gr(type), name);
        throw errors.conflict(gr(type), name);
      }
      const next = serverSideApply(existing, o, ctx, opts.force);
      return { object: this.commit(type, existing, next, ctx, opts.dryRun, existing ? 'UPDATE' : 'CREATE'), created: !existing };
    }
    if (!existing) throw errors.notFound(gr(type), name);
    let patched: Json;
    const base = existing as unknown as Json;
    if (patchType === 'json') patched = jsonPatch(base, patch as Json);
    else if (patchType === 'merge') patched = jsonMergePatch(base, patch as Json);
    else patched = strategicMergePatch(base, patch as Json);
    if (!isPlainObject(patched) || !isPlainObject(patched.metadata)) throw errors.badRequest('the patch removed the object metadata');
    const p = patched as unknown as KubeObject;
    // a resourceVersion set by the patch is a precondition
    if (p.metadata.resourceVersion !== undefined && p.metadata.resourceVersion !== existing.metadata.resourceVersion) {
      throw errors.conflict(gr(type), name);
    }
    let next: KubeObject;
    if (ctx.section === 'status') {
      next = { ...clone(existing), status: clone(p.status) };
    } else {
      next = p;
      if (type.statusSubresource) next.status = clone(existing.status);
    }
    next.metadata.name = name;
    next.metadata.namespace = existing.metadata.namespace;
    next.apiVersion = existing.apiVersion;
    next.kind = existing.kind;
    this.keepServerMetadata(existing, next);
    return { object: this.commit(type, existing, recordUpdate(existing, next, ctx), ctx, opts.dryRun, 'UPDATE'), created: false };
  }

  delete(type: ResourceType, version: string, namespace: string | undefined, name: string, dryRun: boolean): KubeObject {
    if (!type.verbs.includes('delete')) throw errors.methodNotAllowed();
    const existing = this.get(type, namespace, name);
    this.admit(type, version, 'DELETE', existing);
    if (dryRun) return existing;
    this.store.delete(gr(type), existing.metadata.namespace, name);
    this.afterDelete(type, existing);
    return existing;
  }

  private keepServerMetadata(existing: KubeObject, next: KubeObject): void {
    for (const k of ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields'] as const) {
      if (existing.metadata[k] !== undefined) next.metadata[k] = clone(existing.metadata[k]) as never;
    }
  }

  private admit(type: ResourceType, version: string, operation: Operation, object: KubeObject | undefined): void {
    const configs = [
      ...this.store.list({ group: 'admissionregistration.k8s.io', plural: 'mutatingwebhookconfigurations' }),
      ...this.store.list({ group: 'admissionregistration.k8s.io', plural: 'validatingwebhookconfigurations' }),
    ];
    if (configs.length === 0) return;
    this.webhook.admit({ group: type.group, version, plural: type.plural, operation, object }, configs, (ns, name) => {
      const svc = this.store.get(SERVICES, ns, name);
      const ip = svc && isPlainObject(svc.spec) ? svc.spec.clusterIP : undefined;
      return typeof ip === 'string' ? ip : undefined;
    });
  }

  private validate(type: ResourceType, o: KubeObject): void {
    if (isKind(type, 'apiextensions.k8s.io', 'CustomResourceDefinition')) {
      const spec = isPlainObject(o.spec) ? o.spec : {};
      const names = isPlainObject(spec.names) ? spec.names : {};
      const want = `${String(names.plural)}.${String(spec.group)}`;
      if (o.metadata.name !== want) {
        throw errors.invalid(
          gr(type),
          o.metadata.name,
          'metadata.name',
          `Invalid value: "${o.metadata.name}": must be spec.names.plural+"."+spec.group`,
        );
      }
    }
  }

  /**
   * The write funnel. `next` carries its managedFields already; this adds server metadata, runs
   * admission, defaults and status, and stores unless it is a no-op or a dry run.
   */
  private commit(
    type: ResourceType,
    existing: KubeObject | undefined,
    next: KubeObject,
    ctx: WriteContext,
    dryRun: boolean,
    op: Operation,
    system = false,
  ): KubeObject {
    const ns = next.metadata.namespace;
    if (type.namespaced && !existing && !this.store.get(NAMESPACES, undefined, ns ?? '')) throw errors.notFound(NAMESPACES, ns ?? '');
    this.validate(type, next);
    if (!system) this.admit(type, splitApiVersion(ctx.apiVersion).version, op, next);
    next.apiVersion = gvString(type.group, type.versions[0]);
    next.kind = type.kind;
    if (existing) {
      next.metadata.uid = existing.metadata.uid;
      next.metadata.creationTimestamp = existing.metadata.creationTimestamp;
      next.metadata.resourceVersion = existing.metadata.resourceVersion;
    } else {
      next.metadata.uid = randomUUID();
      next.metadata.creationTimestamp = ctx.now;
      next.metadata.generation = 1;
      delete next.metadata.resourceVersion;
    }
    applyDefaults(type, next, { nodes: () => this.nodes(), allocateClusterIP: () => this.allocateClusterIP() });
    if (type.crd) {
      const crd = this.store.get({ group: 'apiextensions.k8s.io', plural: 'customresourcedefinitions' }, undefined, type.crd);
      applySchemaDefaults(next as unknown as Json, crdSchema(crd, splitApiVersion(ctx.apiVersion).version));
    }
    if (existing) {
      const gen = existing.metadata.generation ?? 1;
      next.metadata.generation = deepEqual(specPart(existing), specPart(next)) ? gen : gen + 1;
    }
    // a created object or a new generation gets the status a healthy control plane would report;
    // an explicit status write stands (tests can simulate a stuck rollout with it)
    const specChanged = !existing || next.metadata.generation !== existing.metadata.generation;
    if (ctx.section !== 'status' && specChanged)
      reconcileStatus(type, next, { nodes: () => this.nodes(), allocateClusterIP: () => this.allocateClusterIP() }, ctx.now);
    next.metadata = this.orderedMetadata(next.metadata);
    if (existing && sameObject(existing, next)) return existing;
    this.touchManager(next, ctx);
    if (dryRun) return next;
    const stored = this.store.put(gr(type), next);
    this.afterWrite(type, stored, existing);
    return stored;
  }

  /** The metadata keys in the order the real server prints them (stable output for diffs). */
  private orderedMetadata(m: KubeObject['metadata']): KubeObject['metadata'] {
    const order = [
      'annotations',
      'creationTimestamp',
      'finalizers',
      'generateName',
      'generation',
      'labels',
      'managedFields',
      'name',
      'namespace',
      'ownerReferences',
      'resourceVersion',
      'uid',
    ];
    const out: Record<string, unknown> = {};
    for (const k of order) if (m[k] !== undefined) out[k] = m[k];
    for (const k of Object.keys(m).sort()) if (!(k in out) && m[k] !== undefined) out[k] = m[k];
    return out as KubeObject['metadata'];
  }

  private touchManager(next: KubeObject, ctx: WriteContext): void {
    const sub = ctx.section === 'status' ? 'status' : '';
    const e = (next.metadata.managedFields ?? []).find(
      (m: ManagedFieldsEntry) => m.manager === ctx.manager && (m.subresource ?? '') === sub,
    );
    if (e) e.time = ctx.now;
  }

  private allocateClusterIP(): string {
    const used = new Set(this.store.list(SERVICES).map((s) => (isPlainObject(s.spec) ? s.spec.clusterIP : undefined)));
    for (;;) {
      const n = this.nextServiceIP++;
      const ip = `10.96.${Math.floor(n / 256) % 256}.${n % 256}`;
      if (!used.has(ip) && n % 256 !== 0 && n % 256 !== 255) return ip;
    }
  }

  /**
   * A write by a control-plane component (no admission) that replaces the object; with
   * `withStatus`, the desired status is written too (seeding nodes).
   */
  systemWrite(type: ResourceType, desired: KubeObject, manager: string, withStatus = false): KubeObject {
    const version = splitApiVersion(desired.apiVersion).version || type.versions[0];
    const ctx: WriteContext = { type, manager, apiVersion: gvString(type.group, version), now: nowRfc3339(), section: 'main' };
    const existing = this.store.get(gr(type), type.namespaced ? desired.metadata.namespace : undefined, desired.metadata.name);
    const next = prepareBody(desired, ctx);
    if (existing) {
      this.keepServerMetadata(existing, next);
      if (type.statusSubresource) next.status = clone(existing.status);
    }
    if (withStatus && desired.status !== undefined) next.status = clone(desired.status);
    return this.commit(type, existing, recordUpdate(existing, next, ctx), ctx, false, existing ? 'UPDATE' : 'CREATE', true);
  }

  private typeOf(group: string, plural: string): ResourceType {
    const t = this.registry.byGroupResource({ group, plural });
    if (!t) throw new Error(`kube double: unknown built-in ${plural}.${group}`);
    return t;
  }

  // ---- after writes ----

  private afterWrite(type: ResourceType, obj: KubeObject, existing: KubeObject | undefined): void {
    if (isKind(type, 'apiextensions.k8s.io', 'CustomResourceDefinition')) this.registry.registerCrd(obj);
    if (isKind(type, '', 'Service')) this.syncEndpoints(obj);
    const metallbObject =
      (isKind(type, 'admissionregistration.k8s.io', 'ValidatingWebhookConfiguration') && obj.metadata.name === METALLB_WEBHOOK_CONFIG) ||
      (isKind(type, '', 'Secret') && obj.metadata.namespace === METALLB_NAMESPACE && obj.metadata.name === METALLB_CERT_SECRET) ||
      (isKind(type, 'apiextensions.k8s.io', 'CustomResourceDefinition') && obj.metadata.name.endsWith('.metallb.io'));
    if (metallbObject && !existing && type.kind === 'ValidatingWebhookConfiguration') this.webhook.webhookConfigurationCreated();
    if (metallbObject && this.webhook.isReady()) this.rotateMetallbCertificates();
  }

  private afterDelete(type: ResourceType, obj: KubeObject): void {
    if (isKind(type, '', 'Namespace')) {
      for (const s of this.store.all()) {
        if (s.object.metadata.namespace === obj.metadata.name) this.store.delete(s.gr, s.object.metadata.namespace, s.object.metadata.name);
      }
    }
    if (isKind(type, 'apiextensions.k8s.io', 'CustomResourceDefinition')) {
      const t = this.registry.unregisterCrd(obj.metadata.name);
      if (t) for (const o of this.store.list(gr(t))) this.store.delete(gr(t), o.metadata.namespace, o.metadata.name);
    }
    if (isKind(type, '', 'Service')) {
      const ns = obj.metadata.namespace;
      this.store.delete({ group: '', plural: 'endpoints' }, ns, obj.metadata.name);
      for (const s of this.store.list({ group: 'discovery.k8s.io', plural: 'endpointslices' }, ns)) {
        if (s.metadata.labels?.['kubernetes.io/service-name'] === obj.metadata.name)
          this.store.delete({ group: 'discovery.k8s.io', plural: 'endpointslices' }, ns, s.metadata.name);
      }
    }
  }

  private syncEndpoints(svc: KubeObject): void {
    const desired = endpointsFor(svc, this.webhook.serviceReady(svc.metadata.namespace, svc.metadata.name), this.nodes());
    if (!desired) return;
    this.systemWrite(this.typeOf('', 'endpoints'), desired.endpoints, CONTROLLER_MANAGER);
    this.systemWrite(this.typeOf('discovery.k8s.io', 'endpointslices'), desired.slice, 'endpointslice-controller');
  }

  private webhookReadinessChanged(): void {
    const svc = this.store.get(SERVICES, METALLB_NAMESPACE, METALLB_WEBHOOK_SERVICE);
    if (this.webhook.isReady()) this.rotateMetallbCertificates();
    if (svc) this.syncEndpoints(svc);
  }

  /** What MetalLB's cert-rotator does once its controller runs. */
  private rotateMetallbCertificates(): void {
    const vwcType = this.typeOf('admissionregistration.k8s.io', 'validatingwebhookconfigurations');
    const vwc = this.store.get(gr(vwcType), undefined, METALLB_WEBHOOK_CONFIG);
    const filled = vwc && withWebhookCaBundles(vwc);
    if (filled) this.systemWrite(vwcType, filled, METALLB_CONTROLLER);
    const crdType = this.typeOf('apiextensions.k8s.io', 'customresourcedefinitions');
    for (const crd of this.store.list(gr(crdType))) {
      const next = withConversionCaBundle(crd);
      if (next) this.systemWrite(crdType, next, METALLB_CONTROLLER);
    }
    const secretType = this.typeOf('', 'secrets');
    const secret = this.store.get(gr(secretType), METALLB_NAMESPACE, METALLB_CERT_SECRET);
    const certs = secret && withCertificates(secret);
    if (certs) this.systemWrite(secretType, certs, METALLB_CONTROLLER);
  }

  /** Creates an object as a component (seeding). */
  seed(obj: KubeObject, manager: string): KubeObject {
    const { group, version } = splitApiVersion(obj.apiVersion);
    const type = this.registry.byKind(group, version, obj.kind);
    if (!type) throw new Error(`kube double: cannot seed unknown kind ${obj.apiVersion} ${obj.kind}`);
    return this.systemWrite(type, obj, manager, true);
  }

  stop(): void {
    this.webhook.stop();
  }
}

export { ApiError };
