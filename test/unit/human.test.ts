import { Writable } from 'node:stream';
import { Listr, ListrLogger, ProcessOutput } from 'listr2';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resourceEvent, resourceResult, type HostRecap, type Recap, type RunEvent } from '../../src/engine/events.ts';
import { recapTable, verdict } from '../../src/output/recap.ts';
import type { RunOutcome } from '../../src/engine/run.ts';
import { HumanReporter, MAX_LISTED_HOSTS } from '../../src/output/human.ts';

// Time is faked: the progress views throttle their redraws and listr2 starts its tasks on later
// turns; the tests move the clock instead of waiting for it.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A stream like stderr piped to a file or a CI log (no terminal): what was written, as text. */
function pipe(): { out: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const w = new Writable({
    write(chunk, _enc, cb) {
      text += String(chunk);
      cb();
    },
  });
  return { out: Object.assign(w, { isTTY: false }) as unknown as NodeJS.WriteStream, text: () => text };
}

describe('progress without a terminal', () => {
  it('prints one line when the run starts, and none for hosts that converged or changed (the recap counts them)', async () => {
    const { out, text } = pipe();
    const human = new HumanReporter({ diff: false, verbose: 0, out });
    const hosts = ['h1', 'h2'];
    const events: RunEvent[] = [{ type: 'run_start', playbooks: ['site'], hosts, check: false }];
    const recaps: HostRecap[] = [];
    const results = [];
    for (const play of ['network', 'storage']) {
      events.push({ type: 'play_start', play, hosts });
      for (const host of hosts) {
        events.push({ type: 'host_start', host, play });
        for (let i = 0; i < 3; i++) {
          const r = resourceResult(host, play, `file:/etc/${play}-${i}`, 'file', {
            status: host === 'h2' && i === 0 ? 'changed' : 'ok',
            changes: [],
          });
          results.push(r);
          events.push(resourceEvent(r));
        }
      }
    }
    for (const host of hosts)
      recaps.push({ host, ok: host === 'h1' ? 6 : 4, changed: host === 'h1' ? 0 : 2, failed: 0, skipped: 0, unreachable: false, execs: 1 });
    const turn = () => vi.advanceTimersByTimeAsync(10);
    human.onEvent(events[0]);
    await turn(); // the progress list starts its host tasks (before any host connects)
    for (const e of events.slice(1)) human.onEvent(e);
    await turn(); // as between a host's bursts
    for (const r of recaps) human.onEvent({ type: 'host_recap', ...r });
    const outcome: RunOutcome = { hosts: recaps, exitCode: 0, check: false, elapsedMs: 10, results, factHashes: new Map() };
    await human.finish(outcome);
    const lines = text().split('\n');
    expect(lines[0]).toBe('❯ converging 2 hosts');
    expect(lines.filter((l) => /^[❯✔✖] h\d/u.test(l))).toEqual([]);
    expect(lines.filter((l) => /^h\d /.test(l))).toEqual([]); // nor a recap row
  });

  it('a line for each host that ends not ok: failures and skips counted, an unreachable host marked, a host never run at its counts; none for a host that succeeded', async () => {
    const { out, text } = pipe();
    const human = new HumanReporter({ diff: false, verbose: 0, out });
    const hosts = ['h1', 'h2', 'h3', 'h4'];
    human.onEvent({ type: 'run_start', playbooks: ['site'], hosts, check: true });
    await vi.advanceTimersByTimeAsync(10); // as before any host connects
    human.onEvent({ type: 'host_start', host: 'h1', play: 'p' });
    const results = (['ok', 'changed', 'failed', 'skipped'] as const).map((status) =>
      resourceResult('h1', 'p', `x:${status}`, 'file', { status, changes: [], error: status === 'failed' ? 'boom' : undefined }),
    );
    for (const r of results) human.onEvent(resourceEvent(r));
    const recaps: HostRecap[] = [
      { host: 'h1', ok: 1, changed: 1, failed: 1, skipped: 1, unreachable: false, execs: 1 },
      { host: 'h2', ok: 0, changed: 0, failed: 0, skipped: 0, unreachable: true, execs: 0, error: 'connect: refused' },
      { host: 'h3', ok: 0, changed: 0, failed: 0, skipped: 0, unreachable: false, execs: 0, error: 'not run: interrupted' },
      { host: 'h4', ok: 2, changed: 0, failed: 0, skipped: 1, unreachable: false, execs: 1 },
    ];
    for (const r of recaps) human.onEvent({ type: 'host_recap', ...r });
    await human.finish({ hosts: recaps, exitCode: 1, check: true, elapsedMs: 10, results, factHashes: new Map() });
    const lines = text()
      .split('\n')
      .filter((l) => /^[❯✔✖] h\d:/u.test(l));
    expect(lines).toEqual(['✖ h1: 1 ok, 1 changed, 1 failed, 1 skipped', '✖ h2: UNREACHABLE', '✖ h3: 0 ok, 0 changed, 0 failed']);
    expect(text().split('\n')[0]).toBe('❯ checking 4 hosts');
  });

  it("styles its lines as listr2's line renderer does (the terminal view is listr2's)", async () => {
    const titles = ['h1: converging', 'h2: converging'];
    const listr2 = pipe();
    const logger = new ListrLogger({ processOutput: new ProcessOutput(listr2.out, listr2.out) });
    // listr2's tasks fail as the hosts do: the marks of a failure line and of a start line
    await new Listr(
      titles.map((title) => ({
        title,
        task: () => {
          throw new Error(title);
        },
      })),
      { renderer: 'simple', exitOnError: false, rendererOptions: { logger }, registerSignalListeners: false },
    )
      .run()
      .catch(() => undefined);
    const ours = pipe();
    const human = new HumanReporter({ diff: false, verbose: 0, out: ours.out });
    human.onEvent({ type: 'run_start', playbooks: ['site'], hosts: ['h1', 'h2'], check: false });
    for (const host of ['h1', 'h2']) {
      human.onEvent({ type: 'host_start', host, play: 'p' });
      human.onEvent({ type: 'host_recap', host, ok: 0, changed: 0, failed: 1, skipped: 0, unreachable: false, execs: 1 });
    }
    const failures = (t: string) =>
      t
        .split('\n')
        .filter((l) => l.startsWith('✖'))
        .sort();
    expect(failures(ours.text()).map((l) => l.replace(/: \d+ ok, \d+ changed, \d+ failed$/, ': converging'))).toEqual(
      failures(listr2.text()).map((l) => l.replace(/ \[FAILED: .*\]$/, '')),
    );
    const startMark = (t: string) => t.slice(0, t.indexOf(' ') + 1);
    expect(startMark(ours.text())).toBe(startMark(listr2.text()));
  });

  it('in a terminal with stdout redirected (--json > run.ndjson), the progress stays on its stream, line by line', async () => {
    const { out, text } = pipe();
    Object.assign(out, { isTTY: true, columns: 80, rows: 24 });
    const stdoutWasTTY = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY');
    Object.defineProperty(process.stdout, 'isTTY', { value: false, configurable: true });
    const written = vi.spyOn(process.stdout, 'write');
    try {
      const human = new HumanReporter({ diff: false, verbose: 0, out });
      human.onEvent({ type: 'run_start', playbooks: ['site'], hosts: ['h1'], check: false });
      await vi.advanceTimersByTimeAsync(10);
      human.onEvent({ type: 'host_start', host: 'h1', play: 'p' });
      const r = resourceResult('h1', 'p', 'file:/etc/x', 'file', { status: 'ok', changes: [] });
      human.onEvent(resourceEvent(r));
      const recap: HostRecap = { host: 'h1', ok: 1, changed: 0, failed: 0, skipped: 0, unreachable: false, execs: 1 };
      human.onEvent({ type: 'host_recap', ...recap });
      await human.finish({ hosts: [recap], exitCode: 0, check: false, elapsedMs: 10, results: [r], factHashes: new Map() });
      expect(written).not.toHaveBeenCalled(); // stdout carries the NDJSON stream only
    } finally {
      written.mockRestore();
      if (stdoutWasTTY) Object.defineProperty(process.stdout, 'isTTY', stdoutWasTTY);
      else delete (process.stdout as { isTTY?: boolean }).isTTY;
    }
    expect(text().split('\n')[0]).toBe('❯ converging 1 host');
  });

  it("in a terminal, a run that ends before listr2 has started its tasks still ends (each host's line)", async () => {
    const { out, text } = pipe();
    Object.assign(out, { isTTY: true, columns: 80, rows: 24 });
    const stdoutWasTTY = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY');
    Object.defineProperty(process.stdout, 'isTTY', { value: true, configurable: true });
    try {
      const human = new HumanReporter({ diff: false, verbose: 0, out });
      // all in one turn of the event loop, as a run on this machine can be
      human.onEvent({ type: 'run_start', playbooks: ['site'], hosts: ['h1'], check: false });
      human.onEvent({ type: 'host_start', host: 'h1', play: 'p' });
      const r = resourceResult('h1', 'p', 'file:/etc/x', 'file', { status: 'changed', changes: [] });
      human.onEvent(resourceEvent(r));
      const recap: HostRecap = { host: 'h1', ok: 0, changed: 1, failed: 0, skipped: 0, unreachable: false, execs: 1 };
      human.onEvent({ type: 'host_recap', ...recap });
      const finished = human
        .finish({ hosts: [recap], exitCode: 0, check: false, elapsedMs: 1, results: [r], factHashes: new Map() })
        .then(() => 'finished');
      // (it hung for ever once: the test's own timeout is the bound)
      expect(await finished).toBe('finished');
    } finally {
      if (stdoutWasTTY) Object.defineProperty(process.stdout, 'isTTY', stdoutWasTTY);
      else delete (process.stdout as { isTTY?: boolean }).isTTY;
    }
    expect(text()).toContain('h1: 0 ok, 1 changed, 0 failed');
  });
});

