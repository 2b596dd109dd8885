// The engine's rules, on fake hosts (test/support/fake-host.ts: each host a directory, each exec
// a local /bin/sh run of the real script): dependencies, ordering, stacking, check mode, saved-plan
// drift, prefetched answers, lost connections and resources that throw.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Play } from '../../src/contract/playbook.ts';
import { common, type Resource } from '../../src/contract/resource.ts';
import { managedFile } from '../../src/resources/core/managed-file.ts';
import { contentText, fileFacts, type FileAnswer, type FileFacts } from '../../src/resources/core/file-common.ts';
import { shq } from '../../src/shell/quote.ts';
import { execute, prepare, type ExecuteOptions } from '../../src/engine/run.ts';
import type { RunEvent } from '../../src/engine/events.ts';
import type { PlannedResource } from '../../src/engine/host-run.ts';
import { line } from '../../src/resources/core/text-edit.ts';
import { FakeFleet, neverConnecting } from '../support/fake-host.ts';
import { BecomeError } from '../../src/connection/become.ts';
import type { ConnectOptions } from '../../src/connection/connect.ts';
import type { Connection } from '../../src/connection/types.ts';
import type { Host } from '../../src/inventory/model.ts';
import { kv, logHandler, logStep, type Stage } from '../support/test-resources.ts';

type RunOptions = Partial<
  Pick<ExecuteOptions, 'check' | 'planned' | 'hashFacts' | 'forks' | 'hostTimeoutMs' | 'signal' | 'serial' | 'maxFailPercent'>
>;

async function run(fleet: FakeFleet, plays: Play[], { onEvent, ...o }: RunOptions & { onEvent?: (e: RunEvent) => void } = {}) {
  for (const h of fleet.names) mkdirSync(fleet.dir(h), { recursive: true });
  mkdirSync(join(fleet.root, 'shared'), { recursive: true });
  const prepared = prepare(fleet.inventory(), [{ name: 'test', plays }], {});
  const events: RunEvent[] = [];
  const outcome = await execute(
    prepared,
    {
      inventoryFile: 'fake-inventory',
      acceptNewHostKeys: false,
      connectTimeoutMs: 1000,
      check: false,
      forks: 10,
      connectAttempts: 1,
      connector: fleet.connector,
      ...o,
    },
    (e) => {
      events.push(e);
      onEvent?.(e);
    },
  );
  const result = (host: string, id: string, play?: string) => {
    const r = outcome.results.find((x) => x.host === host && x.id === id && (play === undefined || x.play === play));
    if (!r) throw new Error(`no result for ${host} ${id}: ${JSON.stringify(outcome.results.map((x) => [x.host, x.id, x.status]))}`);
    return r;
  };
  const recap = (host: string) => outcome.hosts.find((h) => h.host === host)!;
  return { outcome, events, result, recap, execs: (host: string) => fleet.conns.get(host)?.execCount ?? 0 };
}

const play = (resources: Play['resources'], name = 'p', hosts = 'all'): Play => ({ name, hosts, resources });
const at = (fleet: FakeFleet, host: string, file: string) => join(fleet.dir(host), file);
const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined);

describe('dependencies: a failure skips only what depends on it', () => {
  it.each<[string, 'dependsOn' | 'after']>([
    ['dependsOn', 'dependsOn'],
    ['after', 'after'],
  ])('%s on a failed resource: the dependant and its dependants are skipped, the rest converges', async (_, link) => {
    const f = new FakeFleet(['h1']);
    const d = (x: string) => at(f, 'h1', x);
    const r = await run(f, [
      play(() => [
        kv({ path: d('a'), value: '1', failStep: 7 }),
        kv({ path: d('b'), value: '2', [link]: ['kv:a'] }),
        kv({ path: d('c'), value: '3', dependsOn: ['kv:b'] }),
        kv({ path: d('z'), value: '9' }),
      ]),
    ]);
    expect(r.result('h1', 'kv:a')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/step "set kv:a" exit 7: step failed on purpose/),
    });
    expect(r.result('h1', 'kv:b')).toMatchObject({ status: 'skipped', error: 'dependency kv:a did not converge' });
    expect(r.result('h1', 'kv:c')).toMatchObject({ status: 'skipped', error: 'dependency kv:b did not converge' });
    expect(r.result('h1', 'kv:z').status).toBe('changed');
    expect([read(d('a')), read(d('b')), read(d('c')), read(d('z'))]).toEqual([undefined, undefined, undefined, '9']);
    expect(r.outcome.exitCode).toBe(1);
    expect(r.events.at(-1)).toMatchObject({ type: 'recap', exitCode: 1 });
  });

  it('a dependant of a changed resource is diffed after that change applied (a later wave)', async () => {
    const f = new FakeFleet(['h1']);
    const d = (x: string) => at(f, 'h1', x);
    // b's desired value is what a wrote: b's facts depend on a's change.
    const r = await run(f, [
      play(() => [kv({ path: d('a'), value: '1' }), kv({ path: d('a'), name: 'b', value: '1', dependsOn: ['kv:a'] })]),
    ]);
    expect(r.result('h1', 'kv:a').status).toBe('changed');
    expect(r.result('h1', 'kv:b').status).toBe('ok'); // re-probed after a's wave, not guessed
    expect(r.execs('h1')).toBe(2); // probe, then one wave that applies a and re-probes both
  });
});

