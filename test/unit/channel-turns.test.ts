// ChannelTurns: a channel sshd refused (MaxSessions) is asked for again, against a fake sshd that
// counts sessions, with the lag of a real one (a closed channel counted until its next pass).
import { describe, expect, it } from 'vitest';
import { ChannelTurns, IDLE_ATTEMPTS, isChannelRefused } from '../../src/connection/channel-turns.ts';

const REFUSED = () => new Error('(SSH) Channel open failure: open failed');

/** A connection to an sshd with `maxSessions`: each exec holds a session until one turn after it ends. */
function fakeSshd(maxSessions: number) {
  let sessions = 0;
  let refusals = 0;
  let most = 0;
  const exec = async (ms: number): Promise<string> => {
    if (sessions >= maxSessions) {
      refusals++;
      throw REFUSED();
    }
    sessions++;
    most = Math.max(most, sessions);
    await new Promise((r) => setTimeout(r, ms));
    // (the session freed on sshd's next pass, after the client already has its close)
    setImmediate(() => sessions--);
    return 'ok';
  };
  return { exec, refusals: () => refusals, most: () => most };
}

describe('ChannelTurns', () => {
  it.each([
    [8, 2],
    [8, 10],
    [20, 1],
  ])('%i commands at once on a connection whose sshd allows %i sessions: every one runs', async (n, max) => {
    const sshd = fakeSshd(max);
    const turns = new ChannelTurns();
    const got = await Promise.all(Array.from({ length: n }, (_, i) => turns.run(() => sshd.exec(5 + (i % 3)))));
    expect(got).toEqual(Array(n).fill('ok'));
    expect(sshd.most()).toBeLessThanOrEqual(max);
    if (n > max) expect(sshd.refusals()).toBeGreaterThan(0); // (the case the turns are for did happen)
  });

  it('a long command under way does not hold the others back: a refused one is asked again after a pause, not only at an end', async () => {
    const sshd = fakeSshd(2);
    const turns = new ChannelTurns();
    const ended: string[] = [];
    const long = turns.run(() => sshd.exec(1500)).then(() => ended.push('long'));
    const short = Array.from({ length: 4 }, (_, i) => turns.run(() => sshd.exec(5)).then(() => ended.push(`short${i}`)));
    await Promise.all([long, ...short]);
    expect(sshd.refusals()).toBeGreaterThan(0);
    expect(ended.at(-1)).toBe('long'); // (every short one ran while the long one held its session)
  });

  it('stopped (the connection aborted or closing): a waiter gives up at once, and nothing is asked for again', async () => {
    const turns = new ChannelTurns();
    let release!: () => void;
    const holding = turns.run(() => new Promise<string>((r) => (release = () => r('held'))));
    let tries = 0;
    const refused = turns.run(async () => (tries++, Promise.reject(REFUSED())));
    await new Promise((r) => setImmediate(r)); // (its first refusal in: now waiting for a turn)
    turns.stop();
    await expect(refused).rejects.toThrow('Channel open failure');
    expect(tries).toBe(1);
    release();
    expect(await holding).toBe('held');
  });

  it('a refusal with nothing else under way (the lag of a channel just closed): asked again after a pause, then runs', async () => {
    let tries = 0;
    const turns = new ChannelTurns();
    expect(await turns.run(async () => (++tries < IDLE_ATTEMPTS ? Promise.reject(REFUSED()) : 'ok'))).toBe('ok');
    expect(tries).toBe(IDLE_ATTEMPTS);
  });

  it('refused every time with nothing else under way: the refusal after IDLE_ATTEMPTS tries', async () => {
    let tries = 0;
    const turns = new ChannelTurns();
    await expect(turns.run(async () => (tries++, Promise.reject(REFUSED())))).rejects.toThrow('(SSH) Channel open failure: open failed');
    expect(tries).toBe(IDLE_ATTEMPTS);
  });

  it('any other failure (a lost connection, a command that failed): thrown at once, not asked again', async () => {
    let tries = 0;
    const turns = new ChannelTurns();
    await expect(turns.run(async () => (tries++, Promise.reject(new Error('Not connected to server'))))).rejects.toThrow('Not connected');
    expect(tries).toBe(1);
  });

  it.each([
    ['(SSH) Channel open failure: open failed', true],
    ['(SSH) Channel open failure: server closed channel unexpectedly', true],
    ['Not connected to server', false],
  ])('isChannelRefused(%j) is %s', (message, want) => {
    expect(isChannelRefused(new Error(message))).toBe(want);
  });
});
