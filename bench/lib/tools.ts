// The measured commands: racksmith's CLI, ansible-playbook (plain and with Mitogen), and the two floors.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Testbed } from './bed.ts';
import { repoRoot } from './bed.ts';
import { measure, type Measurement } from './measure.ts';
import { ansibleEnv, ansiblePlaybook, sitePlaybook, type Workload } from './workload.ts';
import { DEFAULT_SSH_HANDSHAKES } from '../../src/cli/parse.ts';

export type Tool = 'racksmith' | 'ansible' | 'ansible-mitogen';
export const TOOLS: readonly Tool[] = ['racksmith', 'ansible', 'ansible-mitogen'];
/** The Ansible tools: the same playbook, inventory and settings; `ansible-mitogen` with strategy = mitogen_linear. */
export type AnsibleTool = Exclude<Tool, 'racksmith'>;
export type Case = 'first-run' | 'converged' | 'floor';

export interface ToolRun extends Measurement {
  /** racksmith-root: under --become, racksmith's converged run as root, for the become overhead. */
  tool: Tool | 'racksmith-root' | 'floor-node-ssh' | 'floor-ansible-raw';
  /** Whether the run did what it should (exit 0, nothing failed or unreachable). */
  ok: boolean;
  /** Per-host resources/tasks changed, summed over hosts. */
  changed: number;
  failed: number;
  unreachable: number;
  /** racksmith only: SSH execs (round trips) per host, max. */
  execsMax?: number;
  note?: string;
}

const TIMEOUT = 30 * 60_000;

/** racksmith's CLI on the bench inventory; `asRoot` under --become: the same hosts logged in as root. */
export async function runRacksmith(w: Workload, forks: number, asRoot = false): Promise<ToolRun> {
  if (asRoot && !w.racksmithRootInventory) throw new Error('bench: a root run of racksmith is only measured under --become');
  const inventory = asRoot ? w.racksmithRootInventory! : w.racksmithInventory;
  const m = await measure(
    [process.execPath, join(repoRoot, 'bin/provision.js'), sitePlaybook, '-i', inventory, '-f', String(forks), '--json'],
    {
      cwd: repoRoot,
      env: { ...process.env, XDG_STATE_HOME: join(w.dir, 'racksmith-state') },
      timeoutMs: TIMEOUT,
    },
  );
  let changed = 0;
  let failed = 0;
  let unreachable = 0;
  let execsMax = 0;
  let sawRecap = false;
  for (const line of m.stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    let e: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- ansible's JSON callback output, read field by field
    try {
      e = JSON.parse(line);
    } catch {
      continue;
    }
    if (e.type === 'host_recap') {
      changed += e.changed;
      failed += e.failed;
      if (e.unreachable) unreachable++;
      execsMax = Math.max(execsMax, e.execs ?? 0);
    } else if (e.type === 'recap') sawRecap = true;
  }
  const ok = m.code === 0 && sawRecap && failed === 0 && unreachable === 0;
  const problems = ok
    ? undefined
    : m.stderr
        .split('\n')
        .filter((l) => /FAILED|UNREACHABLE|error/i.test(l))
        .slice(0, 5)
        .join('\n') || m.stderr.slice(-500);
  return {
    ...m,
    stdout: '',
    stderr: ok ? '' : m.stderr.slice(-4000),
    tool: asRoot ? 'racksmith-root' : 'racksmith',
    ok,
    changed,
    failed,
    unreachable,
    execsMax,
    note: problems,
  };
}

/** `tb1 : ok=18 changed=13 unreachable=0 failed=0 skipped=2 rescued=0 ignored=0` */
function ansibleRecap(out: string): { changed: number; failed: number; unreachable: number; hosts: number } {
  const r = { changed: 0, failed: 0, unreachable: 0, hosts: 0 };
  const at = out.lastIndexOf('PLAY RECAP');
  if (at < 0) return r;
  for (const line of out.slice(at).split('\n')) {
    const m = /^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)/.exec(line);
    if (!m) continue;
    r.hosts++;
    r.changed += Number(m[3]);
    r.unreachable += Number(m[4]) > 0 ? 1 : 0;
    r.failed += Number(m[5]);
  }
  return r;
}

