/**
 * Kubernetes drains (`--drain kubernetes`), run with kubectl on the first control-plane host (its
 * kube_kubeconfig, kube_kubectl): cordon, then `kubectl drain --ignore-daemonsets
 * --delete-emptydir-data --timeout` (evictions, which a PodDisruptionBudget may hold back until
 * the timeout); uncordon after. racksmith's cordon is one patch, field manager `racksmith`, that
 * sets spec.unschedulable and the annotation racksmith.io/drained-by (the run's mark); its uncordon
 * clears both in one patch (a node someone uncordoned by hand while the run held it has the mark
 * alone taken off). A node already cordoned is someone else's: its pods are drained all
 * the same, and it stays cordoned; unless the cordon is racksmith's (the annotation, and
 * spec.unschedulable still owned by manager racksmith: an operator's `kubectl uncordon` and
 * `kubectl cordon` since make it the operator's; a `kubectl cordon` alone of a node still cordoned
 * changes nothing, so it stays racksmith's) and its run provably no longer runs
 * (DrainOptions.ownerOf): then this run takes it over; a racksmith cordon this run does not take
 * over fails its drain at once (blocked, contract/drain.ts drainAction): that run uncordons the
 * node when its own work ends. To keep such a node out, remove the annotation: an uncordon asks
 * first, and only a node still cordoned under this run's mark is uncordoned.
 * The node counts as this run's once the cordon went through: Ctrl-C (or the host's
 * --host-timeout) during the evictions stops `kubectl drain` on the controller and uncordons it.
 */
import {
  blockedDetail,
  drainAction,
  someoneElsesDetail,
  stopReason,
  type DrainExec,
  type DrainOptions,
  type DrainOutcome,
  type DrainOwner,
  type DrainProvider,
  type OutOfScheduling,
  type ResumeOutcome,
} from '../contract/drain.ts';
import { kubectlPrelude, type KubeAccess } from '../resources/kube/kube.ts';
import { shq } from '../shell/quote.ts';

/** A resume's note of a node back in scheduling before the run put it back. */
export const UNCORDONED_BY_HAND = 'uncordoned by someone else while this run held it';

/** The annotation racksmith's cordon carries: the run's mark (drainMark). */
export const DRAINED_BY = 'racksmith.io/drained-by';
/** The field manager of racksmith's cordon and uncordon patches. */
export const FIELD_MANAGER = 'racksmith';

/** The node as JSON, with its managedFields (who set spec.unschedulable). */
export const nodeScript = (a: KubeAccess, node: string): string =>
  `${kubectlPrelude(a)}\nk get node ${shq(node)} -o json --show-managed-fields`;

const patchScript = (a: KubeAccess, node: string, patch: unknown): string =>
  `${kubectlPrelude(a)}\nk patch node ${shq(node)} --field-manager=${FIELD_MANAGER} -p ${shq(JSON.stringify(patch))}`;

/** The kube-system namespace's UID: the cluster's identity (kubeadm makes it once, at the cluster's birth). */
export const clusterScript = (a: KubeAccess): string => `${kubectlPrelude(a)}\nk get namespace kube-system -o jsonpath='{.metadata.uid}'`;

/** Cordon and mark in one patch: a cordon is never without its mark, nor the mark without it. */
export const cordonScript = (a: KubeAccess, node: string, mark: string): string =>
  patchScript(a, node, { spec: { unschedulable: true }, metadata: { annotations: { [DRAINED_BY]: mark } } });

export const drainPodsScript = (a: KubeAccess, node: string, timeoutSec: number): string =>
  `${kubectlPrelude(a)}\nkw drain ${shq(node)} --ignore-daemonsets --delete-emptydir-data --timeout=${timeoutSec}s`;

/**
 * The mark alone taken off a node someone uncordoned by hand while this run held it, only if the
 * node has not changed since it was read (`resourceVersion`): a cordon since is left marked.
 */
export const unmarkScript = (a: KubeAccess, node: string, resourceVersion?: string): string =>
  patchScript(a, node, { metadata: { annotations: { [DRAINED_BY]: null }, ...(resourceVersion ? { resourceVersion } : {}) } });

/**
 * Uncordon and unmark in one patch; with `resourceVersion` (the node as last read) only if the
 * node has not changed since: the API server answers Conflict otherwise.
 */
export const uncordonScript = (a: KubeAccess, node: string, resourceVersion?: string): string =>
  patchScript(a, node, {
    spec: { unschedulable: false },
    metadata: { annotations: { [DRAINED_BY]: null }, ...(resourceVersion ? { resourceVersion } : {}) },
  });

