/**
 * Admission webhooks, simulated. No webhook server is ever called: a webhook "answers" when the
 * Service it points at is ready. Every Service is ready except MetalLB's `metallb-webhook-service`,
 * whose readiness is the switch `setWebhookReady()` (or `webhookReadyAfterMs` after the
 * `metallb-webhook-configuration` was created). While it is not ready, writes that a
 * failurePolicy=Fail webhook matches fail with HTTP 500, like the real
 * `failed calling webhook ...: connect: connection refused`.
 *
 * Once ready, the simulated MetalLB cert-rotator fills the caBundles (webhook configuration and the
 * bgppeers conversion webhook) and the `metallb-webhook-cert` Secret; the endpoints controller then
 * reports the webhook Service's endpoint ready. When ready, IPAddressPool addresses are checked like
 * MetalLB's webhook does (a bad CIDR or range is denied with HTTP 403).
 */
import { isIP } from 'node:net';
import type { Json, JsonObject, KubeObject } from './types.ts';
import { ApiError } from './errors.ts';
import { clone, isPlainObject } from './json.ts';

export const METALLB_NAMESPACE = 'metallb-system';
export const METALLB_WEBHOOK_SERVICE = 'metallb-webhook-service';
export const METALLB_WEBHOOK_CONFIG = 'metallb-webhook-configuration';
export const METALLB_CERT_SECRET = 'metallb-webhook-cert';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

export interface AdmissionRequest {
  group: string;
  version: string;
  plural: string;
  operation: Operation;
  object?: KubeObject;
}

const FAKE_CA = Buffer.from(
  '-----BEGIN CERTIFICATE-----\nMIIBfakeCAfromTheKubeApiDoubleNotARealCertificate0000000000000000\n-----END CERTIFICATE-----\n',
).toString('base64');
const FAKE_KEY = Buffer.from(
  '-----BEGIN RSA PRIVATE KEY-----\nMIIBfakeKeyFromTheKubeApiDoubleNotARealKey00000000000000000000000\n-----END RSA PRIVATE KEY-----\n',
).toString('base64');

export class WebhookSimulator {
  private ready: boolean;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    initiallyReady: boolean,
    private readonly readyAfterMs: number | undefined,
    private readonly onReadyChange: () => void,
  ) {
    this.ready = initiallyReady;
  }

  isReady(): boolean {
    return this.ready;
  }

  setReady(ready: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (ready === this.ready) return;
    this.ready = ready;
    this.onReadyChange();
  }

  /** Called when the MetalLB webhook configuration is first created: starts the readiness timer. */
  webhookConfigurationCreated(): void {
    if (this.readyAfterMs === undefined || this.ready || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.setReady(true);
    }, this.readyAfterMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Whether a Service's backends answer. */
  serviceReady(namespace: string | undefined, name: string): boolean {
    return namespace === METALLB_NAMESPACE && name === METALLB_WEBHOOK_SERVICE ? this.ready : true;
  }

  /**
   * Runs the validating/mutating webhooks that match a request. Throws the error the API server
   * would answer when a webhook cannot be called or denies the request.
   */
  admit(req: AdmissionRequest, configurations: KubeObject[], serviceIP: (ns: string, name: string) => string | undefined): void {
    for (const cfg of configurations) {
      const hooks = Array.isArray(cfg.webhooks) ? cfg.webhooks.filter(isPlainObject) : [];
      for (const hook of hooks) {
        if (!matches(hook, req)) continue;
        const svc = isPlainObject(hook.clientConfig) && isPlainObject(hook.clientConfig.service) ? hook.clientConfig.service : undefined;
        if (!svc || typeof svc.name !== 'string' || typeof svc.namespace !== 'string') continue;
        const hookName = String(hook.name);
        if (!this.serviceReady(svc.namespace, svc.name)) {
          if (hook.failurePolicy === 'Ignore') continue;
          const port = typeof svc.port === 'number' ? svc.port : 443;
          const timeout = typeof hook.timeoutSeconds === 'number' ? hook.timeoutSeconds : 10;
          const url = `https://${svc.name}.${svc.namespace}.svc:${port}${typeof svc.path === 'string' ? svc.path : ''}?timeout=${timeout}s`;
          const ip = serviceIP(svc.namespace, svc.name);
          const cause = ip ? `dial tcp ${ip}:${port}: connect: connection refused` : `service "${svc.name}" not found`;
          const message = `failed calling webhook "${hookName}": failed to call webhook: Post "${url}": ${cause}`;
          throw new ApiError(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] });
        }
        const denial = metallbValidation(hookName, req);
        if (denial) {
          throw new ApiError(403, 'Forbidden', `admission webhook "${hookName}" denied the request: ${denial}`);
        }
      }
    }
  }
}

