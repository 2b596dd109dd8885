// --drain's pure decisions: the Slurm and Kubernetes providers against scripted controller
// answers, which hosts a run drains (drainPlan), and the engine's order on fake hosts (drain
// before the first disruptive change, resume after the host's last play, only what it drained).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConnectError, type Connection, type ExecResult } from '../../src/connection/types.ts';
import {
  blockedDetail,
  someoneElsesDetail,
  drainAction,
  type DrainAction,
  type DrainExec,
  type DrainOutcome,
  type DrainOwner,
  type DrainProvider,
  type OutOfScheduling,
  type ResumeOutcome,
} from '../../src/contract/drain.ts';
import type { Play } from '../../src/contract/playbook.ts';
import type { Change, Resource } from '../../src/contract/resource.ts';
import { drainPlan } from '../../src/cli/drain-plan.ts';
import { drainLines } from '../../src/output/drain-lines.ts';
import { kubernetesDrain } from '../../src/drain/kubernetes.ts';
import { mtu } from '../../src/resources/tuning/mtu.ts';
import { nicQueues } from '../../src/resources/tuning/nic.ts';
import { alreadyOut, parseClusterName, parseNodeState, slurmDrain } from '../../src/drain/slurm.ts';
import type { RunEvent } from '../../src/engine/events.ts';
import { DrainSession, RESUME_ATTEMPTS, SESSION_EXECS, type DrainPlan } from '../../src/engine/drain-session.ts';
import { execute, prepare } from '../../src/engine/run.ts';
import type { Host } from '../../src/inventory/model.ts';
import { InputError } from '../../src/util/errors.ts';
import { drainClaims } from '../../src/history/drain-claim.ts';
import { FakeFleet } from '../support/fake-host.ts';
import { kv } from '../support/test-resources.ts';
import { shq } from '../../src/shell/quote.ts';

/** A controller that answers each script by the first matching rule, and records what it ran. */
function controller(
  rules: Array<[RegExp, { code?: number; stdout?: string; stderr?: string } | (() => { code?: number; stdout?: string; stderr?: string })]>,
) {
  const ran: string[] = [];
  const exec: DrainExec = async (script) => {
    ran.push(script.split('\n').pop()!);
    const hit = rules.find(([re]) => re.test(script));
    if (!hit) return { code: 0, stdout: '', stderr: '' };
    const r = typeof hit[1] === 'function' ? hit[1]() : hit[1];
    return { code: 0, stdout: '', stderr: '', ...r };
  };
  return { exec, ran };
}

/**
 * A Slurm controller in a temp directory: the provider's real script run by /bin/sh, with `sinfo`
 * printing `sinfo` and `scontrol` doing nothing, each exiting as told and logging its arguments.
 */
