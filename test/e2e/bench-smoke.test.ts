// Smoke test of the benchmark (bench/): it runs with 2 hosts on the bench's own test bed for smoke
// tests (RS_BENCH_BED=smoke: rsbs0, 10.79.0.0/24, .testbed-bench-smoke; never the e2e bed this
// suite shares, nor the bed of a benchmark someone runs by hand), plans 20 synthetic hosts from a
// recording, writes its JSON, and takes its bed down again. Speed targets are deliberately not checked here (noisy machines): only that
// the benchmark works and that both tools reached the same end state.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { needHddScheduler } from './hdd-scheduler.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'rs-bench-smoke-'));
const out = join(dir, 'latest.json');

const linkExists = (name: string) => {
  try {
    execFileSync('ip', ['link', 'show', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** The Ansible side needs ansible.posix (Debian package `ansible`); without it, racksmith only. */
function ansibleUsable(): boolean {
  try {
    const list = execFileSync('ansible-doc', ['-l', 'ansible.posix'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return list.includes('ansible.posix.sysctl') && list.includes('ansible.posix.mount');
  } catch {
    return false;
  }
}

/** The third tool needs ansible-mitogen (Debian package, as .ci/run installs it). */
function mitogenUsable(): boolean {
  try {
    execFileSync('dpkg-query', ['-W', 'ansible-mitogen'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function bench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const child = spawn('npm', ['run', '-s', 'bench', '--', ...args], { cwd: repoRoot, env: { ...process.env, RS_BENCH_BED: 'smoke' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGTERM'), 900_000);
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(timer);
      res({ code: code ?? -1, stdout, stderr });
    });
  });
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What the bench's Ansible tools are on this machine: plain when ansible.posix is there, Mitogen when that is installed too. */
function benchTools(): string {
  const tools = ansibleUsable() ? (mitogenUsable() ? 'racksmith,ansible,ansible-mitogen' : 'racksmith,ansible') : 'racksmith';
  if (tools === 'racksmith') console.warn('[bench-smoke] ansible.posix is not installed (Debian package `ansible`): racksmith side only');
  else if (!tools.includes('mitogen')) console.warn('[bench-smoke] ansible-mitogen is not installed: no third tool');
  return tools;
}

describe('benchmark smoke test', () => {
  it('runs with 2 hosts on its own bed, writes its JSON, leaves no bed behind and the e2e bed alone', { timeout: 920_000 }, async (ctx) => {
    needHddScheduler(ctx); // the bench converges site.ts, storage play included
    const e2eBed = linkExists('rsbr0');
    const tools = benchTools();
    const run = await bench(['--hosts', '2', '--runs', '1', '--tools', tools, '--synthetic-hosts', '20', '--out', out]);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/^converged: racksmith \d+\.\d\ds ansible /m);
    expect(run.stdout).toMatch(/^floor: node-ssh \d+\.\d\ds racksmith\/floor \d+\.\dx/m);

    const result = JSON.parse(readFileSync(out, 'utf8'));
    expect(result.config.hosts).toBe(2);
    expect(result.config.bed.TB_BRIDGE).toBe('rsbs0');
    expect(result.summary.converged.racksmith.wall.median).toBeGreaterThan(0);
    expect(result.summary.converged.racksmith.ok).toBe(1);
    expect(result.summary.floor['floor-node-ssh'].ok).toBe(1);
    // each timed run started on a machine whose busy cores were measured (bench/lib/measure.ts waitForQuiet)
    expect(run.stdout).toMatch(
      /; quiet: at most \d+\.\d\d cores busy as each timed run started \(waited up to \d+\.\d s for under 0\.3\)$/m,
    );
    for (const s of result.samples as Array<{ quiet: { ms: number; busyCores: number } }>) {
      expect(s.quiet.ms).toBeGreaterThan(0);
      expect(Number.isFinite(s.quiet.busyCores) && s.quiet.busyCores >= 0).toBe(true);
    }
    expect(result.samples.filter((s: { case: string; tool: string }) => s.case === 'converged' && s.tool === 'racksmith')[0].changed).toBe(
      0,
    );
    if (tools.includes('ansible')) {
      expect(result.summary.converged.ansible.ok).toBe(1);
      expect(result.endState.comparisons[0]).toMatchObject({ a: 'racksmith', b: 'ansible' });
      expect(result.endState.comparisons[0].identical, JSON.stringify(result.endState.comparisons[0].differences)).toBe(true);
    }
    // the third tool: Ansible with Mitogen's strategy, measured in the same run, its end state
    // compared with racksmith's host by host
    if (tools.includes('ansible-mitogen')) {
      expect(result.config.tools).toEqual(['racksmith', 'ansible', 'ansible-mitogen']);
      expect(result.machine.ansibleMitogen).toMatch(/ansible_mitogen\/plugins\/strategy\)$/);
      expect(run.stdout).toMatch(/^converged-mitogen: racksmith \d+\.\d\ds ansible-mitogen \d+\.\d\ds ratio \d+\.\dx$/m);
      expect(run.stdout).toMatch(/^first-run-mitogen: racksmith \d+\.\d\ds ansible-mitogen \d+\.\d\ds ratio \d+\.\dx$/m);
      expect(result.summary.converged['ansible-mitogen'].ok).toBe(1);
      expect(result.summary['first-run']['ansible-mitogen'].ok).toBe(1);
      const mitogenConverged = result.samples.filter(
        (s: { case: string; tool: string }) => s.case === 'converged' && s.tool === 'ansible-mitogen',
      );
      expect(mitogenConverged).toHaveLength(1);
      expect(mitogenConverged[0].changed).toBe(0);
      const vsMitogen = result.endState.comparisons.find((c: { b: string }) => c.b === 'ansible-mitogen');
      expect(vsMitogen, JSON.stringify(result.endState.comparisons)).toMatchObject({ a: 'racksmith', hosts: 2 });
      expect(vsMitogen.identical, JSON.stringify(vsMitogen.differences)).toBe(true);
      expect(result.ratios.mitogen.converged).toBeGreaterThan(0);
    }

    // --synthetic: a converged bed host's answers replayed for 20 hosts, each answering its own way,
    // all of them planned as converged
    expect(run.stdout).toMatch(/^synthetic: 20 hosts x 50 resources: plan \d+\.\d\ds CPU/m);
    expect(result.synthetic).toMatchObject({
      hosts: 20,
      resourcesPerHost: 50,
      distinctAnswers: 20,
      json: false,
      recap: { ok: 1000, changed: 0, failed: 0 },
    });
    // each variant replayed in fresh processes (5 at least), the --json one as well
    expect(run.stdout).toMatch(/^synthetic with --json: 20 hosts x 50 resources: plan \d+\.\d\ds CPU/m);
    expect(result.synthetic.withJson).toMatchObject({ hosts: 20, json: true, recap: { ok: 1000, changed: 0, failed: 0 } });
    expect(result.synthetic.cpuMs.all).toHaveLength(5);
    expect(result.synthetic.withJson.cpuMs.all).toHaveLength(5);

    // its bed is gone, the e2e bed is as it was
    expect(linkExists('rsbs0')).toBe(false);
    expect(existsSync(join(repoRoot, '.testbed-bench-smoke', 'hosts'))).toBe(false);
    expect(linkExists('rsbr0')).toBe(e2eBed);
  });
  it(
    '--become: every tool logs in as ops with sudo, racksmith also as root; the become line, end state identical',
    { timeout: 920_000 },
    async (ctx) => {
      needHddScheduler(ctx);
      const tools = benchTools();
      const becomeOut = join(dir, 'become.json');
      const run = await bench(['--hosts', '2', '--runs', '1', '--become', '--tools', tools, '--out', becomeOut]);
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.stdout).toMatch(/login ops \+ sudo/);
      // racksmith under sudo against its own root run, and its execs per host in both
      expect(run.stdout).toMatch(
        /^become: racksmith converged root \d+\.\d\ds become \d+\.\d\ds ratio \d+\.\d\dx \(target <= 1\.15x\) {2}execs\/host root 1 become 1$/m,
      );
      expect(run.stdout).toMatch(/^floor: node-ssh \d+\.\d\ds racksmith\/floor \d+\.\dx/m);
      const result = JSON.parse(readFileSync(becomeOut, 'utf8'));
      expect(result.config.become).toBe(true);
      expect(result.ratios.become.execsPerHost).toEqual({ root: 1, become: 1 });
      const converged = (tool: string) =>
        result.samples.filter((s: { case: string; tool: string }) => s.case === 'converged' && s.tool === tool);
      for (const tool of ['racksmith', 'racksmith-root', ...tools.split(',').slice(1)]) {
        expect(converged(tool), tool).toHaveLength(1);
        expect(converged(tool)[0], tool).toMatchObject({ ok: true, changed: 0 });
      }
      expect(result.summary.floor['floor-node-ssh'].ok).toBe(1);
      // logged in as ops, every tool's first run could only write /etc, sysctls and mounts through
      // sudo: all of them did what they should and left the same end state
      for (const tool of tools.split(',')) expect(result.summary['first-run'][tool].ok, tool).toBe(1);
      for (const c of result.endState.comparisons) expect(c.identical, JSON.stringify(c.differences)).toBe(true);
      expect(result.endState.comparisons).toHaveLength(tools.split(',').length - 1);
      expect(linkExists('rsbs0')).toBe(false);
    },
  );
});