describe('order within a wave', () => {
  it('`after` resources share one wave, their steps in declaration order; a second run changes nothing', async () => {
    const f = new FakeFleet(['h1']);
    const log = at(f, 'h1', 'log');
    const rs = () => [
      kv({ path: at(f, 'h1', 'x'), value: '1' }),
      logStep({ log, name: 'first' }),
      logStep({ log, name: 'second', after: ['log:first'] }),
      logStep({ log, name: 'third', after: ['log:second', 'kv:x'] }),
    ];
    const r = await run(f, [play(rs)]);
    expect(read(log)).toBe('first\nsecond\nthird\n');
    expect(r.execs('h1')).toBe(2);
    expect(r.result('h1', 'log:third')).toMatchObject({ status: 'changed', alwaysRuns: true });
  });
});

describe('stacked edits of one file', () => {
  it("check mode: the second edit is diffed against the first one's predicted file (exact diffs); apply: one wave", async () => {
    const f = new FakeFleet(['h1']);
    const file = at(f, 'h1', 'conf');
    mkdirSync(f.dir('h1'), { recursive: true });
    writeFileSync(file, 'x = 0\n');
    const edits = () => [line({ path: file, line: 'a = 1', regexp: '^a = ' }), line({ path: file, line: 'b = 2', regexp: '^b = ' })];
    const check = await run(f, [play(edits)], { check: true });
    const [first, second] = [check.result('h1', `line:${file}:^a = `), check.result('h1', `line:${file}:^b = `)];
    expect(first.status).toBe('changed');
    expect(second.status).toBe('changed');
    expect(second.pending).toBeUndefined(); // stacked, not "depends on a pending change"
    // the second diff starts from the first edit's result
    expect(second.changes[0].diff).toMatch(/ x = 0\n a = 1\n\+b = 2/);
    expect(read(file)).toBe('x = 0\n');
    expect(check.outcome.exitCode).toBe(2);

    const apply = await run(f, [play(edits)]);
    expect(read(file)).toBe('x = 0\na = 1\nb = 2\n');
    expect(apply.execs('h1')).toBe(2);
    const again = await run(f, [play(edits)]);
    expect(again.outcome.results.map((x) => x.status)).toEqual(['ok', 'ok']);
    expect(again.execs('h1')).toBe(1);
  });
});

/** A line of a shared file, written by managedFile with folded writes and backups (as fstab's mount entries); `before` runs first. */
function entry(path: string, name: string, before?: string): Resource<FileFacts, unknown> {
  const file = managedFile<FileFacts>({ path, backup: true, foldWrites: true, stepName: `entry ${name}` });
  return {
    ...common('entry', `entry:${name}`, {}),
    verifiable: true,
    files: [file],
    probe: () => [file.probe()],
    parse: (out) => fileFacts(out.parts[0] as FileAnswer),
    diff: (f) => {
      const text = f.content !== undefined ? contentText(f) : '';
      return text.split('\n').includes(name) ? [] : file.changes(f, `${text}${name}\n`);
    },
    apply: (_, changes) => [...(before ? [{ name: `before ${name}`, script: before }] : []), ...file.steps(changes)],
  };
}

describe('stacked whole-file writes of one exec fold into one write', () => {
  const backups = (f: FakeFleet) => readdirSync(f.dir('h1')).filter((n) => n.endsWith('.bak')).length;
  it('three writers: the file written once (one backup of the original), each writer changed; the next run changes nothing', async () => {
    const f = new FakeFleet(['h1']);
    const file = at(f, 'h1', 'tab');
    mkdirSync(f.dir('h1'), { recursive: true });
    writeFileSync(file, 'x\n');
    const rs = () => [entry(file, 'a'), entry(file, 'b'), entry(file, 'c')];
    const r = await run(f, [play(rs)]);
    expect(r.outcome.results.map((x) => x.status)).toEqual(['changed', 'changed', 'changed']);
    expect(read(file)).toBe('x\na\nb\nc\n');
    expect(backups(f)).toBe(1);
    expect(r.execs('h1')).toBe(2);
    const again = await run(f, [play(rs)]);
    expect(again.outcome.results.map((x) => x.status)).toEqual(['ok', 'ok', 'ok']);
  });

  it('a writer whose step fails before its write: the writers before it are written, it fails, the one stacked on it is skipped', async () => {
    const f = new FakeFleet(['h1']);
    const file = at(f, 'h1', 'tab');
    const r = await run(f, [play(() => [entry(file, 'a'), entry(file, 'b', 'exit 7'), entry(file, 'c')])]);
    expect(r.result('h1', 'entry:a').status).toBe('changed');
    expect(r.result('h1', 'entry:b')).toMatchObject({ status: 'failed', error: expect.stringMatching(/step "before b" exit 7/) });
    expect(r.result('h1', 'entry:c')).toMatchObject({ status: 'skipped', error: 'dependency entry:b did not converge' });
    expect(read(file)).toBe('a\n');
  });

  it('the file changed after the probe: the one write refuses, and every writer it carried fails naming its own write', async () => {
    const f = new FakeFleet(['h1']);
    const file = at(f, 'h1', 'tab');
    mkdirSync(f.dir('h1'), { recursive: true });
    writeFileSync(file, 'x\n');
    const r = await run(f, [play(() => [entry(file, 'a', `echo y >> ${shq(file)}`), entry(file, 'b')])]);
    for (const n of ['a', 'b'])
      expect(r.result('h1', `entry:${n}`)).toMatchObject({
        status: 'failed',
        error: expect.stringMatching(new RegExp(`step "entry ${n}" exit 3: .*changed since it was probed; not overwriting`)),
      });
    expect(read(file)).toBe('x\ny\n');
    expect(backups(f)).toBe(0);
  });
});

