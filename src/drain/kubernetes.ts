/**
 * Kubernetes drains (`--drain kubernetes`), run with kubectl on the first control-plane host (its
 * kube_kubeconfig, kube_kubectl): cordon, then `kubectl drain --ignore-daemonsets
 * --delete-emptydir-data --timeout` (evictions, which a PodDisruptionBudget may hold back until
 * the timeout); uncordon after. A node already cordoned is someone else's: its pods are drained
 * all the same, and it stays cordoned. The node counts as this run's once the cordon went through:
 * Ctrl-C (or the host's --host-timeout) during the evictions stops `kubectl drain` on the
 * controller and uncordons it.
 */
import { stopReason, type DrainExec, type DrainOptions, type DrainOutcome, type DrainProvider } from '../contract/drain.ts';
import { kubectlPrelude, type KubeAccess } from '../resources/kube/kube.ts';
import { shq } from '../shell/quote.ts';

/** Prints `true` when the node is cordoned (spec.unschedulable), nothing otherwise. */
export const cordonedScript = (a: KubeAccess, node: string): string =>
  `${kubectlPrelude(a)}\nk get node ${shq(node)} -o 'jsonpath={.spec.unschedulable}'`;

export const cordonScript = (a: KubeAccess, node: string): string => `${kubectlPrelude(a)}\nk cordon ${shq(node)}`;

export const drainPodsScript = (a: KubeAccess, node: string, timeoutSec: number): string =>
  `${kubectlPrelude(a)}\nkw drain ${shq(node)} --ignore-daemonsets --delete-emptydir-data --timeout=${timeoutSec}s`;

export const uncordonScript = (a: KubeAccess, node: string): string => `${kubectlPrelude(a)}\nk uncordon ${shq(node)}`;

const failure = (what: string, r: { code: number | null; stderr: string; stdout: string }): string =>
  `${what} failed (exit ${r.code ?? 'signal'}): ${(r.stderr.trim() || r.stdout.trim()).split('\n').slice(-4).join('\n')}`;

/** A node someone else cordoned, as the output says it. */
const CORDONED = 'cordoned (spec.unschedulable)';

export function kubernetesDrain(a: KubeAccess): DrainProvider {
  return {
    name: 'kubernetes',
    async drain(exec: DrainExec, node: string, o: DrainOptions): Promise<DrainOutcome> {
      const state = await exec(cordonedScript(a, node));
      if (state.code !== 0) return { kind: 'failed', detail: failure(`kubectl get node ${node}`, state), drained: false };
      const already = state.stdout.trim() === 'true';
      if (!already) {
        const c = await exec(cordonScript(a, node));
        // (killed, no exit status: the cordon may have gone through, and an uncordon undoes it either way)
        const maybe = c.code === null;
        if (c.code === 0 || maybe) o.takenOut?.();
        if (c.code !== 0) return { kind: 'failed', detail: failure(`kubectl cordon ${node}`, c), drained: maybe };
      }
      // (Ctrl-C kills this on the controller: the session aborts its drain connection)
      const d = await exec(drainPodsScript(a, node, o.timeoutSec));
      if (d.code !== 0) {
        const detail = o.signal?.aborted
          ? `${stopReason(o.signal)}: kubectl drain ${node} was stopped`
          : failure(`kubectl drain ${node}`, d);
        return { kind: 'failed', detail, drained: !already };
      }
      return already ? { kind: 'already', detail: CORDONED } : { kind: 'drained' };
    },
    async outOfScheduling(exec: DrainExec, node: string): Promise<string | undefined> {
      const state = await exec(cordonedScript(a, node));
      if (state.code !== 0) throw new Error(failure(`kubectl get node ${node}`, state));
      return state.stdout.trim() === 'true' ? CORDONED : undefined;
    },
    async resume(exec: DrainExec, node: string): Promise<string | undefined> {
      const r = await exec(uncordonScript(a, node));
      return r.code === 0 ? undefined : failure(`kubectl uncordon ${node}`, r);
    },
  };
}
