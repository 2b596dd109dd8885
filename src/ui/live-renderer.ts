import { DefaultRenderer } from 'listr2';

/** The live list is drawn at most this often. */
export const DRAW_MS = 100;

/**
 * listr2's live list, drawn at most every DRAW_MS. listr2 draws the whole list again at every
 * title change and spinner tick (~0.5 ms a line: wrapping, truncating, measuring), so a burst
 * of hosts retitled together drew it once per host: 20 hosts cost about a CPU-second per second
 * of a run, on the event loop the run itself needs.
 */
export class ThrottledRenderer extends DefaultRenderer {
  private drawTimer: NodeJS.Timeout | undefined;

  override update(): void {
    this.drawTimer ??= setTimeout(() => {
      this.drawTimer = undefined;
      super.update();
    }, DRAW_MS);
  }

  override end(): void {
    clearTimeout(this.drawTimer);
    this.drawTimer = undefined;
    super.end();
  }
}