describe('check mode', () => {
  it('a resource whose facts depend on a pending change is reported as such, never diffed', async () => {
    const f = new FakeFleet(['h1']);
    const d = (x: string) => at(f, 'h1', x);
    // b would look converged (its file already holds its value) if it were diffed now
    mkdirSync(f.dir('h1'), { recursive: true });
    writeFileSync(d('b'), '2');
    const r = await run(f, [play(() => [kv({ path: d('a'), value: '1' }), kv({ path: d('b'), value: '2', dependsOn: ['kv:a'] })])], {
      check: true,
    });
    expect(r.result('h1', 'kv:b')).toMatchObject({
      status: 'changed',
      pending: 'kv:a',
      changes: [{ summary: 'depends on a pending change of kv:a' }],
    });
    expect(read(d('a'))).toBeUndefined();
    expect(r.execs('h1')).toBe(1);
    expect(r.outcome.exitCode).toBe(2);
  });
});

describe('check mode counts', () => {
  // b already holds its value: only a's change is certain; b's would be known after a's.
  const dependent = (f: FakeFleet) => {
    writeFileSync(at(f, 'h1', 'b'), '2');
    return [kv({ path: at(f, 'h1', 'a'), value: '1' }), kv({ path: at(f, 'h1', 'b'), value: '2', dependsOn: ['kv:a'] })];
  };
  const chain = (f: FakeFleet) => [
    kv({ path: at(f, 'h1', 'a'), value: '1' }),
    kv({ path: at(f, 'h1', 'b'), value: '2', dependsOn: ['kv:a'] }),
    kv({ path: at(f, 'h1', 'c'), value: '3', dependsOn: ['kv:b'] }),
  ];
  const independent = (f: FakeFleet) => [kv({ path: at(f, 'h1', 'a'), value: '1' }), kv({ path: at(f, 'h1', 'b'), value: '2' })];
  it.each<[string, (f: FakeFleet) => Resource[], { changed: number; pending: number }, number]>([
    ['a dependant that turns out converged', dependent, { changed: 1, pending: 1 }, 1],
    ['a chain of three', chain, { changed: 1, pending: 2 }, 3],
    ['independent changes', independent, { changed: 2, pending: 0 }, 2],
  ])('%s: changed counts only what the apply will make, pending apart', async (_, resources, inCheck, applied) => {
    const f = new FakeFleet(['h1']);
    mkdirSync(f.dir('h1'), { recursive: true });
    const rs = resources(f);
    const check = await run(f, [play(() => rs)], { check: true });
    expect(check.recap('h1')).toMatchObject({ ...inCheck, ok: rs.length - inCheck.changed - inCheck.pending });
    expect(check.outcome.exitCode).toBe(2);
    const apply = await run(f, [play(() => rs)]);
    expect(apply.recap('h1')).toMatchObject({ changed: applied, pending: 0 });
    expect(inCheck.changed).toBeLessThanOrEqual(applied); // never more than the apply makes
  });
});

describe('saved plans', () => {
  it('a host whose facts moved since the plan is refused with a drift report; nothing is applied there', async () => {
    const f = new FakeFleet(['h1', 'h2']);
    const rs: Play['resources'] = (h) => [kv({ path: join(h.var('dir', ''), 'a'), value: '1' })];
    const reviewed = await run(f, [play(rs)], { check: true, hashFacts: true });
    const planned = new Map<string, Map<string, Map<string, PlannedResource>>>();
    for (const h of ['h1', 'h2']) {
      const hashes = reviewed.outcome.factHashes.get(h)!.get('p')!;
      planned.set(
        h,
        new Map([['p', new Map([...hashes].map(([id, factHash]) => [id, { factHash, changes: [`${at(f, h, 'a')}: (absent) → 1`] }]))]]),
      );
    }
    writeFileSync(at(f, 'h1', 'a'), 'someone else');
    const r = await run(f, [play(rs)], { planned });
    expect(r.result('h1', 'kv:a')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^refused: facts changed since the plan: kv:a/),
    });
    expect(r.recap('h1').error).toMatch(/drift since the plan: kv:a/);
    expect(read(at(f, 'h1', 'a'))).toBe('someone else');
    expect(r.result('h2', 'kv:a').status).toBe('changed');
    expect(read(at(f, 'h2', 'a'))).toBe('1');
  });
});

