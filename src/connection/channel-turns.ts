/**
 * Channels sshd refused, asked for again: the one place that does it. sshd opens at most
 * MaxSessions sessions per connection (10 by default) and counts a closed channel's session until
 * its next pass through its loop, so a channel opened as another one closes can be refused though
 * the client holds fewer. A refused channel ran nothing, so it is asked for again: once another of
 * the connection's commands has ended (one waiter per end: the session it frees goes to one), or,
 * when no other is under way, after a short pause, at most IDLE_ATTEMPTS times in all.
 */

/** Tries of a refused channel while no other command of the connection is under way. */
export const IDLE_ATTEMPTS = 4;
const IDLE_PAUSE_MS = 50;

/** Whether an exec failed because sshd refused its channel (ssh2's CHANNEL_OPEN_FAILURE). */
export const isChannelRefused = (e: unknown): boolean => e instanceof Error && e.message.startsWith('(SSH) Channel open failure:');

export class ChannelTurns {
  /** Commands asking for a channel or holding one (not those waiting for a turn). */
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  /** `open` (one exec: its channel opened, its command run), asked for again while sshd refuses the channel. */
  async run<T>(open: () => Promise<T>): Promise<T> {
    this.active++;
    try {
      for (let idle = 1; ;) {
        try {
          return await open();
        } catch (e) {
          if (!isChannelRefused(e)) throw e;
          if (this.active > 1) {
            this.active--;
            await new Promise<void>((turn) => this.waiting.push(turn));
            this.active++;
          } else if (idle++ < IDLE_ATTEMPTS) await new Promise((r) => setTimeout(r, IDLE_PAUSE_MS * idle));
          else throw e;
        }
      }
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}
