// Faults on real hosts: a link cut mid-apply, a probe that hangs, Ctrl-C during a hung step, and
// the temp file an interrupted write leaves. Each ends on its own, the host in question reported
// (unreachable, timed out or interrupted), its remote commands killed, the other hosts converged.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, repoRoot, writeInventory } from './helpers.ts';

const WINDOW = 'test/fixtures/playbooks/window.ts';
const HANG = 'test/fixtures/playbooks/hang.ts';

/** Wait for `cmd` to succeed on the host (an event, polled), up to `tries` x 100 ms. */
async function until(host: string, cmd: string, tries = 300): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if ((await tb.hostExec(host, cmd)).code === 0) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
const running = (pattern: string) => `pgrep -xf ${JSON.stringify(pattern)} >/dev/null`;
const gone = (pattern: string) => `! pgrep -xf ${JSON.stringify(pattern)} >/dev/null`;

describe('faults', () => {
  it('the link to one host cut mid-apply: it ends unreachable, the others converge, the run ends', async () => {
    const hosts = ['tb5', 'tb6', 'tb7'];
    await tb.reset(hosts);
    const inv = writeInventory({ hosts, vars: { fx_sleep: 5 } });
    const run = provision([WINDOW, '-i', inv, '--json', '--host-timeout', '45', '--ssh-keepalive', '2'], { timeoutMs: 150_000 });
    const netns = tb.host('tb6').netns;
    try {
      expect(await until('tb6', running('sleep 5'))).toBe(true);
      // only this bed's own namespace: the host's side of its link goes down
      await tb.hostExec('tb6', 'true');
      const cut = spawn('ip', ['-n', netns, 'link', 'set', 'eth0', 'down']);
      expect(await new Promise((r) => cut.on('close', r))).toBe(0);
      const r = await run;
      expect(r.code, r.stderr).toBe(1);
      const rc = recaps(r);
      expect(rc.tb6.unreachable).toBe(true);
      expect(rc.tb6.error).toMatch(/timed out after 45s|connection lost/);
      for (const h of ['tb5', 'tb7']) expect(rc[h], r.stderr).toMatchObject({ failed: 0, unreachable: false });
      for (const h of ['tb5', 'tb7']) expect((await tb.hostExec(h, 'ls /srv/rs-window')).stdout).toMatch(/slept-1/);
    } finally {
      await new Promise((r) => spawn('ip', ['-n', netns, 'link', 'set', 'eth0', 'up']).on('close', r));
    }
  });

  it('a probe that hangs: --host-timeout ends the host as unreachable and kills its remote commands', async () => {
    await tb.reset(['tb8', 'tb9']);
    const inv = writeInventory({ hosts: ['tb8', 'tb9'], hostVars: { tb8: { fx_hang_probe: 1008 } } });
    const r = await provision([HANG, '-i', inv, '--json', '--host-timeout', '8']);
    expect(r.code).toBe(1);
    expect(recaps(r).tb8).toMatchObject({ unreachable: true, error: 'timed out after 8s' });
    expect(recaps(r).tb9).toMatchObject({ failed: 0, unreachable: false, changed: 1 });
    expect(await until('tb8', gone('sleep 1008'), 50)).toBe(true);
  });

  it('Ctrl-C during a hung step: the run ends, the host is interrupted in journal and recap, its command killed', async () => {
    await tb.reset(['tb9', 'tb10']);
    const journal = join(mkdtempSync(join(tmpdir(), 'rs-int-')), 'j.ndjson');
    const inv = writeInventory({ hosts: ['tb9', 'tb10'], hostVars: { tb9: { fx_hang_step: 1009 } } });
    const child = spawn(process.execPath, [join(repoRoot, 'bin/provision.js'), HANG, '-i', inv, '--json', '--journal', journal], {
      cwd: repoRoot,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const closed = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    expect(await until('tb9', running('sleep 1009'))).toBe(true);
    child.kill('SIGINT');
    // It ends on its own (the step would sleep for 17 minutes); a watchdog stands in for "never".
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await closed;
    clearTimeout(watchdog);
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/tb9: interrupted: the steps in flight were stopped/);
    const events = readFileSync(journal, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.find((e) => e.type === 'host_recap' && e.host === 'tb9').error).toMatch(/^interrupted/);
    expect(events.at(-1).type).toBe('recap');
    expect(stdout.trim().split('\n').at(-1)).toMatch(/"type":"recap"/);
    expect(await until('tb9', gone('sleep 1009'), 50)).toBe(true);
  });

  it('a temp file an interrupted write left is removed by the next run that writes that file', async () => {
    await tb.reset(['tb10']);
    const stale = '/srv/rs-window/.small.conf.racksmith-tmp.Ab12Cd';
    await tb.hostExec('tb10', `mkdir -p /srv/rs-window && printf 'half' > ${stale}`);
    const inv = writeInventory({ hosts: ['tb10'] });
    const r = await provision([WINDOW, '-i', inv, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect((await tb.hostExec('tb10', `ls -A /srv/rs-window`)).stdout.split('\n').filter(Boolean).sort()).toEqual([
      'large.conf',
      'small.conf',
    ]);
  });
});
