/**
 * The pods/eviction subresource (policy/v1 Eviction), as `kubectl drain` uses it: POST
 * .../namespaces/NS/pods/NAME/eviction deletes the pod unless a PodDisruptionBudget of its
 * namespace that selects it allows no disruption now, which is HTTP 429 TooManyRequests (kubectl
 * drain retries until its --timeout). Budgets: spec.maxUnavailable or spec.minAvailable as whole
 * numbers (percentages are not implemented), counted over the pods the budget selects right now
 * (every pod counts as healthy: the double's pods do not run).
 */
import type { Cluster } from './cluster.ts';
import { ApiError } from './errors.ts';
import { parseLabelSelector } from './selectors.ts';
import type { KubeObject, ResourceType } from './types.ts';

const PDB = { group: 'policy', plural: 'poddisruptionbudgets' };

/** `matchLabels` of a budget's selector as a label selector string (matchExpressions are not implemented). */
function selectorOf(pdb: KubeObject): string {
  const spec = (pdb.spec ?? {}) as { selector?: { matchLabels?: Record<string, string> } };
  return Object.entries(spec.selector?.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** How many of `pods` the budget lets go now. */
function allowed(pdb: KubeObject, selected: number): number {
  const spec = (pdb.spec ?? {}) as { maxUnavailable?: unknown; minAvailable?: unknown };
  if (typeof spec.maxUnavailable === 'number') return spec.maxUnavailable;
  if (typeof spec.minAvailable === 'number') return selected - spec.minAvailable;
  return Number.POSITIVE_INFINITY;
}

/** Evict pod `name` of `namespace`: the Status to send, or an ApiError (404 no pod, 429 a budget). */
export function evict(cluster: Cluster, podType: ResourceType, namespace: string, name: string): Record<string, unknown> {
  const pod = cluster.get(podType, namespace, name); // 404 when absent
  const pods = cluster.list(podType, namespace, null, null);
  for (const pdb of cluster.store.list(PDB)) {
    if (pdb.metadata.namespace !== namespace) continue;
    const sel = selectorOf(pdb);
    const matches = parseLabelSelector(sel);
    if (!sel || !matches(pod)) continue;
    const selected = pods.filter(matches).length;
    if (allowed(pdb, selected) <= 0)
      throw new ApiError(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", {
        causes: [
          {
            reason: 'DisruptionBudget',
            message: `The disruption budget ${pdb.metadata.name} needs ${selected} healthy pods and has ${selected} currently`,
          },
        ],
      });
  }
  cluster.delete(podType, 'v1', namespace, name, false);
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
}
