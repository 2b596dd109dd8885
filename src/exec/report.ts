import { printable } from '../util/printable.ts';
import { clusterByValues, slotLine } from '../output/fold-values.ts';
import { foldHostNames } from '../output/host-ranges.ts';
import { cutNote, type BoundedText } from './output-bound.ts';
import type { ExecGroup, ExecHostResult } from './result.ts';

/** A header: the hosts folded (`tb[1-29]`), how many, and how the command ended there. */
function header(hosts: readonly string[], ending: string): string {
  const count = hosts.length > 1 ? ` (${hosts.length} hosts)` : '';
  return `==== ${printable(foldHostNames(hosts))}${count}: ${ending}`;
}

/** `exit 0`, `exit 3`, `UNREACHABLE: connection refused`, `FAILED: become (sudo to root) failed: …`. */
export function ending(r: ExecHostResult): string {
  if (r.status === 'unreachable') return `UNREACHABLE${r.error ? `: ${printable(r.error)}` : ''}`;
  if (r.exitCode === null) return `FAILED${r.error ? `: ${printable(r.error)}` : ''}`;
  return `exit ${r.exitCode}`;
}

/**
 * The folded view, as `dshbak -c` prints it: each group's header, its stdout, then its stderr
 * under a `-- stderr` line (when there is any), each with the note of what was cut.
 */
export function renderGroups(groups: readonly ExecGroup[]): string {
  let out = '';
  // Groups without output whose endings differ only in a value (the address of each unreachable
  // host) are one header, the values under it; a group with output stays its own.
  const clusters = clusterByValues(
    groups,
    (g) => (hasOutput(g.result) ? `output ${g.hosts[0]}` : g.result.status),
    (g) => [ending(g.result)],
  );
  for (const c of clusters) {
    out += `${header(
      c.members.flatMap((g) => g.hosts),
      c.templates[0],
    )}\n`;
    c.values.forEach((v, i) => (out += `  ${printable(slotLine(i + 1, v))}\n`));
    const r = c.members[0].result;
    out += stream(r.stdout);
    if (r.stderr.text || r.stderr.cut) out += `-- stderr\n${stream(r.stderr)}`;
  }
  return out;
}

const hasOutput = (r: ExecHostResult) => !!(r.stdout.text || r.stdout.cut || r.stderr.text || r.stderr.cut);

function stream(s: BoundedText): string {
  let out = s.text ? printableOutput(s.text) : '';
  if (out && !out.endsWith('\n')) out += '\n';
  const note = cutNote(s.cut);
  return note ? `${out}${note}\n` : out;
}

/** A host's output made printable (its escape sequences cannot drive the terminal), its tabs and line breaks kept. */
export function printableOutput(text: string): string {
  return text
    .split('\n')
    .map((line) => line.split('\t').map(printable).join('\t'))
    .join('\n');
}

/** The last line: `30 hosts: 29 exit 0, 1 failed (tb30: exit 3), 0 unreachable`, the failing hosts folded. */
export function execSummary(results: readonly ExecHostResult[]): string {
  const ok = results.filter((r) => r.status === 'ok');
  const failed = results.filter((r) => r.status === 'failed');
  const unreachable = results.filter((r) => r.status === 'unreachable');
  const named = (rs: ExecHostResult[]) => (rs.length ? ` (${printable(foldHostNames(rs.map((r) => r.host)))})` : '');
  return `exec: ${results.length} hosts: ${ok.length} exit 0, ${failed.length} failed${named(failed)}, ${unreachable.length} unreachable${named(unreachable)}`;
}
