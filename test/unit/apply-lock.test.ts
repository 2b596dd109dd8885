// The engine's apply lock (src/engine/apply-lock.ts) with the real script, flock and tail, run by
// /bin/sh through the local connection. The one thing changed for the test: the lock and holder
// files live in the test's own directory instead of /run/racksmith (a connection wrapper rewrites
// the two paths in each script), so the test never meets a real run's lock on this machine.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LocalConnection } from '../../src/connection/local.ts';
import type { Connection, ExecResult } from '../../src/connection/types.ts';
import { APPLY_LOCK, APPLY_LOCK_HOLDER, newRunId } from '../../src/engine/apply-lock.ts';
import { runHost } from '../../src/engine/host-run.ts';
import type { ResourceResult } from '../../src/engine/events.ts';
import { directory, file } from '../../src/index.ts';
import { common, type Resource } from '../../src/contract/resource.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-lock-'));
const lockFile = join(dir, 'apply.lock');
const holderFile = join(dir, 'apply.holder');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The local connection, with the lock's two paths moved into the test's directory. */
class TestLockPaths implements Connection {
  readonly inner = new LocalConnection('local');
  get host() {
    return this.inner.host;
  }
  get execCount() {
    return this.inner.execCount;
  }
  get sessionPid() {
    return this.inner.sessionPid;
  }
  exec(script: string, stdin?: string): Promise<ExecResult> {
    return this.inner.exec(script.split(APPLY_LOCK_HOLDER).join(holderFile).split(APPLY_LOCK).join(lockFile), stdin);
  }
  close() {
    return this.inner.close();
  }
}