describe('prefetched answers of later plays', () => {
  // h1 writes the flag in the first play; h2 reads it in the second, through a resource that
  // declares the file shared (`shared`: readsSharedState) or not.
  const plays = (f: FakeFleet, shared: boolean): Play[] => [
    play(
      (h) =>
        h.name === 'h1' ? [kv({ path: join(f.root, 'shared', 'flag'), value: 'on' })] : [kv({ path: at(f, 'h2', 'own'), value: 'x' })],
      'first',
    ),
    play(() => [kv({ path: join(f.root, 'shared', 'flag'), value: 'on', name: 'seen', shared })], 'second', 'h2'),
  ];
  /** Hold h1's apply until h2's first exec (which prefetches the second play) has returned. */
  const h1AppliesAfterH2Prefetched = (f: FakeFleet) => {
    let h2Probed!: () => void;
    const probed = new Promise<void>((res) => (h2Probed = res));
    f.faults.set('h1', { before: async (n) => (n === 2 ? probed : undefined) });
    const conn = f.connector;
    f.connector = async (host) => {
      const c = await conn(host);
      if (host.name === 'h2') {
        const exec = c.exec.bind(c);
        c.exec = async (s) => exec(s).finally(() => c.execCount === 1 && h2Probed());
      }
      return c;
    };
  };

  it('are used while nothing was applied anywhere: one exec per host for every play', async () => {
    const f = new FakeFleet(['h1', 'h2']);
    mkdirSync(join(f.root, 'shared'), { recursive: true });
    writeFileSync(join(f.root, 'shared', 'flag'), 'on');
    mkdirSync(f.dir('h2'), { recursive: true });
    writeFileSync(at(f, 'h2', 'own'), 'x');
    const r = await run(f, plays(f, true));
    expect(r.result('h2', 'kv:seen', 'second').status).toBe('ok');
    expect(r.execs('h2')).toBe(1);
  });

  /** h2 converged in the first play, h1 writes the flag after h2 prefetched the second play. */
  const runWhileH1Applies = (shared: boolean) => {
    const f = new FakeFleet(['h1', 'h2']);
    mkdirSync(f.dir('h2'), { recursive: true });
    writeFileSync(at(f, 'h2', 'own'), 'x');
    h1AppliesAfterH2Prefetched(f);
    return run(f, plays(f, shared));
  };

  it('of shared state are dropped once an earlier play changed any host: the later play probes again', async () => {
    const r = await runWhileH1Applies(true);
    expect(r.result('h1', 'kv:flag', 'first').status).toBe('changed');
    // h2's prefetched answer said "absent": trusting it would write the flag again
    expect(r.result('h2', 'kv:seen', 'second').status).toBe('ok');
    expect(r.execs('h2')).toBe(2);
  });

  it("of the host's own state outlive another host's apply: no second probe", async () => {
    const r = await runWhileH1Applies(false);
    expect(r.result('h1', 'kv:flag', 'first').status).toBe('changed');
    // (the test double's file is shared, so the answer it kept is the one from before h1 wrote:
    // the proof that it was used, not read again)
    expect(r.result('h2', 'kv:seen', 'second').status).toBe('changed');
    expect(r.execs('h2')).toBe(2); // the first exec's probe, then the second play's apply
  });

  it("are dropped once the host's own earlier play applied: the later play probes again", async () => {
    const f = new FakeFleet(['h1']);
    const own = (name: string, value: string, p: string) => play(() => [kv({ path: at(f, 'h1', 'v'), value, name })], p);
    // the first play writes v = 1; the second wants it 1 too, and was prefetched while it was absent
    const r = await run(f, [own('first', '1', 'first'), own('second', '1', 'second')]);
    expect(r.result('h1', 'kv:first', 'first').status).toBe('changed');
    expect(r.result('h1', 'kv:second', 'second').status).toBe('ok');
    expect(r.execs('h1')).toBe(3);
  });

  // The first play writes one file, the second reads `readPath` (prefetched while it was absent).
  const declared = (f: FakeFleet, readPath: string, o: { firstTopics?: boolean; secondTopics?: boolean } = {}) => [
    play(() => [kv({ path: at(f, 'h1', 'written'), value: '1', name: 'first', topics: o.firstTopics ?? true })], 'first'),
    play(() => [kv({ path: readPath, value: '1', name: 'second', topics: o.secondTopics ?? true })], 'second'),
  ];

  it("outlive the host's own apply when its steps touched nothing they read: no second probe", async () => {
    const f = new FakeFleet(['h1']);
    mkdirSync(f.dir('h1'), { recursive: true });
    writeFileSync(at(f, 'h1', 'other'), '1');
    const r = await run(f, declared(f, at(f, 'h1', 'other')));
    expect(r.result('h1', 'kv:first', 'first').status).toBe('changed');
    expect(r.result('h1', 'kv:second', 'second').status).toBe('ok');
    expect(r.execs('h1')).toBe(2); // the probe of both plays, the first play's apply
  });

  it("are dropped after the host's own apply when its steps touched what they read: the later play probes again", async () => {
    const f = new FakeFleet(['h1']);
    const r = await run(f, declared(f, at(f, 'h1', 'written')));
    // prefetched, the file was absent: the probe again finds the first play's value
    expect(r.result('h1', 'kv:second', 'second').status).toBe('ok');
    expect(r.execs('h1')).toBe(3); // probe, first apply, the second play's probe
  });

  it.each<[string, { firstTopics?: boolean; secondTopics?: boolean }]>([
    ['its steps do not say what they touch', { firstTopics: false }],
    ['the later resource does not say what it reads', { secondTopics: false }],
  ])("are dropped after the host's own apply when %s: the later play probes again", async (_, o) => {
    const f = new FakeFleet(['h1']);
    const r = await run(f, declared(f, at(f, 'h1', 'other'), o));
    expect(r.result('h1', 'kv:second', 'second').status).toBe('changed');
    expect(r.execs('h1')).toBe(4); // probe, first apply, the second play's probe and apply
  });
});

