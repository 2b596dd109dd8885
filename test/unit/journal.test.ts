import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunEvent } from '../../src/engine/events.ts';
import { JOURNAL_FLUSH_BYTES, JOURNAL_FLUSH_MS, hostsToResume, journalSink } from '../../src/output/journal.ts';
import { JSON_FLUSH_BYTES, jsonSink } from '../../src/output/json.ts';
import { eventLine } from '../../src/output/event-line.ts';
import { Secret } from '../../src/util/secret.ts';
import { InputError } from '../../src/util/errors.ts';
import { cli } from './run-cli.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rs-journal-'));
});
afterEach(() => {
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

const resource = (host: string, id: string): RunEvent => ({
  type: 'resource',
  host,
  play: 'p',
  id,
  kind: 'file',
  status: 'ok',
  changes: [],
});
const recap = (host: string, failed = 0): RunEvent => ({
  type: 'host_recap',
  host,
  ok: 1,
  changed: 0,
  failed,
  skipped: 0,
  unreachable: false,
  execs: 1,
});
const runStart: RunEvent = { type: 'run_start', playbooks: ['site'], hosts: ['a', 'b'], check: false };
const runEnd: RunEvent = { type: 'recap', hosts: [], exitCode: 0, check: false, elapsedMs: 1 };
const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

describe('run journal', () => {
  it('writes each event as one JSON line with a timestamp, in order, secrets masked', () => {
    const file = join(dir, 'j.ndjson');
    const j = journalSink(file);
    j({ type: 'run_start', playbooks: ['site'], hosts: ['a'], check: false });
    j({
      type: 'resource',
      host: 'a',
      play: 'p',
      id: 'f',
      kind: 'file',
      status: 'changed',
      changes: [{ summary: 'token', before: new Secret('s3cr3t') } as never],
    });
    j.close();
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('s3cr3t');
    const [start, res] = lines(file);
    expect(start).toMatchObject({ type: 'run_start', playbooks: ['site'], hosts: ['a'], check: false });
    expect(Object.keys(start)[0]).toBe('ts');
    expect(new Date(start.ts).toISOString()).toBe(start.ts);
    expect(res.changes[0].before).toMatch(/^<secret hmac:/);
  });

  it('shares one serialisation with --json: the same event gives the same line', async () => {
    const file = join(dir, 'j.ndjson');
    let out = '';
    const json = jsonSink(new Writable({ write: (c, _e, cb) => ((out += c.toString()), cb()) }));
    const j = journalSink(file);
    const e = resource('a', 'x');
    json(e);
    j(e);
    j.close();
    await new Promise((r) => setImmediate(r));
    expect(readFileSync(file, 'utf8')).toBe(out);
  });

  it('eventLine stamps each converged resource with the time it was written', () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date('2026-01-01T00:00:00.001Z'));
    const first = JSON.parse(eventLine(resource('a', 'x')));
    vi.setSystemTime(new Date('2026-01-01T00:00:00.002Z'));
    const second = JSON.parse(eventLine(resource('a', 'y')));
    const third = JSON.parse(eventLine(resource('a', 'x')));
    expect([first.ts, second.ts, third.ts]).toEqual(['2026-01-01T00:00:00.001Z', '2026-01-01T00:00:00.002Z', '2026-01-01T00:00:00.002Z']);
    expect([first.id, second.id, third.id]).toEqual(['x', 'y', 'x']);
  });

  it('eventLine writes every event as JSON.stringify does, after its timestamp', () => {
    const events: RunEvent[] = [
      resource('a', 'x'),
      resource('node"1\\', 'file:/etc/ü\n\u2028'),
      { type: 'resource', host: 'a', play: 'p', id: 'f', kind: 'file', status: 'changed', changes: [{ summary: 's', diff: 'd' }] },
      {
        type: 'resource',
        host: 'a',
        play: 'p',
        id: 'f',
        kind: 'file',
        status: 'skipped',
        changes: [],
        error: 'dependency x did not converge',
      },
      {
        type: 'resource',
        host: 'a',
        play: 'p',
        id: 'c',
        kind: 'command',
        status: 'changed',
        changes: [{ summary: 'run c' }],
        alwaysRuns: true,
      },
      { type: 'resource', host: 'a', play: 'p', id: 'c', kind: 'command', status: 'ok', changes: [], alwaysRuns: undefined },
      { host: 'a', type: 'resource', play: 'p', id: 'x', kind: 'file', status: 'ok', changes: [] } as RunEvent,
      // converged resources take a faster way to the same line: keys, order and escapes must hold
      resource('node"2\\', 'file:/etc/\u0000\t"x"\ud800'),
      { type: 'resource', host: 'a', play: 'p', id: 'x', kind: 'file', status: 'ok', changes: [], extra: 1 } as RunEvent,
      { type: 'resource', host: 'a', play: 'p', id: 'x', kind: 'file', status: 'ok', changes: [], error: undefined },
      { type: 'resource', host: 'a', play: 'p', kind: 'file', id: 'x', status: 'ok', changes: [] },
      { type: 'resource', host: 'a', play: 'p', id: 'x', kind: 'file', changes: [], status: 'ok' },
      { type: 'resource', host: 1, play: 'p', id: 'x', kind: 'file', status: 'ok', changes: [] } as unknown as RunEvent,
      // the same id of another kind, another host, another play: each part of the line follows
      { type: 'resource', host: 'a', play: 'p', id: 'x', kind: 'mount', status: 'ok', changes: [] },
      resource('b', 'x'),
      { type: 'resource', host: 'b', play: 'q', id: 'x', kind: 'file', status: 'ok', changes: [] },
      resource('a', 'x'),
      { type: 'host_start', host: 'a', play: 'p' },
      recap('a'),
    ];
    for (const e of events) {
      const line = eventLine(e);
      expect(line.endsWith('\n')).toBe(true);
      const { ts, ...rest } = JSON.parse(line);
      expect(new Date(ts).toISOString()).toBe(ts);
      expect(line).toBe(`{"ts":${JSON.stringify(ts)},${JSON.stringify(e).slice(1)}\n`);
      expect(rest).toEqual(JSON.parse(JSON.stringify(e)));
    }
  });

  it("--json writes events once per turn of the event loop, in order; the run's first and last at once", async () => {
    const writes: string[] = [];
    const json = jsonSink(new Writable({ write: (c, _e, cb) => (writes.push(c.toString()), cb()) }));
    const written = (i: number) =>
      writes[i]
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    json(runStart);
    expect(writes.length).toBe(1);
    json({ type: 'host_start', host: 'a', play: 'p' });
    json(resource('a', 'x'));
    json(resource('a', 'y'));
    json({ type: 'host_start', host: 'b', play: 'p' });
    expect(writes.length).toBe(1); // hosts starting together, one write when the turn ends
    await new Promise((r) => setImmediate(r));
    expect(writes.length).toBe(2);
    expect(written(1).map((e) => e.id ?? e.host)).toEqual(['a', 'x', 'y', 'b']);
    json(resource('b', 'z'));
    json(recap('a'));
    expect(writes.length).toBe(2);
    json(runEnd); // at once, after the lines before it
    expect(writes.length).toBe(3);
    expect(written(2).map((e) => e.type)).toEqual(['resource', 'host_recap', 'recap']);
    await new Promise((r) => setImmediate(r));
    expect(writes.length).toBe(3);
  });

  it('--json writes a long burst in pieces of about JSON_FLUSH_BYTES, every line whole and in order', async () => {
    const writes: string[] = [];
    const json = jsonSink(new Writable({ write: (c, _e, cb) => (writes.push(c.toString()), cb()) }));
    const n = Math.ceil((3 * JSON_FLUSH_BYTES) / eventLine(resource('a', 'r0')).length);
    for (let i = 0; i < n; i++) json(resource('a', `r${i}`));
    expect(writes.length).toBe(3); // before the turn ends
    for (const w of writes) expect(w.length).toBeGreaterThanOrEqual(JSON_FLUSH_BYTES);
    await new Promise((r) => setImmediate(r));
    const ids = writes
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l).id);
    expect(ids).toEqual(Array.from({ length: n }, (_, i) => `r${i}`));
  });

  it("writes the hosts starting or finishing in a turn when it ends, the run's first and last events at once", async () => {
    const file = join(dir, 'j.ndjson');
    const j = journalSink(file);
    const turn = () => new Promise((r) => setImmediate(r));
    j(runStart);
    expect(lines(file).map((e) => e.type)).toEqual(['run_start']);
    j({ type: 'host_start', host: 'a', play: 'p' });
    j(resource('a', 'x'));
    j(resource('a', 'y'));
    j({ type: 'host_start', host: 'b', play: 'p' });
    expect(lines(file)).toHaveLength(1);
    await turn();
    expect(lines(file).map((e) => e.id ?? e.host ?? e.type)).toEqual(['run_start', 'a', 'x', 'y', 'b']);
    j(resource('b', 'x'));
    await turn();
    expect(lines(file)).toHaveLength(5); // a resource event alone waits up to JOURNAL_FLUSH_MS
    j(recap('a'));
    j(runEnd);
    expect(lines(file).map((e) => e.type)).toEqual([
      'run_start',
      'host_start',
      'resource',
      'resource',
      'host_start',
      'resource',
      'host_recap',
      'recap',
    ]);
    j.close();
  });

  it('writes buffered resource events after JOURNAL_FLUSH_MS', () => {
    vi.useFakeTimers();
    const file = join(dir, 'j.ndjson');
    const j = journalSink(file);
    j(resource('a', 'x'));
    vi.advanceTimersByTime(JOURNAL_FLUSH_MS - 1);
    expect(lines(file)).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(lines(file)).toHaveLength(1);
    j.close();
  });

  it('writes once JOURNAL_FLUSH_BYTES are buffered', () => {
    const file = join(dir, 'j.ndjson');
    const j = journalSink(file);
    let n = 0;
    expect(existsSync(file)).toBe(true); // opened at once, written in bursts
    while (statSync(file).size === 0) j(resource('a', `r${n++}`));
    const written = lines(file).length;
    expect(written).toBe(n);
    expect(readFileSync(file).length).toBeGreaterThanOrEqual(JOURNAL_FLUSH_BYTES);
    j.close();
  });

  it('flush() and close() write what is buffered; an event after close() appends again', () => {
    const file = join(dir, 'j.ndjson');
    const j = journalSink(file);
    j(resource('a', 'x'));
    j.flush();
    expect(lines(file)).toHaveLength(1);
    j(resource('a', 'y'));
    j.close();
    expect(lines(file)).toHaveLength(2);
    j(resource('a', 'z'));
    j.close();
    expect(lines(file).map((e) => e.id)).toEqual(['x', 'y', 'z']);
  });

  // Child processes: what reaches the file when the process ends without closing the journal.
  const child = (file: string, end: string) =>
    spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `import(${JSON.stringify(join(repoRoot, 'src/output/journal.ts'))}).then(({ journalSink }) => {
          const j = journalSink(${JSON.stringify(file)});
          j({ type: 'run_start', playbooks: ['site'], hosts: ['a', 'b'], check: false });
          j({ type: 'host_start', host: 'a', play: 'p' });
          j({ type: 'resource', host: 'a', play: 'p', id: 'x', kind: 'file', status: 'ok', changes: [] });
          ${end};
        })`,
      ],
      { cwd: repoRoot, encoding: 'utf8' },
    );

  it('writes what is buffered when the process exits (process.exit, e.g. a second Ctrl-C)', () => {
    const file = join(dir, 'j.ndjson');
    const r = child(file, 'process.exit(130)');
    expect(r.status, r.stderr).toBe(130);
    expect(lines(file).map((e) => e.type)).toEqual(['run_start', 'host_start', 'resource']);
  });

  it('writes what is buffered after an uncaught exception', () => {
    const file = join(dir, 'j.ndjson');
    const r = child(file, "setImmediate(() => { throw new Error('boom') })");
    expect(r.status).toBe(1);
    expect(lines(file).map((e) => e.type)).toEqual(['run_start', 'host_start', 'resource']);
  });

  it('a killed run loses only what was not written yet (its last turn): --resume still runs every unfinished host', () => {
    const file = join(dir, 'j.ndjson');
    const r = child(file, "process.kill(process.pid, 'SIGKILL')");
    expect(r.signal).toBe('SIGKILL');
    expect(lines(file).map((e) => e.type)).toEqual(['run_start']);
    expect(hostsToResume(file)).toEqual(['a', 'b']);
  });

  it('--resume reads a journal written through the buffer: hosts without a clean recap', () => {
    const file = join(dir, 'j.ndjson');
    const j = journalSink(file);
    j({ type: 'run_start', playbooks: ['site'], hosts: ['a', 'b', 'c'], check: false });
    for (const h of ['a', 'b', 'c']) {
      j({ type: 'host_start', host: h, play: 'p' });
      j(resource(h, 'x'));
    }
    j(recap('a'));
    j(recap('b', 1));
    j.close();
    expect(hostsToResume(file)).toEqual(['b', 'c']);
  });

  it('--resume of a run where no host failed (a dry run with changes pending): exit 3, saying so, not "converged"', async () => {
    const file = join(dir, 'check.ndjson');
    const j = journalSink(file);
    j({ ...runStart, check: true });
    for (const h of ['a', 'b']) {
      j({ type: 'host_start', host: h, play: 'p' });
      j({ type: 'resource', host: h, play: 'p', id: 'x', kind: 'file', status: 'changed', changes: [{ summary: 'would write' }] });
      j({ type: 'host_recap', host: h, ok: 0, changed: 1, failed: 0, skipped: 0, unreachable: false, execs: 1 });
    }
    j({ ...runEnd, check: true, exitCode: 2 });
    j.close();
    expect(hostsToResume(file)).toEqual([]);
    const inv = join(dir, 'hosts.yml');
    writeFileSync(inv, 'all:\n  hosts:\n    a:\n    b:\n');
    const r = await cli(['-i', inv, '--resume', file]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`nothing to resume: no host of ${file} failed, was unreachable or was left unfinished`);
  });

  it('appends only to a journal: a file of something else (an inventory given by mistake) is refused and left as it was', () => {
    const inv = join(dir, 'hosts.ini');
    writeFileSync(inv, '[web]\nweb1\n');
    expect(() => journalSink(inv)).toThrow(/cannot write the journal .*hosts\.ini: it is not a journal/);
    expect(readFileSync(inv, 'utf8')).toBe('[web]\nweb1\n');
    const file = join(dir, 'j.ndjson');
    for (let i = 0; i < 2; i++) {
      const j = journalSink(file);
      j(runStart);
      j.close();
    }
    expect(lines(file).map((e) => e.type)).toEqual(['run_start', 'run_start']);
    const empty = join(dir, 'empty.ndjson');
    writeFileSync(empty, '');
    expect(() => journalSink(empty).close()).not.toThrow();
  });

  it('is opened (mode 0600) when made: a place that cannot take it is an InputError before any event', () => {
    const file = join(dir, 'sub', 'j.ndjson');
    journalSink(file).close();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    mkdirSync(join(dir, 'adir'));
    expect(() => journalSink(join(dir, 'adir'))).toThrow(InputError);
    expect(() => journalSink(join(file, 'below-a-file.ndjson'))).toThrow(/ENOTDIR/);
  });

  it('a write that fails ends the journal: told once, later events dropped, nothing thrown (also from a timer)', () => {
    vi.useFakeTimers();
    const told: string[] = [];
    const j = journalSink('/dev/full', (e) => told.push(e.message));
    expect(j.failure).toBeUndefined();
    j(resource('a', 'x')); // buffered: written by the timer
    expect(() => vi.advanceTimersByTime(JOURNAL_FLUSH_MS)).not.toThrow();
    expect(told).toEqual(['ENOSPC: no space left on device']);
    expect(j.failure?.message).toBe('ENOSPC: no space left on device');
    j(recap('a'));
    j.flush();
    j.close();
    expect(told).toHaveLength(1);
  });
});
