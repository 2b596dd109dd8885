// Fleet agreement (engine/fleet.ts): a play with resources that carry a fleet key is probed on
// every host before any applies, and each host's keyed facts are given its group's answers. Run
// through the real engine (execute) on fake hosts (test/support/fake-host.ts: each host a
// directory, each exec a local /bin/sh run), whose answers are files in their directories, so
// they can disagree.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execute, prepare } from '../../src/engine/run.ts';
import { fleetViews, playHasFleet, withFleet } from '../../src/engine/fleet.ts';
import type { HostContext, Play } from '../../src/contract/playbook.ts';
import { common, Refusal, type Resource } from '../../src/contract/resource.ts';
import { shq } from '../../src/shell/quote.ts';
import { fleetSummary } from '../../src/contract/fleet-summary.ts';
import { FakeFleet } from '../support/fake-host.ts';

const HOSTS = ['h1', 'h2', 'h3'];
const fleet = new FakeFleet(HOSTS);

/** Each host's value (its "driver version"), agreed across the group `key`. */
function agreement(dir: string, key = 'k'): Resource<{ own: string; all?: string[] }> {
  return {
    ...common('agree', 'agree', {}),
    verifiable: true,
    fleet: key,
    probe: () => `cat ${shq(`${dir}/value`)}`,
    parse: (out) => ({ own: out.stdout.trim() }),
    useFleet: (f, group) => ({ ...f, all: [...new Set([...group.values()].map((v) => (v as { own: string }).own))].sort() }),
    diff(f) {
      if ((f.all?.length ?? 0) > 1) throw new Refusal(`values differ: ${f.all!.join(', ')}`);
      return [];
    },
    apply: () => [],
  };
}

/** A change that must wait for the agreement: marks the host done. */
const work = (dir: string): Resource<boolean> => ({
  ...common('work', 'work', { dependsOn: ['agree'] }),
  verifiable: true,
  probe: () => `[ -e ${shq(`${dir}/done`)} ] && echo yes || echo no`,
  parse: (out) => out.stdout.trim() === 'yes',
  diff: (done) => (done ? [] : [{ summary: 'mark done' }]),
  apply: () => [{ name: 'mark', script: `touch ${shq(`${dir}/done`)}` }],
});
const noop: Resource<string> = {
  ...common('noop', 'noop', {}),
  verifiable: true,
  probe: () => 'echo',
  parse: (o) => o.stdout,
  diff: () => [],
  apply: () => [],
};

const dirOf = (h: HostContext) => h.var<string>('dir', '');
const play = (resources: (h: HostContext) => Resource[]): Play => ({ name: 'p', hosts: 'all', resources });
const agreeing = play((h) => [agreement(dirOf(h)), work(dirOf(h))]);

async function run(plays: Play[], o: { check?: boolean; serial?: Array<number | string> } = {}) {
  const outcome = await execute(
    prepare(fleet.inventory(), [{ name: 'pb', plays }], {}),
    {
      inventoryFile: 'fake-inventory',
      acceptNewHostKeys: false,
      connectTimeoutMs: 1000,
      check: o.check ?? false,
      forks: 10,
      serial: o.serial,
      connectAttempts: 1,
      connector: fleet.connector,
    },
    () => {},
  );
  const execs = Object.fromEntries(HOSTS.map((h) => [h, fleet.conns.get(h)!.execCount]));
  return { outcome, execs };
}

const setValues = (values: Record<string, string>) => {
  for (const h of HOSTS) {
    mkdirSync(fleet.dir(h), { recursive: true });
    rmSync(join(fleet.dir(h), 'done'), { force: true });
    writeFileSync(join(fleet.dir(h), 'value'), values[h] ?? '1');
  }
};
const status = (o: Awaited<ReturnType<typeof run>>, id: string) =>
  Object.fromEntries(o.outcome.results.filter((r) => r.id === id).map((r) => [r.host, r.status]));

