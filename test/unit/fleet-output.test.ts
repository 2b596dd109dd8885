// The human view at fleet size (issue #37): off a terminal a run prints a constant number of lines
// plus one per host that is not ok; changes that differ only in values are folded with the values
// listed; a failure message many hosts share is printed once with the hosts; the recap is a
// totals row plus the hosts that are not ok (a row per host with `full`); on a terminal the live
// view stays within the screen at 1,000 hosts.
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resourceEvent, resourceResult, type HostRecap, type ResourceResult } from '../../src/engine/events.ts';
import type { RunOutcome } from '../../src/engine/run.ts';
import { clusterByValues, slotLine } from '../../src/output/fold-values.ts';
import { foldProblems } from '../../src/output/fold-problems.ts';
import { foldChangeValues, groupChanges } from '../../src/output/group-changes.ts';
import { hostList } from '../../src/output/host-ranges.ts';
import { HumanReporter } from '../../src/output/human.ts';
import { recapTable } from '../../src/output/recap.ts';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function stream(tty?: { rows: number; columns: number }): { out: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const w = new Writable({
    write(chunk, _enc, cb) {
      text += String(chunk);
      cb();
    },
  });
  return { out: Object.assign(w, tty ? { isTTY: true, ...tty } : { isTTY: false }) as unknown as NodeJS.WriteStream, text: () => text };
}

const names = (n: number) => Array.from({ length: n }, (_, i) => `tb${i + 1}`);
const recapOf = (host: string, o: Partial<HostRecap> = {}): HostRecap => ({
  host,
  ok: 5,
  changed: 0,
  failed: 0,
  skipped: 0,
  unreachable: false,
  execs: 1,
  ...o,
});

type Scenario = 'converged' | 'first run' | 'one failing host';

/**
 * A run of `n` hosts as the engine reports it, five resources a host: converged, a first run
 * (every resource changed, one change naming the host's own device), or one host failing.
 */
function synthetic(n: number, scenario: Scenario): { hosts: string[]; results: ResourceResult[]; recaps: HostRecap[] } {
  const hosts = names(n);
  const results: ResourceResult[] = [];
  const recaps: HostRecap[] = [];
  hosts.forEach((host, i) => {
    const failing = scenario === 'one failing host' && i === n - 1;
    for (let k = 0; k < 5; k++) {
      const changed = scenario === 'first run';
      const summary = k === 0 ? `mount /dev/loop${2 * i} on /ais/d1 (xfs)` : `create /etc/rs/f${k}.conf (12 bytes)`;
      const id = k === 0 ? 'mount:/ais/d1' : `file:/etc/rs/f${k}.conf`;
      const status = failing && k === 4 ? 'failed' : changed ? 'changed' : 'ok';
      results.push(
        resourceResult(host, 'site', id, k === 0 ? 'mount' : 'file', {
          status,
          changes: changed ? [{ summary }] : [],
          error: status === 'failed' ? `step "write" exit 1` : undefined,
        }),
      );
    }
    recaps.push(recapOf(host, scenario === 'first run' ? { ok: 0, changed: 5 } : failing ? { ok: 4, failed: 1 } : {}));
  });
  return { hosts, results, recaps };
}

/** What the human view writes for a synthetic run off a terminal, with `full` the recap's choice. */
async function render(n: number, scenario: Scenario, recap?: 'full'): Promise<string> {
  const { out, text } = stream();
  const human = new HumanReporter({ diff: false, verbose: 0, recap, out });
  const { hosts, results, recaps } = synthetic(n, scenario);
  human.onEvent({ type: 'run_start', playbooks: ['site'], hosts, check: false });
  human.onEvent({ type: 'play_start', play: 'site', hosts });
  for (const host of hosts) human.onEvent({ type: 'host_start', host, play: 'site' });
  for (const r of results) human.onEvent(resourceEvent(r));
  for (const r of recaps) human.onEvent({ type: 'host_recap', ...r });
  const exitCode = recaps.some((r) => r.failed) ? 1 : 0;
  const outcome: RunOutcome = { hosts: recaps, exitCode, check: false, elapsedMs: 1000, results, factHashes: new Map() };
  human.onEvent({ type: 'recap', hosts: recaps, exitCode, check: false, elapsedMs: 1000 });
  await human.finish(outcome);
  return text();
}

const lineCount = (text: string) => text.split('\n').length - 1;

