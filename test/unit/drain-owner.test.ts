// Whose a racksmith mark left on a drained node is (history/drain-owner.ts): a table of what this
// controller knows of the run; the mark's text both ways; and a real process's identity
// (run-process.ts) before and after it ends.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { drainMark, parseDrainMark } from '../../src/contract/drain.ts';
import { whoseDrain, type OwnerFacts } from '../../src/history/drain-owner.ts';
import { bootId, processStart, thisProcess } from '../../src/history/run-process.ts';

const HERE = 'ctl1';
const BOOT = 'b-1';
const proc = { pid: 4242, start: 1000, boot: BOOT };
const facts = (record: OwnerFacts['record'], live?: number): OwnerFacts => ({
  controller: HERE,
  boot: BOOT,
  record,
  startOf: (pid) => (pid === proc.pid ? live : undefined),
  runsDir: '/s/racksmith/runs',
});
const unfinished = { controller: HERE, process: proc };

describe('whoseDrain: a run of this controller that provably no longer runs is taken over; anything else stays', () => {
  it.each<[string, string | undefined, OwnerFacts, boolean, string]>([
    ['its process is gone', HERE, facts(unfinished), true, 'taken over from run R, which did not finish: its process 4242 is gone'],
    [
      'its pid is another process now',
      HERE,
      facts(unfinished, 2000),
      true,
      "taken over from run R, which did not finish: its process 4242 is gone (that pid is another process's now)",
    ],
    [
      'the controller restarted',
      HERE,
      { ...facts(unfinished, 1000), boot: 'b-2' },
      true,
      'taken over from run R, which did not finish: this controller has restarted since',
    ],
    [
      'it ended without putting the node back (its resume failed)',
      HERE,
      facts({ controller: HERE, end: '2026-12-06T10:00:00.000Z', exitCode: 1, process: proc }, 1000),
      true,
      'taken over from run R, which ended at 2026-12-06T10:00:00.000Z (exit 1) without putting the node back',
    ],
    [
      'a mark without controller, of a dead run here',
      undefined,
      facts(unfinished),
      true,
      'taken over from run R, which did not finish: its process 4242 is gone',
    ],
    ['still running here', HERE, facts(unfinished, 1000), false, 'run R is still running on this controller (pid 4242)'],
    [
      'still running, and the boot cannot be read: not proven',
      HERE,
      { ...facts(unfinished, 1000), boot: undefined },
      false,
      'run R is still running on this controller (pid 4242)',
    ],
    [
      "another controller's run (a sharded fleet)",
      'ctl2',
      facts(undefined),
      false,
      "run R is controller ctl2's, not this one's (ctl1): only its run history can tell whether it still runs",
    ],
    [
      "another controller's, even with a record here of that id",
      'ctl2',
      facts(unfinished),
      false,
      "run R is controller ctl2's, not this one's (ctl1): only its run history can tell whether it still runs",
    ],
    [
      'not in this history',
      HERE,
      facts(undefined),
      false,
      "run R is not in this controller's run history (/s/racksmith/runs): another user's or another controller's run, or pruned",
    ],
    [
      'a record of another controller (a history shared between controllers)',
      HERE,
      facts({ controller: 'ctl2', process: proc }),
      false,
      'run R ran on ctl2, not here (ctl1): only there can it be told whether it still runs',
    ],
    [
      'no end and no process recorded',
      HERE,
      facts({ controller: HERE }),
      false,
      'run R has no end, and its record does not say which process ran it: it may still be running',
    ],
  ])('%s', (_, markController, f, takeOver, why) => {
    expect(whoseDrain('R', markController, f)).toEqual({ takeOver, why });
  });

  it.each<[string, ReturnType<typeof parseDrainMark>]>([
    ['racksmith 20261206T101010Z-abcdef on ctl1', { run: '20261206T101010Z-abcdef', controller: 'ctl1' }],
    ['racksmith host:12:2026-12-06T10:10:10.000Z', { run: 'host:12:2026-12-06T10:10:10.000Z' }],
    ['maintenance by ops', undefined],
    ['racksmith', undefined],
    ['racksmith a b c', undefined],
    // an operator's own words that begin as a mark does: their drain, not a run's
    ['racksmith upgrade', undefined],
    ['racksmith upgrade on ctl1', undefined],
    ['racksmith 20261206T101010Z-abcdeg', undefined],
  ])('the mark %j', (reason, want) => expect(parseDrainMark(reason)).toEqual(want));

  it('drainMark and parseDrainMark round-trip', () => {
    expect(parseDrainMark(drainMark('20261206T101010Z-abcdef', 'ctl1'))).toEqual({ run: '20261206T101010Z-abcdef', controller: 'ctl1' });
  });
});

describe('run-process: which process ran a run, from /proc', () => {
  it('this process: its pid, a start, the boot', () => {
    expect(thisProcess()).toEqual({ pid: process.pid, start: processStart(process.pid), boot: bootId() });
    expect(bootId()).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a child is alive with a start of its own, then gone once it ended and was reaped', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    await once(child, 'spawn');
    const start = processStart(child.pid!);
    // (clock ticks after boot: never 0 for a process started after init, and later than its parent's)
    expect(processStart(process.pid)).toBeGreaterThan(0);
    expect(start).toBeGreaterThanOrEqual(processStart(process.pid)!);
    child.kill('SIGKILL');
    await once(child, 'exit');
    // (Node reaps it on exit: no zombie left under that pid)
    expect(processStart(child.pid!)).toBeUndefined();
  });
});