describe('fleet agreement in a run', () => {
  it('hosts that agree converge, one probe exec each plus their apply', async () => {
    setValues({});
    const r = await run([agreeing]);
    expect(status(r, 'work')).toEqual({ h1: 'changed', h2: 'changed', h3: 'changed' });
    expect(r.execs).toEqual({ h1: 2, h2: 2, h3: 2 });
    const again = await run([agreeing]);
    expect(status(again, 'work')).toEqual({ h1: 'ok', h2: 'ok', h3: 'ok' });
    expect(again.execs).toEqual({ h1: 1, h2: 1, h3: 1 }); // a converged host: exactly one exec
  });

  it('one host disagreeing: refused on every host before anything applied anywhere', async () => {
    setValues({ h3: '2' });
    for (const check of [true, false]) {
      const r = await run([agreeing], { check });
      expect(status(r, 'agree')).toEqual({ h1: 'failed', h2: 'failed', h3: 'failed' });
      expect(r.outcome.results.find((x) => x.id === 'agree')?.error).toBe('refused: values differ: 1, 2');
      expect(status(r, 'work')).toEqual({ h1: 'skipped', h2: 'skipped', h3: 'skipped' });
      for (const h of HOSTS) expect(existsSync(join(fleet.dir(h), 'done'))).toBe(false);
    }
  });

  it('groups are per key: hosts of another jail do not count', async () => {
    setValues({ h3: '2' });
    const r = await run([play((h) => [agreement(dirOf(h), h.name === 'h3' ? 'other' : 'k'), work(dirOf(h))])]);
    expect(status(r, 'work')).toEqual({ h1: 'changed', h2: 'changed', h3: 'changed' });
  });

  it('a later play is gathered from the first exec when nothing applied since (no extra exec)', async () => {
    setValues({});
    await run([play(() => [noop]), agreeing]); // converge
    const r = await run([play(() => [noop]), agreeing]);
    expect(status(r, 'work')).toEqual({ h1: 'ok', h2: 'ok', h3: 'ok' });
    expect(r.execs).toEqual({ h1: 1, h2: 1, h3: 1 });
  });

  it("serial batches: the agreement is the play start's, and so are a later batch's answers of its own host", async () => {
    setValues({});
    const r = await run([agreeing], { serial: [1] });
    expect(status(r, 'work')).toEqual({ h1: 'changed', h2: 'changed', h3: 'changed' });
    // each: gathered + apply (h1's apply cannot change what h2 and h3 read of themselves)
    expect(r.execs).toEqual({ h1: 2, h2: 2, h3: 2 });
    setValues({ h3: '2' });
    const refused = await run([agreeing], { serial: [1] });
    expect(status(refused, 'agree')).toEqual({ h1: 'failed', h2: 'failed', h3: 'failed' });
  });

  it('serial batches: a later batch probes shared state again after the first applied', async () => {
    setValues({});
    const sharedWork = (dir: string): Resource<boolean> => ({ ...work(dir), readsSharedState: true });
    const r = await run([play((h) => [agreement(dirOf(h)), sharedWork(dirOf(h))])], { serial: [1] });
    expect(status(r, 'work')).toEqual({ h1: 'changed', h2: 'changed', h3: 'changed' });
    // h1: gathered + apply; h2, h3: gathered + their own probe (h1 applied since) + apply
    expect(r.execs).toEqual({ h1: 2, h2: 3, h3: 3 });
  });
});

describe('fleet views', () => {
  const keyed = (key: string) => agreement('/nowhere', key) as Resource;
  const w = work('/nowhere') as Resource;
  it('collect the readable answers of each key, per host', () => {
    const a = keyed('k');
    const b = keyed('j');
    const views = fleetViews(
      [
        { name: 'h1', resources: [a, w], answers: [{ own: '1' }, true] },
        { name: 'h2', resources: [a, w], answers: ['unreadable', true] },
        { name: 'h3', resources: [b], answers: [{ own: '3' }] },
        { name: 'h4', resources: [a], answers: undefined },
      ],
      (x) => x !== 'unreadable',
    );
    expect([...views.keys()].sort()).toEqual(['j', 'k']);
    expect([...views.get('k')!]).toEqual([['h1', { own: '1' }]]);
    expect([...views.get('j')!]).toEqual([['h3', { own: '3' }]]);
  });
  it('a play has a fleet when some host has a keyed resource', () => {
    expect(playHasFleet([{ resources: [w] }, { resources: [keyed('k')] }])).toBe(true);
    expect(playHasFleet([{ resources: [w] }])).toBe(false);
  });
  it('the same facts and view give the same object (one diff for hosts alike); no view: the facts as they are', () => {
    const a = keyed('k');
    const views = new Map([['k', new Map<string, unknown>([['h1', { own: '1' }]])]]);
    const facts = { own: '1' };
    const once = withFleet(a, facts, views);
    expect(once).toEqual({ own: '1', all: ['1'] });
    expect(withFleet(a, facts, views)).toBe(once);
    expect(withFleet(a, facts, undefined)).toBe(facts);
    expect(withFleet(w, true, views)).toBe(true);
  });
});

describe('fleetSummary: what useFleet derives from the group alone, once per group', () => {
  it('one map: summarised once, whichever host asks; another map: summarised for it', () => {
    let made = 0;
    const count = fleetSummary((group) => (made++, group.size));
    const a = new Map([
      ['h1', 1],
      ['h2', 2],
    ]);
    expect([count(a), count(a), count(a)]).toEqual([2, 2, 2]);
    expect(made).toBe(1);
    expect(count(new Map([['h1', 1]]))).toBe(1);
    expect(made).toBe(2);
  });

  it('in a run, every host of a group is handed the same map: the group is summarised once, not once per host', async () => {
    setValues({});
    let made = 0;
    const values = fleetSummary((group) => (made++, [...new Set([...group.values()].map((v) => (v as { own: string }).own))].sort()));
    const summarised = (dir: string): Resource<{ own: string; all?: string[] }> => ({
      ...agreement(dir),
      useFleet: (f, group) => ({ ...f, all: values(group) }),
    });
    const r = await run([play((h) => [summarised(dirOf(h)), work(dirOf(h))])]);
    expect(status(r, 'work')).toEqual({ h1: 'changed', h2: 'changed', h3: 'changed' });
    expect(made).toBe(1);
  });
});