const stubDirs: string[] = [];
afterAll(() => stubDirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function slurmStubs(o: { sinfo: string; sinfoExit?: number; scontrolExit?: number }) {
  const dir = mkdtempSync(join(tmpdir(), 'rs-slurm-'));
  stubDirs.push(dir);
  const log = join(dir, 'calls');
  const stub = (name: string, out: string, exit = 0) => {
    const body = `echo "${name} $*" >> ${shq(log)}\n${exit ? `echo '${name}: stub error' >&2\nexit ${exit}\n` : ''}${out ? `printf '%s\\n' ${shq(out)}\n` : ''}`;
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}`, { mode: 0o755 });
  };
  stub('sinfo', o.sinfo.replaceAll('\\n', '\n'), o.sinfoExit);
  stub('scontrol', '', o.scontrolExit);
  const exec: DrainExec = (script) =>
    new Promise((done) =>
      execFile('/bin/sh', ['-c', script], { env: { PATH: `${dir}:${process.env.PATH}` } }, (err, stdout, stderr) =>
        done({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      ),
    );
  const calls = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
  return { exec, calls };
}

describe('drainAction: what a drain does with the node as it finds it', () => {
  const dead: DrainOwner = { takeOver: true, why: 'taken over from run R0, which did not finish: its process 9 is gone' };
  const mine: DrainOwner = { takeOver: true, why: 'still drained by this run' };
  const live: DrainOwner = { takeOver: false, why: 'run R0 is still running on this controller (pid 9)' };
  const elsewhere: DrainOwner = { takeOver: false, why: "run R0 is controller rack2-ctl's, not this one's (ctl): ..." };
  const pruned: DrainOwner = { takeOver: false, why: "run R0 is not in this controller's run history (/s/runs): ..." };
  it.each<[string, boolean, DrainOwner | undefined, DrainAction]>([
    ['in scheduling: drained', false, undefined, 'drain'],
    ['in scheduling, a stale mark asked about all the same: drained', false, live, 'drain'],
    ["out, no racksmith mark (an operator's drain or cordon): left so, the change applied under it", true, undefined, 'already'],
    ["out under a dead run's mark this run takes over", true, dead, 'take-over'],
    ["out under this run's own mark (a resume that failed)", true, mine, 'take-over'],
    ["out under a live run's mark of this controller: blocked", true, live, 'blocked'],
    ["out under another controller's run's mark: blocked", true, elsewhere, 'blocked'],
    ["out under the mark of a run not in this history (another user's, pruned): blocked", true, pruned, 'blocked'],
  ])('%s', (_, out, owner, want) => {
    expect(drainAction(out, owner)).toBe(want);
  });
  it("a blocked drain's detail: the node's state, whose drain it is, what to do and the scheduler's command", () => {
    expect(blockedDetail('drained (racksmith R0 on c)', live.why, 'scontrol update nodename=n1 state=resume')).toBe(
      'drained (racksmith R0 on c): run R0 is still running on this controller (pid 9); no disruptive change is applied under ' +
        "another racksmith run's drain, which that run ends (puts the node back) when its own work ends, maybe in the middle of " +
        "this host's changes: run again once that run has ended; if it never will (another controller's run that died, a pruned run), " +
        'put the node back by hand (scontrol update nodename=n1 state=resume) and run again',
    );
  });
});

describe('Slurm provider', () => {
  it.each<[string, string, string | undefined]>([
    [
      'as scontrol aligns it',
      'AccountingStorageType   = (null)\nClusterName             = racksmith-bed\nCompleteWait            = 0 sec\n',
      'racksmith-bed',
    ],
    ['unaligned, at the end', 'SlurmctldPort = 6817\nClusterName=east', 'east'],
    ['none', 'SlurmctldPort = 6817\n', undefined],
    ['a field whose name only starts so', 'ClusterNameX = west\n', undefined],
    ['empty, the next line one word', 'ClusterName = \nfoo\n', undefined],
  ])("the cluster's name in scontrol show config: %s", (_, out, want) => expect(parseClusterName(out)).toBe(want));
  it("the cluster's identity: scontrol's ClusterName; a controller that names none, or fails, is an error", async () => {
    const answer = (stdout: string, code = 0) =>
      controller([[/scontrol show config/, { code, stdout, stderr: code ? 'slurm_load_ctl_conf error' : '' }]]);
    expect(await slurmDrain.clusterOf!(answer('ClusterName = east\n').exec)).toBe('east');
    await expect(slurmDrain.clusterOf!(answer('SlurmctldPort = 6817\n').exec)).rejects.toThrow('scontrol show config names no ClusterName');
    await expect(slurmDrain.clusterOf!(answer('', 1).exec)).rejects.toThrow(
      'scontrol show config failed (exit 1): slurm_load_ctl_conf error',
    );
  });
  // sinfo's %T (sinfo(1) NODE STATE CODES, Slurm 22.05: a long state and a flag suffix) and the
  // complete state (base+flags, as scontrol's State= writes it): out of scheduling, or drained by us
  it.each<[string, ReturnType<typeof parseNodeState>, boolean]>([
    ['idle|none', { state: 'idle', reason: 'none' }, false],
    ['allocated*|none', { state: 'allocated', reason: 'none' }, false],
    ['mixed|none', { state: 'mixed', reason: 'none' }, false],
    ['mixed-|none', { state: 'mixed', reason: 'none' }, false],
    ['completing|none', { state: 'completing', reason: 'none' }, false],
    ['reserved|none', { state: 'reserved', reason: 'none' }, false],
    ['maint|none', { state: 'maint', reason: 'none' }, false],
    ['idle$|none', { state: 'idle', reason: 'none' }, false],
    ['mixed+maint|none', { state: 'mixed+maint', reason: 'none' }, false],
    ['IDLE+RESERVED|none', { state: 'IDLE+RESERVED', reason: 'none' }, false],
    ['idle+maintenance+reserved|none', { state: 'idle+maintenance+reserved', reason: 'none' }, false],
    ['drained$|ops', { state: 'drained', reason: 'ops' }, true],
    ['IDLE+DRAIN+MAINTENANCE+RESERVED|ops', { state: 'IDLE+DRAIN+MAINTENANCE+RESERVED', reason: 'ops' }, true],
    ['draining|racksmith r1', { state: 'draining', reason: 'racksmith r1' }, true],
    ['drained|disk swap|ticket 4', { state: 'drained', reason: 'disk swap|ticket 4' }, true],
    ['drained@|reboot', { state: 'drained', reason: 'reboot' }, true],
    ['idle+drain|ops', { state: 'idle+drain', reason: 'ops' }, true],
    ['MIXED+DRAIN|ops', { state: 'MIXED+DRAIN', reason: 'ops' }, true],
    ['maint+drain|ops', { state: 'maint+drain', reason: 'ops' }, true],
    ['down*|Not responding', { state: 'down', reason: 'Not responding' }, true],
    ['idle+down|x', { state: 'idle+down', reason: 'x' }, true],
    ['fail|psu', { state: 'fail', reason: 'psu' }, true],
    ['failing|psu', { state: 'failing', reason: 'psu' }, true],
  ])('sinfo %j', (line, want, out) => {
    expect(parseNodeState(`${line}\n`)).toEqual(want);
    expect(alreadyOut(want!)).toBe(out);
  });

  it.each([
    ['reserved', 'reserved'],
    ['maint', 'maint'],
    ['mixed+maint', 'maint'],
    ['idle+maintenance+reserved', 'maint'],
    ['IDLE+RESERVED', 'reserved'],
  ])('a node in a reservation (%s) is drained, said so, and resumed after', async (state, said) => {
    const c = controller([[/^sinfo/m, { stdout: `${state}|none\n` }]]);
    expect(await slurmDrain.drain(c.exec, 'n1', { reason: 'racksmith r1', timeoutSec: 5 })).toEqual({
      kind: 'drained',
      detail: `was ${said} (still open to its reservation's jobs)`,
    });
    expect(c.ran).toContain("scontrol update nodename=n1 state=drain reason='racksmith r1'");
  });

  it('idle node: drain with the run id as reason, no job left: drained; resume', async () => {
    const c = controller([[/^sinfo/m, { stdout: 'idle|none\n' }]]);
    expect(await slurmDrain.drain(c.exec, 'n1', { reason: 'racksmith r1', timeoutSec: 5 })).toEqual({ kind: 'drained' });
    expect(c.ran).toEqual([
      "sinfo -h -N -n n1 -o '%T|%E'",
      "scontrol update nodename=n1 state=drain reason='racksmith r1'",
      'squeue -h -w n1 -t running,completing -o %i',
    ]);
  });

  // the resume: only under this run's mark (an operator who drained it since with their own reason
  // keeps it out), asked and done in one script: run here by /bin/sh with sinfo and scontrol stubs
  it.each<[string, string, Awaited<ReturnType<typeof slurmDrain.resume>>, boolean]>([
    ["still drained under this run's mark: resumed", 'drained|racksmith r1 on c', undefined, true],
    ['down under its mark (not responding since): resumed', 'down+drain|racksmith r1 on c', undefined, true],
    ['drained under the mark of the dead run it took the node over from: resumed', 'drained|racksmith r0 on c', undefined, true],
    [
      'listed twice (two partitions), its mark on the first line: resumed',
      'drained|racksmith r1 on c\ndrained|racksmith r1 on c',
      undefined,
      true,
    ],
    ['back in scheduling already (resumed by hand): nothing to do', 'idle|none', undefined, false],
    ["in scheduling with this run's reason still shown: not resumed (nothing to put back)", 'idle|racksmith r1 on c', undefined, false],
    ["Slurm's other case: resumed", 'DRAINED|racksmith r1 on c', undefined, true],
    [
      "a reason whose second line is the line a resume prints: left out (that line is the caller's own, unguessable)",
      'drained|ops: keep out\\nracksmith: resumed',
      { someoneElses: someoneElsesDetail('drained (ops: keep out)') },
      false,
    ],
    [
      'drained since by an operator with a reason of their own: left out',
      'drained|ops: bad DIMM',
      { someoneElses: someoneElsesDetail('drained (ops: bad DIMM)') },
      false,
    ],
    [
      'a reason that only starts with the mark: left out',
      "drained|racksmith r1 on c, then ops: don't",
      { someoneElses: someoneElsesDetail("drained (racksmith r1 on c, then ops: don't)") },
      false,
    ],
    [
      "drained since under another run's mark: left out",
      'drained|racksmith r2 on c',
      { someoneElses: someoneElsesDetail('drained (racksmith r2 on c)') },
      false,
    ],
    ['Slurm does not know it: not resumed', '', 'Slurm does not know node n1 (sinfo lists nothing)', false],
  ])('resume: %s', async (_, sinfo, want, resumed) => {
    const c = slurmStubs({ sinfo });
    expect(await slurmDrain.resume(c.exec, 'n1', ['racksmith r1 on c', 'racksmith r0 on c'])).toEqual(want);
    expect(c.calls()).toEqual(['sinfo -h -N -n n1 -o %T|%E', ...(resumed ? ['scontrol update nodename=n1 state=resume'] : [])]);
  });

  it.each<[string, { sinfoExit?: number; scontrolExit?: number }, string]>([
    ['sinfo fails: said, nothing resumed', { sinfoExit: 1 }, 'sinfo -n n1 failed (exit 1): sinfo: stub error'],
    ['the resume fails: said', { scontrolExit: 1 }, 'scontrol resume n1 failed (exit 1): scontrol: stub error'],
  ])('resume: %s', async (_, exits, want) => {
    const c = slurmStubs({ sinfo: 'drained|racksmith r1 on c', ...exits });
    expect(await slurmDrain.resume(c.exec, 'n1', ['racksmith r1 on c'])).toEqual(want);
    expect(c.calls().filter((l) => l.startsWith('scontrol'))).toHaveLength(exits.sinfoExit ? 0 : 1);
  });

  it('a job that outlives the timeout: failed, and drained (so resumed after)', async () => {
    const c = controller([
      [/^sinfo/m, { stdout: 'allocated|none\n' }],
      [/^squeue/m, { stdout: '41\n' }],
    ]);
    expect(await slurmDrain.drain(c.exec, 'n1', { reason: 'racksmith r1', timeoutSec: 1 })).toEqual({
      kind: 'failed',
      detail: 'timed out after 1s waiting for the jobs on n1: job 41 still running',
      drained: true,
    });
  });

  it('waits while jobs run, then drained', async () => {
    let polls = 0;
    const c = controller([
      [/^sinfo/m, { stdout: 'mixed|none\n' }],
      [/^squeue/m, () => ({ stdout: ++polls < 3 ? '7\n8\n' : '' })],
    ]);
    expect(await slurmDrain.drain(c.exec, 'n1', { reason: 'r', timeoutSec: 10 })).toEqual({ kind: 'drained' });
    expect(polls).toBe(3);
  });

  it('drained by someone else: left so (no scontrol update), its jobs still waited for', async () => {
    const c = controller([[/^sinfo/m, { stdout: 'drained|maintenance\n' }]]);
    expect(await slurmDrain.drain(c.exec, 'n1', { reason: 'r', timeoutSec: 5 })).toEqual({
      kind: 'already',
      detail: 'drained (maintenance)',
    });
    expect(c.ran.some((s) => s.startsWith('scontrol'))).toBe(false);
  });

  it('check mode asks sinfo only whether someone else has the node out, and why', async () => {
    const out = controller([[/^sinfo/m, { stdout: 'drained|maintenance by ops\n' }]]);
    expect(await slurmDrain.outOfScheduling!(out.exec, 'n1')).toBe('drained (maintenance by ops)');
    expect(out.ran).toEqual(["sinfo -h -N -n n1 -o '%T|%E'"]);
    // in a reservation or running jobs: in scheduling (the apply drains it)
    expect(await slurmDrain.outOfScheduling!(controller([[/^sinfo/m, { stdout: 'maint|none\n' }]]).exec, 'n1')).toBeUndefined();
    expect(await slurmDrain.outOfScheduling!(controller([[/^sinfo/m, { stdout: 'allocated|none\n' }]]).exec, 'n1')).toBeUndefined();
    await expect(slurmDrain.outOfScheduling!(controller([]).exec, 'n1')).rejects.toThrow('Slurm does not know node n1');
    // a dead run's drain: the apply takes it over, so the check says so; a live run's stays out
    const marked = controller([[/^sinfo/m, { stdout: 'drained|racksmith R0 on c\n' }]]);
    const dead = { takeOver: true, why: 'taken over from run R0, which did not finish: its process 9 is gone' };
    expect(await slurmDrain.outOfScheduling!(marked.exec, 'n1', () => dead)).toEqual({ takeOver: dead.why });
    const live = { takeOver: false, why: 'run R0 is still running on this controller (pid 9)' };
    expect(await slurmDrain.outOfScheduling!(marked.exec, 'n1', () => live)).toEqual({
      blocked: blockedDetail('drained (racksmith R0 on c)', live.why, 'scontrol update nodename=n1 state=resume'),
    });
    // down with a dead run's mark: never taken over
    const down = controller([[/^sinfo/m, { stdout: 'down+drain|racksmith R0 on c\n' }]]);
    expect(await slurmDrain.outOfScheduling!(down.exec, 'n1', () => dead)).toBe('down+drain (racksmith R0 on c)');
    // down with a live run's mark: that run puts it back when its work ends (blocked)
    expect(await slurmDrain.outOfScheduling!(down.exec, 'n1', () => live)).toEqual({
      blocked: blockedDetail('down+drain (racksmith R0 on c)', live.why, 'scontrol update nodename=n1 state=resume'),
    });
  });

  // a node out of scheduling with a racksmith mark: ownerOf says whose (history/drain-owner.ts)
  const dead = { takeOver: true, why: 'taken over from run R0, which did not finish: its process 9 is gone' };
  const live = { takeOver: false, why: 'run R0 is still running on this controller (pid 9)' };
  it.each<[string, string, typeof dead | undefined, DrainOutcome, boolean]>([
    [
      "a dead run's drain: taken over (our mark), jobs waited for",
      'draining|racksmith R0 on c',
      dead,
      { kind: 'drained', detail: dead.why },
      true,
    ],
    ["a dead run's drained node (idle+drain)", 'idle+drain|racksmith R0 on c', dead, { kind: 'drained', detail: dead.why }, true],
    [
      "this run's own mark (a resume that failed): ours still",
      'drained|racksmith R1 on c',
      undefined,
      { kind: 'drained', detail: 'still drained by this run' },
      true,
    ],
    [
      "a live run's drain: blocked, failed at once (no wait for its jobs), said whose and what to do",
      'drained|racksmith R0 on c',
      live,
      {
        kind: 'failed',
        detail: blockedDetail('drained (racksmith R0 on c)', live.why, 'scontrol update nodename=n1 state=resume'),
        drained: false,
      },
      false,
    ],
    [
      "down with a dead run's mark: never taken over",
      'down+drain|racksmith R0 on c',
      dead,
      { kind: 'already', detail: 'down+drain (racksmith R0 on c)' },
      false,
    ],
    [
      "down or failing with a live run's mark: that run puts it back when its work ends, blocked",
      'down+drain|racksmith R0 on c',
      live,
      {
        kind: 'failed',
        detail: blockedDetail('down+drain (racksmith R0 on c)', live.why, 'scontrol update nodename=n1 state=resume'),
        drained: false,
      },
      false,
    ],
    [
      "down under this run's own mark (an earlier play's resume that failed): left as it is, not blocked by itself",
      'down+drain|racksmith R1 on c',
      live,
      { kind: 'already', detail: 'down+drain (racksmith R1 on c)' },
      false,
    ],
    ["not a racksmith mark: someone else's", 'drained|ops', undefined, { kind: 'already', detail: 'drained (ops)' }, false],
  ])('%s', async (_, sinfo, owner, want, taken) => {
    const c = controller([[/^sinfo/m, { stdout: `${sinfo}\n` }]]);
    const asked: string[] = [];
    const ownerOf = (reason: string) => (asked.push(reason), reason.startsWith('racksmith ') ? owner : undefined);
    let out = false;
    const got = await slurmDrain.drain(c.exec, 'n1', { reason: 'racksmith R1 on c', timeoutSec: 5, ownerOf, takenOut: () => (out = true) });
    expect(got).toEqual(want);
    expect(out).toBe(taken);
    // taken over: the reason becomes this run's, so that a later run asks about this one
    expect(c.ran.includes("scontrol update nodename=n1 state=drain reason='racksmith R1 on c'")).toBe(taken);
    // blocked: nothing more asked of the controller (its jobs are not this run's to wait for)
    if (want.kind === 'failed') expect(c.ran).toEqual(["sinfo -h -N -n n1 -o '%T|%E'"]);
  });

  it("a taken-over drain that times out says so, and is this run's to resume", async () => {
    const c = controller([
      [/^sinfo/m, { stdout: 'draining|racksmith R0 on c\n' }],
      [/^squeue/m, { stdout: '41\n' }],
    ]);
    expect(await slurmDrain.drain(c.exec, 'n1', { reason: 'racksmith R1 on c', timeoutSec: 1, ownerOf: () => dead })).toEqual({
      kind: 'failed',
      detail: `timed out after 1s waiting for the jobs on n1: job 41 still running (${dead.why})`,
      drained: true,
    });
  });

  it('a node Slurm does not know, or a failing command: failed, not drained', async () => {
    expect(await slurmDrain.drain(controller([]).exec, 'n1', { reason: 'r', timeoutSec: 5 })).toMatchObject({
      kind: 'failed',
      drained: false,
      detail: 'Slurm does not know node n1 (sinfo lists nothing)',
    });
    const broken = controller([[/^sinfo/m, { code: 1, stderr: 'slurm_load_node: Unable to contact slurm controller' }]]);
    expect(await slurmDrain.drain(broken.exec, 'n1', { reason: 'r', timeoutSec: 5 })).toMatchObject({
      kind: 'failed',
      drained: false,
      detail: 'sinfo -n n1 failed (exit 1): slurm_load_node: Unable to contact slurm controller',
    });
  });

  it('Ctrl-C while waiting: failed, drained as it stands', async () => {
    const abort = new AbortController();
    abort.abort();
    const c = controller([
      [/^sinfo/m, { stdout: 'allocated|none\n' }],
      [/^squeue/m, { stdout: '41\n' }],
    ]);
    expect(await slurmDrain.drain(c.exec, 'n1', { reason: 'r', timeoutSec: 60, signal: abort.signal })).toMatchObject({
      kind: 'failed',
      drained: true,
      detail: 'interrupted while waiting for the jobs on n1: job 41 still running',
    });
  });

  it('a stop that kills the squeue in flight (its connection dropped) still names the jobs the last answer listed', async () => {
    const stop = new AbortController();
    let asked = 0;
    const c = controller([
      [/^sinfo/m, { stdout: 'allocated|none\n' }],
      [
        /^squeue/m,
        () => {
          if (++asked === 1) return { stdout: '41\n' };
          stop.abort('host timed out after 15s');
          throw new Error('connection dropped');
        },
      ],
    ]);
    expect(await slurmDrain.drain(c.exec, 'n1', { reason: 'r', timeoutSec: 60, signal: stop.signal })).toMatchObject({
      kind: 'failed',
      drained: true,
      detail: 'host timed out after 15s while waiting for the jobs on n1: job 41 still running',
    });
  });
});

/**
 * The controller's connection for the engine-level Kubernetes drain tests, its commands logged in
 * `ran`: `k get node` answers n1 uncordoned, cordon and uncordon answer, and `kubectl drain` waits on
 * its evictions until the connection is aborted (the kill of the commands in flight: no exit status,
 * as over SSH), or until its own `--timeout` (`ownTimeoutMs`, exit 1). `onDrain` runs as it starts.
 */