describe('off a terminal, the human view is a constant number of lines plus one per host not ok', () => {
  it.each<[Scenario, number]>([
    ['converged', 6],
    ['first run', 24],
    ['one failing host', 11],
  ])('%s: %i lines at 30 hosts and at 200', async (scenario, lines) => {
    expect(lineCount(await render(30, scenario))).toBe(lines);
    expect(lineCount(await render(200, scenario))).toBe(lines);
  });

  it('a converged run: the start line and the recap (totals), no host named', async () => {
    const text = await render(30, 'converged');
    expect(text).toBe(
      [
        '❯ converging 30 hosts',
        '',
        'RECAP (1.00s, converged)',
        'HOST              OK   CHANGED  FAILED  SKIPPED  UNREACHABLE  EXECS',
        'total (30 hosts)  150  0        0       0        0            30',
        '(30 hosts without a problem, not listed: a row per host with -v or --recap full)',
        '',
      ].join('\n'),
    );
  });

  it('a first run: one change per resource with the hosts folded; the per-host device a listed value', async () => {
    const text = await render(30, 'first run');
    expect(text).toContain(
      [
        '● mount:/ais/d1  [tb[1-30] (30 hosts)]',
        '    mount /dev/‹1› on /ais/d1 (xfs)',
        '      ‹1›: loop0, loop2, loop4, loop6, loop8, … loop58 (30 values)',
      ].join('\n'),
    );
    expect(text).toContain('● file:/etc/rs/f1.conf  [tb[1-30] (30 hosts)]\n    create /etc/rs/f1.conf (12 bytes)\n');
  });

  it('one failing host: its line as it ends, its problem, its recap row', async () => {
    const text = await render(30, 'one failing host');
    expect(text).toContain('✖ tb30: 4 ok, 0 changed, 1 failed\n');
    expect(text).toContain('Problems:\n  tb30: file:/etc/rs/f4.conf: FAILED: step "write" exit 1\n');
    expect(text).toMatch(/^tb30 +4 +0 +1 +0 +no +1$/m);
    expect(text).toContain('(29 hosts without a problem, not listed');
  });

  it('the recap: the totals count unreachable hosts; a row for each host not ok (failed, unreachable, not run)', () => {
    const hosts = [
      recapOf('tb1'),
      recapOf('tb2', { ok: 0, unreachable: true, execs: 0 }),
      recapOf('tb3', { ok: 0, execs: 0, error: 'not run: interrupted' }),
      recapOf('tb4', { ok: 4, failed: 1 }),
    ];
    expect(recapTable({ hosts, exitCode: 1, check: false, elapsedMs: 0 }).split('\n')).toEqual([
      'RECAP (0.00s, FAILED)',
      'HOST             OK  CHANGED  FAILED  SKIPPED  UNREACHABLE  EXECS',
      'total (4 hosts)  9   0        1       0        1            2',
      'tb2              0   0        0       0        yes          0',
      'tb3              0   0        0       0        no           0',
      'tb4              4   0        1       0        no           1',
      '(1 host without a problem, not listed: a row per host with -v or --recap full)',
    ]);
  });

  it('--recap full: a row per host', async () => {
    const text = await render(30, 'converged', 'full');
    for (const h of names(30)) expect(text).toMatch(new RegExp(`^${h} +5 +0 +0 +0 +no +1$`, 'm'));
    expect(text).not.toContain('not listed');
  });
});

