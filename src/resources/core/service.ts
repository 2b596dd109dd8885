/**
 * restartHandler: a handler (docs/resources.md, "Handlers") that restarts or reloads a systemd
 * service once per host when a resource that notifies it changed, then waits until the service
 * is healthy: `systemctl is-active`, and an HTTP health endpoint when given (kubelet /healthz).
 * Where systemd is not PID 1 (containers, the test bed) it is skipped as "not restarted: no systemd".
 */
import { inline, probed } from '../../contract/probe.ts';
import { common, NotApplicable, type Change, type CommonOptions, type Resource } from '../../contract/resource.ts';
import { shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';

export interface RestartHandlerOptions extends CommonOptions {
  /** The systemd unit, e.g. kubelet, containerd, chrony. */
  service: string;
  /** restart (default) or reload. */
  action?: 'restart' | 'reload';
  /** Polled until it answers 2xx (curl or wget on the host), e.g. http://127.0.0.1:10248/healthz. */
  healthUrl?: string;
  /** Seconds to wait for the service to be active (and healthy). Default 60. */
  timeoutSec?: number;
  /**
   * The restart disturbs the host's workloads (Change.disruptive: `--drain` moves them off first).
   * Default: true for a restart of kubelet or containerd (the pods' node agent and runtime), else false.
   */
  disruptive?: boolean;
}

/** Services whose restart disturbs the pods of the node, unless a playbook says otherwise. */
const DISRUPTIVE_SERVICES = new Set(['kubelet', 'containerd']);

/** Whether a restart handler's change is disruptive, and why (see RestartHandlerOptions.disruptive). */
export function restartDisrupts(o: Pick<RestartHandlerOptions, 'service' | 'action' | 'disruptive'>): string | undefined {
  const action = o.action ?? 'restart';
  const marked = o.disruptive ?? (action === 'restart' && DISRUPTIVE_SERVICES.has(o.service));
  return marked ? `${action} of ${o.service} disturbs the workloads that depend on it` : undefined;
}

export interface RestartHandlerFacts {
  systemd: boolean;
}

const UNIT = /^[A-Za-z0-9:_.@-]+$/;

/** The kubelet's health endpoint (its default healthzPort 10248 on localhost). */
export const KUBELET_HEALTHZ = 'http://127.0.0.1:10248/healthz';

/** Shell that polls `check` once a second until it succeeds, failing after `secs` with `what`. */
export function pollScript(check: string, secs: number, what: string): string {
  return `rs_i=0
until ${check}; do
  rs_i=$((rs_i + 1))
  if [ "$rs_i" -ge ${secs} ]; then echo ${shq(what)} >&2; exit 1; fi
  sleep 1
done`;
}

export function restartHandler(o: RestartHandlerOptions): Resource<RestartHandlerFacts> {
  if (!UNIT.test(o.service)) throw new InputError(`restart handler: invalid unit name ${JSON.stringify(o.service)}`);
  const action = o.action ?? 'restart';
  const secs = o.timeoutSec ?? 60;
  if (!Number.isInteger(secs) || secs < 1 || secs > 3600) throw new InputError(`restart handler ${o.service}: timeoutSec must be 1..3600`);
  if (o.healthUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(o.healthUrl))
    throw new InputError(`restart handler ${o.service}: healthUrl must be an http(s) URL`);
  const unit = shq(o.service);
  const disruptive = restartDisrupts(o);
  return {
    ...common('handler', `${action}:${o.service}`, o),
    handler: true,
    verifiable: false,
    // builtins only: a converged host pays nothing for a handler
    ...probed(
      () => ({ init: inline('if [ -d /run/systemd/system ]; then echo systemd=yes; else echo systemd=no; fi') }),
      ({ init }) => ({ systemd: init.includes('systemd=yes') }),
    ),
    diff(f): Change[] {
      if (!f.systemd) throw new NotApplicable(`not ${action === 'restart' ? 'restarted' : 'reloaded'}: no systemd`);
      return [{ summary: `${action} ${o.service}`, ...(disruptive ? { disruptive } : {}) }];
    },
    apply() {
      const steps = [
        { name: `${action} ${o.service}`, script: `systemctl ${action} ${unit}` },
        {
          name: `${o.service} is active`,
          script: pollScript(`systemctl is-active --quiet ${unit}`, secs, `${o.service} is not active after ${secs}s`),
        },
      ];
      if (o.healthUrl) {
        const url = shq(o.healthUrl);
        const get = `{ if command -v curl >/dev/null; then curl -fsS -o /dev/null --max-time 5 ${url}; else wget -q -O /dev/null -T 5 ${url}; fi; }`;
        steps.push({
          name: `${o.service} is healthy`,
          script: pollScript(get, secs, `${o.service}: ${o.healthUrl} did not answer 2xx within ${secs}s`),
        });
      }
      return steps;
    },
  };
}
