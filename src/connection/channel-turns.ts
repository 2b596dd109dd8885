/**
 * Channels sshd refused, asked for again: the one place that does it. sshd opens at most
 * MaxSessions sessions per connection (10 by default) and counts a closed channel's session until
 * its next pass through its loop, so a channel opened as another one closes can be refused though
 * the client holds fewer. A refused channel ran nothing, so it is asked for again: when another of
 * the connection's commands ends (one waiter per end: the session it frees goes to one) or after a
 * pause, whichever comes first. The pause doubles with each refusal in a row (up to MAX_PAUSE_MS)
 * and starts short again once a command has ended. While other commands are under way it is asked
 * for as long as they are (one of them will end), else at most IDLE_ATTEMPTS times in a row. Once the connection is being ended (abort, close) nothing is asked for again: a command
 * started after an abort's kill would outlive it.
 */

/** Tries in a row of a refused channel while no other command of the connection is under way. */
export const IDLE_ATTEMPTS = 4;
const FIRST_PAUSE_MS = 20;
const MAX_PAUSE_MS = 1000;

/** Whether an exec failed because sshd refused its channel (ssh2's CHANNEL_OPEN_FAILURE). */
export const isChannelRefused = (e: unknown): boolean => e instanceof Error && e.message.startsWith('(SSH) Channel open failure:');

export class ChannelTurns {
  /** Commands asking for a channel or holding one (not those waiting for a turn). */
  private active = 0;
  private readonly waiting = new Set<() => void>();
  private stopped = false;
  /** Commands of the connection that have ended (their sessions freed, or about to be). */
  private ends = 0;

  /** `open` (one exec: its channel opened, its command run), asked for again while sshd refuses the channel. */
  async run<T>(open: () => Promise<T>): Promise<T> {
    this.active++;
    try {
      // (refusals in a row with no command of the connection ended since the last: an end frees a
      // session, which sshd may still count for a moment, so the pause starts short again)
      let inARow = 0;
      let ends = this.ends;
      for (;;) {
        try {
          return await open();
        } catch (e) {
          if (!isChannelRefused(e) || this.stopped) throw e;
          inARow = this.ends === ends ? inARow + 1 : 1;
          ends = this.ends;
          // IDLE_ATTEMPTS refusals in a row with no other command under way: sshd will not open one
          if (this.active === 1 && inARow >= IDLE_ATTEMPTS) throw e;
          this.active--;
          await this.turn(Math.min(FIRST_PAUSE_MS * 2 ** (inARow - 1), MAX_PAUSE_MS));
          this.active++;
          if (this.stopped) throw e;
        }
      }
    } finally {
      this.active--;
      this.ends++;
      // (the first waiter: a Set keeps the order they came in)
      const [next] = this.waiting;
      next?.();
    }
  }

  /** The connection is being ended: no channel is asked for again, and every waiter gives up now. */
  stop(): void {
    this.stopped = true;
    for (const go of [...this.waiting]) go();
  }

  /** Until another command ends or `pauseMs` has passed. */
  private turn(pauseMs: number): Promise<void> {
    return new Promise<void>((resume) => {
      const go = () => {
        clearTimeout(timer);
        this.waiting.delete(go);
        resume();
      };
      const timer = setTimeout(go, pauseMs);
      this.waiting.add(go);
    });
  }
}