function killableKubectl(ran: string[], o: { onDrain?: () => void; ownTimeoutMs?: number }): (host: string) => Connection {
  /** The mark of racksmith's cordon of n1 as the patches leave it (every connection's view). */
  let cordonedBy: string | undefined;
  return (host) => {
    let kill: (() => void) | undefined;
    return {
      host,
      execCount: 0,
      exec: async (script) => {
        const cmd = script.split('\n').pop()!;
        ran.push(cmd);
        if (cmd.startsWith('k get node'))
          return {
            code: 0,
            stdout: nodeJson(cordonedBy ? { unschedulable: true, mark: cordonedBy, manager: 'racksmith' } : {}),
            stderr: '',
          };
        if (cmd.startsWith('k patch node')) cordonedBy = /"unschedulable":true.*"racksmith\.io\/drained-by":"([^"]*)"/.exec(cmd)?.[1];
        if (!cmd.startsWith('kw drain')) return { code: 0, stdout: '', stderr: '' };
        o.onDrain?.();
        return new Promise((r) => {
          const t =
            o.ownTimeoutMs === undefined
              ? undefined
              : setTimeout(() => r({ code: 1, stdout: '', stderr: `global timeout reached: ${o.ownTimeoutMs! / 1000}s` }), o.ownTimeoutMs);
          kill = () => (clearTimeout(t), r({ code: null, stdout: '', stderr: '' }));
        });
      },
      abort: async () => {
        ran.push('(killed)');
        kill?.();
      },
      close: async () => kill?.(),
    };
  };
}

/** `kubectl get node -o json --show-managed-fields` of n1: cordoned or not, the annotation, who last set spec.unschedulable. */
const nodeJson = (o: { unschedulable?: boolean; mark?: string; manager?: string; resourceVersion?: string } = {}) =>
  JSON.stringify({
    kind: 'Node',
    metadata: {
      name: 'n1',
      ...(o.resourceVersion ? { resourceVersion: o.resourceVersion } : {}),
      annotations: o.mark === undefined ? {} : { 'racksmith.io/drained-by': o.mark },
      managedFields: o.manager ? [{ manager: o.manager, operation: 'Update', fieldsV1: { 'f:spec': { 'f:unschedulable': {} } } }] : [],
    },
    spec: o.unschedulable ? { unschedulable: true } : {},
  });
const GET_N1 = 'k get node n1 -o json --show-managed-fields';
const GET_KUBE_SYSTEM = "k get namespace kube-system -o jsonpath='{.metadata.uid}'";
const KUBE_SYSTEM_UID = '3f1c2a9e-7b4d-4e0a-9c55-0d1e2f3a4b5c';
const cordonN1 = (mark: string) =>
  `k patch node n1 --field-manager=racksmith -p '{"spec":{"unschedulable":true},"metadata":{"annotations":{"racksmith.io/drained-by":"${mark}"}}}'`;
const UNCORDON_N1 = `k patch node n1 --field-manager=racksmith -p '{"spec":{"unschedulable":false},"metadata":{"annotations":{"racksmith.io/drained-by":null}}}'`;
const uncordonN1At = (rv: string) =>
  `k patch node n1 --field-manager=racksmith -p '{"spec":{"unschedulable":false},"metadata":{"annotations":{"racksmith.io/drained-by":null},"resourceVersion":"${rv}"}}'`;
const UNMARK_N1 = `k patch node n1 --field-manager=racksmith -p '{"metadata":{"annotations":{"racksmith.io/drained-by":null},"resourceVersion":"7"}}'`;
const CONFLICT_N1 = {
  code: 1,
  stderr:
    'Error from server (Conflict): Operation cannot be fulfilled on nodes "n1": the object has been modified; please apply your changes to the latest version and try again\n',
};

describe('Kubernetes provider', () => {
  const k8s = kubernetesDrain({ kubeconfig: '/etc/kubernetes/admin.conf', kubectl: 'kubectl' });
  it("the cluster's identity: the kube-system namespace's UID; no UID, or a failure, is an error", async () => {
    const c = controller([[/k get namespace kube-system/, { stdout: KUBE_SYSTEM_UID }]]);
    expect(await k8s.clusterOf!(c.exec)).toBe(KUBE_SYSTEM_UID);
    expect(c.ran).toEqual([GET_KUBE_SYSTEM]);
    await expect(k8s.clusterOf!(controller([[/k get namespace/, { stdout: '' }]]).exec)).rejects.toThrow(
      'kubectl get namespace kube-system: no UID ("")',
    );
    await expect(
      k8s.clusterOf!(
        controller([[/k get namespace/, { code: 1, stderr: 'error: You must be logged in to the server (Unauthorized)' }]]).exec,
      ),
    ).rejects.toThrow('kubectl get namespace kube-system failed (exit 1): error: You must be logged in to the server (Unauthorized)');
  });
  it('cordon with the mark in one patch, then drain with the flags and timeout; uncordon and unmark in one patch', async () => {
    const c = controller([[/k get node/, { stdout: nodeJson() }]]);
    expect(await k8s.drain(c.exec, 'n1', { reason: 'racksmith R1 on c', timeoutSec: 30 })).toEqual({ kind: 'drained' });
    expect(c.ran).toEqual([GET_N1, cordonN1('racksmith R1 on c'), 'kw drain n1 --ignore-daemonsets --delete-emptydir-data --timeout=30s']);
  });
  // the uncordon: only under this run's cordon and mark (an operator's cordon since, or the
  // annotation removed to keep the node out, leaves it cordoned)
  it.each<[string, Parameters<typeof nodeJson>[0], Awaited<ReturnType<typeof k8s.resume>>, boolean]>([
    [
      "cordoned under this run's mark: uncordoned and unmarked",
      { unschedulable: true, mark: 'racksmith R1 on c', manager: 'racksmith' },
      undefined,
      true,
    ],
    [
      'cordoned under the mark of the dead run it took the node over from (its cordon patch failed): uncordoned',
      { unschedulable: true, mark: 'racksmith R0 on c', manager: 'racksmith' },
      undefined,
      true,
    ],
    ['uncordoned already (by hand): nothing to do', {}, undefined, false],
    [
      "cordoned since by an operator's kubectl cordon: left so",
      { unschedulable: true, mark: 'racksmith R1 on c', manager: 'kubectl-cordon' },
      { someoneElses: someoneElsesDetail('cordoned (spec.unschedulable)') },
      false,
    ],
    [
      'its annotation removed to keep it out: left so',
      { unschedulable: true, manager: 'racksmith' },
      { someoneElses: someoneElsesDetail('cordoned (spec.unschedulable)') },
      false,
    ],
  ])('resume: %s', async (_, node, want, uncordoned) => {
    const c = controller([[/k get node/, { stdout: nodeJson(node) }]]);
    expect(await k8s.resume(c.exec, 'n1', ['racksmith R1 on c', 'racksmith R0 on c'])).toEqual(want);
    expect(c.ran[0]).toBe(GET_N1);
    expect(c.ran.includes(UNCORDON_N1)).toBe(uncordoned);
  });
  it.for([
    ["this run's mark still on it: the mark alone taken off, on the node as read", 'racksmith R1 on c', true],
    ['the mark of the dead run it took the node over from: taken off too', 'racksmith R0 on c', true],
    ["another run's mark: left (it is that run's to take off)", 'racksmith R9 on c', false],
    ['no mark: nothing sent', undefined, false],
  ] as const)('resume of a node uncordoned by hand while this run held it: %s', async ([, mark, unmarked]) => {
    const c = controller([[/k get node/, { stdout: nodeJson({ mark, resourceVersion: '7' }) }]]);
    // (said when it was this run's: put back by someone else in the middle of the run's change)
    expect(await k8s.resume(c.exec, 'n1', ['racksmith R1 on c', 'racksmith R0 on c'])).toEqual(
      unmarked ? { back: 'uncordoned by someone else while this run held it; its mark taken off' } : undefined,
    );
    expect(c.ran).toEqual(unmarked ? [GET_N1, UNMARK_N1] : [GET_N1]);
  });
  it('a node uncordoned by hand whose mark cannot be taken off (refused): put back, and the mark left is said', async () => {
    const c = controller([
      [/k get node/, { stdout: nodeJson({ mark: 'racksmith R1 on c', resourceVersion: '7' }) }],
      [/k patch node/, { code: 1, stderr: 'Error from server (Forbidden): nodes "n1" is forbidden\n' }],
    ]);
    const out = await k8s.resume(c.exec, 'n1', ['racksmith R1 on c']);
    expect(out).toEqual({
      back: expect.stringContaining("uncordoned by someone else while this run held it; its mark is left, read as nobody's"),
    });
    const back = (out as { back: string }).back;
    expect(back).toContain('kubectl patch node n1 failed (exit 1): Error from server (Forbidden)');
    expect(back).toContain('`kubectl annotate node n1 racksmith.io/drained-by-` removes it');
    expect(c.ran).toEqual([GET_N1, UNMARK_N1]);
  });
  it('a node uncordoned by hand whose unmark meets a change since the read (Conflict: the kubelet status): read again, unmarked', async () => {
    let patches = 0;
    const c = controller([
      [/k get node/, () => ({ stdout: nodeJson({ mark: 'racksmith R1 on c', resourceVersion: patches ? '8' : '7' }) })],
      [/k patch node/, () => (patches++ ? { stdout: '' } : { ...CONFLICT_N1, stdout: '' })],
    ]);
    expect(await k8s.resume(c.exec, 'n1', ['racksmith R1 on c'])).toEqual({
      back: 'uncordoned by someone else while this run held it; its mark taken off',
    });
    expect(c.ran).toEqual([GET_N1, UNMARK_N1, GET_N1, UNMARK_N1.replace('"7"', '"8"')]);
  });
  it('the uncordon is made on the node as read: changed since (Conflict), it is read again and asked again', async () => {
    let reads = 0;
    const mine = { unschedulable: true, mark: 'racksmith R1 on c', manager: 'racksmith' };
    const c = controller([
      // (the second read: an operator removed the annotation in between)
      [
        /k get node/,
        () => ({
          stdout: nodeJson(++reads === 1 ? { ...mine, resourceVersion: '7' } : { ...mine, mark: undefined, resourceVersion: '8' }),
        }),
      ],
      [/k patch node n1 .*"resourceVersion":"7"/, CONFLICT_N1],
    ]);
    expect(await k8s.resume(c.exec, 'n1', ['racksmith R1 on c'])).toEqual({
      someoneElses: someoneElsesDetail('cordoned (spec.unschedulable)'),
    });
    expect(c.ran).toEqual([GET_N1, uncordonN1At('7'), GET_N1]);
  });
  it('a node that keeps changing under the uncordon: a failed resume after six tries (a pause between), said; read once more first', async () => {
    let reads = 0;
    const mine = { unschedulable: true, mark: 'racksmith R1 on c', manager: 'racksmith' };
    const c = controller([
      [/k get node/, () => ({ stdout: nodeJson({ ...mine, resourceVersion: String(++reads) }) })],
      [/k patch node/, CONFLICT_N1],
    ]);
    vi.useFakeTimers();
    try {
      const resumed = k8s.resume(c.exec, 'n1', ['racksmith R1 on c']);
      await vi.runAllTimersAsync();
      expect(await resumed).toMatch(
        /^kubectl uncordon n1 failed \(exit 1\): Error from server \(Conflict\).*\(the node changed under each of 6 uncordons\)$/s,
      );
    } finally {
      vi.useRealTimers();
    }
    expect(c.ran).toEqual([...[1, 2, 3, 4, 5, 6].flatMap((rv) => [GET_N1, uncordonN1At(String(rv))]), GET_N1]);
  });
  it('the annotation removed during the last of those tries: left out, said so (not a failed resume)', async () => {
    let reads = 0;
    const mine = { unschedulable: true, mark: 'racksmith R1 on c', manager: 'racksmith' };
    const c = controller([
      [
        /k get node/,
        () => ({ stdout: nodeJson(++reads <= 6 ? { ...mine, resourceVersion: String(reads) } : { ...mine, mark: undefined }) }),
      ],
      [/k patch node/, CONFLICT_N1],
    ]);
    vi.useFakeTimers();
    try {
      const resumed = k8s.resume(c.exec, 'n1', ['racksmith R1 on c']);
      await vi.runAllTimersAsync();
      expect(await resumed).toEqual({ someoneElses: someoneElsesDetail('cordoned (spec.unschedulable)') });
    } finally {
      vi.useRealTimers();
    }
  });
  it('already cordoned: pods drained, no cordon, outcome already', async () => {
    const c = controller([[/k get node/, { stdout: nodeJson({ unschedulable: true, manager: 'kubectl-cordon' }) }]]);
    expect(await k8s.drain(c.exec, 'n1', { reason: 'r', timeoutSec: 30 })).toEqual({
      kind: 'already',
      detail: 'cordoned (spec.unschedulable)',
    });
    expect(c.ran.some((s) => s.startsWith('k patch'))).toBe(false);
  });
  // a cordon with racksmith's mark: ownerOf says whose (history/drain-owner.ts); only a cordon
  // still racksmith's (spec.unschedulable last set by manager racksmith) is asked about
  const dead = { takeOver: true, why: 'taken over from run R0, which did not finish: its process 9 is gone' };
  const live = { takeOver: false, why: 'run R0 is still running on this controller (pid 9)' };
  it.each<[string, Parameters<typeof nodeJson>[0], typeof dead | undefined, DrainOutcome, boolean]>([
    [
      "a dead run's cordon: taken over (our mark)",
      { unschedulable: true, mark: 'racksmith R0 on c', manager: 'racksmith' },
      dead,
      { kind: 'drained', detail: dead.why },
      true,
    ],
    [
      "this run's own cordon: ours still",
      { unschedulable: true, mark: 'racksmith R1 on c', manager: 'racksmith' },
      undefined,
      { kind: 'drained', detail: 'still cordoned by this run' },
      true,
    ],
    [
      "a live run's cordon: blocked, failed at once (no evictions), said whose and what to do",
      { unschedulable: true, mark: 'racksmith R0 on c', manager: 'racksmith' },
      live,
      { kind: 'failed', detail: blockedDetail('cordoned (spec.unschedulable)', live.why, 'kubectl uncordon n1'), drained: false },
      false,
    ],
    [
      "the mark of a dead run, but an operator's `kubectl cordon` since: the operator's",
      { unschedulable: true, mark: 'racksmith R0 on c', manager: 'kubectl-cordon' },
      dead,
      { kind: 'already', detail: 'cordoned (spec.unschedulable)' },
      false,
    ],
    [
      'a stale mark on a node not cordoned: drained as usual',
      { mark: 'racksmith R0 on c', manager: 'kubectl-uncordon' },
      dead,
      { kind: 'drained' },
      true,
    ],
  ])('%s', async (_, node, owner, want, taken) => {
    const c = controller([[/k get node/, { stdout: nodeJson(node) }]]);
    let out = false;
    const got = await k8s.drain(c.exec, 'n1', {
      reason: 'racksmith R1 on c',
      timeoutSec: 30,
      ownerOf: () => owner,
      takenOut: () => (out = true),
    });
    expect(got).toEqual(want);
    expect(out).toBe(taken);
    expect(c.ran.includes(cordonN1('racksmith R1 on c'))).toBe(taken);
    if (want.kind === 'failed') expect(c.ran).toEqual([GET_N1]);
  });
  it("check mode reads only the node: cordoned by someone else, in scheduling, or a dead run's cordon the apply takes over", async () => {
    const c = controller([[/k get node/, { stdout: nodeJson({ unschedulable: true }) }]]);
    expect(await k8s.outOfScheduling!(c.exec, 'n1')).toBe('cordoned (spec.unschedulable)');
    expect(c.ran).toEqual(['k get node n1 -o json --show-managed-fields']);
    expect(await k8s.outOfScheduling!(controller([[/k get node/, { stdout: nodeJson() }]]).exec, 'n1')).toBeUndefined();
    const marked = controller([
      [/k get node/, { stdout: nodeJson({ unschedulable: true, mark: 'racksmith R0 on c', manager: 'racksmith' }) }],
    ]);
    const dead = { takeOver: true, why: 'taken over from run R0, which did not finish: its process 9 is gone' };
    expect(await k8s.outOfScheduling!(marked.exec, 'n1', () => dead)).toEqual({ takeOver: dead.why });
    const live = { takeOver: false, why: 'run R0 is still running on this controller (pid 9)' };
    expect(await k8s.outOfScheduling!(marked.exec, 'n1', () => live)).toEqual({
      blocked: blockedDetail('cordoned (spec.unschedulable)', live.why, 'kubectl uncordon n1'),
    });
    await expect(
      k8s.outOfScheduling!(controller([[/k get node/, { code: 1, stderr: 'nodes "n1" not found' }]]).exec, 'n1'),
    ).rejects.toThrow('kubectl get node n1 failed (exit 1): nodes "n1" not found');
  });
  it('an eviction that does not go through in time: failed, cordoned by this run', async () => {
    const c = controller([
      [/k get node/, { stdout: nodeJson() }],
      [
        /kw drain/,
        {
          code: 1,
          stderr: 'error when evicting pods/"web-1" -n "default": Cannot evict pod as it would violate the pod\'s disruption budget.',
        },
      ],
    ]);
    expect(await k8s.drain(c.exec, 'n1', { reason: 'r', timeoutSec: 30 })).toMatchObject({ kind: 'failed', drained: true });
  });
});

