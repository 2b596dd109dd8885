import type { ListrLogger } from 'listr2';
import type { RunEvent } from '../engine/events.ts';
import { liveList, type LiveLine } from './live-renderer.ts';

/**
 * In a terminal, a fleet too big to list host by host: one live line with the play, the hosts
 * started in it and the resources decided so far. listr2 draws every line of its list each time
 * (~0.5 ms a line), up to 10 times a second even throttled (live-renderer.ts): 300 host lines
 * would take more CPU than the run, on the event loop the run itself needs (drawn at every
 * change, as listr2 does unthrottled, they took ~2 minutes in a run of 2 seconds).
 */
export class FleetLine {
  readonly list: Promise<unknown>;
  private play = '';
  private playHosts = 0;
  private started = 0;
  private readonly decided = { ok: 0, changed: 0, pending: 0, failed: 0, skipped: 0 };
  private unreachable = 0;
  private ended = false;
  private readonly line: LiveLine;
  private redrawScheduled = false;

  constructor(
    private readonly hosts: number,
    private readonly doing: string,
    logger: ListrLogger,
  ) {
    const { lines, done } = liveList([this.text()], logger);
    this.line = lines[0];
    this.list = done;
  }

  onEvent(e: RunEvent): void {
    switch (e.type) {
      case 'play_start':
        this.play = e.play;
        this.playHosts = e.hosts.length;
        this.started = 0;
        break;
      case 'host_start':
        this.started++;
        break;
      case 'resource':
        if (e.pending !== undefined) this.decided.pending++;
        else this.decided[e.status]++;
        break;
      case 'host_recap':
        if (e.unreachable) this.unreachable++;
        break;
      case 'recap':
        this.end(e.exitCode === 1);
        return;
      default:
        return;
    }
    // A burst of events (hosts finishing together) is drawn once.
    if (!this.redrawScheduled) {
      this.redrawScheduled = true;
      setImmediate(this.redraw);
    }
  }

  /** The final counts, and the list ends (idempotent); marked failed when the run failed. */
  end(failed = false): void {
    if (this.ended) return;
    this.ended = true;
    this.line.title(this.text());
    this.line.done(failed);
  }

  // (not after the end: a redraw still scheduled would draw the line again below the report)
  private readonly redraw = () => {
    this.redrawScheduled = false;
    if (!this.ended) this.line.title(this.text());
  };

  private text(): string {
    const d = this.decided;
    const counts = `${d.ok} ok, ${d.changed} changed${d.pending ? `, ${d.pending} pending` : ''}, ${d.failed} failed${d.skipped ? `, ${d.skipped} skipped` : ''}${this.unreachable ? `, ${this.unreachable} hosts unreachable` : ''}`;
    if (this.ended) return `${this.hosts} hosts: ${counts}`;
    const play = this.play ? ` · ${this.play}: ${this.started}/${this.playHosts} started` : '';
    return `${this.doing} ${this.hosts} hosts${play} · ${counts}`;
  }
}