describe('an interruptible run of many hosts', () => {
  it('listens for the interrupt once per host in flight without a listener-leak warning', async () => {
    const names = Array.from({ length: 25 }, (_, i) => `h${i + 1}`);
    const f = new FakeFleet(names);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const r = await run(f, [play((h) => [kv({ path: at(f, h.name, 'a'), value: '1' })])], {
        forks: 25,
        signal: new AbortController().signal,
      });
      expect(r.outcome.exitCode).toBe(0);
      // (process warnings are emitted on the next tick)
      await new Promise((res) => setImmediate(res));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});

describe('a stopped play ends the run', () => {
  // Three plays, each writing a file of its own on every host; h1 fails its first play.
  const threePlays = (f: FakeFleet, first: Partial<Play> = {}): Play[] =>
    ['p1', 'p2', 'p3'].map((name, i) => ({
      ...play((h) => [kv({ path: at(f, h.name, name), value: '1', failStep: i === 0 && h.name === 'h1' ? 3 : undefined })], name),
      ...(i === 0 ? first : {}),
    }));
  const written = (f: FakeFleet) => f.names.flatMap((h) => ['p1', 'p2', 'p3'].filter((p) => read(at(f, h, p))).map((p) => `${h}:${p}`));

  it.each<[string, Partial<Play>, RunOptions, string]>([
    ['--serial 1 --max-fail-percent 0', {}, { serial: [1], maxFailPercent: 0 }, "play 'p1' stopped, 1 of 3 hosts failed (max 0%)"],
    ['serial and maxFailPercent in the play', { serial: [1], maxFailPercent: 0 }, {}, "play 'p1' stopped, 1 of 3 hosts failed (max 0%)"],
    ['anyErrorsFatal, one host at a time', { anyErrorsFatal: true }, { forks: 1 }, "play 'p1' stopped, h1 failed (anyErrorsFatal)"],
  ])('%s: no later host, batch or play starts; those left out are not run, with why; exit 1', async (_, first, o, why) => {
    const f = new FakeFleet(['h1', 'h2', 'h3']);
    const r = await run(f, threePlays(f, first), o);
    expect(written(f)).toEqual([]);
    expect(r.events.filter((e) => e.type === 'play_start').map((e) => e.play)).toEqual(['p1']);
    expect(r.events.filter((e) => e.type === 'host_start').map((e) => e.host)).toEqual(['h1']);
    expect(r.recap('h1').error).toBe(`not run from play 'p2' on: ${why}`);
    for (const h of ['h2', 'h3']) expect(r.recap(h).error, h).toBe(`not run: ${why}`);
    expect(r.outcome.exitCode).toBe(1);
  });

  it('hosts that finished the stopped play are reported not run from the next play on', async () => {
    const f = new FakeFleet(['h2', 'h3', 'h1']); // h1, which fails, comes last
    const r = await run(f, threePlays(f), { maxFailPercent: 0, forks: 1 });
    expect(written(f)).toEqual(['h2:p1', 'h3:p1']);
    expect(r.events.filter((e) => e.type === 'play_start').map((e) => e.play)).toEqual(['p1']);
    for (const h of ['h1', 'h2', 'h3'])
      expect(r.recap(h).error, h).toBe("not run from play 'p2' on: play 'p1' stopped, 1 of 3 hosts failed (max 0%)");
  });

  it('under the budget the run goes on (2 of 3 failed at most 70 %)', async () => {
    const f = new FakeFleet(['h1', 'h2', 'h3']);
    const r = await run(f, threePlays(f), { maxFailPercent: 34 });
    expect(written(f)).toEqual(['h2:p1', 'h2:p2', 'h2:p3', 'h3:p1', 'h3:p2', 'h3:p3', 'h1:p2', 'h1:p3'].sort(byHost));
    expect(r.outcome.exitCode).toBe(1);
  });

  it('anyErrorsFatal: a host in flight starts no further wave and no handler once another failed', async () => {
    const f = new FakeFleet(['h1', 'h2']);
    let h1Failed!: () => void;
    const failed = new Promise<void>((res) => (h1Failed = res));
    let h2InWave!: () => void;
    const inWave = new Promise<void>((res) => (h2InWave = res));
    // h2's first apply wave is under way when h1's fails (h1's waits for it: a loaded machine may
    // probe h2 more slowly than it fails h1), and it returns only once h1's failure is known
    f.faults.set('h2', { before: (n) => (n === 2 ? (h2InWave(), failed) : undefined) });
    f.faults.set('h1', { before: (n) => (n === 2 ? inWave : undefined) });
    const rs: Play['resources'] = (h) => [
      kv({ path: at(f, h.name, 'a'), value: '1', failStep: h.name === 'h1' ? 3 : undefined, notify: ['restart:svc'] }),
      kv({ path: at(f, h.name, 'b'), value: '2', dependsOn: ['kv:a'] }),
      logHandler({ log: at(f, h.name, 'log'), name: 'svc' }),
    ];
    const r = await run(f, [{ ...play(rs), anyErrorsFatal: true }], {
      onEvent: (e) => {
        if (e.type === 'resource' && e.host === 'h1' && e.status === 'failed') h1Failed();
      },
    });
    expect(r.result('h2', 'kv:a').status).toBe('changed');
    expect(r.result('h2', 'kv:b')).toMatchObject({
      status: 'failed',
      error: "not applied: play 'p' stopped, h1 failed (anyErrorsFatal)",
    });
    expect(read(at(f, 'h2', 'b'))).toBeUndefined();
    expect(r.result('h2', 'restart:svc')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^not applied: play 'p' stopped/),
    });
    expect(read(at(f, 'h2', 'log'))).toBeUndefined();
  });

  it('Ctrl-C: a host that finished a play is not run from the next play on; one that never ran is not run', async () => {
    const f = new FakeFleet(['h1', 'h2']);
    const ctrlC = new AbortController();
    const rs = (name: string) => play((h) => [kv({ path: at(f, h.name, name), value: '1' })], name);
    const r = await run(f, [rs('p1'), rs('p2')], {
      forks: 1,
      signal: ctrlC.signal,
      onEvent: (e) => {
        if (e.type === 'resource' && e.host === 'h1') ctrlC.abort();
      },
    });
    expect(r.result('h1', 'kv:p1', 'p1').status).toBe('changed');
    expect(r.recap('h1').error).toBe("not run from play 'p2' on: interrupted");
    expect(r.recap('h2').error).toBe('not run: interrupted');
    expect(r.outcome.exitCode).toBe(1);
  });

  it.each<[string, Partial<Play>]>([
    ['maxFailPercent above 100', { maxFailPercent: 101 }],
    ['maxFailPercent not a number', { maxFailPercent: '10' as unknown as number }],
    ['anyErrorsFatal not a boolean', { anyErrorsFatal: 'yes' as unknown as boolean }],
  ])('%s is bad input before anything runs', (_, bad) => {
    const f = new FakeFleet(['h1']);
    expect(() => prepare(f.inventory(), [{ name: 'test', plays: [{ ...play(() => []), ...bad }] }], {})).toThrow(
      /^play 'p': (maxFailPercent must be a number from 0 to 100|anyErrorsFatal must be true or false)/,
    );
  });
});