describe('drainPlan: which hosts are drained, by what, through which host', () => {
  const fleet = new FakeFleet(['ctl', 'n1', 'n2'], { ctl: ['slurm_controller', 'kube_control_plane'] });
  it('--drain for every host; racksmith_drain per host otherwise; none drains nothing', () => {
    const inv = fleet.inventory();
    inv.hosts[2].vars.racksmith_drain = 'kubernetes';
    const byFlag = drainPlan(inv, inv.hosts.slice(1), 'slurm', 60);
    expect([...byFlag.plan!.hosts].map(([h, d]) => [h, d.provider.name, d.controller.name])).toEqual([
      ['n1', 'slurm', 'ctl'],
      ['n2', 'slurm', 'ctl'],
    ]);
    expect(byFlag.notices).toEqual(['--drain slurm overrides racksmith_drain: kubernetes of n2']);
    const byVar = drainPlan(inv, inv.hosts.slice(1), undefined, 60);
    expect([...byVar.plan!.hosts.keys()]).toEqual(['n2']);
    expect(drainPlan(inv, inv.hosts, 'none', 60).plan).toBeUndefined();
  });
  it('kubernetes: the control plane through racksmith_play_hosts (kube_control_plane: controller, as docs/playbooks.md shows)', () => {
    const ais = new FakeFleet(['cp1', 'n1', 'n2'], { cp1: ['controller'], n2: ['kube_control_plane'] });
    const inv = ais.inventory({ racksmith_play_hosts: { kube_control_plane: 'controller', kube_node: 'n1:n2' } });
    const { plan } = drainPlan(inv, inv.hosts.slice(1), 'kubernetes', 60);
    // the mapping wins over a group of that name, as it does for the plays
    expect([...plan!.hosts].map(([h, d]) => [h, d.provider.name, d.controller.name])).toEqual([
      ['n1', 'kubernetes', 'cp1'],
      ['n2', 'kubernetes', 'cp1'],
    ]);
    // unmapped: the inventory's group; neither: exit 3 naming both
    const plain = new FakeFleet(['cp1', 'n1'], { cp1: ['kube_control_plane'] }).inventory();
    expect(drainPlan(plain, plain.hosts.slice(1), 'kubernetes', 60).plan!.hosts.get('n1')!.controller.name).toBe('cp1');
    const none = new FakeFleet(['cp1', 'n1'], { cp1: ['controller'] }).inventory({ racksmith_play_hosts: { kube_node: 'n1' } });
    expect(() => drainPlan(none, none.hosts.slice(1), 'kubernetes', 60)).toThrow(
      '--drain kubernetes for n1: no control-plane host (group kube_control_plane, or racksmith_play_hosts.kube_control_plane) in the inventory',
    );
  });
  /** The fleet's inventory with these variables on n1, each at hosts.yaml:3, marked as the loader marks a value holding {{ }}. */
  const withN1Vars = (vars: Record<string, unknown>) => {
    const inv = fleet.inventory();
    const n1 = inv.hosts[1];
    for (const [k, v] of Object.entries(vars)) {
      n1.vars[k] = v;
      n1.varSources[k] = { file: 'hosts.yaml', line: 3 };
      if (String(v).includes('{{')) n1.templated[k] = n1.varSources[k];
    }
    return inv;
  };
  it.each<[string, Record<string, unknown>, 'kubernetes' | 'slurm', string]>([
    ['no variable: the inventory name', {}, 'slurm', 'n1'],
    ['racksmith_slurm_node (an FQDN inventory, a Soperator worker)', { racksmith_slurm_node: 'worker-3' }, 'slurm', 'worker-3'],
    ["Slurm takes the name as it is (case too), and not Kubernetes' variable", { kube_override_hostname: 'k8s-n1' }, 'slurm', 'n1'],
    [
      'Kubespray: kube_override_hostname, given literally',
      { kube_override_hostname: 'n1.rack1.example' },
      'kubernetes',
      'n1.rack1.example',
    ],
    [
      "Kubespray: kube_override_hostname's default template, the inventory name",
      { kube_override_hostname: '{{ inventory_hostname }}' },
      'kubernetes',
      'n1',
    ],
    ["Kubernetes does not take Slurm's variable", { racksmith_slurm_node: 'worker-3' }, 'kubernetes', 'n1'],
    [
      'Kubernetes node names are lower case (kubelet registers the hostname so)',
      { kube_override_hostname: 'N1.Rack1' },
      'kubernetes',
      'n1.rack1',
    ],
  ])('the node drained: %s', (_, vars, mode, node) => {
    const inv = withN1Vars(vars);
    expect(drainPlan(inv, inv.hosts.slice(1), mode, 60).plan!.hosts.get('n1')!.node).toBe(node);
  });
  it.each<[string, Record<string, unknown>, 'kubernetes' | 'slurm', string, string[]?]>([
    ['racksmith_slurm_node not a name', { racksmith_slurm_node: 'node 7' }, 'slurm', "n1: 'node 7' is no Slurm node name"],
    [
      'racksmith_slurm_node a template',
      { racksmith_slurm_node: '{{ x }}' },
      'slurm',
      'n1: racksmith_slurm_node (the node to drain): templating is not supported',
    ],
    [
      'kube_override_hostname a template other than its defaults',
      { kube_override_hostname: "{{ ansible_hostname | default('x') }}" },
      'kubernetes',
      'n1: kube_override_hostname (the node to drain): templating is not supported',
    ],
    [
      'kube_override_hostname empty (to Kubespray: the OS hostname)',
      { kube_override_hostname: '' },
      'kubernetes',
      "kube_override_hostname of n1 is empty: to Kubespray that is the host's own hostname, which racksmith does not know",
    ],
    [
      'no Kubernetes node name (an underscore)',
      { kube_override_hostname: 'node_10' },
      'kubernetes',
      "n1: 'node_10' is no Kubernetes node name",
    ],
    ['no Kubernetes node name (a trailing dot)', { kube_override_hostname: 'n1.' }, 'kubernetes', "n1: 'n1.' is no Kubernetes node name"],
    [
      'two hosts of the run on one node',
      { racksmith_slurm_node: 'n2' },
      'slurm',
      "--drain slurm: n1 and n2 are both node 'n2' of ctl (the first one's resume would put it back under the other's changes): set racksmith_slurm_node",
    ],
    [
      'the node of an inventory host the run does not select (-l n1)',
      { racksmith_slurm_node: 'n2' },
      'slurm',
      "--drain slurm: n1 and n2 are both node 'n2' of ctl",
      ['n1'],
    ],
  ])('bad input, exit 3, at the variable: %s', (_, vars, mode, msg, only) => {
    const inv = withN1Vars(vars);
    const hosts = only ? inv.hosts.filter((h) => only.includes(h.name)) : inv.hosts.slice(1);
    const err = (() => {
      try {
        drainPlan(inv, hosts, mode, 60);
      } catch (e) {
        return e as InputError;
      }
    })();
    expect(err).toBeInstanceOf(InputError);
    expect(err!.message).toContain(msg);
    expect(err!.pos).toEqual({ file: 'hosts.yaml', line: 3 });
  });
  it("Kubespray's kube_override_hostname as {{ inventory_hostname_short }}: the inventory name up to its first dot", () => {
    const fqdn = new FakeFleet(['cp1', 'n1.rack1.example'], { cp1: ['kube_control_plane'] }).inventory({
      kube_override_hostname: '{{ inventory_hostname_short }}',
    });
    const { plan } = drainPlan(fqdn, fqdn.hosts.slice(1), 'kubernetes', 60);
    expect(plan!.hosts.get('n1.rack1.example')!.node).toBe('n1');
  });
  it("the same node names in another Slurm cluster of the inventory (another controller) are that cluster's", () => {
    const two = new FakeFleet(['ctl', 'n1', 'n2', 'ctl2', 'm1'], { ctl: ['slurm_controller'] }).inventory();
    const m1 = two.hosts[4];
    m1.vars.racksmith_slurm_controller = 'ctl2';
    m1.vars.racksmith_slurm_node = 'n1';
    const { plan } = drainPlan(two, two.hosts.slice(1, 3).concat(m1), 'slurm', 60);
    expect([...plan!.hosts].map(([h, d]) => `${h} ${d.node} via ${d.controller.name}`)).toEqual([
      'n1 n1 via ctl',
      'n2 n2 via ctl',
      'm1 n1 via ctl2',
    ]);
  });
  it.each<[string, (inv: ReturnType<FakeFleet['inventory']>) => void, 'slurm' | undefined, RegExp]>([
    [
      'an unknown racksmith_drain',
      (inv) => (inv.hosts[1].vars.racksmith_drain = 'k8s'),
      undefined,
      /racksmith_drain of n1 must be kubernetes, slurm or none, got 'k8s'/,
    ],
    [
      'a controller not in the inventory',
      (inv) => (inv.hosts[1].vars.racksmith_slurm_controller = 'nope'),
      'slurm',
      /no host 'nope' in the inventory/,
    ],
    ['no slurm_controller group', (inv) => inv.groups.delete('slurm_controller'), 'slurm', /no Slurm controller/],
  ])('bad input, exit 3: %s', (_, edit, flag, msg) => {
    const inv = fleet.inventory();
    edit(inv);
    expect(() => drainPlan(inv, inv.hosts.slice(1), flag, 60)).toThrow(InputError);
    expect(() => drainPlan(inv, inv.hosts.slice(1), flag, 60)).toThrow(msg);
  });
});