export interface NodeCordon {
  cordoned: boolean;
  /** The annotation as it is, whoever cordoned or uncordoned the node since. */
  annotation?: string;
  /** racksmith's mark, when the cordon is racksmith's: the annotation, and spec.unschedulable last set by manager racksmith. */
  mark?: string;
  /** The node's version as read (metadata.resourceVersion): a patch's precondition. */
  resourceVersion?: string;
}

/** What `kubectl get node -o json --show-managed-fields` says of the node's cordon; undefined when it is not a node's JSON. */
export function parseNodeCordon(stdout: string): NodeCordon | undefined {
  let n: {
    spec?: { unschedulable?: boolean };
    metadata?: {
      annotations?: Record<string, string>;
      managedFields?: Array<{ manager?: string; fieldsV1?: Record<string, unknown> }>;
      resourceVersion?: string;
    };
  };
  try {
    n = JSON.parse(stdout) as typeof n;
  } catch {
    return undefined;
  }
  if (typeof n !== 'object' || n === null) return undefined;
  const cordoned = n.spec?.unschedulable === true;
  const owner = n.metadata?.managedFields?.find((m) => {
    const spec = m.fieldsV1?.['f:spec'];
    return typeof spec === 'object' && spec !== null && 'f:unschedulable' in spec;
  })?.manager;
  const mark = n.metadata?.annotations?.[DRAINED_BY];
  const rv = n.metadata?.resourceVersion;
  const version = typeof rv === 'string' && rv ? { resourceVersion: rv } : {};
  const annotated = typeof mark === 'string' ? { annotation: mark } : {};
  return cordoned && mark !== undefined && owner === FIELD_MANAGER
    ? { cordoned, mark, ...annotated, ...version }
    : { cordoned, ...annotated, ...version };
}

const failure = (what: string, r: { code: number | null; stderr: string; stdout: string }): string =>
  `${what} failed (exit ${r.code ?? 'signal'}): ${(r.stderr.trim() || r.stdout.trim()).split('\n').slice(-4).join('\n')}`;

/** kubectl's error for a patch whose resourceVersion is no longer the node's. */
const CONFLICT = /^Error from server \(Conflict\)/m;
/**
 * Uncordons of a node that keeps changing under them (Conflict) before the resume fails, a pause
 * longer each time in between (the kubelet writes its status in bursts after a restart).
 */
const UNCORDON_ATTEMPTS = 6;
const CONFLICT_PAUSE_MS = 200;

/** The command an operator puts a node back with (a blocked drain's detail says it). */
const byHand = (node: string): string => `kubectl uncordon ${shq(node)}`;

/** A node someone else cordoned, as the output says it. */
const CORDONED = 'cordoned (spec.unschedulable)';

/** Whose racksmith's cordon is: this run's own, or another run's (ownerOf); undefined: not racksmith's. */
function whoseCordon(c: NodeCordon, o: DrainOptions): DrainOwner | undefined {
  if (c.mark === undefined) return undefined;
  if (c.mark === o.reason) return { takeOver: true, why: 'still cordoned by this run' };
  return o.ownerOf?.(c.mark);
}

