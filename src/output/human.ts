import { color, figures, ListrLogger, ProcessOutput } from 'listr2';
import type { RunEvent, RunOutcome } from '../engine/index.ts';
import type { ResourceResult } from '../engine/events.ts';
import { FleetLine } from './fleet-line.ts';
import { liveList, type LiveLine } from './live-renderer.ts';
import { groupChanges, foldChangeValues, type FoldedChangeGroup } from './group-changes.ts';
import { foldProblems, type Problem } from './fold-problems.ts';
import { hostList } from './host-ranges.ts';
import { slotLine } from './fold-values.ts';
import { recapTable } from './recap.ts';
import { printable, printableLines } from '../util/printable.ts';
import { drainLines } from './drain-lines.ts';

export interface HumanOptions {
  diff: boolean;
  verbose: number;
  /** The recap: a totals row and the hosts that are not ok (default), or a row per host (`full`; also with -v). */
  recap?: 'summary' | 'full';
  out?: NodeJS.WriteStream;
}

/**
 * A terminal lists at most this many hosts, a line each; more are one line for the fleet
 * (fleet-line.ts): listr2 redraws every line at each change.
 */
export const MAX_LISTED_HOSTS = 20;

interface Counts {
  ok: number;
  changed: number;
  /** Check mode: changes waiting on another change (HostRecap.pending). */
  pending?: number;
  failed: number;
  skipped: number;
}

/** A host's line: its counts so far (a terminal's live view), how to retitle it and end it. */
interface HostProgress extends Counts, LiveLine {}

/**
 * The operator's view, on stderr: live per-host progress (listr2), then diffs folded across
 * hosts, failures, and the recap table.
 */
export class HumanReporter {
  private readonly out: NodeJS.WriteStream;
  private readonly progress = new Map<string, HostProgress>();
  private list?: Promise<unknown>;
  /** In a terminal, a fleet of more than MAX_LISTED_HOSTS hosts: one line for all of them. */
  private fleet?: FleetLine;

  /**
   * Progress lines are redrawn in place (a terminal), not printed line by line. listr2 draws its
   * live list only when stdout is a terminal too (else it falls back to printing lines): with
   * `--json > run.ndjson` the progress on stderr is printed line by line, here.
   */
  private readonly liveTitles: boolean;

  constructor(private readonly o: HumanOptions) {
    this.out = o.out ?? process.stderr;
    this.liveTitles = !!this.out.isTTY && process.stdout.isTTY === true;
  }

  /** --drain's events, for the Drains section at the end. */
  private readonly drains: Array<Extract<RunEvent, { type: 'drain' | 'resume' }>> = [];

  onEvent = (e: RunEvent): void => {
    if (e.type === 'drain' || e.type === 'resume') this.drains.push(e);
    if (e.type === 'run_start') this.startProgress(e.hosts, e.check);
    else if (this.fleet) this.fleet.onEvent(e);
    else if (e.type === 'resource') {
      // Without a terminal a host's line is printed when it starts and when it finishes, with
      // its recap's counts: nothing to count or draw here.
      if (!this.liveTitles) return;
      const p = this.progress.get(e.host);
      if (!p) return;
      if (e.pending !== undefined) p.pending = (p.pending ?? 0) + 1;
      else p[e.status]++;
      // A host's resources are decided in a burst: its line is redrawn once per burst.
      this.stale.add(e.host);
      if (this.stale.size === 1) setImmediate(this.retitle);
    } else if (e.type === 'host_recap') {
      const p = this.progress.get(e.host);
      if (!p) return;
      this.stale.delete(e.host);
      this.title(p, e.host, e); // the host's final counts
      if (e.unreachable) p.title(`${printable(e.host)}: UNREACHABLE`);
      // never a success mark for a host that failed, was unreachable or was not run
      p.done(e.failed > 0 || e.unreachable || e.error !== undefined);
    }
  };

  /** Hosts whose counts moved since their line was last drawn. */
  private readonly stale = new Set<string>();
  private readonly retitle = () => {
    for (const host of this.stale) {
      const p = this.progress.get(host)!;
      this.title(p, host, p);
    }
    this.stale.clear();
  };

  private title(p: HostProgress, host: string, n: Counts): void {
    const pending = n.pending ? `, ${n.pending} pending` : '';
    p.title(
      `${printable(host)}: ${n.ok} ok, ${n.changed} changed${pending}, ${n.failed} failed${n.skipped ? `, ${n.skipped} skipped` : ''}`,
    );
  }

  private startProgress(hosts: string[], check: boolean): void {
    const doing = check ? 'checking' : 'converging';
    if (!this.liveTitles) return this.startLines(hosts, doing);
    const logger = new ListrLogger({ processOutput: new ProcessOutput(this.out, this.out) });
    if (hosts.length > Math.min(MAX_LISTED_HOSTS, (this.out.rows || 24) - 4)) {
      this.fleet = new FleetLine(hosts.length, doing, logger);
      this.list = this.fleet.list;
    } else this.startLiveList(hosts, doing, logger);
  }

  /** In a terminal: listr2's live list, a line per host redrawn as its counts move. */
  private startLiveList(hosts: string[], doing: string, logger: ListrLogger): void {
    const { lines, done } = liveList(
      hosts.map((host) => `${printable(host)}: ${doing}`),
      logger,
    );
    hosts.forEach((host, i) => this.progress.set(host, { ok: 0, changed: 0, failed: 0, skipped: 0, ...lines[i] }));
    this.list = done;
  }