describe('the engine around disruptive changes (fake hosts, a recording provider)', () => {
  /** kv whose change is disruptive when `disrupts`. */
  const marked = (path: string, value: string, disrupts: boolean): Resource => {
    const r = kv({ path, value, name: value });
    return disrupts ? { ...r, diff: (f) => r.diff(f as never).map((c: Change) => ({ ...c, disruptive: 'test' })) } : r;
  };
  function recorder(outcome: DrainOutcome) {
    const log: string[] = [];
    const provider: DrainProvider = {
      name: 'rec',
      drain: async (_, node) => (log.push(`drain ${node}`), outcome),
      resume: async (_, node) => (log.push(`resume ${node}`), undefined),
    };
    return { log, provider };
  }
  async function runWith(
    outcome: DrainOutcome,
    plays: (f: FakeFleet) => Play[],
    check = false,
    signal?: AbortController,
    real?: { provider: DrainProvider; connector: (f: FakeFleet) => (h: Host, o?: { signal?: AbortSignal }) => Promise<Connection> },
    hostTimeoutMs?: number,
    nodeOf: (host: string) => string = (h) => h,
  ) {
    const f = new FakeFleet(['ctl', 'n1', 'n2']);
    for (const h of f.names) mkdirSync(f.dir(h), { recursive: true });
    const inv = f.inventory();
    const { log, provider } = real ? { log: [] as string[], provider: real.provider } : recorder(outcome);
    if (signal && !real) {
      // Ctrl-C while the drain waits: it returns drained, and the run must stop there
      const drain = provider.drain.bind(provider);
      provider.drain = async (...a) => {
        signal.abort();
        return drain(...a);
      };
    }
    const ctl = inv.hosts[0];
    const hosts = new Map(['n1', 'n2'].map((n) => [n, { provider, controller: ctl, node: nodeOf(n) }]));
    const events: RunEvent[] = [];
    const prepared = prepare(inv, [{ name: 't', plays: plays(f) }], { limit: 'n1,n2' });
    const out = await execute(
      prepared,
      {
        inventoryFile: 'x',
        acceptNewHostKeys: false,
        connectTimeoutMs: 1000,
        check,
        forks: 1,
        connectAttempts: 3, // (the CLI's)
        connector: real ? real.connector(f) : f.connector,
        drain: { hosts, timeoutSec: 5, mark: 'racksmith 20261206T101010Z-abcdef' },
        signal: signal?.signal,
        hostTimeoutMs,
      },
      (e) => {
        events.push(e);
        if (e.type === 'resource') log.push(`${e.host} ${e.id} ${e.status}`);
      },
    );
    return { log, events, out };
  }
  const d = (f: FakeFleet, h: string) => join(f.dir(h), 'x');
  const onN1 = (f: FakeFleet, disrupts: boolean) => (host: { name: string }) => [
    marked(d(f, host.name), '1', disrupts && host.name === 'n1'),
  ];

  it('drains only the host with a disruptive change, before it; resumes after its last play', async () => {
    const { log } = await runWith({ kind: 'drained' }, (f) => [
      { name: 'a', hosts: 'all', resources: onN1(f, true) },
      { name: 'b', hosts: 'all', resources: (h) => [marked(`${d(f, h.name)}b`, '2', false)] },
    ]);
    expect(log).toEqual(['drain n1', 'n1 kv:1 changed', 'n2 kv:1 changed', 'n1 kv:2 changed', 'resume n1', 'n2 kv:2 changed']);
  });

  it('a host whose node is named otherwise (racksmith_slurm_node): that node drained and resumed, and every event names it', async () => {
    const { log, events } = await runWith(
      { kind: 'drained' },
      (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }],
      false,
      undefined,
      undefined,
      undefined,
      (h) => (h === 'n1' ? 'worker-1' : h),
    );
    expect(log).toEqual(['drain worker-1', 'n1 kv:1 changed', 'resume worker-1', 'n2 kv:1 changed']);
    const drains = events.filter((e) => e.type === 'drain' || e.type === 'resume');
    expect(drains).toEqual([
      { type: 'drain', host: 'n1', via: 'rec', controller: 'ctl', node: 'worker-1', outcome: 'drained' },
      { type: 'resume', host: 'n1', via: 'rec', controller: 'ctl', node: 'worker-1', ok: true },
    ]);
    expect(drainLines(drains as never)).toEqual([
      '  n1: drained (rec via ctl, node worker-1)',
      '  n1: resumed (rec via ctl, node worker-1)',
    ]);
  });

  it("drained by this run, then by an operator with a reason of their own: left out at the end, said, with this run's mark asked about", async () => {
    const marks: string[] = [];
    const provider: DrainProvider = {
      name: 'rec',
      drain: async () => ({ kind: 'drained' }),
      resume: async (_, node, asked) => (
        marks.push(`${node} ${asked.join(', ')}`),
        { someoneElses: someoneElsesDetail('drained (ops: bad DIMM)') }
      ),
    };
    const { events, out } = await runWith(
      { kind: 'drained' },
      (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }],
      false,
      undefined,
      { provider, connector: (f) => f.connector },
    );
    expect(marks).toEqual(['n1 racksmith 20261206T101010Z-abcdef']);
    const drains = events.filter((e) => e.type === 'drain' || e.type === 'resume');
    const detail = someoneElsesDetail('drained (ops: bad DIMM)');
    expect(drains).toEqual([
      { type: 'drain', host: 'n1', via: 'rec', controller: 'ctl', outcome: 'drained' },
      { type: 'resume', host: 'n1', via: 'rec', controller: 'ctl', ok: false, detail, someoneElses: true },
    ]);
    expect(drainLines(drains as never)[1]).toBe(`  n1: left out, someone else's drain now (rec via ctl): ${detail}`);
    expect(out.hosts.every((h) => h.failed === 0)).toBe(true);
  });

  it('put back by someone else while this run held it: resumed, and said', async () => {
    const provider: DrainProvider = {
      name: 'rec',
      drain: async () => ({ kind: 'drained' }),
      resume: async () => ({ back: 'uncordoned by someone else while this run held it; its mark taken off' }),
    };
    const { events } = await runWith(
      { kind: 'drained' },
      (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }],
      false,
      undefined,
      { provider, connector: (f) => f.connector },
    );
    const drains = events.filter((e) => e.type === 'drain' || e.type === 'resume');
    const detail = 'uncordoned by someone else while this run held it; its mark taken off';
    expect(drains).toEqual([
      { type: 'drain', host: 'n1', via: 'rec', controller: 'ctl', outcome: 'drained' },
      { type: 'resume', host: 'n1', via: 'rec', controller: 'ctl', ok: true, detail },
    ]);
    expect(drainLines(drains as never)[1]).toBe(`  n1: resumed (rec via ctl): ${detail}`);
  });

  it('someone else drained it: never resumed', async () => {
    const { log } = await runWith({ kind: 'already', detail: 'drained' }, (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }]);
    expect(log).toEqual(['drain n1', 'n1 kv:1 changed', 'n2 kv:1 changed']);
  });

  it.each<[string, boolean, Record<string, unknown>]>([
    ['a transient one (the controller loaded: MaxStartups) is made again: the drain goes through', true, { outcome: 'drained' }],
    [
      'an authentication failure is not: the drain fails',
      false,
      { outcome: 'failed', detail: 'controller ctl: ctl: ssh root@ctl:22: All configured authentication methods failed' },
    ],
  ])('a drain connection to the controller that fails once: %s', async (_, transient, want) => {
    const rec = recorder({ kind: 'drained' });
    let failed = 0;
    const { log, events } = await runWith(
      { kind: 'drained' },
      (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }],
      false,
      undefined,
      {
        provider: rec.provider,
        connector: (f) => async (h) => {
          if (h.name === 'ctl' && failed++ === 0)
            throw new ConnectError(
              transient
                ? 'ctl: ssh root@ctl:22: Connection lost before handshake'
                : 'ctl: ssh root@ctl:22: All configured authentication methods failed',
              transient,
            );
          return f.connector(h);
        },
      },
    );
    expect(events.find((e) => e.type === 'drain')).toMatchObject({ host: 'n1', ...want });
    expect(log).toEqual(transient ? ['n1 kv:1 changed', 'n2 kv:1 changed'] : ['n1 kv:1 failed', 'n2 kv:1 changed']);
    expect(rec.log).toEqual(transient ? ['drain n1', 'resume n1'] : []);
  });

  it.each<[string, boolean, string[]]>([
    ['drained, then timed out: resumed', true, ['drain n1', 'n1 kv:1 failed', 'resume n1', 'n2 kv:1 changed']],
    ['failed before draining: nothing to resume', false, ['drain n1', 'n1 kv:1 failed', 'n2 kv:1 changed']],
  ])('a failed drain applies nothing disruptive: %s', async (_, drained, want) => {
    const { log, out } = await runWith({ kind: 'failed', detail: 'timed out', drained }, (f) => [
      { name: 'a', hosts: 'all', resources: onN1(f, true) },
    ]);
    expect(log).toEqual(want);
    expect(out.results.find((r) => r.host === 'n1')!.error).toBe('not applied: drain (rec via ctl) failed: timed out');
  });

  it('Ctrl-C while the drain waits: nothing disruptive applied, the host resumed all the same', async () => {
    const { log, out } = await runWith(
      { kind: 'drained' },
      (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }],
      false,
      new AbortController(),
    );
    expect(log).toEqual(['drain n1', 'n1 kv:1 failed', 'resume n1']);
    expect(out.results.find((r) => r.host === 'n1')!.error).toBe('interrupted before this change was applied');
  });

  it('Ctrl-C during `kubectl drain`: the drain is killed on the controller, the node uncordoned, a resume event', async () => {
    const ran: string[] = [];
    const abort = new AbortController();
    const controllerConn = killableKubectl(ran, { onDrain: () => abort.abort() }); // Ctrl-C while the evictions wait
    const k8s = kubernetesDrain({ kubeconfig: '/etc/kubernetes/admin.conf', kubectl: 'kubectl' });
    const { events, out } = await runWith(
      { kind: 'drained' },
      (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }],
      false,
      abort,
      { provider: k8s, connector: (f) => async (h) => (h.name === 'ctl' ? controllerConn(h.name) : f.connector(h)) },
    );
    expect(ran).toEqual([
      GET_N1,
      cordonN1('racksmith 20261206T101010Z-abcdef'),
      'kw drain n1 --ignore-daemonsets --delete-emptydir-data --timeout=5s',
      '(killed)',
      GET_N1, // (the uncordon only under this run's mark)
      UNCORDON_N1,
    ]);
    expect(events.filter((e) => e.type === 'drain' || e.type === 'resume')).toEqual([
      {
        type: 'drain',
        host: 'n1',
        via: 'kubernetes',
        controller: 'ctl',
        outcome: 'failed',
        detail: 'interrupted: kubectl drain n1 was stopped',
        tookOut: true,
      },
      { type: 'resume', host: 'n1', via: 'kubernetes', controller: 'ctl', ok: true },
    ]);
    expect(out.results.find((r) => r.host === 'n1')!.error).toBe(
      'not applied: drain (kubernetes via ctl) failed: interrupted: kubectl drain n1 was stopped',
    );
  });

  it("--host-timeout while the drain's own connection to the controller is being made: that connection given up at once, nothing drained", async () => {
    // the controller's first connection (this drain's own) hangs in its handshake until its signal ends it
    let calls = 0;
    const ran: string[] = [];
    const controllerConn = killableKubectl(ran, {});
    const hanging = (signal?: AbortSignal) =>
      new Promise<Connection>((_, reject) => {
        const t = setTimeout(() => reject(new ConnectError('ctl: handshake timed out', true)), 10_000);
        signal?.addEventListener('abort', () => (clearTimeout(t), reject(new ConnectError('ctl: interrupted while connecting', false))), {
          once: true,
        });
      });
    const k8s = kubernetesDrain({ kubeconfig: '/etc/kubernetes/admin.conf', kubectl: 'kubectl' });
    const t0 = Date.now();
    const { events, out } = await runWith(
      { kind: 'drained' },
      (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }],
      false,
      undefined,
      {
        provider: k8s,
        connector: (f) => async (h, o) => (h.name !== 'ctl' ? f.connector(h) : ++calls === 1 ? hanging(o?.signal) : controllerConn(h.name)),
      },
      1000,
    );
    expect(Date.now() - t0).toBeLessThan(4500); // not the hanging handshake's 10 s
    expect(ran).toEqual([]);
    expect(events.filter((e) => e.type === 'drain' || e.type === 'resume')).toEqual([
      {
        type: 'drain',
        host: 'n1',
        via: 'kubernetes',
        controller: 'ctl',
        outcome: 'failed',
        detail: 'host timed out after 1s before it started',
        tookOut: false,
      },
    ]);
    expect(out.hosts.find((h) => h.host === 'n1')).toMatchObject({ unreachable: true, error: 'timed out after 1s' });
  });

  it('--host-timeout during `kubectl drain`: that drain killed on the controller at once, the node uncordoned, the host timed out', async () => {
    // kubectl drain waits on an eviction until its own --timeout (5 s here), unless its connection is aborted
    const ran: string[] = [];
    const controllerConn = killableKubectl(ran, { ownTimeoutMs: 5000 });
    const k8s = kubernetesDrain({ kubeconfig: '/etc/kubernetes/admin.conf', kubectl: 'kubectl' });
    const t0 = Date.now();
    const { events, out } = await runWith(
      { kind: 'drained' },
      (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }],
      false,
      undefined,
      { provider: k8s, connector: (f) => async (h) => (h.name === 'ctl' ? controllerConn(h.name) : f.connector(h)) },
      1000,
    );
    expect(Date.now() - t0).toBeLessThan(4500); // not kubectl drain's own 5 s
    expect(ran).toEqual([
      GET_N1,
      cordonN1('racksmith 20261206T101010Z-abcdef'),
      'kw drain n1 --ignore-daemonsets --delete-emptydir-data --timeout=5s',
      '(killed)',
      GET_N1, // (the uncordon only under this run's mark)
      UNCORDON_N1,
    ]);
    expect(events.filter((e) => e.type === 'drain' || e.type === 'resume')).toEqual([
      {
        type: 'drain',
        host: 'n1',
        via: 'kubernetes',
        controller: 'ctl',
        outcome: 'failed',
        detail: 'host timed out after 1s: kubectl drain n1 was stopped',
        tookOut: true,
      },
      { type: 'resume', host: 'n1', via: 'kubernetes', controller: 'ctl', ok: true },
    ]);
    expect(out.hosts.find((h) => h.host === 'n1')).toMatchObject({ unreachable: true, error: 'timed out after 1s' });
    expect(out.results.some((r) => r.host === 'n1' && r.status === 'changed')).toBe(false);
  });

  it('check mode: a change that may be disruptive but waits on a pending change lists the host as may be drained', async () => {
    // nic_queues' case (playbooks/node.ts): its facts wait on the packages' change, so the check
    // cannot diff it; the apply then finds its disruptive change and drains
    const { log, events } = await runWith(
      { kind: 'drained' },
      (f) => [
        {
          name: 'a',
          hosts: 'all',
          resources: (host) => {
            const first = marked(d(f, host.name), '1', false);
            const queues = marked(`${d(f, host.name)}q`, '2', true);
            return host.name === 'n1' ? [first, { ...queues, dependsOn: [first.id], mayDisrupt: 'eth0 channels reset' }] : [first];
          },
        },
      ],
      true,
    );
    expect(log).toEqual(['n1 kv:1 changed', 'n1 kv:2 changed', 'n2 kv:1 changed']);
    expect(events.find((e) => e.type === 'resource' && e.id === 'kv:2')).toMatchObject({
      changes: [{ summary: 'depends on a pending change of kv:1', disruptive: 'eth0 channels reset' }],
      pending: 'kv:1',
    });
    expect(events.filter((e) => e.type === 'drain')).toEqual([
      {
        type: 'drain',
        host: 'n1',
        via: 'rec',
        controller: 'ctl',
        outcome: 'would',
        detail: 'may be: kv:2 waits on a pending change',
        may: ['kv:2'],
      },
    ]);
  });

  it('Ctrl-C, and the drain ends only after the host was given up: the run waits for it, then resumes the host', async () => {
    // (a provider without takenOut whose drain outlasts the host's grace after Ctrl-C, ~3 s)
    const abort = new AbortController();
    const log: string[] = [];
    const slow: DrainProvider = {
      name: 'rec',
      drain: async (_, node) => {
        log.push(`drain ${node}`);
        abort.abort();
        await new Promise((r) => setTimeout(r, 4000));
        return { kind: 'drained' };
      },
      resume: async (_, node) => (log.push(`resume ${node}`), undefined),
    };
    const { events } = await runWith({ kind: 'drained' }, (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }], false, abort, {
      provider: slow,
      connector: (f) => f.connector,
    });
    expect(log).toEqual(['drain n1', 'resume n1']);
    expect(events.filter((e) => e.type === 'drain' || e.type === 'resume').map((e) => e.type)).toEqual(['drain', 'resume']);
  });

  it('mtu and nicQueues declare up front that their changes may be disruptive', () => {
    expect(mtu({ select: { name: 'eth0' }, mtu: 9000 }).mayDisrupt).toBe('the link resets: open connections stall or drop');
    expect(nicQueues({ select: { name: 'eth0' }, channels: 2 }).mayDisrupt).toMatch(/channels reset: traffic stops/);
  });

  it('check mode drains nothing and lists the host that would be', async () => {
    const { log, events } = await runWith({ kind: 'drained' }, (f) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }], true);
    expect(log).toEqual(['n1 kv:1 changed', 'n2 kv:1 changed']);
    expect(events.filter((e) => e.type === 'drain')).toEqual([
      { type: 'drain', host: 'n1', via: 'rec', controller: 'ctl', outcome: 'would' },
    ]);
  });

  it('check mode lists a host someone else has out as already out (asked of its scheduler, nothing drained), or says the question failed', async () => {
    const asked: string[] = [];
    const provider = (answer: () => OutOfScheduling): DrainProvider => ({
      name: 'rec',
      drain: async () => ({ kind: 'drained' }),
      resume: async () => undefined,
      outOfScheduling: async (_, node) => (asked.push(node), answer()),
    });
    const connector = (f: FakeFleet) => f.connector;
    const plays = (f: FakeFleet) => [{ name: 'a', hosts: 'all', resources: onN1(f, true) }];
    const out = await runWith({ kind: 'drained' }, plays, true, undefined, { provider: provider(() => 'drained (ops)'), connector });
    expect(asked).toEqual(['n1']);
    expect(out.log).toEqual(['n1 kv:1 changed', 'n2 kv:1 changed']);
    expect(out.events.filter((e) => e.type === 'drain')).toEqual([
      { type: 'drain', host: 'n1', via: 'rec', controller: 'ctl', outcome: 'already', detail: 'drained (ops)' },
    ]);
    const broken = provider(() => {
      throw new Error('sinfo -n n1 failed (exit 1): no controller');
    });
    const unknown = await runWith({ kind: 'drained' }, plays, true, undefined, { provider: broken, connector });
    expect(unknown.events.filter((e) => e.type === 'drain')).toEqual([
      {
        type: 'drain',
        host: 'n1',
        via: 'rec',
        controller: 'ctl',
        outcome: 'would',
        detail: 'whether it is already out of scheduling is not known (controller ctl: sinfo -n n1 failed (exit 1): no controller)',
      },
    ]);
    // out by a racksmith run the apply does not take over: blocked, its drain would fail
    const live = provider(() => ({ blocked: 'drained (racksmith R0 on c): run R0 is still running on this controller (pid 9); ...' }));
    const blocked = await runWith({ kind: 'drained' }, plays, true, undefined, { provider: live, connector });
    expect(blocked.log).toEqual(['n1 kv:1 changed', 'n2 kv:1 changed']);
    expect(blocked.events.filter((e) => e.type === 'drain')).toEqual([
      {
        type: 'drain',
        host: 'n1',
        via: 'rec',
        controller: 'ctl',
        outcome: 'blocked',
        detail: 'drained (racksmith R0 on c): run R0 is still running on this controller (pid 9); ...',
      },
    ]);
    expect(drainLines(blocked.events.filter((e) => e.type === 'drain'))).toEqual([
      "  n1: BLOCKED by another racksmith run's drain, its drain would fail and nothing disruptive be applied (rec via ctl): drained (racksmith R0 on c): run R0 is still running on this controller (pid 9); ...",
    ]);
    // out by a racksmith run that died: the apply takes it over, so the check lists a drain
    const dead = provider(() => ({ takeOver: 'taken over from run R0, which did not finish: its process 9 is gone' }));
    const takeover = await runWith({ kind: 'drained' }, plays, true, undefined, { provider: dead, connector });
    expect(takeover.events.filter((e) => e.type === 'drain')).toEqual([
      {
        type: 'drain',
        host: 'n1',
        via: 'rec',
        controller: 'ctl',
        outcome: 'would',
        detail: 'out of scheduling now, to be taken over from run R0, which did not finish: its process 9 is gone',
      },
    ]);
  });
});

