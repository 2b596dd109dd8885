/**
 * A test double of the Kubernetes API server, spoken to over plain HTTP by the real kubectl.
 * See README.md beside this file for what it implements and what it does not.
 */
import { evict } from './eviction.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';
import type { Json, JsonObject, KubeObject, ResourceType } from './types.ts';
import { gvString } from './types.ts';
import { ApiError, errors } from './errors.ts';
import { clone } from './json.ts';
import { AGGREGATED_DISCOVERY_CONTENT_TYPE, wantsAggregatedDiscovery } from './discovery.ts';
import { Cluster, type PatchType } from './cluster.ts';
import type { ObjectStore, StoreEvent } from './store.ts';
import { type SeedOptions, seedCluster } from './seed.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';
import { printerColumns, tableFor, wantsTable } from './table.ts';
import { decodeKubeProtobuf } from './protobuf.ts';
import { OPENAPI_V2_PROTOBUF, openApiV3Document, openApiV3Root } from './openapi.ts';

export type { KubeObject } from './types.ts';
export type { NodeSeed, SeedOptions } from './seed.ts';

export interface KubeApiDoubleOptions extends SeedOptions {
  /** Address to listen on; default 127.0.0.1. */
  host?: string;
  /** Port; default 0 (a free one). */
  port?: number;
  /** Only plain HTTP is implemented. */
  tls?: false;
  /** The server's gitVersion; default v1.32.4 (the kubectl dispatcher picks its client by it). */
  version?: string;
  /** Initial readiness of the simulated MetalLB webhook; default false. */
  webhookReady?: boolean;
  /** Become ready this many ms after `metallb-webhook-configuration` is created. */
  webhookReadyAfterMs?: number;
}

export interface RecordedRequest {
  method: string;
  /** URL path without the query. */
  path: string;
  /** The query string without `?` ('' if none). */
  query: string;
  contentType: string | undefined;
}

export interface KubeApiDouble {
  /** http://host:port */
  url: string;
  /** A kubeconfig (YAML text) for this server, or for `serverUrl` (another address of it). */
  kubeconfig(serverUrl?: string): string;
  store: ObjectStore;
  cluster: Cluster;
  stop(): Promise<void>;
  setWebhookReady(ready: boolean): void;
  requests: RecordedRequest[];
  /**
   * Runs `action` once, just before the first request `match` accepts is handled: a controller's
   * write placed at an exact point of a client's sequence of requests (an event, not a timer).
   */
  beforeRequest(match: (r: RecordedRequest) => boolean, action: () => void): void;
  /** Every stored object (copies). */
  objects(): KubeObject[];
  /** One stored object by kind name (`ConfigMap`, `IPAddressPool`), name and namespace. */
  get(kind: string, name: string, namespace?: string): KubeObject | undefined;
}

const JSON_TYPE = 'application/json';
const PATCH_TYPES: Record<string, PatchType> = {
  'application/apply-patch+yaml': 'apply',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/json-patch+json': 'json',
};

interface ResourceRoute {
  type: ResourceType;
  version: string;
  namespace?: string;
  name?: string;
  subresource?: string;
}