describe('folding', () => {
  it('changes of one resource that differ only in values are one group, values listed in host order', () => {
    const results = ['n2', 'n1', 'n3'].map((h, i) =>
      resourceResult(h, 'p', 'mount:/d', 'mount', { status: 'changed', changes: [{ summary: `mount /dev/sd${'bca'[i]} on /d` }] }),
    );
    expect(foldChangeValues(groupChanges(results, ['n1', 'n2', 'n3']), ['n1', 'n2', 'n3'])).toEqual([
      {
        id: 'mount:/d',
        summaries: ['mount /dev/‹1› on /d'],
        diffs: [],
        hosts: ['n1', 'n2', 'n3'],
        values: [['sdc', 'sdb', 'sda']],
      },
    ]);
  });

  it.each([
    ['different words, not values', ['create /a', 'remove /a']],
    ['more than two slots', ['set a=1 b=2 c=3 d=4', 'set a=5 b=6 c=7 d=4']],
    ['more than half the words vary', ['set 1 2', 'set 3 4']],
    ['another shape', ['mount /dev/sdb on /d', 'mount /dev/sdb on /d (bind)']],
  ])('%s: not folded', (_, texts) => {
    expect(
      clusterByValues(
        texts,
        () => '',
        (t) => [t],
      ),
    ).toHaveLength(2);
  });

  it('a value that is an address or a UUID is one word; only the part that varies is the slot', () => {
    const [c] = clusterByValues(
      ['UUID=0b1e-77aa on 10.0.0.1:22', 'UUID=9f3c-0011 on 10.0.0.2:22'],
      () => '',
      (t) => [t],
    );
    expect(c.templates).toEqual(['UUID=‹1› on 10.0.0.‹2›:22']);
    expect(c.values).toEqual([
      ['0b1e-77aa', '9f3c-0011'],
      ['1', '2'],
    ]);
    expect(slotLine(1, c.values[0])).toBe('‹1›: 0b1e-77aa, 9f3c-0011');
  });

  it('a sysfs path folds to its device; the same values in several lines share one slot', () => {
    const [c] = clusterByValues(
      ['loop3', 'loop5'],
      () => '',
      (d) => [`/sys/block/${d}/queue/scheduler: none → mq-deadline`, `/sys/block/${d}/queue/nr_requests: 128 → 2048`],
    );
    expect(c.templates).toEqual(['/sys/block/‹1›/queue/scheduler: none → mq-deadline', '/sys/block/‹1›/queue/nr_requests: 128 → 2048']);
    expect(c.values).toEqual([['loop3', 'loop5']]);
  });

  it('two places with the same values but not host by host are two slots', () => {
    const pairs = [
      ['sdb', 'sdb'],
      ['sdc', 'sdb'],
      ['sdc', 'sdc'],
    ];
    const [c] = clusterByValues(
      pairs,
      () => '',
      ([a, b]) => [`mount /dev/${a} on /d1`, `mount /dev/${b} on /d2`],
    );
    expect(c.templates).toEqual(['mount /dev/‹1› on /d1', 'mount /dev/‹2› on /d2']);
    expect(c.values).toEqual([
      ['sdb', 'sdc'],
      ['sdb', 'sdc'],
    ]);
  });

  it('a failure message many hosts share is one line with the hosts; one that differs in an address, one line with the addresses', () => {
    const hosts = names(300);
    const sudo = hosts.map((host) => ({
      host,
      text: '17 resources (a, b, c, …): FAILED: become (sudo to root) failed: incorrect password',
    }));
    expect(foldProblems(sudo)).toEqual([
      `  tb[1-300] (300 hosts): 17 resources (a, b, c, …): FAILED: become (sudo to root) failed: incorrect password`,
    ]);
    const down = ['tb1', 'tb2'].map((host, i) => ({ host, text: `UNREACHABLE: ssh root@10.0.0.${i + 1}:22: connect ECONNREFUSED` }));
    expect(foldProblems(down)).toEqual([
      '  tb[1-2] (2 hosts): UNREACHABLE: ssh root@10.0.0.‹1›:22: connect ECONNREFUSED',
      '      ‹1›: 1, 2',
    ]);
  });

  it('a header names 1,000 hosts in one short line', () => {
    const odd = Array.from({ length: 1000 }, (_, i) => `node-${(i * 7919).toString(36)}x`);
    expect(hostList(odd).length).toBeLessThan(120);
    expect(hostList(odd)).toMatch(/… .* \(1000 hosts\)$/);
    expect(hostList(names(1000))).toBe('tb[1-1000] (1000 hosts)');
  });
});

/**
 * The rows a terminal's screen shows of `text` drawn from the top: line feeds move down, the
 * cursor-up sequence (ESC [ n A, as listr2's log-update erases its last frame) moves up. The
 * highest row reached, plus one, is how tall the drawing ever was.
 */
function rowsUsed(text: string): number {
  let row = 0;
  let max = 0;
  // eslint-disable-next-line no-control-regex -- the terminal's escape sequences are what it reads
  for (const m of text.matchAll(/\n|\x1b\[(\d*)A|\x1b\[(\d*)F/g)) {
    if (m[0] === '\n') row++;
    else row = Math.max(0, row - (Number(m[1] || m[2]) || 1));
    max = Math.max(max, row);
  }
  return max + 1;
}

describe('on a terminal', () => {
  it('the live view of 1,000 hosts stays within a 40-row screen', async () => {
    const { out, text } = stream({ rows: 40, columns: 120 });
    const was = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY');
    Object.defineProperty(process.stdout, 'isTTY', { value: true, configurable: true });
    let live: string | undefined;
    try {
      const human = new HumanReporter({ diff: false, verbose: 0, out });
      const { hosts, results, recaps } = synthetic(1000, 'one failing host');
      human.onEvent({ type: 'run_start', playbooks: ['site'], hosts, check: false });
      await vi.waitFor(() => expect(text()).toContain('converging 1000 hosts'), { timeout: 5000, interval: 10 });
      human.onEvent({ type: 'play_start', play: 'site', hosts });
      for (const host of hosts) human.onEvent({ type: 'host_start', host, play: 'site' });
      for (const r of results) human.onEvent(resourceEvent(r));
      await vi.waitFor(() => expect(text()).toContain('1000/1000 started'), { timeout: 5000, interval: 10 });
      for (const r of recaps) human.onEvent({ type: 'host_recap', ...r });
      await vi.advanceTimersByTimeAsync(500);
      live = text();
      await human.finish({ hosts: recaps, exitCode: 1, check: false, elapsedMs: 5, results, factHashes: new Map() });
    } finally {
      if (was) Object.defineProperty(process.stdout, 'isTTY', was);
      else delete (process.stdout as { isTTY?: boolean }).isTTY;
    }
    expect(live).toContain('site: 1000/1000 started');
    expect(rowsUsed(live ?? '')).toBeLessThanOrEqual(40);
    // the report after it: a constant number of lines too
    expect(lineCount(text().slice(live?.length))).toBeLessThan(40);
  });
});