describe("the session's connection to a controller", () => {
  it(`takes turns: the resumes at a run's end run at most ${SESSION_EXECS} at once on it (sshd's MaxSessions is 10 by default)`, async () => {
    let now = 0;
    let most = 0;
    const conn: Connection = {
      host: 'ctl',
      execCount: 0,
      exec: async () => {
        most = Math.max(most, ++now);
        await new Promise((r) => setTimeout(r, 5));
        now--;
        return { code: 0, stdout: '', stderr: '' };
      },
      close: async () => undefined,
    };
    const provider: DrainProvider = {
      name: 'rec',
      drain: async () => ({ kind: 'drained' }),
      resume: async (exec) => ((await exec('resume')).code === 0 ? undefined : 'failed'),
    };
    const nodes = Array.from({ length: 20 }, (_, i) => `n${i}`);
    const { session, events } = nodesSession(nodes, provider, async () => conn);
    for (const n of nodes) expect(await session.before(n)).toBeUndefined();
    await session.resumeAll();
    expect(most).toBe(SESSION_EXECS);
    expect(events.filter((e) => e.type === 'resume' && e.ok === true)).toHaveLength(nodes.length);
  });
});

describe("check mode's question with the controller unreachable", () => {
  it('the connection is tried once for the run, and every host says the same reason', async () => {
    let attempts = 0;
    const provider: DrainProvider = {
      name: 'rec',
      drain: async () => ({ kind: 'drained' }),
      resume: async () => undefined,
      outOfScheduling: async (exec) => ((await exec('sinfo')).stdout ? 'drained (ops)' : undefined),
    };
    const nodes = Array.from({ length: 12 }, (_, i) => `n${i}`);
    const { session, events } = nodesSession(nodes, provider, async () => {
      attempts++;
      throw new Error('connect ECONNREFUSED 10.0.0.1:22');
    });
    // hosts one after the other (forks 1, or hosts whose checks end apart), then some at once
    for (const n of nodes.slice(0, 6)) await session.would(n);
    await Promise.all(nodes.slice(6).map((n) => session.would(n)));
    expect(attempts).toBe(1);
    expect(events.map((e) => [e.host, e.outcome, e.detail])).toEqual(
      nodes.map((n) => [
        n,
        'would',
        'whether it is already out of scheduling is not known (controller ctl: connect ECONNREFUSED 10.0.0.1:22)',
      ]),
    );
  });
});

