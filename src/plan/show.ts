import type { HostStatus, Report, ReportItem } from '../report/model.ts';
import { blockedHostsText, failedHostsText, unreachedHostsText, type PlanFile } from './plan.ts';

/** Resource ids are `kind:what` (`file:/etc/x`): a plan made before kinds were recorded shows that part. */
const kindOfId = (id: string) => id.slice(0, Math.max(0, id.indexOf(':'))) || id;

/**
 * A saved plan as a report: per host and play the resources it would change (or that wait on
 * another's change), with the diffs that were reviewed. `verified` false: said as a warning in
 * every view (the plan was edited, or signed under another key).
 */
export function planReport(plan: PlanFile, file: string, verified: boolean): Report {
  const items: ReportItem[] = [];
  const unreached = plan.unreached ?? {};
  const failedHosts = plan.failed ?? {};
  const named = (h: string) => Object.hasOwn(plan.hosts, h) || Object.hasOwn(unreached, h) || Object.hasOwn(failedHosts, h);
  // in the selection's order (the inventory's), not the order the hosts finished in; the hosts
  // not reached (and those never run) with the others, with why
  const names = [
    ...new Set([...plan.selection.filter(named), ...Object.keys(plan.hosts), ...Object.keys(unreached), ...Object.keys(failedHosts)]),
  ];
  const hosts = names.map((name) => {
    if (Object.hasOwn(unreached, name))
      return { name, groups: plan.groups[name] ?? [], status: 'unreachable' as const, error: unreached[name] };
    let status: HostStatus = 'ok';
    for (const [play, resources] of Object.entries(Object.hasOwn(plan.hosts, name) ? plan.hosts[name] : {})) {
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
    const error = Object.hasOwn(failedHosts, name) ? failedHosts[name] : undefined;
    return { name, groups: plan.groups[name] ?? [], ...(error !== undefined ? { status: 'failed' as const, error } : { status }) };
  });
  const failed = failedHostsText(plan);
  const notReached = unreachedHostsText(plan);
  const blocked = blockedHostsText(plan);
  const count = (n: number, what: string) => (n ? [`${n} ${what}`] : []);
  const selectionParts = [
    ...count(Object.keys(unreached).length, 'not reached'),
    ...count(Object.keys(failedHosts).length, 'failed'),
    // (none in a plan this racksmith wrote: each host is reviewed, not reached or failed)
    ...count(plan.selection.filter((h) => !named(h)).length, 'not reviewed'),
  ];
  return {
    kind: 'plan',
    title: `Plan ${file}`,
    meta: [
      ['made', plan.createdAt],
      ['argv', plan.argv.join(' ')],
      ['cwd', plan.cwd],
      ['selection', `${plan.selection.length} host(s)${selectionParts.length ? `, ${selectionParts.join(', ')}` : ''}`],
      ['signature', verified ? 'verified' : 'DOES NOT VERIFY'],
    ],
    warnings: [
      ...(verified
        ? []
        : [
            "this plan was edited since it was made, or signed under another key (its signature does not match this installation's key or --plan-key): what it shows may not be what was reviewed, and `provision apply` refuses it",
          ]),
      ...(failed ? [`the check run failed on ${failed}: what failed was never reviewed, and \`provision apply\` refuses this plan`] : []),
      ...(notReached
        ? [`the check run did not reach ${notReached}: their changes were never reviewed, and \`provision apply\` refuses this plan`]
        : []),
      // (not refused: the apply asks the scheduler again, and fails only the drains still blocked then)
      ...(blocked
        ? [
            `${blocked} out of scheduling under another racksmith run's drain (Drains): their disruptive changes are not applied while that run holds their node; \`provision apply\` fails their drain unless the node is free by then`,
          ]
        : []),
    ],
    hosts,
    items,
    ...(plan.drains
      ? {
          drains: {
            timeoutSec: plan.drains.timeoutSec,
            hosts: names.filter((h) => Object.hasOwn(plan.drains!.hosts, h)).map((host) => ({ host, ...plan.drains!.hosts[host] })),
          },
        }
      : {}),
  };
}
