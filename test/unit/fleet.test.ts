// Fleet agreement (engine/fleet.ts): a play with resources that carry a fleet key is probed on
// every host before any applies, and each host's keyed facts are given its group's answers. Run
// through the real engine (execute) with hosts that are local shells: each one's answers come
// from its own files under a temp dir, so they can disagree.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { execute, prepare } from '../../src/engine/run.ts';
import { fleetViews, playHasFleet, withFleet } from '../../src/engine/fleet.ts';
import { playbook, type Play } from '../../src/contract/playbook.ts';
import { common, Refusal, type Resource } from '../../src/contract/resource.ts';
import type { Connection, ExecResult } from '../../src/connection/types.ts';
import type { RunEvent } from '../../src/engine/events.ts';
import { loadInventory } from '../../src/inventory/load.ts';
import { scriptAsStdin } from '../../src/connection/transport.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-fleet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A host that is this machine's /bin/sh with RS_HOST set: its answers are files named after it. */
class ShellHost implements Connection {
  execCount = 0;
  constructor(readonly host: string) {}
  exec(script: string): Promise<ExecResult> {
    this.execCount++;
    return new Promise((res, rej) => {
      const child = spawn('/bin/sh', ['-s'], { env: { PATH: process.env.PATH, RS_HOST: this.host, RS_DIR: dir } });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.once('error', rej);
      child.once('close', (code) => res({ stdout, stderr, code }));
      child.stdin.end(scriptAsStdin(script));
    });
  }
  async close() {}
}

/** Each host's value (its "driver version"), agreed across the group `key`. */
function agreement(key = 'k'): Resource<{ own: string; all?: string[] }> {
  return {
    ...common('agree', 'agree', {}),
    verifiable: true,
    fleet: key,
    probe: () => 'cat "$RS_DIR/$RS_HOST.value"',
    parse: (out) => ({ own: out.trim() }),
    useFleet: (f, fleet) => ({ ...f, all: [...new Set([...fleet.values()].map((v) => (v as { own: string }).own))].sort() }),
    diff(f) {
      if ((f.all?.length ?? 0) > 1) throw new Refusal(`values differ: ${f.all!.join(', ')}`);
      return [];
    },
    apply: () => [],
  };
}

/** A change that must wait for the agreement: marks the host done. */
const work: Resource<boolean> = {
  ...common('work', 'work', { dependsOn: ['agree'] }),
  verifiable: true,
  probe: () => '[ -e "$RS_DIR/$RS_HOST.done" ] && echo yes || echo no',
  parse: (out) => out.trim() === 'yes',
  diff: (done) => (done ? [] : [{ summary: 'mark done' }]),
  apply: () => [{ name: 'mark', script: 'touch "$RS_DIR/$RS_HOST.done"' }],
};

const HOSTS = ['h1', 'h2', 'h3'];
const inventory = () => {
  const file = join(dir, 'hosts.yaml');
  writeFileSync(file, `all:\n  hosts:\n${HOSTS.map((h) => `    ${h}: {}\n`).join('')}`);
  return loadInventory(file);
};

async function run(plays: Play[], o: { check?: boolean; serial?: Array<number | string> } = {}) {
  const conns = new Map<string, ShellHost>();
  const events: RunEvent[] = [];
  const outcome = await execute(
    prepare(inventory(), [playbook({ name: 'pb', plays })], {}),
    {
      inventoryFile: join(dir, 'hosts.yaml'),
      acceptNewHostKeys: false,
      connectTimeoutMs: 1000,
      check: o.check ?? false,
      forks: 10,
      serial: o.serial,
      connectAttempts: 1,
      connector: async (h) => {
        const c = new ShellHost(h.name);
        conns.set(h.name, c);
        return c;
      },
    },
    (e) => events.push(e),
  );
  const execs = Object.fromEntries([...conns].map(([h, c]) => [h, c.execCount]));
  return { outcome, execs, events };
}

const setValues = (values: Record<string, string>) => {
  for (const h of HOSTS) {
    rmSync(join(dir, `${h}.done`), { force: true });
    writeFileSync(join(dir, `${h}.value`), values[h] ?? '1');
  }
};
const status = (o: Awaited<ReturnType<typeof run>>, id: string) =>
  Object.fromEntries(o.outcome.results.filter((r) => r.id === id).map((r) => [r.host, r.status]));
