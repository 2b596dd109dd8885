// Issue 22: the bundled plays on the operator's own group names, through racksmith_play_hosts,
// with no edit to any playbook. The inventory is ais-k8s's hosts-example.ini (its groups
// [controller], [gpu-nodes], [ais] with [ais:children]), its hosts pointed at test-bed hosts.
//
// THE KUBERNETES API SERVER HERE IS A TEST DOUBLE (test/kube-double/, see its README), as in
// kube-network.test.ts: the real kubectl on the controller host talks to the double on the runner.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import * as tb from '../testbed/api.ts';
import { startKubeApiDouble, type KubeApiDouble } from '../kube-double/server.ts';
import { manifestsDir } from '../kube-double/fixtures.ts';
import { changedResources, provision, recaps, repoRoot } from './helpers.ts';
import { needHddScheduler } from './hdd-scheduler.ts';

const AIS_INI = join(repoRoot, 'test/unit/fixtures/public-inventories/ais-k8s/hosts-example.ini');
/** ais-k8s's host names -> the bed hosts that play them. */
const AS = { controller_host: 'tb2', 'gpu-worker1': 'tb3', worker1: 'tb4', worker2: 'tb5' } as const;
const HOSTS = Object.values(AS);
/** The inventory's names for them (events and recaps use these). */
const NAMES = Object.keys(AS);
const PLAYBOOKS = ['playbooks/storage.ts', 'playbooks/jail.ts', 'playbooks/kube-network.ts'];
const ROOTFS = process.env.TB_ROOTFS ?? join(repoRoot, '.cache/testbed-rootfs');
const EXPORT = 'ais-jail';

let work: string;
let inv: string;
let double: KubeApiDouble | undefined;
let converged = false;

/** hosts-example.ini as ais-k8s ships it, each host line pointed at its bed host. */
function aisInventory(): string {
  let text = readFileSync(AIS_INI, 'utf8');
  for (const [name, bed] of Object.entries(AS)) {
    const h = tb.host(bed);
    text = text.replace(new RegExp(`^${name} ansible_host=\\S+`, 'm'), `${name} ansible_host=${h.ip} ansible_port=${h.port}`);
  }
  const dir = join(work, 'inventory');
  mkdirSync(join(dir, 'group_vars'), { recursive: true });
  mkdirSync(join(dir, 'host_vars'), { recursive: true });
  writeFileSync(join(dir, 'hosts.ini'), text);
  writeFileSync(
    join(dir, 'group_vars', 'all.yml'),
    stringify({
      ansible_user: 'root',
      ansible_ssh_private_key_file: tb.keyPath,
      racksmith_known_hosts: tb.knownHostsPath,
      // the point of this file: racksmith's plays on ais-k8s's groups
      racksmith_play_hosts: { storage: 'ais', jail: 'ais:&gpu-nodes', kube_control_plane: 'controller', kube_node: 'ais' },
      jail_source: `${tb.sharedMount}/${EXPORT}`,
      jail_fstype: 'none',
      jail_options: ['bind'],
      jail_gpu: false,
      kube_cni: 'flannel',
      kube_pod_cidr: '10.250.0.0/16',
      kube_manifest_dir: manifestsDir(),
      ...cniTarball(),
    }),
  );
  for (const [name, bed] of Object.entries(AS))
    writeFileSync(
      join(dir, 'host_vars', `${name}.yml`),
      stringify({
        storage_disks: tb
          .host(bed)
          .disks.map((d, i) => ({ device: d.dev, name: `d${i + 1}`, match: { KERNEL: d.dev.replace('/dev/', '') } })),
      }),
    );
  return join(dir, 'hosts.ini');
}

/** A small stand-in for the CNI plugins tarball (as kube-network.test.ts makes it). */
function cniTarball(): { cni_plugins_src: string; cni_plugins_sha256: string } {
  const x = join(work, 'cni');
  mkdirSync(x, { recursive: true });
  for (const n of ['bridge', 'host-local', 'loopback', 'portmap']) {
    writeFileSync(join(x, n), `#!/bin/sh\necho ${n}\n`);
    chmodSync(join(x, n), 0o755);
  }
  const path = join(work, 'cni-plugins-linux-amd64-v1.8.0.tgz');
  execFileSync('tar', ['-czf', path, '-C', x, '.']);
  return { cni_plugins_src: path, cni_plugins_sha256: execFileSync('sha256sum', [path]).toString().slice(0, 64) };
}

/** The jail export: the bed's rootfs (hard links), with Soperator's populated marker. */
function populateExport(): void {
  const dir = join(tb.sharedDir, EXPORT);
  rmSync(dir, { recursive: true, force: true });
  execFileSync('cp', ['-al', ROOTFS, dir]);
  execFileSync('cp', ['--remove-destination', join(ROOTFS, 'etc/ld.so.cache'), join(dir, 'etc/ld.so.cache')]);
  writeFileSync(join(dir, 'etc/soperator-jail-populated'), 'populated by operator-groups.test.ts\n');
}

