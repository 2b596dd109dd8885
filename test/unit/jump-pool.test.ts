// The jump connection every host behind one bastion shares (src/connection/jump-pool.ts), over
// stand-in connections: opened once for all, ended with the last host, never handed out dead.
import { describe, expect, it } from 'vitest';
import { JumpPool, type Shareable } from '../../src/connection/jump-pool.ts';

/** A stand-in connection that records how it ended. */
class Stub implements Shareable {
  ended: 'closed' | 'dropped' | undefined;
  died = false;
  constructor(readonly n: number) {}
  async close() {
    this.ended ??= 'closed';
  }
  drop() {
    this.ended ??= 'dropped';
  }
  get gone() {
    return this.died || this.ended !== undefined;
  }
}

/** An opener whose openings are counted, each resolved (or failed) when the test says. */
function opener() {
  const opened: Stub[] = [];
  const pending: Array<{ ok: () => void; fail: (e: Error) => void; stop: AbortSignal }> = [];
  const open = (stop: AbortSignal) =>
    new Promise<Stub>((resolve, reject) => {
      const s = new Stub(opened.length + pending.length + 1);
      pending.push({ ok: () => (opened.push(s), resolve(s)), fail: reject, stop });
    });
  return { open, opened, pending };
}

describe('JumpPool: one jump connection for every host behind it', () => {
  it('hosts asking at once share one opening; the last release closes it, once', async () => {
    const pool = new JumpPool<Stub>();
    const o = opener();
    const a = pool.lease('bastion', o.open);
    const b = pool.lease('bastion', o.open);
    expect(o.pending).toHaveLength(1);
    o.pending[0].ok();
    const [la, lb] = await Promise.all([a, b]);
    expect(la.conn).toBe(lb.conn);
    // (a host connecting later gets the same one)
    const lc = await pool.lease('bastion', o.open);
    expect(lc.conn).toBe(la.conn);
    await la.release();
    await la.release(); // (a second release of one lease does nothing)
    await lb.release();
    expect(la.conn.ended).toBeUndefined();
    await lc.release();
    expect(la.conn.ended).toBe('closed');
    expect(pool.size).toBe(0);
  });

  it('another jump (other key): a connection of its own', async () => {
    const pool = new JumpPool<Stub>();
    const o = opener();
    const a = pool.lease('root@bastion1', o.open);
    const b = pool.lease('root@bastion2', o.open);
    o.pending.forEach((p) => p.ok());
    expect((await a).conn).not.toBe((await b).conn);
  });

  it('an opening that fails fails every host waiting for it, and the next host opens anew', async () => {
    const pool = new JumpPool<Stub>();
    const o = opener();
    const a = pool.lease('bastion', o.open);
    const b = pool.lease('bastion', o.open);
    o.pending[0].fail(new Error('bastion: ssh ops@10.0.0.1:22: All configured authentication methods failed'));
    await expect(a).rejects.toThrow('All configured authentication methods failed');
    await expect(b).rejects.toThrow('All configured authentication methods failed');
    expect(pool.size).toBe(0);
    const c = pool.lease('bastion', o.open);
    expect(o.pending).toHaveLength(2);
    o.pending[1].ok();
    expect((await c).conn.n).toBe(2);
  });

  it('a connection that died is not handed out again: the next host opens a new one', async () => {
    const pool = new JumpPool<Stub>();
    const o = opener();
    const a = pool.lease('bastion', o.open);
    o.pending[0].ok();
    const la = await a;
    la.conn.died = true; // (the bastion restarted)
    const b = pool.lease('bastion', o.open);
    await new Promise((r) => setImmediate(r));
    expect(o.pending).toHaveLength(2);
    o.pending[1].ok();
    const lb = await b;
    expect(lb.conn).not.toBe(la.conn);
    await lb.release();
    expect(lb.conn.ended).toBe('closed');
  });

  it('a host that gives up waiting leaves alone; the opening goes on for the others, and stops once every host has left', async () => {
    const pool = new JumpPool<Stub>();
    const o = opener();
    const giveUpA = new AbortController();
    const giveUpB = new AbortController();
    const a = pool.lease('bastion', o.open, giveUpA.signal);
    const b = pool.lease('bastion', o.open, giveUpB.signal);
    giveUpA.abort();
    await expect(a).rejects.toThrow('interrupted');
    expect(o.pending[0].stop.aborted).toBe(false);
    giveUpB.abort();
    await expect(b).rejects.toThrow('interrupted');
    expect(o.pending[0].stop.aborted).toBe(true);
    // (an opening that completes after all left is dropped, not kept)
    o.pending[0].ok();
    await new Promise((r) => setImmediate(r));
    expect(o.opened[0].ended).toBe('dropped');
    expect(pool.size).toBe(0);
  });

  it('past its hosts per connection, another connection to the same jump host; each ends with its own last host', async () => {
    const pool = new JumpPool<Stub>(2);
    const o = opener();
    const leases = [pool.lease('bastion', o.open), pool.lease('bastion', o.open), pool.lease('bastion', o.open)];
    expect(o.pending).toHaveLength(2);
    o.pending.forEach((p) => p.ok());
    const [a, b, c] = await Promise.all(leases);
    expect(a.conn).toBe(b.conn);
    expect(c.conn).not.toBe(a.conn);
    await c.release();
    expect(c.conn.ended).toBe('closed');
    expect(a.conn.ended).toBeUndefined();
    // (room again on the first: a new host joins it)
    await b.release();
    const d = await pool.lease('bastion', o.open);
    expect(d.conn).toBe(a.conn);
    expect(o.pending).toHaveLength(2);
  });

  it('a connection retired (a host’s channel timed out on it) is given to no new host; the hosts on it keep it', async () => {
    const pool = new JumpPool<Stub>();
    const o = opener();
    const leases = [pool.lease('bastion', o.open), pool.lease('bastion', o.open)];
    o.pending[0].ok();
    const [a, b] = await Promise.all(leases);
    a.retire();
    await a.release();
    expect(b.conn.ended).toBeUndefined();
    const c = pool.lease('bastion', o.open);
    expect(o.pending).toHaveLength(2);
    o.pending[1].ok();
    expect((await c).conn).not.toBe(b.conn);
    await b.release();
    expect(b.conn.ended).toBe('closed');
  });

  it('a host already given up opens nothing', async () => {
    const pool = new JumpPool<Stub>();
    const o = opener();
    const stop = new AbortController();
    stop.abort();
    await expect(pool.lease('bastion', o.open, stop.signal)).rejects.toThrow('interrupted');
    expect(o.pending).toHaveLength(0);
  });

  it('the last host dropping its connection (Ctrl-C) drops the jump connection at once', async () => {
    const pool = new JumpPool<Stub>();
    const o = opener();
    const a = pool.lease('bastion', o.open);
    o.pending[0].ok();
    const la = await a;
    await la.release(true);
    expect(la.conn.ended).toBe('dropped');
  });
});