const byHost = (a: string, b: string) => a.localeCompare(b);

describe('a refused become', () => {
  it.each([
    ['its first exec', 1],
    ['an apply wave', 2],
  ])("at %s: fails the host once, with sudo's message as its error; later plays do not start there", async (_, refusedAt) => {
    const f = new FakeFleet(['h1', 'h2']);
    const refusal = new BecomeError('become (sudo to root) failed: Sorry, try again.; sudo: 1 incorrect password attempt');
    f.faults.set('h1', {
      before: (n) => {
        if (n >= refusedAt) throw refusal;
      },
    });
    const rs = (name: string) =>
      play((h) => [kv({ path: at(f, h.name, `${name}-a`), value: '1' }), kv({ path: at(f, h.name, `${name}-b`), value: '2' })], name);
    const r = await run(f, [rs('p1'), rs('p2')]);
    expect(r.recap('h1')).toMatchObject({ failed: 2, unreachable: false, error: `not run: ${refusal.message}` });
    expect(r.outcome.results.filter((x) => x.host === 'h1').map((x) => [x.play, x.error])).toEqual([
      ['p1', 'not run: become failed on this host'],
      ['p1', 'not run: become failed on this host'],
    ]);
    expect(r.events.flatMap((e) => (e.type === 'host_start' && e.host === 'h1' ? [e.play] : []))).toEqual(['p1']);
    expect(r.execs('h1')).toBe(refusedAt);
    expect(r.recap('h2')).toMatchObject({ failed: 0, changed: 4 });
    expect(r.outcome.exitCode).toBe(1);
  });
});

describe('a lost connection', () => {
  it('mid-wave: that host is unreachable, its unfinished resources failed; the others converge; recap written', async () => {
    const f = new FakeFleet(['h1', 'h2']);
    f.faults.set('h1', { lostAfterExec: 2 });
    const rs: Play['resources'] = (h) => [
      kv({ path: join(h.var('dir', ''), 'a'), value: '1' }),
      kv({ path: join(h.var('dir', ''), 'b'), value: '2', dependsOn: ['kv:a'] }),
    ];
    const r = await run(f, [play(rs)]);
    expect(r.recap('h1')).toMatchObject({ unreachable: true, error: expect.stringMatching(/connection lost/) });
    expect(r.result('h1', 'kv:a')).toMatchObject({ status: 'failed', error: expect.stringMatching(/connection lost/) });
    expect(r.result('h1', 'kv:b').status).toBe('failed');
    expect(r.result('h2', 'kv:a').status).toBe('changed');
    expect(r.result('h2', 'kv:b').status).toBe('changed');
    expect(r.outcome.exitCode).toBe(1);
    expect(r.events.filter((e) => e.type === 'host_recap')).toHaveLength(2);
  });
});