export function kubernetesDrain(a: KubeAccess): DrainProvider {
  return {
    name: 'kubernetes',
    async drain(exec: DrainExec, node: string, o: DrainOptions): Promise<DrainOutcome> {
      const state = await exec(nodeScript(a, node));
      if (state.code !== 0) return { kind: 'failed', detail: failure(`kubectl get node ${node}`, state), drained: false };
      const cordon = parseNodeCordon(state.stdout);
      if (!cordon) return { kind: 'failed', detail: `kubectl get node ${node}: not a node's JSON`, drained: false };
      const owner = cordon.cordoned ? whoseCordon(cordon, o) : undefined;
      const action = drainAction(cordon.cordoned, owner);
      if (action === 'blocked') return { kind: 'failed', detail: blockedDetail(CORDONED, owner!.why, byHand(node)), drained: false };
      const already = action === 'already';
      if (!already) {
        // (taken over: the mark becomes this run's, so that a later run asks about this one)
        const c = await exec(cordonScript(a, node, o.reason));
        // (killed, no exit status: the cordon may have gone through, and an uncordon undoes it either way)
        const maybe = c.code === null || owner?.takeOver === true;
        if (c.code === 0 || maybe) o.takenOut?.();
        if (c.code !== 0) return { kind: 'failed', detail: failure(`kubectl cordon ${node}`, c), drained: maybe };
      }
      // (Ctrl-C kills this on the controller: the session aborts its drain connection, and an exec
      // that the abort meets as it starts throws instead of ending killed: the same stop either way)
      const d = await exec(drainPodsScript(a, node, o.timeoutSec)).catch((e: unknown) => {
        if (!o.signal?.aborted) throw e;
        return { code: null, stdout: '', stderr: '' };
      });
      if (d.code !== 0) {
        const detail = o.signal?.aborted
          ? `${stopReason(o.signal)}: kubectl drain ${node} was stopped`
          : failure(`kubectl drain ${node}`, d);
        return { kind: 'failed', detail: owner?.takeOver ? `${detail} (${owner.why})` : detail, drained: !already };
      }
      if (owner?.takeOver) return { kind: 'drained', detail: owner.why };
      if (already) return { kind: 'already', detail: CORDONED };
      return { kind: 'drained' };
    },
    async outOfScheduling(exec: DrainExec, node: string, ownerOf?: DrainOptions['ownerOf']): Promise<OutOfScheduling> {
      const state = await exec(nodeScript(a, node));
      if (state.code !== 0) throw new Error(failure(`kubectl get node ${node}`, state));
      const cordon = parseNodeCordon(state.stdout);
      if (!cordon) throw new Error(`kubectl get node ${node}: not a node's JSON`);
      const owner = !cordon.cordoned || cordon.mark === undefined ? undefined : ownerOf?.(cordon.mark);
      const action = drainAction(cordon.cordoned, owner);
      if (action === 'drain') return undefined;
      if (action === 'blocked') return { blocked: blockedDetail(CORDONED, owner!.why, byHand(node)) };
      return action === 'take-over' ? { takeOver: owner!.why } : CORDONED;
    },
    async clusterOf(exec: DrainExec): Promise<string> {
      const r = await exec(clusterScript(a));
      if (r.code !== 0) throw new Error(failure('kubectl get namespace kube-system', r));
      const uid = r.stdout.trim();
      if (!/^[0-9a-f-]{8,64}$/i.test(uid))
        throw new Error(`kubectl get namespace kube-system: no UID (${JSON.stringify(uid.slice(0, 80))})`);
      return uid;
    },
    async resume(exec: DrainExec, node: string, marks: readonly string[]): Promise<ResumeOutcome> {
      // (uncordoned only under this run's mark, and only as read: an operator's cordon since, or
      // the annotation removed to keep the node out, leaves it cordoned; a change between the read
      // and the patch, the kubelet's status included, is a Conflict: the node is read and asked about again)
      let conflict: { code: number | null; stdout: string; stderr: string } | undefined;
      /** Found uncordoned under this run's mark (by hand) at an earlier read. */
      let byHand = false;
      for (let attempt = 1; ; attempt++) {
        const state = await exec(nodeScript(a, node));
        if (state.code !== 0) return failure(`kubectl get node ${node}`, state);
        const cordon = parseNodeCordon(state.stdout);
        if (!cordon) return `kubectl get node ${node}: not a node's JSON`;
        if (!cordon.cordoned) {
          // (uncordoned by hand while this run held it: said, and its mark, this run's, taken off
          // too, on the node as read: a Conflict (the kubelet's status) is read and tried again; a
          // failure leaves only a stale annotation, read as nobody's, and is said)
          if (cordon.annotation === undefined || !marks.includes(cordon.annotation) || !cordon.resourceVersion)
            return byHand ? { back: UNCORDONED_BY_HAND } : undefined;
          byHand = true;
          const u = await exec(unmarkScript(a, node, cordon.resourceVersion)).catch((e: unknown) => ({
            code: null,
            stdout: '',
            stderr: (e as Error).message,
          }));
          if (u.code === 0) return { back: `${UNCORDONED_BY_HAND}; its mark taken off` };
          if (CONFLICT.test(u.stderr) && attempt <= UNCORDON_ATTEMPTS) {
            await new Promise((go) => setTimeout(go, CONFLICT_PAUSE_MS * attempt));
            continue;
          }
          return {
            back: `${UNCORDONED_BY_HAND}; its mark is left, read as nobody's (${failure(`kubectl patch node ${node}`, u)}); \`kubectl annotate node ${node} ${DRAINED_BY}-\` removes it`,
          };
        }
        if (cordon.mark === undefined || !marks.includes(cordon.mark)) return { someoneElses: someoneElsesDetail(CORDONED) };
        if (conflict && attempt > UNCORDON_ATTEMPTS)
          return `${failure(`kubectl uncordon ${node}`, conflict)} (the node changed under each of ${UNCORDON_ATTEMPTS} uncordons)`;
        const r = await exec(uncordonScript(a, node, cordon.resourceVersion));
        if (r.code === 0) return undefined;
        if (!CONFLICT.test(r.stderr)) return failure(`kubectl uncordon ${node}`, r);
        conflict = r;
        await new Promise((go) => setTimeout(go, CONFLICT_PAUSE_MS * attempt));
      }
    },
  };
}