  /**
   * Without a terminal (CI logs, pipes): a line when the run starts, then a line for each host
   * that ends not ok (failed, unreachable, not run) as it ends, styled as listr2's line renderer
   * does (same icons and colours). Hosts that converged or changed print nothing here: their
   * changes are folded in the report and they are counted in the recap, so a converged fleet of
   * any size prints a constant number of lines.
   */
  private startLines(hosts: string[], doing: string): void {
    for (const host of hosts) {
      let title = `${printable(host)}: ${doing}`;
      const done = (failed?: boolean) => failed && this.out.write(`${color.red(figures.cross)} ${title}\n`);
      this.progress.set(host, { ok: 0, changed: 0, failed: 0, skipped: 0, title: (s) => (title = s), done });
    }
    this.out.write(`${color.yellow(figures.pointer)} ${doing} ${hosts.length} ${hosts.length === 1 ? 'host' : 'hosts'}\n`);
  }

  /** Each change once with its hosts; changes that differ only in values once, with the values (‹1›: …). */
  private writeGroups(groups: readonly FoldedChangeGroup[]): void {
    const w = (s = '') => this.out.write(s + '\n');
    for (const g of groups) {
      w(`\n● ${printable(g.id)}  [${printable(hostList(g.hosts))}]`);
      for (const s of g.summaries) w(`    ${printable(s)}`);
      g.values.forEach((v, i) => w(`      ${printable(slotLine(i + 1, v))}`));
      if (this.o.diff) for (const d of g.diffs) w(indent(printableLines(d)));
    }
  }

  async finish(outcome: RunOutcome): Promise<void> {
    // The run is over: a live line still open (a run cut short) must not keep the list waiting.
    this.fleet?.end();
    if (this.liveTitles) for (const p of this.progress.values()) p.done();
    await this.list;
    const w = (s = '') => this.out.write(s + '\n');
    const hostOrder = outcome.hosts.map((h) => h.host);
    // (diffs tell changes apart only where they are shown)
    const groups = foldChangeValues(
      groupChanges(
        outcome.results.filter((r) => r.pending === undefined),
        hostOrder,
        this.o.diff,
      ),
      hostOrder,
    );
    // Check mode: changes that wait on one of those (what they do is known only once it applied).
    const pending = foldChangeValues(
      groupChanges(
        outcome.results.filter((r) => r.pending !== undefined),
        hostOrder,
        this.o.diff,
      ),
      hostOrder,
    );
    // Summaries always (folded across hosts); file diffs with --diff.
    if (groups.length) {
      w();
      w(outcome.check ? 'Changes that would be made (check mode: nothing was changed):' : 'Changes made:');
      this.writeGroups(groups);
    }
    if (pending.length) {
      w();
      w('Pending on those changes (known once they apply; not counted as changes):');
      this.writeGroups(pending);
    }
    if (this.drains.length) {
      w();
      w(outcome.check ? 'Drains (--drain; check mode: nothing was drained):' : 'Drains (--drain):');
      for (const line of drainLines(this.drains)) w(line);
    }
    const failures = outcome.results.filter((r) => r.status === 'failed');
    const unreachable = outcome.hosts.filter((h) => h.unreachable || h.error);
    if (failures.length || unreachable.length) {
      w();
      w('Problems:');
      // (a message many hosts share once, with the hosts)
      const problems: Problem[] = unreachable.map((h) => ({
        host: h.host,
        text: [h.unreachable ? 'UNREACHABLE' : '', h.error ? withoutHost(h.error, h.host) : ''].filter(Boolean).join(': '),
      }));
      for (const line of foldProblems([...problems, ...foldedByHost(failures, 'FAILED')])) w(line);
    }
    // Never a silent skip: each skipped resource (a restart that cannot run here, a dependant of
    // a failure) with its reason.
    const skipped = outcome.results.filter((r) => r.status === 'skipped');
    if (skipped.length) {
      w();
      w('Skipped:');
      for (const line of foldProblems(foldedByHost(skipped, 'SKIPPED'))) w(line);
    }
    if (this.o.verbose > 1) for (const r of outcome.results) w(`  ${printable(r.host)}: ${printable(r.id)}: ${r.status}`);
    w();
    w(recapTable(outcome, this.o.recap === 'full' || this.o.verbose > 0));
  }
}

/**
 * A problem per result, `id: MARK: reason` for its host; a host's results with the same reason
 * (every resource of a host whose escalation was refused) are one, naming how many and the first few.
 */
export function foldedByHost(results: readonly ResourceResult[], mark: string): Problem[] {
  const groups = new Map<string, ResourceResult[]>();
  for (const r of results) {
    const key = `${r.host}\0${r.error ?? ''}`;
    const g = groups.get(key);
    if (g) g.push(r);
    else groups.set(key, [r]);
  }
  return [...groups.values()].map((g) => {
    const ids =
      g.length === 1
        ? g[0].id
        : `${g.length} resources (${g
            .slice(0, 3)
            .map((r) => r.id)
            .join(', ')}${g.length > 3 ? ', …' : ''})`;
    return { host: g[0].host, text: `${ids}: ${mark}: ${withoutHost(String(g[0].error), g[0].host)}` };
  });
}

/** A message without its leading `host: ` (the line names the host already, and hosts then share it). */
function withoutHost(message: string, host: string): string {
  return message.startsWith(`${host}: `) ? message.slice(host.length + 2) : message;
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}