/** Fresh hosts and a fresh API double, its kubeconfig on the controller, then one converging run. */
async function converge() {
  if (converged) return;
  await tb.reset(HOSTS);
  populateExport();
  await double?.stop();
  double = await startKubeApiDouble({
    host: tb.runnerIp,
    nodes: NAMES.map((name, i) => ({ name, podCIDR: `10.250.${i}.0/24` })),
    kubeadm: { podSubnet: '10.250.0.0/16' },
  });
  const r = await tb.hostExec(
    AS.controller_host,
    'mkdir -p /etc/kubernetes && cat > /etc/kubernetes/admin.conf && chmod 600 /etc/kubernetes/admin.conf',
    {
      input: double.kubeconfig(),
    },
  );
  expect(r.code, r.stderr).toBe(0);
  const run = await provision([...PLAYBOOKS, '-i', inv, '--json'], { timeoutMs: 300_000 });
  expect(run.code, run.stderr).toBe(0);
  converged = true;
  return run;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'rs-operator-groups-'));
  inv = aisInventory();
});
afterAll(async () => {
  await double?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("ais-k8s's group names drive storage, jail and the kube cluster step", { timeout: 600_000 }, () => {
  it('converges: storage on [ais], the jail on ais:&gpu-nodes, the cluster step on [controller]; no playbook edited', async (ctx) => {
    needHddScheduler(ctx);
    converged = false;
    const run = (await converge())!;
    const byHost = (id: string) => run.events.filter((e) => e.type === 'resource' && e.id === id).map((e) => e.host);
    // storage: every host of [ais] (its children controller and gpu-nodes included)
    for (const h of HOSTS) expect((await tb.hostExec(h, 'findmnt -no FSTYPE /ais/d1')).stdout.trim(), h).toBe('xfs');
    // the jail: only gpu-worker1
    for (const h of HOSTS)
      expect((await tb.hostExec(h, 'findmnt -no TARGET /mnt/jail')).stdout.trim(), h).toBe(h === AS['gpu-worker1'] ? '/mnt/jail' : '');
    // the cluster step: once, on the controller
    expect(byHost('kube:flannel')).toEqual(['controller_host']);
    expect(double!.get('DaemonSet', 'kube-flannel-ds', 'kube-flannel')).toBeDefined();
    // the nodes play on [ais] too
    for (const h of HOSTS) expect((await tb.hostExec(h, 'test -d /opt/cni/bin; echo $?')).stdout.trim(), h).toBe('0');
    // the bundled playbooks are as committed
    expect(execFileSync('git', ['status', '--porcelain', '--', 'playbooks'], { cwd: repoRoot }).toString()).toBe('');
  });

  it('a second run changes nothing; --check after it shows nothing', async (ctx) => {
    needHddScheduler(ctx);
    await converge();
    const again = await provision([...PLAYBOOKS, '-i', inv, '--json'], { timeoutMs: 300_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(changedResources(again)).toEqual([]);
    for (const h of NAMES) expect(recaps(again)[h]).toMatchObject({ changed: 0, failed: 0, unreachable: false });
    const check = await provision([...PLAYBOOKS, '-i', inv, '--check', '--json'], { timeoutMs: 300_000 });
    expect(check.code, check.stderr).toBe(0);
    expect(changedResources(check)).toEqual([]);
  });

  it('--list-hosts, --list-tasks, --list-tags and --syntax-check connect to no host: one with sshd stopped lists fine', async () => {
    const down = AS.worker2;
    await tb.stopSshd(down);
    try {
      const hosts = await provision(['playbooks/jail.ts', '-i', inv, '--list-hosts']);
      expect(hosts.code, hosts.stderr).toBe(0);
      expect(hosts.stdout).toBe('  hosts (1):\n    gpu-worker1\n');
      const tasks = await provision(['playbooks/storage.ts', '-i', inv, '--list-tasks', '-l', 'worker2']);
      expect(tasks.code, tasks.stderr).toBe(0);
      expect(tasks.stdout).toContain('  play #1 (storage): storage\tTAGS: [storage]\n    hosts (1): worker2\n');
      expect(tasks.stdout).toContain('      disk:d1\tTAGS: [mkfs, storage]\n');
      expect(tasks.stdout).toContain('      mount:/ais/d1\tTAGS: [mount, storage]\n');
      const tags = await provision([...PLAYBOOKS, '-i', inv, '--list-tags']);
      expect(tags.code, tags.stderr).toBe(0);
      expect(tags.stdout).toMatch(/play #1 \(storage\): storage\tTAGS: \[storage\]\n {6}TASK TAGS: \[.*storage.*\]/);
      const syntax = await provision([...PLAYBOOKS, '-i', inv, '--syntax-check']);
      expect(syntax.code, syntax.stderr).toBe(0);
      expect(syntax.stdout).toBe(PLAYBOOKS.map((p) => `playbook: ${p}\n`).join(''));
      // control: a real run does try the host, and finds it unreachable
      const run = await provision(['playbooks/storage.ts', '-i', inv, '--check', '-l', 'worker2', '--timeout', '2']);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('UNREACHABLE');
    } finally {
      await tb.startSshd(down);
    }
  });
});