function send(res: http.ServerResponse, code: number, body: unknown, contentType = JSON_TYPE): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: http.ServerResponse, e: ApiError): void {
  send(res, e.code, e.status());
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function parseBody(body: Buffer, mediaType: string): Json {
  if (mediaType === 'application/vnd.kubernetes.protobuf') return decodeKubeProtobuf(body) as unknown as Json;
  const text = body.toString('utf8');
  if (text.trim() === '') throw errors.badRequest('the request body is empty');
  try {
    return JSON.parse(text) as Json;
  } catch {
    if (mediaType.endsWith('yaml')) {
      try {
        return parseYaml(text) as Json;
      } catch (e) {
        throw errors.badRequest(`error decoding YAML: ${(e as Error).message}`);
      }
    }
    throw errors.badRequest('the body of the request is not valid JSON');
  }
}

class Server {
  readonly cluster: Cluster;
  readonly requests: RecordedRequest[] = [];
  readonly hooks: Array<{ match: (r: RecordedRequest) => boolean; action: () => void }> = [];
  private readonly http: http.Server;
  private readonly watches = new Set<http.ServerResponse>();
  private address = '';

  constructor(private readonly opts: KubeApiDoubleOptions) {
    this.cluster = new Cluster({ webhookReady: opts.webhookReady ?? false, webhookReadyAfterMs: opts.webhookReadyAfterMs });
    seedCluster(this.cluster, opts, this.version());
    this.http = http.createServer((req, res) => {
      this.handle(req, res).catch((e: unknown) => {
        const err = e instanceof ApiError ? e : new ApiError(500, 'InternalError', `Internal error occurred: ${(e as Error).message}`);
        if (!(e instanceof ApiError)) console.error('kube double: internal error', e);
        if (!res.headersSent) sendError(res, err);
        else res.end();
      });
    });
  }

  version(): string {
    return this.opts.version ?? 'v1.32.4';
  }

  async listen(): Promise<string> {
    const host = this.opts.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.opts.port ?? 0, host, () => resolve());
    });
    const port = (this.http.address() as AddressInfo).port;
    this.address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    return `http://${this.address}`;
  }

  async stop(): Promise<void> {
    this.cluster.stop();
    for (const w of this.watches) w.end();
    this.watches.clear();
    await new Promise<void>((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://double');
    const method = req.method ?? 'GET';
    const contentType = req.headers['content-type'];
    const recorded: RecordedRequest = { method, path: url.pathname, query: url.search.replace(/^\?/, ''), contentType };
    this.requests.push(recorded);
    const hook = this.hooks.findIndex((h) => h.match(recorded));
    if (hook >= 0) this.hooks.splice(hook, 1)[0].action();
    const accept = req.headers.accept;
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const segs = path.split('/').filter(Boolean);

    if (path === '/version') return send(res, 200, this.versionInfo());
    if (['/healthz', '/readyz', '/livez'].includes(path)) {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      return void res.end('ok');
    }
    if (path === '/openapi/v2') {
      res.writeHead(200, { 'Content-Type': OPENAPI_V2_PROTOBUF, 'Content-Length': 0 });
      return void res.end();
    }
    if (path === '/openapi/v3') return send(res, 200, openApiV3Root(this.cluster.registry));
    if (segs[0] === 'openapi' && segs[1] === 'v3') {
      const gv = segs[2] === 'api' ? { group: '', version: segs[3] } : { group: segs[3], version: segs[4] };
      const doc = gv.version ? openApiV3Document(this.cluster.registry, gv.group, gv.version) : undefined;
      return doc ? send(res, 200, doc) : sendError(res, errors.noResource());
    }
    if (path === '/api' || path === '/apis') {
      const core = path === '/api';
      if (wantsAggregatedDiscovery(accept))
        return send(res, 200, this.cluster.registry.aggregated(core), AGGREGATED_DISCOVERY_CONTENT_TYPE);
      return send(res, 200, core ? this.cluster.registry.apiVersions(this.address) : this.cluster.registry.apiGroupList());
    }
    if (segs[0] === 'api' && segs.length === 2) {
      const doc = this.cluster.registry.apiResourceList('', segs[1]);
      return doc ? send(res, 200, doc) : sendError(res, errors.noResource());
    }
    if (segs[0] === 'apis' && segs.length === 2) {
      const doc = this.cluster.registry.apiGroupDoc(segs[1]);
      return doc ? send(res, 200, doc) : sendError(res, errors.noResource());
    }
    if (segs[0] === 'apis' && segs.length === 3) {
      const doc = this.cluster.registry.apiResourceList(segs[1], segs[2]);
      return doc ? send(res, 200, doc) : sendError(res, errors.noResource());
    }
    const route = this.route(segs);
    if (!route) return sendError(res, errors.noResource());
    const body = ['POST', 'PUT', 'PATCH'].includes(method) ? await readBody(req) : Buffer.alloc(0);
    return this.serveResource(req, res, route, url.searchParams, method, body);
  }

  private versionInfo(): JsonObject {
    const v = this.version();
    const m = /^v(\d+)\.(\d+)/.exec(v);
    return {
      major: m?.[1] ?? '1',
      minor: m?.[2] ?? '32',
      gitVersion: v,
      gitCommit: '0000000000000000000000000000000000000000',
      gitTreeState: 'clean',
      buildDate: '2025-04-22T00:00:00Z',
      goVersion: 'go1.23.8',
      compiler: 'gc',
      platform: 'linux/amd64',
    };
  }

  /** /api/v1/... or /apis/<g>/<v>/... → the resource addressed. */
  private route(segs: string[]): ResourceRoute | undefined {
    let group: string;
    let version: string;
    let rest: string[];
    if (segs[0] === 'api' && segs.length >= 3) {
      group = '';
      version = segs[1];
      rest = segs.slice(2);
    } else if (segs[0] === 'apis' && segs.length >= 4) {
      group = segs[1];
      version = segs[2];
      rest = segs.slice(3);
    } else {
      return undefined;
    }
    const reg = this.cluster.registry;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      const t = reg.lookup(group, version, rest[2]);
      if (t && t.namespaced) {
        if (rest.length > 5) return undefined;
        return { type: t, version, namespace: rest[1], name: rest[3], subresource: rest[4] };
      }
    }
    const t = reg.lookup(group, version, rest[0]);
    if (!t || rest.length > 3) return undefined;
    return { type: t, version, name: rest[1], subresource: rest[2] };
  }

  private columns(route: ResourceRoute) {
    const crdName = route.type.crd;
    const crd = crdName
      ? this.cluster.store.get({ group: 'apiextensions.k8s.io', plural: 'customresourcedefinitions' }, undefined, crdName)
      : undefined;
    return printerColumns(crd, route.version);
  }

  /** The object as served at the requested version. */
  private present(o: KubeObject, route: ResourceRoute): KubeObject {
    o.apiVersion = gvString(route.type.group, route.version);
    return o;
  }

  private async serveResource(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    route: ResourceRoute,
    q: URLSearchParams,
    method: string,
    body: Buffer,
  ): Promise<void> {
    const { type, version, namespace, name, subresource } = route;
    if (subresource === 'eviction' && type.group === '' && type.plural === 'pods' && namespace !== undefined && name !== undefined) {
      if (method !== 'POST') return sendError(res, errors.methodNotAllowed());
      return send(res, 201, evict(this.cluster, type, namespace, name));
    }
    if (subresource !== undefined && subresource !== 'status') return sendError(res, errors.noResource());
    if (subresource === 'status' && !type.statusSubresource) return sendError(res, errors.noResource());
    const dryRun = q.has('dryRun');
    const userAgent = String(req.headers['user-agent'] ?? 'unknown');
    const manager = q.get('fieldManager') ?? userAgent.split('/')[0];
    const section = subresource === 'status' ? ('status' as const) : ('main' as const);
    const mediaType = String(req.headers['content-type'] ?? JSON_TYPE)
      .split(';')[0]
      .trim()
      .toLowerCase();
    const table = wantsTable(req.headers.accept);
    const includeObject = q.get('includeObject') ?? 'Metadata';

    if (name === undefined) {
      if (method === 'GET' && ['true', '1'].includes(q.get('watch') ?? '')) return this.watch(req, res, route, q);
      if (method === 'GET') {
        if (!type.verbs.includes('list')) return sendError(res, errors.methodNotAllowed());
        const items = this.cluster.list(type, namespace, q.get('labelSelector'), q.get('fieldSelector')).map((o) => this.present(o, route));
        const rv = String(this.cluster.store.resourceVersion);
        if (table) return send(res, 200, tableFor(items, rv, includeObject, this.columns(route)));
        return send(res, 200, { kind: type.listKind, apiVersion: gvString(type.group, version), metadata: { resourceVersion: rv }, items });
      }
      if (method === 'POST') {
        const obj = parseBody(body, mediaType);
        const r = this.cluster.create(type, version, namespace, obj, { dryRun, manager });
        return send(res, 201, this.present(r.object, route));
      }
      if (method === 'DELETE') {
        const items = this.cluster.list(type, namespace, q.get('labelSelector'), q.get('fieldSelector'));
        for (const o of items) this.cluster.delete(type, version, o.metadata.namespace, o.metadata.name, dryRun);
        return send(res, 200, {
          kind: type.listKind,
          apiVersion: gvString(type.group, version),
          metadata: {},
          items: items.map((o) => this.present(o, route)),
        });
      }
      return sendError(res, errors.methodNotAllowed());
    }

    switch (method) {
      case 'GET': {
        const o = this.present(this.cluster.get(type, namespace, name), route);
        if (table) return send(res, 200, tableFor([o], String(this.cluster.store.resourceVersion), includeObject, this.columns(route)));
        return send(res, 200, o);
      }
      case 'PUT': {
        const r = this.cluster.replace(type, version, namespace, name, parseBody(body, mediaType), { dryRun, manager, section });
        return send(res, 200, this.present(r.object, route));
      }
      case 'PATCH': {
        const patchType = PATCH_TYPES[mediaType];
        if (!patchType) return sendError(res, errors.unsupportedMediaType(mediaType));
        if (patchType === 'apply' && !q.get('fieldManager')) {
          return sendError(
            res,
            new ApiError(
              422,
              'Invalid',
              'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            ),
          );
        }
        const force = q.get('force') === 'true';
        const r = this.cluster.patch(type, version, namespace, name, patchType, parseBody(body, mediaType), {
          dryRun,
          manager,
          section,
          force,
        });
        return send(res, r.created ? 201 : 200, this.present(r.object, route));
      }
      case 'DELETE': {
        const gone = this.cluster.delete(type, version, namespace, name, dryRun);
        const details: JsonObject = { name, kind: type.plural, uid: gone.metadata.uid ?? '' };
        if (type.group) details.group = type.group;
        return send(res, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details });
      }
      default:
        return sendError(res, errors.methodNotAllowed());
    }
  }

  /** A watch: newline-delimited JSON events over a chunked response. */
  private watch(req: http.IncomingMessage, res: http.ServerResponse, route: ResourceRoute, q: URLSearchParams): void {
    const { type, namespace } = route;
    const byLabel = parseLabelSelector(q.get('labelSelector'));
    const byField = parseFieldSelector(q.get('fieldSelector'));
    const matches = (gr: { group: string; plural: string }, o: KubeObject) =>
      gr.group === type.group &&
      gr.plural === type.plural &&
      (namespace === undefined || o.metadata.namespace === namespace) &&
      byLabel(o) &&
      byField(o);
    res.writeHead(200, { 'Content-Type': JSON_TYPE, 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    // kubectl get -w asks for Table: each event then carries a one-row Table, as the real server does
    const table = wantsTable(req.headers.accept);
    const columns = table ? this.columns(route) : [];
    const includeObject = q.get('includeObject') ?? 'Metadata';
    const write = (type: string, object: Json) => res.write(`${JSON.stringify({ type, object })}\n`);
    const writeObject = (type: string, o: KubeObject) => {
      const shown = this.present(o, route);
      write(type, table ? tableFor([shown], shown.metadata.resourceVersion ?? '', includeObject, columns) : (shown as unknown as Json));
    };
    const sendEvent = (e: StoreEvent) => {
      if (matches(e.gr, e.object)) writeObject(e.type, clone(e.object));
    };
    const rvParam = q.get('resourceVersion') ?? '';
    const initial = q.get('sendInitialEvents') === 'true' || rvParam === '' || rvParam === '0';
    if (initial) {
      for (const o of this.cluster.list(type, namespace, q.get('labelSelector'), q.get('fieldSelector'))) {
        writeObject('ADDED', o);
      }
      if (q.get('sendInitialEvents') === 'true' && q.get('allowWatchBookmarks') === 'true') {
        write('BOOKMARK', {
          kind: type.kind,
          apiVersion: gvString(type.group, route.version),
          metadata: { resourceVersion: String(this.cluster.store.resourceVersion), annotations: { 'k8s.io/initial-events-end': 'true' } },
        });
      }
    } else {
      const since = this.cluster.store.eventsSince(Number(rvParam));
      if (!since) {
        write('ERROR', new ApiError(410, 'Expired', `too old resource version: ${rvParam}`).status());
        return void res.end();
      }
      since.forEach(sendEvent);
    }
    const unsubscribe = this.cluster.store.subscribe(sendEvent);
    this.watches.add(res);
    const timeout = Number(q.get('timeoutSeconds') ?? 1800);
    const timer = setTimeout(() => res.end(), Math.max(1, timeout) * 1000);
    timer.unref();
    const done = () => {
      clearTimeout(timer);
      unsubscribe();
      this.watches.delete(res);
    };
    res.on('close', done);
  }
}

function kubeconfigFor(server: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: kube-double
  cluster:
    server: ${server}
contexts:
- name: kube-double
  context:
    cluster: kube-double
    namespace: default
    user: kube-double
current-context: kube-double
preferences: {}
users:
- name: kube-double
  user: {}
`;
}

/** Starts the double; stop it with `stop()`. */
export async function startKubeApiDouble(opts: KubeApiDoubleOptions = {}): Promise<KubeApiDouble> {
  if (opts.tls !== undefined && opts.tls !== false) throw new Error('kube double: only plain HTTP is implemented');
  const server = new Server(opts);
  const url = await server.listen();
  const cluster = server.cluster;
  return {
    url,
    kubeconfig: (serverUrl?: string) => kubeconfigFor(serverUrl ?? url),
    store: cluster.store,
    cluster,
    stop: () => server.stop(),
    setWebhookReady: (ready: boolean) => cluster.webhook.setReady(ready),
    requests: server.requests,
    beforeRequest: (match, action) => void server.hooks.push({ match, action }),
    objects: () => cluster.store.all().map((s) => s.object),
    get: (kind: string, name: string, namespace?: string) => {
      const t = cluster.registry.byKindName(kind);
      if (!t) return undefined;
      return cluster.store.get({ group: t.group, plural: t.plural }, t.namespaced ? (namespace ?? 'default') : undefined, name);
    },
  };
}