describe('a host given up while still connecting', () => {
  it('--host-timeout stops its connection attempt (a wait for a handshake turn too): timed out, unreachable, not connected later', async () => {
    const f = new FakeFleet(['h1', 'h2']);
    // h1's connection is never made (a host waiting behind other hosts' handshakes), until stopped
    const stopped: string[] = [];
    const h1 = neverConnecting(stopped);
    const connector = (host: Host, o: ConnectOptions): Promise<Connection> => (host.name !== 'h1' ? f.connector(host) : h1(host, o));
    for (const h of f.names) mkdirSync(f.dir(h), { recursive: true });
    const prepared = prepare(f.inventory(), [{ name: 'test', plays: [play((h) => [kv({ path: at(f, h.name, 'a'), value: '1' })])] }], {});
    const outcome = await execute(
      prepared,
      {
        inventoryFile: 'fake',
        acceptNewHostKeys: false,
        connectTimeoutMs: 1000,
        check: false,
        forks: 2,
        connectAttempts: 1,
        hostTimeoutMs: 200,
        connector,
      },
      () => {},
    );
    expect(stopped).toEqual(['h1']);
    expect(outcome.hosts.find((h) => h.host === 'h1')).toMatchObject({ unreachable: true, error: 'timed out after 0.2s' });
    expect(outcome.hosts.find((h) => h.host === 'h2')).toMatchObject({ unreachable: false, changed: 1 });
  });
});

describe('a resource that throws fails alone', () => {
  it.each<[Stage, RegExp]>([
    ['parse', /^probe: parse exploded/],
    ['diff', /^diff: diff exploded/],
    ['predict', /^predict: predict exploded/],
    ['use', /^use: use exploded/],
    ['apply', /^apply: apply exploded/],
  ])('in %s: it fails, its dependants are skipped, everything else converges, recap and exit 1', async (stage, error) => {
    const f = new FakeFleet(['h1', 'h2']);
    const rs: Play['resources'] = (h) => {
      const d = (x: string) => join(h.var('dir', ''), x);
      // `use` is only called for a resource stacked on an earlier writer of its file
      const out: Resource[] = stage === 'use' ? [kv({ path: d('shared-file'), name: 'writer', value: 'w', writes: true })] : [];
      const bad = kv({ path: d('shared-file'), name: 'bad', value: 'v', writes: true, throwIn: h.name === 'h1' ? stage : undefined });
      return [
        ...out,
        bad,
        kv({ path: d('dep'), value: 'd', dependsOn: ['kv:bad'] }),
        logStep({ log: d('log'), name: 'after-bad', after: ['kv:bad'] }),
        kv({ path: d('other'), value: 'o' }),
      ];
    };
    const r = await run(f, [play(rs)]);
    expect(r.result('h1', 'kv:bad')).toMatchObject({ status: 'failed', error: expect.stringMatching(error) });
    expect(r.result('h1', 'kv:dep').status).toBe('skipped');
    expect(r.result('h1', 'log:after-bad')).toMatchObject({ status: 'skipped', error: 'dependency kv:bad did not converge' });
    expect(read(at(f, 'h1', 'log'))).toBeUndefined();
    expect(r.result('h1', 'kv:other').status).toBe('changed');
    expect(read(at(f, 'h1', 'other'))).toBe('o');
    for (const id of ['kv:bad', 'kv:dep', 'log:after-bad', 'kv:other']) expect(r.result('h2', id).status).toBe('changed');
    expect(r.outcome.exitCode).toBe(1);
    expect(r.events.at(-1)).toMatchObject({ type: 'recap' });
  });
});

