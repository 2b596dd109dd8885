import { hostList } from '../output/host-ranges.ts';
import { printable, printableLines } from '../util/printable.ts';
import { drainsText, runDrainsText } from './drains.ts';
import { groupItems, groupsByHost, hostTotals, type ItemGroup, type Report } from './model.ts';

const indent = (text: string, pad: string) =>
  text
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => pad + l)
    .join('\n');

function groupText(g: ItemGroup, n: number): string {
  const lines = [
    `[${n}] ${printable(g.play)} / ${printable(g.id)} (${g.status}) on ${g.hosts.length} host(s): ${printable(hostList(g.hosts))}`,
  ];
  for (const s of g.summaries) lines.push(`      ${printable(s)}`);
  if (g.note !== undefined) lines.push(`      ${g.status === 'failed' ? 'error' : 'waits on'}: ${printable(g.note)}`);
  for (const d of g.diffs) lines.push(indent(printableLines(d), '      | '));
  return lines.join('\n');
}

/**
 * The report for a terminal: warnings first, the facts, each distinct change once with its hosts
 * and diffs, then per host the changes it has (by number: the diffs are not repeated).
 */
export function reportText(report: Report): string {
  const out: string[] = [];
  for (const w of report.warnings) out.push(`WARNING: ${printable(w)}`);
  out.push(printable(report.title));
  for (const [k, v] of report.meta) out.push(`  ${k}: ${printable(v)}`);
  const totals = hostTotals(report.hosts)
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
  out.push(`  hosts: ${report.hosts.length}${totals ? ` (${totals})` : ''}`);
  const groups = groupItems(report);
  out.push('', groups.length ? `Changes (${groups.length} distinct, each once with its hosts):` : 'No changes.');
  groups.forEach((g, i) => out.push(groupText(g, i + 1)));
  const byHost = groupsByHost(report, groups);
  // (a host not ok is listed even with no change anywhere: under its own heading, not under "No changes.")
  if (groups.length || report.hosts.some((h) => h.status !== 'ok')) out.push('', 'Per host:');
  for (const h of report.hosts) {
    const mine = byHost.get(h.name) ?? [];
    if (!mine.length && h.status === 'ok') continue;
    const error = h.error !== undefined ? `: ${printable(h.error)}` : '';
    out.push(
      `  ${printable(h.name)} (${h.status}${error})${mine.length ? `: ${mine.map((i) => `[${i + 1}] ${printable(groups[i].id)}`).join(', ')}` : ''}`,
    );
  }
  const quiet = report.hosts.filter((h) => h.status === 'ok' && !(byHost.get(h.name) ?? []).length).length;
  if (groups.length && quiet) out.push(`  ${quiet} host(s) with no change`);
  if (report.drains) out.push('', ...drainsText(report.drains));
  if (report.runDrains) out.push('', ...runDrainsText(report.runDrains));
  for (const w of report.warnings) out.push(`WARNING: ${printable(w)}`);
  return out.join('\n') + '\n';
}

/** The report as one JSON document: the facts, the distinct changes with their hosts, and per host the indexes of its changes. */
export function reportJson(report: Report): string {
  const groups = groupItems(report);
  const byHost = groupsByHost(report, groups);
  return (
    JSON.stringify({
      kind: report.kind,
      title: report.title,
      warnings: report.warnings,
      meta: Object.fromEntries(report.meta),
      groups,
      hosts: report.hosts.map((h) => ({ ...h, changes: byHost.get(h.name) ?? [] })),
      ...(report.drains ? { drains: report.drains } : {}),
      ...(report.runDrains ? { runDrains: report.runDrains } : {}),
    }) + '\n'
  );
}