const play = (resources: () => Resource[]): Play => ({ name: 'p', hosts: 'all', resources });

describe('fleet agreement in a run', () => {
  it('hosts that agree converge, one probe exec each plus their apply', async () => {
    setValues({});
    const r = await run([play(() => [agreement(), work])]);
    expect(status(r, 'work')).toEqual({ h1: 'changed', h2: 'changed', h3: 'changed' });
    expect(r.execs).toEqual({ h1: 2, h2: 2, h3: 2 });
    const again = await run([play(() => [agreement(), work])]);
    expect(status(again, 'work')).toEqual({ h1: 'ok', h2: 'ok', h3: 'ok' });
    expect(again.execs).toEqual({ h1: 1, h2: 1, h3: 1 }); // a converged host: exactly one exec
  });

  it('one host disagreeing: refused on every host before anything applied anywhere', async () => {
    setValues({ h3: '2' });
    for (const check of [true, false]) {
      const r = await run([play(() => [agreement(), work])], { check });
      expect(status(r, 'agree')).toEqual({ h1: 'failed', h2: 'failed', h3: 'failed' });
      expect(r.outcome.results.find((x) => x.id === 'agree')?.error).toBe('refused: values differ: 1, 2');
      expect(status(r, 'work')).toEqual({ h1: 'skipped', h2: 'skipped', h3: 'skipped' });
      for (const h of HOSTS) expect(existsSync(join(dir, `${h}.done`))).toBe(false);
    }
  });

  it('groups are per key: hosts of another jail do not count', async () => {
    setValues({ h3: '2' });
    const r = await run([{ name: 'p', hosts: 'all', resources: (h) => [agreement(h.name === 'h3' ? 'other' : 'k'), work] }]);
    expect(status(r, 'work')).toEqual({ h1: 'changed', h2: 'changed', h3: 'changed' });
  });

  it('a later play is gathered from the first exec when nothing applied since (no extra exec)', async () => {
    setValues({});
    const noop: Resource<string> = {
      ...common('noop', 'noop', {}),
      verifiable: true,
      probe: () => 'echo',
      parse: (o) => o,
      diff: () => [],
      apply: () => [],
    };
    await run([play(() => [noop]), play(() => [agreement(), work])]); // converge
    const r = await run([play(() => [noop]), play(() => [agreement(), work])]);
    expect(status(r, 'work')).toEqual({ h1: 'ok', h2: 'ok', h3: 'ok' });
    expect(r.execs).toEqual({ h1: 1, h2: 1, h3: 1 });
  });

  it('serial batches: the agreement is the play start’s; a later batch probes again after the first applied', async () => {
    setValues({});
    const r = await run([play(() => [agreement(), work])], { serial: [1] });
    expect(status(r, 'work')).toEqual({ h1: 'changed', h2: 'changed', h3: 'changed' });
    // h1: gathered + apply; h2, h3: gathered + their own probe (h1 applied since) + apply
    expect(r.execs).toEqual({ h1: 2, h2: 3, h3: 3 });
    setValues({ h3: '2' });
    const refused = await run([play(() => [agreement(), work])], { serial: [1] });
    expect(status(refused, 'agree')).toEqual({ h1: 'failed', h2: 'failed', h3: 'failed' });
  });
});

describe('fleet views', () => {
  const keyed = (key: string) => ({ ...agreement(key) }) as Resource;
  it('collect the readable answers of each key, per host', () => {
    const a = keyed('k');
    const b = keyed('j');
    const views = fleetViews(
      [
        { name: 'h1', resources: [a, work], answers: [{ own: '1' }, true] },
        { name: 'h2', resources: [a, work], answers: ['unreadable', true] },
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
    expect(playHasFleet([{ resources: [work] }, { resources: [agreement()] }])).toBe(true);
    expect(playHasFleet([{ resources: [work] }])).toBe(false);
  });
  it('the same facts and view give the same object (one diff for hosts alike); no view: the facts as they are', () => {
    const a = agreement();
    const views = new Map([['k', new Map<string, unknown>([['h1', { own: '1' }]])]]);
    const facts = { own: '1' };
    const once = withFleet(a, facts, views);
    expect(once).toEqual({ own: '1', all: ['1'] });
    expect(withFleet(a, facts, views)).toBe(once);
    expect(withFleet(a, facts, undefined)).toBe(facts);
    expect(withFleet(work, true, views)).toBe(true);
  });
});
