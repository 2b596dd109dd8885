import { DefaultRenderer, Listr, type ListrLogger } from 'listr2';

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

/** A line of the live list: retitled and ended whenever, also before listr2 has started it. */
export interface LiveLine {
  title: (s: string) => void;
  /** Ends the line: with listr2's success mark, or its failure mark when `failed`. */
  done: (failed?: boolean) => void;
}

/**
 * listr2's live list of these lines on `logger`'s stream, drawn by ThrottledRenderer (should
 * listr2 fall back to printing lines, as it does when stdout is no terminal, those go to the
 * same stream, never to stdout). `done` resolves once every line has ended. Each line can be
 * retitled and ended at once, not only once listr2 starts its task (some turns of the event loop
 * later): a fast run may end a line before that, and a line never ended would keep the list,
 * and the CLI, waiting for ever.
 */
export function liveList(titles: readonly string[], logger: ListrLogger): { lines: LiveLine[]; done: Promise<unknown> } {
  const lines: LiveLine[] = [];
  const tasks = titles.map((first) => {
    let title = first;
    let task: { title: string } | undefined;
    let end: (failed?: boolean) => void = () => {};
    const ended = new Promise<void>((resolve, reject) => (end = (failed) => (failed ? reject(new Error(title)) : resolve())));
    // (a line may fail before listr2 starts its task: the rejection waits for it, not unhandled)
    ended.catch(() => undefined);
    lines.push({ title: (s) => ((title = s), task && (task.title = s)), done: (failed) => end(failed) });
    return {
      title,
      task: (_: unknown, t: { title: string }) => {
        task = t;
        t.title = title;
        return ended;
      },
    };
  });
  const done = new Listr(tasks, {
    concurrent: true,
    exitOnError: false,
    registerSignalListeners: false,
    renderer: ThrottledRenderer,
    // a failed line keeps its title (its counts), in listr2's failure style
    rendererOptions: { logger, collapseSubtasks: false, showErrorMessage: false },
    fallbackRendererOptions: { logger },
  }).run();
  return { lines, done };
}