/** A terminal (80x24) as `out`, and stdout a terminal too (or not) while `fn` runs. */
async function inTerminal(stdoutIsTTY: boolean, fn: (out: NodeJS.WriteStream, text: () => string) => Promise<void>): Promise<string> {
  const { out, text } = pipe();
  Object.assign(out, { isTTY: true, columns: 80, rows: 24 });
  const was = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY');
  Object.defineProperty(process.stdout, 'isTTY', { value: stdoutIsTTY, configurable: true });
  try {
    await fn(out, text);
  } finally {
    if (was) Object.defineProperty(process.stdout, 'isTTY', was);
    else delete (process.stdout as { isTTY?: boolean }).isTTY;
  }
  return text();
}

describe('progress in a terminal', () => {
  /** Until `text` shows `what` (listr2 draws asynchronously: its renderer is set up with imports). */
  const drawn = async (text: () => string, what: string) => {
    // (waitFor also moves the faked clock; the renderer's module loads in real time)
    await vi.waitFor(() => expect(text()).toContain(what), { timeout: 5000, interval: 10 }).catch(() => undefined);
    return text();
  };
  const run = async (out: NodeJS.WriteStream, text: () => string, hosts: string[]) => {
    const human = new HumanReporter({ diff: false, verbose: 0, out });
    human.onEvent({ type: 'run_start', playbooks: ['site'], hosts, check: false });
    await drawn(text, 'converging');
    human.onEvent({ type: 'play_start', play: 'storage', hosts });
    const results = [];
    for (const host of hosts.slice(0, 2)) {
      human.onEvent({ type: 'host_start', host, play: 'storage' });
      const r = resourceResult(host, 'storage', 'file:/etc/x', 'file', { status: 'changed', changes: [] });
      results.push(r);
      human.onEvent(resourceEvent(r));
    }
    const midway = await drawn(
      text,
      hosts.length > MAX_LISTED_HOSTS ? `storage: 2/${hosts.length} started · 0 ok, 2 changed` : `${hosts[1]}: 0 ok, 1 changed`,
    );
    const recaps: HostRecap[] = hosts.map((host, i) => ({
      host,
      ok: 0,
      changed: i < 2 ? 1 : 0,
      failed: 0,
      skipped: 0,
      unreachable: i === 2,
      execs: 1,
    }));
    for (const r of recaps) human.onEvent({ type: 'host_recap', ...r });
    human.onEvent({ type: 'recap', hosts: recaps, exitCode: 1, check: false, elapsedMs: 5 });
    await human.finish({ hosts: recaps, exitCode: 1, check: false, elapsedMs: 5, results, factHashes: new Map() });
    return midway;
  };

  it(`more than ${MAX_LISTED_HOSTS} hosts are one live line for the fleet: its play, hosts started and resources decided`, async () => {
    const hosts = Array.from({ length: 50 }, (_, i) => `h${i}`);
    let midway = '';
    const text = await inTerminal(true, async (out, text) => {
      midway = await run(out, text, hosts);
    });
    expect(midway).toContain('converging 50 hosts · storage: 2/50 started · 0 ok, 2 changed, 0 failed');
    const report = text.slice(text.indexOf('RECAP'));
    const progress = text.slice(0, text.indexOf('RECAP'));
    expect(progress).toContain('50 hosts: 0 ok, 2 changed, 0 failed, 1 hosts unreachable');
    expect(progress.split('\n').findLast((l) => l.includes('50 hosts: '))).toMatch(/✖/); // the run failed
    expect(progress).not.toMatch(/h\d+: \d+ ok/); // no line per host
    expect(report).not.toContain('50 hosts:'); // the live line is not drawn again below the report
  });

  it(`up to ${MAX_LISTED_HOSTS} hosts are listed, a line each`, async () => {
    const text = await inTerminal(true, async (out, text) => {
      await run(out, text, ['h0', 'h1', 'h2']);
    });
    const progress = text.slice(0, text.indexOf('RECAP'));
    expect(progress).toContain('h0: 0 ok, 1 changed, 0 failed');
    expect(progress).toContain('h2: UNREACHABLE');
    // listr2's last drawing: a success mark for the converged hosts, its failure mark for the unreachable one
    const last = (host: string) => progress.split('\n').findLast((l) => l.includes(`${host}: `) && /[❯✔✖]/u.test(l)) ?? '';
    expect(last('h0')).toContain('✔');
    expect(last('h2')).toContain('✖');
    expect(last('h2')).not.toContain('✔');
  });

  it('draws a burst of hosts retitled together once, not once per host', async () => {
    const hosts = Array.from({ length: 10 }, (_, i) => `h${i}`);
    await inTerminal(true, async (out, text) => {
      const human = new HumanReporter({ diff: false, verbose: 0, out });
      human.onEvent({ type: 'run_start', playbooks: ['site'], hosts, check: false });
      await drawn(text, 'h9: converging');
      const before = text().length;
      for (const host of hosts)
        human.onEvent(resourceEvent(resourceResult(host, 'p', 'file:/etc/x', 'file', { status: 'ok', changes: [] })));
      await drawn(text, 'h9: 1 ok');
      await vi.advanceTimersByTimeAsync(250);
      // every frame draws h0's line: one per title set would be 10 frames and more
      const frames = text().slice(before).split('h0: ').length - 1;
      expect(frames).toBeGreaterThan(0);
      expect(frames).toBeLessThanOrEqual(5);
      const recaps: HostRecap[] = hosts.map((host) => ({ host, ok: 1, changed: 0, failed: 0, skipped: 0, unreachable: false, execs: 1 }));
      for (const r of recaps) human.onEvent({ type: 'host_recap', ...r });
      await human.finish({ hosts: recaps, exitCode: 0, check: false, elapsedMs: 5, results: [], factHashes: new Map() });
    });
  });
});