/**
 * A DrainSession of run `run` (R1 unless given) for hosts `names`, each drained as the node of its
 * name through `provider` on one controller `ctl`, reached by `connect`; `events`: what it emitted.
 */
function nodesSession(
  names: readonly string[],
  provider: DrainProvider,
  connect: () => Promise<Connection>,
  plan: Partial<DrainPlan> = {},
  o: { run?: string; signal?: AbortSignal; controller?: string } = {},
) {
  const ctl = { name: o.controller ?? 'ctl', vars: {}, varSources: {} } as unknown as Host;
  const events: Array<Record<string, unknown>> = [];
  const session = new DrainSession(
    { hosts: new Map(names.map((n) => [n, { provider, controller: ctl, node: n }])), timeoutSec: 5, ...plan },
    o.run ?? 'R1',
    connect,
    (e) => events.push(e as unknown as Record<string, unknown>),
    o.signal,
  );
  return { session, events };
}

/**
 * A DrainSession of run R1 (mark `racksmith R1 on c`) for one host, n1, whose controller `ctl`
 * answers each script by `answer`; `ran`: the scripts, `events`: what the session emitted.
 */
function oneNodeSession(
  provider: DrainProvider,
  answer: (script: string) => ExecResult,
  plan: Partial<DrainPlan> = {},
  signal?: AbortSignal,
) {
  const ran: string[] = [];
  const conn: Connection = {
    host: 'ctl',
    execCount: 0,
    exec: async (script) => (ran.push(script), answer(script)),
    close: async () => undefined,
  };
  return { ...nodesSession(['n1'], provider, async () => conn, { mark: 'racksmith R1 on c', ...plan }, { signal }), ran };
}
const EMPTY: ExecResult = { code: 0, stdout: '', stderr: '' };
/** A controller that answers every script with nothing, exit 0. */
const idleController: Connection = { host: 'ctl', execCount: 0, exec: async () => EMPTY, close: async () => undefined };

describe("one node, two runs of this controller (the session's drain claims, history/drain-claim.ts)", () => {
  const saved = process.env.XDG_STATE_HOME;
  beforeEach(() => {
    process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'rs-session-claims-'));
  });
  afterEach(() => {
    rmSync(process.env.XDG_STATE_HOME!, { recursive: true, force: true });
    process.env.XDG_STATE_HOME = saved;
  });
  /** A provider that records each drain and resume of run `run` in `log`, and takes the node out at once. */
  const recording = (run: string, log: string[]): DrainProvider => ({
    name: 'slurm',
    drain: async (_exec, _node, o) => (log.push(`${run} drain`), o.takenOut?.(), { kind: 'drained' }),
    resume: async () => void log.push(`${run} resume`),
  });

  it('the second waits, said once, and drains only once the first has put the node back; the check says the apply would wait', async () => {
    const log: string[] = [];
    const a = oneNodeSession(recording('A', log), () => EMPTY, { claims: drainClaims('A'), timeoutSec: 30 });
    const b = oneNodeSession(recording('B', log), () => EMPTY, { claims: drainClaims('B'), timeoutSec: 30 });
    expect(await a.session.before('n1')).toBeUndefined();
    await b.session.would('n1');
    expect(b.events).toEqual([
      {
        type: 'drain',
        host: 'n1',
        via: 'slurm',
        controller: 'ctl',
        outcome: 'would',
        detail: expect.stringMatching(
          /^the apply's drain waits up to 30s for another run of this controller to let go of the node: run A of this controller holds it \(pid \d+, claim \/.*\/drain-claims\/slurm~n1\/0\.json\)$/,
        ),
      },
    ]);
    b.events.length = 0;
    const second = b.session.before('n1');
    // (its first ask is made before before() first awaits: the warning is out already)
    expect(b.events).toEqual([
      {
        type: 'warning',
        message: expect.stringMatching(
          /^n1: its drain \(slurm via ctl\) waits up to 30s for another run of this controller to let go of the node: run A of this controller holds it /,
        ),
      },
    ]);
    await a.session.resumeAll();
    expect(await second).toBeUndefined();
    await b.session.resumeAll();
    expect(log).toEqual(['A drain', 'A resume', 'B drain', 'B resume']);
    expect(b.events.filter((e) => e.type === 'warning')).toHaveLength(1);
    expect(readdirSync(join(process.env.XDG_STATE_HOME!, 'racksmith/drain-claims/slurm~n1'))).toEqual([]);
  });

  /** `recording`, with the cluster's identity its controller says (clusterOf), counted in `reads`. */
  const inCluster = (run: string, log: string[], cluster: () => string, reads = { n: 0 }): DrainProvider => ({
    ...recording(run, log),
    clusterOf: async () => (reads.n++, cluster()),
  });
  const claimDirs = () => readdirSync(join(process.env.XDG_STATE_HOME!, 'racksmith/drain-claims')).sort();
  /** Run `run`'s session for n1 in cluster `cluster`, claiming, through an idle controller (`ctl` unless `o.controller`). */
  const clusterSession = (run: string, log: string[], cluster: string, plan: Partial<DrainPlan> = {}, o: { controller?: string } = {}) =>
    nodesSession(
      ['n1'],
      inCluster(run, log, () => cluster),
      async () => idleController,
      { claims: drainClaims(run), ...plan },
      { run, ...o },
    );

  it("two clusters' nodes of one name: two claims, both drained at once", async () => {
    const log: string[] = [];
    const a = clusterSession('A', log, 'east');
    const b = clusterSession('B', log, 'west');
    expect(await a.session.before('n1')).toBeUndefined();
    expect(await b.session.before('n1')).toBeUndefined();
    expect(log).toEqual(['A drain', 'B drain']);
    expect(b.events.filter((e) => e.type === 'warning')).toEqual([]);
    expect(claimDirs()).toEqual(['slurm~east~n1', 'slurm~west~n1']);
    await Promise.all([a.session.resumeAll(), b.session.resumeAll()]);
    expect(readdirSync(join(process.env.XDG_STATE_HOME!, 'racksmith/drain-claims/slurm~east~n1'))).toEqual([]);
  });

  it('one cluster whose controller two inventories spell two ways: one claim, the second run waits for it', async () => {
    const log: string[] = [];
    const a = clusterSession('A', log, 'east');
    const b = clusterSession('B', log, 'east', { timeoutSec: 1 }, { controller: '10.0.0.1' });
    expect(await a.session.before('n1')).toBeUndefined();
    expect(await b.session.before('n1')).toMatch(
      /failed: timed out after 1s waiting for another run of this controller to let go of the node: run A /,
    );
    expect(log).toEqual(['A drain']);
    expect(claimDirs()).toEqual(['slurm~east~n1']);
    await a.session.resumeAll();
    await b.session.resumeAll();
  });

  it("the cluster's identity is read once per controller; one not read fails that drain (nothing asked of the scheduler) and is read again", async () => {
    const log: string[] = [];
    const reads = { n: 0 };
    let down = true;
    const provider = inCluster(
      'A',
      log,
      () => {
        if (down) throw new Error('scontrol show config failed (exit 1): Unable to contact slurm controller');
        return 'east';
      },
      reads,
    );
    const { session, events } = nodesSession(
      ['n1', 'n2', 'n3'],
      provider,
      async () => idleController,
      { claims: drainClaims('A') },
      { run: 'A' },
    );
    expect(await session.before('n1')).toBe(
      "drain (slurm via ctl) failed: its cluster's identity, which its drain claim names, could not be read (controller ctl: scontrol show config failed (exit 1): Unable to contact slurm controller); no disruptive change is applied without the node's drain claim",
    );
    expect(events.at(-1)).toMatchObject({ type: 'drain', host: 'n1', outcome: 'failed', tookOut: false });
    down = false;
    expect(await Promise.all([session.before('n2'), session.before('n3')])).toEqual([undefined, undefined]);
    expect(reads.n).toBe(2);
    expect(log).toEqual(['A drain', 'A drain']);
    await session.resumeAll();
  });

  it("check mode, the cluster's identity not read from a controller reached: the apply's drain would fail at once, said", async () => {
    const refused = () => {
      throw new Error('kubectl get namespace kube-system failed (exit 1): Error from server (Forbidden)');
    };
    const { session, events } = nodesSession(['n1'], inCluster('A', [], refused), async () => idleController, { claims: drainClaims('A') });
    await session.would('n1');
    expect(events).toEqual([
      {
        type: 'drain',
        host: 'n1',
        via: 'slurm',
        controller: 'ctl',
        outcome: 'would',
        detail:
          "the apply's drain would fail at once: its cluster's identity, which its drain claim names, could not be read (controller ctl: kubectl get namespace kube-system failed (exit 1): Error from server (Forbidden))",
      },
    ]);
  });

  it('a claim never let go within the drain timeout: the drain fails, nothing asked of the scheduler, nothing put back', async () => {
    const log: string[] = [];
    const a = oneNodeSession(recording('A', log), () => EMPTY, { claims: drainClaims('A') });
    const b = oneNodeSession(recording('B', log), () => EMPTY, { claims: drainClaims('B'), timeoutSec: 1 });
    expect(await a.session.before('n1')).toBeUndefined();
    expect(await b.session.before('n1')).toMatch(
      /^drain \(slurm via ctl\) failed: timed out after 1s waiting for another run of this controller to let go of the node: run A of this controller holds it .*; no disruptive change is applied while another racksmith run holds the node .*: run again once that run has ended$/,
    );
    expect(b.events.at(-1)).toMatchObject({ type: 'drain', outcome: 'failed', tookOut: false });
    await b.session.resumeAll();
    expect(log).toEqual(['A drain']);
    // the first still holds the node (its claim, 0.json) until it puts it back
    expect(readdirSync(join(process.env.XDG_STATE_HOME!, 'racksmith/drain-claims/slurm~n1'))).toEqual(['0.json']);
    await a.session.resumeAll();
    expect(log).toEqual(['A drain', 'A resume']);
  });

  it('Ctrl-C while waiting for the claim: the drain ends at once, interrupted', async () => {
    const log: string[] = [];
    const a = oneNodeSession(recording('A', log), () => EMPTY, { claims: drainClaims('A') });
    const ctrlC = new AbortController();
    const b = oneNodeSession(recording('B', log), () => EMPTY, { claims: drainClaims('B'), timeoutSec: 600 }, ctrlC.signal);
    expect(await a.session.before('n1')).toBeUndefined();
    const second = b.session.before('n1');
    ctrlC.abort();
    expect(await second).toMatch(
      /^drain \(slurm via ctl\) failed: interrupted while waiting for another run of this controller to let go of the node: /,
    );
    await a.session.resumeAll();
    expect(log).toEqual(['A drain', 'A resume']);
  });

  it('a claim that cannot be got until someone acts (no state directory can be made) fails the drain at once, not after the timeout', async () => {
    const file = join(process.env.XDG_STATE_HOME!, 'a-file');
    writeFileSync(file, '');
    process.env.XDG_STATE_HOME = file;
    const log: string[] = [];
    const b = oneNodeSession(recording('B', log), () => EMPTY, { claims: drainClaims('B'), timeoutSec: 600 });
    await b.session.would('n1');
    expect(b.events).toMatchObject([
      { outcome: 'would', detail: expect.stringMatching(/^the apply's drain would fail at once: .*slurm~n1/) },
    ]);
    // (a wait would outlast the test's own timeout)
    expect(await b.session.before('n1')).toMatch(
      /^drain \(slurm via ctl\) failed: its drain cannot be claimed in .*: ENOTDIR; no disruptive change is applied without the node's drain claim$/,
    );
    expect(b.events.filter((e) => e.type === 'warning')).toEqual([]);
    expect(log).toEqual([]);
  });

  /** A session of run `run` for hosts n1 and n2 (nodes of the same names), recording into `log`. */
  const twoNodes = (run: string, log: string[]) =>
    nodesSession(
      ['n1', 'n2'],
      recording(run, log),
      async () => idleController,
      { timeoutSec: 600, mark: `racksmith ${run}`, claims: drainClaims(run) },
      { run },
    );

  it('two runs each holding a node the other wants: the younger does not wait (fails at once), the older waits and gets it (wait-die)', async () => {
    const log: string[] = [];
    // run ids sort as the runs started: A is the older
    const older = twoNodes('20261207T100000Z-aaaaaa', log);
    const younger = twoNodes('20261207T100001Z-bbbbbb', log);
    expect(await older.session.before('n1')).toBeUndefined();
    expect(await younger.session.before('n2')).toBeUndefined();
    const olderWaits = older.session.before('n2');
    expect(older.events.filter((e) => e.type === 'warning')).toHaveLength(1);
    expect(await younger.session.before('n1')).toMatch(
      /^drain \(slurm via ctl\) failed: run 20261207T100000Z-aaaaaa of this controller holds it .*, a run started before this one, which holds other nodes out: it does not wait for it/,
    );
    await younger.session.resumeAll();
    expect(await olderWaits).toBeUndefined();
    await older.session.resumeAll();
    expect(log).toEqual([
      '20261207T100000Z-aaaaaa drain',
      '20261207T100001Z-bbbbbb drain',
      '20261207T100001Z-bbbbbb resume',
      '20261207T100000Z-aaaaaa drain',
      '20261207T100000Z-aaaaaa resume',
      '20261207T100000Z-aaaaaa resume',
    ]);
  });

  it('a node whose resume failed stays claimed to the run’s end: another run waits for it (then takes it over), rather than meeting a live run’s mark', async () => {
    const claimsA = drainClaims('A');
    // play 1 drains the node, its resume fails; play 2's drain of it fails before it takes anything out
    const drains: DrainOutcome[] = [{ kind: 'drained' }, { kind: 'failed', detail: 'sinfo: exit 1', drained: false }];
    const provider: DrainProvider = {
      ...recording('A', []),
      drain: async (_exec, _node, o) => {
        const out = drains.shift()!;
        if (out.kind === 'drained') o.takenOut?.();
        return out;
      },
      resume: async () => 'scontrol: exit 1',
    };
    const a = oneNodeSession(provider, () => EMPTY, { claims: claimsA });
    const b = oneNodeSession(recording('B', []), () => EMPTY, { claims: drainClaims('B') });
    expect(await a.session.before('n1')).toBeUndefined();
    await a.session.resume('n1');
    await b.session.would('n1');
    expect(b.events).toMatchObject([
      { outcome: 'would', detail: expect.stringMatching(/waits up to 5s for another run .*: run A of this controller holds it/) },
    ]);
    expect(await a.session.before('n1')).toMatch(/failed: sinfo: exit 1/);
    expect(readdirSync(join(process.env.XDG_STATE_HOME!, 'racksmith/drain-claims/slurm~n1'))).toEqual(['0.json']);
    // (the run's end puts nothing more back: still claimed until the caller records the end and lets go)
    await a.session.resumeAll();
    expect(readdirSync(join(process.env.XDG_STATE_HOME!, 'racksmith/drain-claims/slurm~n1'))).toEqual(['0.json']);
    claimsA.releaseAll();
    expect(readdirSync(join(process.env.XDG_STATE_HOME!, 'racksmith/drain-claims/slurm~n1'))).toEqual([]);
  });
});