describe('restart handlers', () => {
  // kv resources that write their value into `log` too (to see the order of steps and restarts)
  const logged = (f: FakeFleet, log: string, name: string, value: string, o: { notify?: string[]; dependsOn?: string[] } = {}) => {
    const r = kv({ path: at(f, 'h1', name), value, ...o });
    return {
      ...r,
      apply: () => [{ name: `set ${name}`, script: `printf %s ${value} > '${at(f, 'h1', name)}'; echo 'set ${name}' >> '${log}'` }],
    };
  };

  it('several notifiers changed, in two waves: one restart, after the last wave; a second run restarts nothing', async () => {
    const f = new FakeFleet(['h1']);
    const log = at(f, 'h1', 'log');
    const rs = () => [
      logged(f, log, 'a', '1', { notify: ['restart:svc'] }),
      logged(f, log, 'b', '2', { notify: ['restart:svc'] }),
      logged(f, log, 'c', '3', { notify: ['restart:svc'], dependsOn: ['kv:a'] }), // a later wave
      logHandler({ log, name: 'svc' }),
    ];
    const r = await run(f, [play(rs)]);
    expect(read(log)).toBe('set a\nset b\nset c\nrestart svc\n');
    expect(r.result('h1', 'restart:svc')).toMatchObject({
      status: 'changed',
      changes: [{ summary: 'restart svc (kv:a, kv:b, kv:c changed)' }],
    });
    expect(r.execs('h1')).toBe(4); // probe, wave 1, wave 2, the handler
    expect(r.outcome.exitCode).toBe(0);

    const again = await run(f, [play(rs)]);
    expect(read(log)).toBe('set a\nset b\nset c\nrestart svc\n');
    expect(again.result('h1', 'restart:svc')).toMatchObject({ status: 'ok', changes: [] });
    expect(again.execs('h1')).toBe(1); // converged: one exec, the handler's probe in it
  });

  it('not run when nothing it watches changed, though other resources did', async () => {
    const f = new FakeFleet(['h1']);
    const log = at(f, 'h1', 'log');
    mkdirSync(f.dir('h1'), { recursive: true });
    writeFileSync(at(f, 'h1', 'a'), '1');
    const r = await run(f, [
      play(() => [logged(f, log, 'a', '1', { notify: ['restart:svc'] }), logged(f, log, 'z', '9'), logHandler({ log, name: 'svc' })]),
    ]);
    expect(r.result('h1', 'kv:z').status).toBe('changed');
    expect(r.result('h1', 'restart:svc')).toMatchObject({ status: 'ok', changes: [] });
    expect(read(log)).toBe('set z\n');
    expect(r.execs('h1')).toBe(2);
  });

  it('a failing health check fails the handler and the host (exit 1); the changes stay applied', async () => {
    const f = new FakeFleet(['h1']);
    const log = at(f, 'h1', 'log');
    const r = await run(f, [
      play(() => [logged(f, log, 'a', '1', { notify: ['restart:svc'] }), logHandler({ log, name: 'svc', healthFail: true })]),
    ]);
    expect(r.result('h1', 'kv:a').status).toBe('changed');
    expect(r.result('h1', 'restart:svc')).toMatchObject({ status: 'failed', error: 'step "svc health" exit 1: svc is not healthy' });
    expect(r.recap('h1').failed).toBe(1);
    expect(r.outcome.exitCode).toBe(1);
  });

  it('check mode: "would restart", nothing run; converged: ok', async () => {
    const f = new FakeFleet(['h1']);
    const log = at(f, 'h1', 'log');
    const rs = () => [logged(f, log, 'a', '1', { notify: ['restart:svc'] }), logHandler({ log, name: 'svc' })];
    const r = await run(f, [play(rs)], { check: true });
    expect(r.result('h1', 'restart:svc')).toMatchObject({ status: 'changed', changes: [{ summary: 'would restart svc (kv:a changed)' }] });
    expect(read(log)).toBeUndefined();
    expect(r.execs('h1')).toBe(1);
    expect(r.outcome.exitCode).toBe(2);
  });

  it('a handler that cannot run here is reported skipped with why, not hidden; the run still succeeds', async () => {
    const f = new FakeFleet(['h1']);
    const log = at(f, 'h1', 'log');
    const r = await run(f, [
      play(() => [
        logged(f, log, 'a', '1', { notify: ['restart:svc'] }),
        logHandler({ log, name: 'svc', notApplicable: 'not restarted: no systemd' }),
      ]),
    ]);
    expect(r.result('h1', 'restart:svc')).toMatchObject({ status: 'skipped', error: 'not restarted: no systemd (kv:a changed)' });
    expect(read(log)).toBe('set a\n');
    expect(r.outcome.exitCode).toBe(0);
  });

  it('a notifier that failed does not trigger it; one that changed on another host does not either', async () => {
    const f = new FakeFleet(['h1', 'h2']);
    const rs: Play['resources'] = (h) => [
      kv({ path: join(h.var('dir', ''), 'a'), value: '1', notify: ['restart:svc'], failStep: h.name === 'h1' ? 3 : undefined }),
      logHandler({ log: join(h.var('dir', ''), 'log'), name: 'svc' }),
    ];
    const r = await run(f, [play(rs)]);
    expect(r.result('h1', 'kv:a').status).toBe('failed');
    expect(r.result('h1', 'restart:svc').status).toBe('ok');
    expect(read(at(f, 'h1', 'log'))).toBeUndefined();
    expect(r.result('h2', 'restart:svc').status).toBe('changed');
    expect(read(at(f, 'h2', 'log'))).toBe('restart svc\n');
  });

  it('notifying a resource that is not a handler of the play is bad input', () => {
    const f = new FakeFleet(['h1']);
    expect(() =>
      prepare(
        f.inventory(),
        [{ name: 't', plays: [play(() => [kv({ path: at(f, 'h1', 'a'), value: '1', notify: ['restart:nope'] })])] }],
        {},
      ),
    ).toThrow(/kv:a notifies restart:nope, which play 'p' does not declare as a handler/);
  });
});

describe('not applicable', () => {
  it('a resource whose diff says it cannot apply here is skipped with why; its dependants are skipped; exit 0', async () => {
    const f = new FakeFleet(['h1']);
    const d = (x: string) => at(f, 'h1', x);
    const r = await run(f, [
      play(() => [
        kv({ path: d('a'), value: '1', notApplicable: 'not supported on this host' }),
        kv({ path: d('b'), value: '2', dependsOn: ['kv:a'] }),
        kv({ path: d('c'), value: '3' }),
      ]),
    ]);
    expect(r.result('h1', 'kv:a')).toMatchObject({ status: 'skipped', error: 'not supported on this host' });
    expect(r.result('h1', 'kv:b')).toMatchObject({ status: 'skipped', error: 'dependency kv:a did not converge' });
    expect(r.result('h1', 'kv:c').status).toBe('changed');
    expect(r.outcome.exitCode).toBe(0);
  });
});
