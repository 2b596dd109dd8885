import type { HostStatus, Report, ReportItem } from '../report/model.ts';
import { failedHostsText, type PlanFile } from './plan.ts';

/** Resource ids are `kind:what` (`file:/etc/x`): a plan made before kinds were recorded shows that part. */
const kindOfId = (id: string) => id.slice(0, Math.max(0, id.indexOf(':'))) || id;

/**
 * A saved plan as a report: per host and play the resources it would change (or that wait on
 * another's change), with the diffs that were reviewed. `verified` false: said as a warning in
 * every view (the plan was edited, or signed under another key).
 */
export function planReport(plan: PlanFile, file: string, verified: boolean): Report {
  const items: ReportItem[] = [];
  // in the selection's order (the inventory's), not the order the hosts finished in
  const names = [...new Set([...plan.selection.filter((h) => h in plan.hosts), ...Object.keys(plan.hosts)])];
  const hosts = names.map((name) => {
    let status: HostStatus = 'ok';
    for (const [play, resources] of Object.entries(plan.hosts[name])) {
      for (const [id, e] of Object.entries(resources)) {
        // a resource that failed in the check run: shown with its error (nothing of it was reviewed)
        if (e.error !== undefined) {
          items.push({ host: name, play, id, kind: e.kind ?? kindOfId(id), status: 'failed', summaries: [], diffs: [], note: e.error });
          continue;
        }
        if (!e.changes.length && e.pending === undefined) continue;
        const pending = e.pending !== undefined;
        if (!pending) status = 'changed';
        else if (status === 'ok') status = 'pending';
        items.push({
          host: name,
          play,
          id,
          kind: e.kind ?? kindOfId(id),
          status: pending ? 'pending' : 'changed',
          summaries: e.changes,
          diffs: e.diffs ?? [],
          ...(e.pending !== undefined ? { note: e.pending } : {}),
        });
      }
    }
    const error = plan.failed?.[name];
    return { name, groups: plan.groups[name] ?? [], ...(error !== undefined ? { status: 'failed' as const, error } : { status }) };
  });
  const failed = failedHostsText(plan);
  const notReviewed = plan.selection.filter((h) => !(h in plan.hosts));
  return {
    kind: 'plan',
    title: `Plan ${file}`,
    meta: [
      ['made', plan.createdAt],
      ['argv', plan.argv.join(' ')],
      ['cwd', plan.cwd],
      [
        'selection',
        `${plan.selection.length} host(s)${notReviewed.length ? `, ${notReviewed.length} not reviewed (unreachable or failed)` : ''}`,
      ],
      ['signature', verified ? 'verified' : 'DOES NOT VERIFY'],
    ],
    warnings: [
      ...(verified
        ? []
        : [
            "this plan was edited since it was made, or signed under another key (its signature does not match this installation's key or --plan-key): what it shows may not be what was reviewed, and `provision apply` refuses it",
          ]),
      ...(failed ? [`the check run failed on ${failed}: what failed was never reviewed, and \`provision apply\` refuses this plan`] : []),
    ],
    hosts,
    items,
  };
}