describe('a session given no run history to ask (a program calling the engine without ownerOf)', () => {
  it.each([
    [
      "another racksmith run's mark: cannot vouch for it, the drain fails (blocked), nothing done",
      'racksmith 20261206T101010Z-abcdef on c',
      true,
    ],
    ["an operator's reason that only starts with the word: already out, left as it is", 'racksmith upgrade', false],
  ])('%s', async (_, reason, blocked) => {
    const { session, ran, events } = oneNodeSession(slurmDrain, (script) =>
      script.startsWith('sinfo') ? { code: 0, stdout: `drained|${reason}\n`, stderr: '' } : EMPTY,
    );
    const failed = await session.before('n1');
    expect(events.map((e) => e.outcome)).toEqual([blocked ? 'failed' : 'already']);
    if (blocked) expect(failed).toMatch(/cannot be asked about: this run was given no run history/);
    else expect(failed).toBeUndefined();
    expect(ran.filter((x) => x.startsWith('scontrol'))).toEqual([]);
  });
});

describe('a Kubernetes takeover whose cordon patch (the new mark) failed', () => {
  it("the node keeps the dead run's mark and is this run's all the same: uncordoned under that mark at the end", async () => {
    const k8s = kubernetesDrain({ kubeconfig: '/etc/kubernetes/admin.conf', kubectl: 'kubectl' });
    const {
      session,
      ran: scripts,
      events,
    } = oneNodeSession(
      k8s,
      (script) => {
        const last = script.split('\n').pop()!;
        if (last === GET_KUBE_SYSTEM) return { code: 0, stdout: KUBE_SYSTEM_UID, stderr: '' };
        if (last === GET_N1)
          return { code: 0, stdout: nodeJson({ unschedulable: true, mark: 'racksmith R0 on c', manager: 'racksmith' }), stderr: '' };
        if (last === cordonN1('racksmith R1 on c'))
          return { code: 1, stdout: '', stderr: 'Error from server (InternalError): etcd timeout\n' };
        return EMPTY;
      },
      {
        ownerOf: () => ({ takeOver: true, why: 'taken over from run R0, which did not finish: its process 9 is gone' }),
        claims: {
          claim: () => undefined,
          peek: () => undefined,
          holdsAny: () => false,
          release: () => undefined,
          releaseAll: () => undefined,
        },
      },
    );
    const ran = () => scripts.map((script) => script.split('\n').pop()!);
    expect(await session.before('n1')).toMatch(/^drain \(kubernetes via ctl\) failed: kubectl cordon n1 failed/);
    await session.resumeAll();
    expect(ran()).toEqual([GET_KUBE_SYSTEM, GET_N1, cordonN1('racksmith R1 on c'), GET_N1, UNCORDON_N1]);
    expect(events.filter((e) => e.type === 'resume')).toEqual([
      { type: 'resume', host: 'n1', via: 'kubernetes', controller: 'ctl', ok: true },
    ]);
  });
});

describe('a resume that fails is tried again', () => {
  it.for([
    ['a blip: put back at the second try, said once, ok', ['controller ctl: connection reset', undefined], true, 2],
    [
      'failing every time: tried RESUME_ATTEMPTS times, then said failed with the last reason',
      ['e1', 'e2', 'e3', undefined],
      false,
      RESUME_ATTEMPTS,
    ],
    ["someone else's drain now: not tried again", [{ someoneElses: 'drained (ops)' }, undefined], false, 1],
    ['the controller not reached (the provider throws): not tried again', [new Error('connect ECONNREFUSED'), undefined], false, 1],
  ] as const)('%s', async ([, answers, ok, calls]) => {
    const left = [...answers];
    let asked = 0;
    const provider: DrainProvider = {
      name: 'rec',
      drain: async (_exec, _node, o) => (o.takenOut?.(), { kind: 'drained' }),
      resume: async () => {
        asked++;
        const a = left.shift();
        if (a instanceof Error) throw a;
        return a as ResumeOutcome;
      },
    };
    const { session, events } = oneNodeSession(provider, () => EMPTY);
    expect(await session.before('n1')).toBeUndefined();
    await session.resumeAll();
    expect(asked).toBe(calls);
    expect(events.filter((e) => e.type === 'resume')).toMatchObject([{ ok, ...(calls === RESUME_ATTEMPTS ? { detail: 'e3' } : {}) }]);
  });
});

describe('resumes failing on every host of a controller (its scheduler down)', () => {
  it('are tried again only until SESSION_EXECS failures in a row: each try of a fleet would cost its timeout again', async () => {
    let asked = 0;
    const provider: DrainProvider = {
      name: 'rec',
      drain: async (_exec, _node, o) => (o.takenOut?.(), { kind: 'drained' }),
      resume: async () => (asked++, 'sinfo: Unable to contact slurm controller'),
    };
    const names = Array.from({ length: 12 }, (_, i) => `n${i}`);
    const { session, events } = nodesSession(names, provider, async () => idleController);
    for (const h of names) expect(await session.before(h)).toBeUndefined();
    await session.resumeAll();
    // every host asked once, and only the first SESSION_EXECS failures tried again (once each)
    expect(asked).toBe(names.length + SESSION_EXECS);
    expect(events.filter((e) => e.type === 'resume' && e.ok === false)).toHaveLength(names.length);
  });
});

describe("the run's drain ledger (the nodes it may have left out)", () => {
  it.for([
    ['a node found in scheduling and drained: told', { kind: 'drained' }, false, ['n1']],
    ["a node out under someone else's drain (already): told", { kind: 'already', detail: 'drained (ops)' }, false, ['n1']],
    ["a dead run's drain taken over: not told (takenOver says it)", { kind: 'drained' }, true, []],
    ['a drain that failed: not told', { kind: 'failed', detail: 'timed out', drained: false }, false, []],
    [
      "a node down under a dead run's mark (already: a down node is never taken over): not told, still that run's",
      { kind: 'already', detail: 'down' },
      true,
      [],
    ],
  ] as const)('foundNotOut: %s', async ([, outcome, takeOver, want]) => {
    const provider: DrainProvider = {
      name: 'rec',
      drain: async (_exec, _node, o) => {
        if (takeOver) o.ownerOf?.('racksmith 20261206T101500Z-aaaaaa');
        return outcome as DrainOutcome;
      },
      resume: async () => undefined,
    };
    const told: string[] = [];
    const { session } = oneNodeSession(provider, () => EMPTY, {
      ownerOf: () => ({ takeOver: true, why: 'taken over from run R0, which did not finish: its process 9 is gone' }),
      ledger: { taking: () => undefined, back: () => undefined, takenOver: () => undefined, foundNotOut: (n) => void told.push(n.node) },
    });
    await session.before('n1');
    expect(told).toEqual(want);
  });

  it('a node whose resume failed stays on it, whatever a later drain of it that took nothing out comes to', async () => {
    const outcomes: DrainOutcome[] = [
      { kind: 'drained' },
      { kind: 'failed', detail: 'controller ctl: connection refused', drained: false },
    ];
    const provider: DrainProvider = { name: 'rec', drain: async () => outcomes.shift()!, resume: async () => 'scontrol: exit 1' };
    const ledger = new Set<string>();
    const { session } = oneNodeSession(provider, () => EMPTY, {
      ledger: {
        taking: (n) => ledger.add(n.node),
        back: (n) => ledger.delete(n.node),
        takenOver: () => undefined,
        foundNotOut: () => undefined,
      },
    });
    expect(await session.before('n1')).toBeUndefined(); // play 1: drained
    await session.resume('n1'); // its resume fails: out by this run still
    expect([...ledger]).toEqual(['n1']);
    expect(await session.before('n1')).toMatch(/failed: controller ctl: connection refused/); // play 2
    expect([...ledger]).toEqual(['n1']);
  });
});