describe('the report after the run', () => {
  it.each<[string, number]>([
    ['without -v', 0],
    ['with -v', 1],
  ])(
    '%s: skips with their reasons, always; a host\'s failures of one reason on one line; an unreachable host without "undefined"',
    async (_, verbose) => {
      const { out, text } = pipe();
      const human = new HumanReporter({ diff: false, verbose, out });
      const refused = 'not run: become failed on this host';
      const results = [
        ...['file:/a', 'file:/b', 'file:/c', 'file:/d'].map((id) =>
          resourceResult('h1', 'p', id, 'file', { status: 'failed', changes: [], error: refused }),
        ),
        resourceResult('h2', 'p', 'file:/x', 'file', { status: 'failed', changes: [], error: 'step "write" exit 1' }),
        resourceResult('h2', 'p', 'file:/y', 'file', { status: 'skipped', changes: [], error: 'dependency file:/x did not converge' }),
        resourceResult('h2', 'p', 'restart:kubelet', 'handler', {
          status: 'skipped',
          changes: [],
          error: 'not restarted: kubelet is not running (file:/etc/kubelet changed)',
        }),
      ];
      const hosts: HostRecap[] = [
        {
          host: 'h1',
          ok: 0,
          changed: 0,
          failed: 4,
          skipped: 0,
          unreachable: false,
          execs: 1,
          error: 'not run: become (sudo to root) failed: Sorry',
        },
        { host: 'h2', ok: 0, changed: 0, failed: 1, skipped: 2, unreachable: false, execs: 1 },
        { host: 'h3', ok: 0, changed: 0, failed: 0, skipped: 0, unreachable: true, execs: 0 },
      ];
      await human.finish({ hosts, exitCode: 1, check: false, elapsedMs: 1, results, factHashes: new Map() });
      const report = text();
      expect(report).toContain(
        [
          'Problems:',
          '  h1: not run: become (sudo to root) failed: Sorry',
          '  h3: UNREACHABLE',
          `  h1: 4 resources (file:/a, file:/b, file:/c, …): FAILED: ${refused}`,
          '  h2: file:/x: FAILED: step "write" exit 1',
          '',
          'Skipped:',
          '  h2: file:/y: SKIPPED: dependency file:/x did not converge',
          '  h2: restart:kubelet: SKIPPED: not restarted: kubelet is not running (file:/etc/kubelet changed)',
        ].join('\n'),
      );
    },
  );
});

