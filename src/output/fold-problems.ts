import { printable, printableLines } from '../util/printable.ts';
import { clusterByValues, slotLine } from './fold-values.ts';
import { hostList } from './host-ranges.ts';

/** One host's problem as the report words it: `UNREACHABLE: …`, `file:/x: FAILED: …`. */
export interface Problem {
  host: string;
  text: string;
}

/**
 * Problems as lines, a message shared by many hosts once with the hosts (`tb[1-30] (30 hosts):
 * UNREACHABLE: …`), and messages that differ only in a value (an address, a device) once with
 * the values under it: a wrong sudo password on 300 hosts is one line, not 300.
 */
export function foldProblems(problems: readonly Problem[]): string[] {
  const same = new Map<string, string[]>();
  for (const p of problems) {
    const hosts = same.get(p.text);
    if (hosts) hosts.push(p.host);
    else same.set(p.text, [p.host]);
  }
  const lines: string[] = [];
  for (const c of clusterByValues(
    [...same],
    () => '',
    ([text]) => [text],
  )) {
    const hosts = [...new Set(c.members.flatMap(([, h]) => h))];
    lines.push(`  ${printable(hostList(hosts))}: ${printableLines(c.templates[0])}`);
    c.values.forEach((v, i) => lines.push(`      ${printable(slotLine(i + 1, v))}`));
  }
  return lines;
}