function listOf(v: Json | undefined): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function matches(hook: JsonObject, req: AdmissionRequest): boolean {
  const rules = Array.isArray(hook.rules) ? hook.rules.filter(isPlainObject) : [];
  const has = (list: string[], v: string) => list.includes('*') || list.includes(v);
  return rules.some(
    (r) =>
      has(listOf(r.apiGroups), req.group) &&
      has(listOf(r.apiVersions), req.version) &&
      has(listOf(r.resources), req.plural) &&
      (has(listOf(r.operations), req.operation) || listOf(r.operations).includes('*')),
  );
}

function validCidrOrRange(a: string): boolean {
  const range = a.split('-').map((s) => s.trim());
  if (range.length === 2) return isIP(range[0]) !== 0 && isIP(range[0]) === isIP(range[1]);
  const [ip, prefix, ...rest] = a.split('/');
  if (rest.length || prefix === undefined || !/^\d+$/.test(prefix)) return false;
  const family = isIP(ip);
  return family !== 0 && Number(prefix) <= (family === 4 ? 32 : 128);
}

/** The one check of MetalLB's own webhook the double reproduces: IPAddressPool addresses. */
function metallbValidation(hookName: string, req: AdmissionRequest): string | undefined {
  if (hookName !== 'ipaddresspoolvalidationwebhook.metallb.io' || !req.object) return undefined;
  const spec = req.object.spec;
  const addresses = isPlainObject(spec) ? listOf(spec.addresses) : [];
  for (const a of addresses) {
    if (!validCidrOrRange(a)) return `invalid CIDR "${a}" in pool "${req.object.metadata.name}"`;
  }
  return undefined;
}

// ---- what MetalLB's cert-rotator writes once it runs ----

/** The webhook configuration with every empty caBundle filled, or undefined if nothing to fill. */
export function withWebhookCaBundles(cfg: KubeObject): KubeObject | undefined {
  const next = clone(cfg);
  let changed = false;
  for (const hook of Array.isArray(next.webhooks) ? next.webhooks.filter(isPlainObject) : []) {
    const cc = isPlainObject(hook.clientConfig) ? hook.clientConfig : (hook.clientConfig = {});
    if (!cc.caBundle) {
      cc.caBundle = FAKE_CA;
      changed = true;
    }
  }
  return changed ? next : undefined;
}

/** A CRD whose conversion webhook points at the MetalLB webhook Service, with its caBundle filled. */
export function withConversionCaBundle(crd: KubeObject): KubeObject | undefined {
  const next = clone(crd);
  const spec = isPlainObject(next.spec) ? next.spec : undefined;
  const conv = spec && isPlainObject(spec.conversion) ? spec.conversion : undefined;
  const wh = conv && isPlainObject(conv.webhook) ? conv.webhook : undefined;
  const cc = wh && isPlainObject(wh.clientConfig) ? wh.clientConfig : undefined;
  const svc = cc && isPlainObject(cc.service) ? cc.service : undefined;
  if (!cc || !svc || svc.name !== METALLB_WEBHOOK_SERVICE || svc.namespace !== METALLB_NAMESPACE || cc.caBundle) return undefined;
  cc.caBundle = FAKE_CA;
  return next;
}

/** The webhook certificate Secret with its keys filled, or undefined if already filled. */
export function withCertificates(secret: KubeObject): KubeObject | undefined {
  const data = isPlainObject(secret.data) ? secret.data : {};
  if (data['ca.crt'] && data['tls.crt'] && data['tls.key']) return undefined;
  const next = clone(secret);
  next.data = { ...data, 'ca.crt': FAKE_CA, 'ca.key': FAKE_KEY, 'tls.crt': FAKE_CA, 'tls.key': FAKE_KEY };
  return next;
}