describe('check mode counts in the report', () => {
  const host = (h: string, changed: number, pending: number): HostRecap => ({
    host: h,
    ok: 1,
    changed,
    pending,
    failed: 0,
    skipped: 0,
    unreachable: false,
    execs: 1,
  });
  it.each<[string, Recap, string]>([
    [
      'check, some pending',
      { hosts: [host('h1', 3, 4)], exitCode: 2, check: true, elapsedMs: 0 },
      'check mode: 3 to change, 4 pending on those',
    ],
    [
      'check, none pending',
      { hosts: [host('h1', 2, 0), host('h2', 1, 0)], exitCode: 2, check: true, elapsedMs: 0 },
      'check mode: 3 to change',
    ],
    ['check, converged', { hosts: [host('h1', 0, 0)], exitCode: 0, check: true, elapsedMs: 0 }, 'nothing to change'],
    [
      'check, a host failed',
      { hosts: [host('h1', 1, 2)], exitCode: 1, check: true, elapsedMs: 0 },
      'FAILED; check mode: 1 to change, 2 pending on those',
    ],
    ['apply', { hosts: [host('h1', 3, 0)], exitCode: 0, check: false, elapsedMs: 0 }, 'converged'],
  ])('%s: %s', (_, recap, want) => {
    expect(verdict(recap)).toBe(want);
    const table = recapTable(recap).split('\n');
    expect(table[0]).toContain(want);
    // a PENDING column in check mode only
    expect(table[1].split(/\s+/)).toEqual(
      recap.check
        ? ['HOST', 'OK', 'CHANGED', 'PENDING', 'FAILED', 'SKIPPED', 'UNREACHABLE', 'EXECS']
        : ['HOST', 'OK', 'CHANGED', 'FAILED', 'SKIPPED', 'UNREACHABLE', 'EXECS'],
    );
  });

  it('pending changes are listed apart from the changes, and counted apart on the recap row', async () => {
    const { out, text } = pipe();
    const human = new HumanReporter({ diff: false, verbose: 0, recap: 'full', out });
    human.onEvent({ type: 'run_start', playbooks: ['site'], hosts: ['h1'], check: true });
    const results = [
      resourceResult('h1', 'p', 'mkfs:/dev/sdb', 'mkfs', { status: 'changed', changes: [{ summary: 'would mkfs.xfs /dev/sdb' }] }),
      resourceResult('h1', 'p', 'mount:/data', 'mount', {
        status: 'changed',
        changes: [{ summary: 'depends on a pending change of mkfs:/dev/sdb' }],
        pending: 'mkfs:/dev/sdb',
      }),
    ];
    for (const r of results) human.onEvent(resourceEvent(r));
    const recap = host('h1', 1, 1);
    human.onEvent({ type: 'host_recap', ...recap });
    await human.finish({ hosts: [recap], exitCode: 2, check: true, elapsedMs: 0, results, factHashes: new Map() });
    const report = text();
    expect(report).toMatch(/^h1 +1 +1 +1 +0 +0 +no +1$/m);
    expect(report).toContain(
      [
        'Changes that would be made (check mode: nothing was changed):',
        '',
        '● mkfs:/dev/sdb  [h1]',
        '    would mkfs.xfs /dev/sdb',
        '',
        'Pending on those changes (known once they apply; not counted as changes):',
        '',
        '● mount:/data  [h1]',
        '    depends on a pending change of mkfs:/dev/sdb',
      ].join('\n'),
    );
  });
});