export async function runAnsible(w: Workload, tool: AnsibleTool = 'ansible'): Promise<ToolRun> {
  // Mitogen compresses its SSH stream by default: off, as plain Ansible's (no -C) and racksmith's
  // are (compression only costs CPU on a local bridge).
  const mitogenArgs = tool === 'ansible-mitogen' ? ['-e', '{"mitogen_ssh_compression": false}'] : [];
  const m = await measure(['ansible-playbook', '-i', w.ansibleInventory, ...mitogenArgs, ansiblePlaybook], {
    cwd: repoRoot,
    env: ansibleEnv(w, tool === 'ansible-mitogen'),
    timeoutMs: TIMEOUT,
  });
  const r = ansibleRecap(m.stdout);
  const ok = m.code === 0 && r.hosts === w.hosts.length && r.failed === 0 && r.unreachable === 0;
  const note = ok
    ? undefined
    : m.stdout
        .split('\n')
        .filter((l) => /fatal:|failed:|UNREACHABLE|ERROR/.test(l))
        .slice(0, 5)
        .join('\n') || (m.stdout + m.stderr).slice(-500);
  return {
    ...m,
    stdout: ok ? '' : m.stdout.slice(-4000),
    stderr: ok ? '' : m.stderr.slice(-2000),
    tool,
    ok,
    changed: r.changed,
    failed: r.failed,
    unreachable: r.unreachable,
    note,
  };
}

/** node-ssh: connect + exec `true` on every host (under --become as ops: `sudo -n true`), same concurrency. */
export async function runFloor(
  tb: Testbed,
  w: Workload,
  concurrency: number,
): Promise<ToolRun & { connectMs: number[]; execMs: number[] }> {
  const hostsJson = join(w.dir, 'floor-hosts.json');
  const user = (h: { user: string }) => (w.become ? 'ops' : h.user);
  writeFileSync(hostsJson, JSON.stringify(tb.hosts().map((h) => ({ name: h.name, ip: h.ip, port: h.port, user: user(h) }))));
  const command = w.become ? 'sudo -n true' : 'true';
  const m = await measure(
    [
      process.execPath,
      join(repoRoot, 'bench/floor.mjs'),
      hostsJson,
      tb.keyPath,
      tb.knownHostsPath,
      String(concurrency),
      command,
      // racksmith's default --ssh-handshakes: the same turns at the same forks
      String(DEFAULT_SSH_HANDSHAKES),
    ],
    { cwd: repoRoot, timeoutMs: 120_000 },
  );
  let parsed: { ok: number; connectMs: number[]; execMs: number[] } = { ok: 0, connectMs: [], execMs: [] };
  try {
    parsed = JSON.parse(m.stdout.trim().split('\n').pop() ?? '{}');
  } catch {
    /* reported below */
  }
  const ok = m.code === 0 && parsed.ok === w.hosts.length;
  return {
    ...m,
    stdout: '',
    tool: 'floor-node-ssh',
    ok,
    changed: 0,
    failed: w.hosts.length - (parsed.ok ?? 0),
    unreachable: 0,
    connectMs: parsed.connectMs ?? [],
    execMs: parsed.execMs ?? [],
    note: ok ? undefined : m.stderr.slice(-500),
  };
}

/**
 * For information: Ansible's own connection floor (OpenSSH + ControlPersist, `raw: true`, no
 * Python; under --become the inventory's ansible_become wraps it in sudo).
 */
export async function runAnsibleRawFloor(w: Workload): Promise<ToolRun> {
  const m = await measure(['ansible', 'all', '-i', w.ansibleInventory, '-m', 'raw', '-a', 'true'], {
    cwd: repoRoot,
    env: ansibleEnv(w),
    timeoutMs: 300_000,
  });
  const okHosts = (m.stdout.match(/\| CHANGED \| rc=0/g) ?? []).length;
  const ok = m.code === 0 && okHosts === w.hosts.length;
  return {
    ...m,
    stdout: '',
    tool: 'floor-ansible-raw',
    ok,
    changed: 0,
    failed: w.hosts.length - okHosts,
    unreachable: 0,
    note: ok ? undefined : m.stderr.slice(-500),
  };
}