/** Another run holding the lock: a shell with the lock on fd 9 that names itself in the holder file. */
let other: ChildProcess | undefined;
function otherRunHolds(): void {
  other = spawn(
    'sh',
    ['-c', `exec 9>>'${lockFile}'; flock 9; printf 'other-run %s %s\\n' $$ $$ > '${holderFile}'; echo held; exec sleep 60`],
    {
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
}
const held = () => new Promise<void>((res) => other!.stdout!.once('data', () => res()));
afterEach(() => {
  other?.kill();
  other = undefined;
});
const lockFree = () => spawnSync('flock', ['-n', lockFile, 'true']).status === 0;

/** Two waves: a directory, then a file that depends on it. */
function resources(n: number) {
  const d = join(dir, `work-${n}`);
  return [directory({ path: d }), file({ path: join(d, 'f'), content: 'x\n', dependsOn: [`directory:${d}`] })];
}

async function run(n: number, timeoutSec: number, conn = new TestLockPaths()) {
  const results: ResourceResult[] = [];
  const res = await runHost(conn, resources(n), {
    host: 'local',
    play: 'p',
    check: false,
    onResult: (r) => results.push(r),
    lock: { runId: `me-${n}`, timeoutSec },
  });
  return { res, results, conn };
}

describe('apply lock', () => {
  it('taken at the first apply and kept across waves; let go when the connection closes', async () => {
    const { res, results, conn } = await run(1, 5);
    expect(results.map((r) => r.status)).toEqual(['changed', 'changed']);
    expect(res.lockWaits).toBeUndefined();
    expect(conn.execCount).toBe(3); // probe, wave 1, wave 2: the lock adds no exec
    expect(readFileSync(holderFile, 'utf8')).toMatch(/^me-1 \d+ \d+\n$/);
    expect(lockFree()).toBe(false);
    await conn.close();
    // the holder follows its session within 0.2 s: poll for it
    for (let i = 0; i < 50 && !lockFree(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(lockFree()).toBe(true);
  });

  it("another run's lock: wait, then read the host again before changing it", async () => {
    otherRunHolds();
    await held();
    const pending = run(2, 30);
    // the run is waiting in flock; let the other run go
    for (let i = 0; i < 100 && !spawnSync('pgrep', ['-f', `flock -w 1 9`]).stdout.length; i++) await new Promise((r) => setTimeout(r, 50));
    other!.kill();
    const { res, results, conn } = await pending;
    expect(res.lockWaits).toEqual(['other-run']);
    expect(results.map((r) => r.status)).toEqual(['changed', 'changed']);
    // probe, wave 1 (waited: nothing ran), probe again, wave 1, wave 2
    expect(conn.execCount).toBe(5);
    expect(readFileSync(join(dir, 'work-2/f'), 'utf8')).toBe('x\n');
    await conn.close();
  });

  it('the timeout passed: every resource fails naming the holder, nothing is changed', async () => {
    otherRunHolds();
    await held();
    const { res, results, conn } = await run(3, 0);
    expect(res.lockWaits).toBeUndefined();
    expect(results.map((r) => [r.status, r.error])).toEqual([
      ['failed', `not applied: the apply lock ${lockFile} is held by run other-run; gave up after 0 s (--lock-timeout)`],
      ['failed', `not applied: the apply lock ${lockFile} is held by run other-run; gave up after 0 s (--lock-timeout)`],
    ]);
    expect(existsSync(join(dir, 'work-3'))).toBe(false);
    await conn.close();
  });

  it('held by this same run through another connection (two inventory hosts, one machine): fails at once, saying so', async () => {
    const first = await run(6, 5);
    expect(first.results.map((r) => r.status)).toEqual(['changed', 'changed']);
    const second = new TestLockPaths();
    const results: ResourceResult[] = [];
    // the same run id, another session; a wait of 60 s would outlast the test's own timeout
    await runHost(second, resources(7), {
      host: 'local2',
      play: 'p',
      check: false,
      onResult: (r) => results.push(r),
      lock: { runId: 'me-6', timeoutSec: 60 },
    });
    expect(results.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(results[0].error).toContain(
      "is held by this same run through another host's connection: two hosts of the inventory are this one machine",
    );
    expect(existsSync(join(dir, 'work-7'))).toBe(false);
    await second.close();
    await first.conn.close();
    for (let i = 0; i < 50 && !lockFree(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(lockFree()).toBe(true);
  }, 20_000);

  it('the holder names this run only after the wait began (its other session wrote it late): the wait ends saying so', async () => {
    otherRunHolds();
    await held();
    const pending = run(9, 30);
    for (let i = 0; i < 100 && !spawnSync('pgrep', ['-f', `flock -w 1 9`]).stdout.length; i++) await new Promise((r) => setTimeout(r, 50));
    // this run's other session took it meanwhile: the holder file now names this run
    writeFileSync(holderFile, `me-9 ${other!.pid} ${other!.pid}\n`);
    const { results, conn } = await pending;
    expect(results.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(results[0].error).toContain("is held by this same run through another host's connection");
    await conn.close();
  }, 20_000);

  it('handlers run behind the lock too: another run that took the host first means they do not run', async () => {
    const log = join(dir, 'handler.log');
    const d = join(dir, 'work-4');
    const handler: Resource = {
      ...common('test-handler', 'handler:restart', {}),
      handler: true,
      verifiable: false,
      probe: () => ':',
      parse: () => ({}),
      diff: () => [{ summary: 'restart it' }],
      apply: () => [{ name: 'restart it', script: `echo restarted >> '${log}'` }],
    };
    const conn = new TestLockPaths();
    // before the handlers' exec (the third), another run takes the host: this run's holder is gone
    const exec = conn.exec.bind(conn);
    conn.exec = async (script, stdin) => {
      if (conn.execCount === 2) {
        const holder = readFileSync(holderFile, 'utf8').split(' ')[1];
        process.kill(Number(holder));
        for (let i = 0; i < 50 && !lockFree(); i++) await new Promise((r) => setTimeout(r, 20));
        otherRunHolds();
        await held();
      }
      return exec(script, stdin);
    };
    const results: ResourceResult[] = [];
    await runHost(conn, [directory({ path: d, notify: ['handler:restart'] }), handler], {
      host: 'local',
      play: 'p',
      check: false,
      onResult: (r) => results.push(r),
      lock: { runId: 'me-4', timeoutSec: 0 },
    });
    expect(results.map((r) => [r.id, r.status])).toEqual([
      [`directory:${d}`, 'changed'],
      ['handler:restart', 'failed'],
    ]);
    expect(results[1].error).toMatch(/^not run: the apply lock .* is held by run other-run/);
    expect(existsSync(log)).toBe(false);
    await conn.close();
  });

  it('run ids name the controller, its pid and when the run started', () => {
    expect(newRunId('ctl 1', 42, new Date('2025-01-02T03:04:05Z'))).toBe('ctl_1:42:2025-01-02T03:04:05.000Z');
  });
});
