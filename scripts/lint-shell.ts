// npm run lint: shellcheck (POSIX sh: a host's /bin/sh may be dash) over every remote script
// racksmith sends, rendered as the engine renders them: the bundled playbooks built for the
// synthetic hosts of scripts/lint-shell/hosts.yaml (every family and option branch) and the
// families no bundled playbook uses; each host's whole probe script; every apply step of every
// change the resources make in the host states of scripts/lint-shell/facts.ts (a kind with none
// fails); the scripts a script runs in a shell of its own (sh -c under flock, sudo, su); the
// engine's wrappers (the section layout, the apply lock, become, the remote kill of an aborted
// exec), the host facts gatherer. Any finding fails. Nothing is contacted. A deliberate construct carries a
// `# shellcheck disable=SCxxxx` with its reason in the script's own text.
//   npx tsx scripts/lint-shell.ts [--keep]   (--keep: leave the rendered scripts in the temp directory)
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadInventory } from '../src/inventory/load.ts';
import { prepare, type PreparedPlay } from '../src/engine/run.ts';
import { probeOf } from '../src/engine/host-caches.ts';
import { ProbeSet } from '../src/engine/probe-set.ts';
import { scriptBody, type Section } from '../src/engine/script.ts';
import { applyLockScript } from '../src/engine/apply-lock.ts';
import { becomeCommand, execPlan } from '../src/connection/become.ts';
import { killGroupsScript } from '../src/connection/kill-groups.ts';
import { scriptAsStdin } from '../src/connection/transport.ts';
import { Secret } from '../src/util/secret.ts';
import type { Vars } from '../src/inventory/model.ts';
import site from '../playbooks/site.ts';
import type { Resource } from '../src/contract/resource.ts';
import { file } from '../src/resources/core/file.ts';
import { block, line } from '../src/resources/core/text-edit.ts';
import { command } from '../src/resources/core/command.ts';
import { aisStatePurge } from '../src/resources/storage/storage-lifecycle.ts';
import { manifestsDir } from '../test/kube-double/fixtures.ts';
import { applySteps, Coverage } from './lint-shell/facts.ts';
import { gatherScript } from '../src/facts/gather-script.ts';
import { drainScript, nodeStateScript, resumeUnderMarkScript, runningJobsScript } from '../src/drain/slurm.ts';
import { cordonScript, drainPodsScript, nodeScript, uncordonScript } from '../src/drain/kubernetes.ts';

const root = resolve(import.meta.dirname, '..');
const HOSTS = join(root, 'scripts/lint-shell/hosts.yaml');

/** The other branches of the cluster play: Flannel, kube-proxy iptables, MetalLB over BGP. */
const FLANNEL: Vars = {
  kube_cni: 'flannel',
  kube_proxy_mode: 'iptables',
  kube_ipv6: false,
  flannel_backend: 'host-gw',
  flannel_iface: ['bond0'],
  metallb_mode: 'bgp',
  metallb_bgp_peers: [{ name: 'tor', peer_address: '10.12.0.1', peer_asn: 64512, my_asn: 64513 }],
  metallb_allow_strict_arp: false,
  jail_fstype: 'none',
  jail_source: '/srv/jail',
};

/** A script as buildScript makes it, with a fixed marker: scripts that differ only in it are one. */
const script = (sections: readonly Section[]) => `rs_m='@@RS-0123456789abcdef@@'\n${scriptBody(sections)}`;

/** Every script to check, by a name that says where it comes from (deduplicated by text). */
const scripts = new Map<string, string>();
const add = (name: string, text: string) => {
  for (const s of scripts.values()) if (s === text) return;
  scripts.set(name.replace(/[^A-Za-z0-9._-]+/g, '_'), text);
  // a script that a shell runs inside this one (`sh -ec 'BODY'`: under flock, sudo, su) is one too
  let n = 0;
  for (const m of text.matchAll(/\bsh -e?c '((?:[^']|'\\'')*)'/g)) add(`${name}-nested-${n++}`, m[1].replaceAll("'\\''", "'"));
};

const keep = process.argv.includes('--keep');
const dir = mkdtempSync(join(tmpdir(), 'rs-lint-shell-'));

/** A small stand-in for the CNI plugins tarball (as test/e2e/kube-network.test.ts makes it): nothing is downloaded. */
function cniTarball(): Vars {
  const x = join(dir, 'cni');
  mkdirSync(x);
  for (const n of ['bridge', 'host-local', 'loopback', 'portmap']) {
    writeFileSync(join(x, n), `#!/bin/sh\necho ${n}\n`);
    chmodSync(join(x, n), 0o755);
  }
  const path = join(dir, 'cni-plugins-linux-amd64-v1.8.0.tgz');
  execFileSync('tar', ['-czf', path, '-C', x, '.']);
  return { cni_plugins_src: path, cni_plugins_sha256: execFileSync('sha256sum', [path]).toString().slice(0, 64) };
}
// the pinned manifests the cluster play renders (the kube tests' shared fixtures)
const common: Vars = { ...cniTarball(), kube_manifest_dir: manifestsDir() };

const coverage = new Coverage();
for (const [label, extra] of [
  ['calico', {}],
  ['flannel', FLANNEL],
] as const) {
  const plays: PreparedPlay[] = prepare(loadInventory(HOSTS, { ...common, ...extra }), [site], {});
  for (const p of plays) {
    for (const { host, resources } of p.hosts) {
      const sections: Section[] = [];
      new ProbeSet(sections, resources.map(probeOf));
      add(`probe-${label}-${p.play.name}-${host.name}`, script(sections));
      for (const r of resources) {
        const rendered = applySteps(r);
        coverage.add(r, rendered);
        rendered.steps.forEach((s, i) => add(`step-${label}-${r.id}-${i}`, script([{ kind: 'step', group: r.id, body: s.script }])));
      }
    }
  }
}

// Families the bundled playbooks do not use (an operator's own playbook does), with every option.
const own: Resource[] = [
  file({ path: '/etc/rs/a.conf', content: 'a = 1\n', mode: '0640', owner: 'root', group: 'adm' }),
  file({ path: '/etc/rs/gone.conf', state: 'absent' }),
  line({ path: '/etc/rs/b.conf', line: 'b = 2', regexp: '^b\\s*=', create: true }),
  line({ path: '/etc/rs/b.conf', line: 'c = 3', state: 'absent' }),
  block({ path: '/etc/rs/c.conf', block: 'x\ny\n', create: true }),
  command({ name: 'stamp', run: ['touch', '/etc/rs/stamp'], creates: '/etc/rs/stamp' }),
  command({ name: 'check', run: 'echo ran', unless: ['grep', '-q', 'x', '/etc/rs/x'] }),
  command({ name: 'always', run: 'date', unguarded: true }),
  aisStatePurge({
    disks: [{ serial: 'ZL2ABC12' }, { device: '/dev/nvme0n1' }],
    wipe: ['/dev/disk/by-id/wwn-0x5000c500a1b2c301', '/dev/disk/by-id/nvme-X'],
  }),
];
{
  const sections: Section[] = [];
  new ProbeSet(sections, own.map(probeOf));
  add('probe-own-families', script(sections));
  for (const r of own) {
    const rendered = applySteps(r);
    coverage.add(r, rendered);
    rendered.steps.forEach((s, i) => add(`step-own-${r.id}-${i}`, script([{ kind: 'step', group: r.id, body: s.script }])));
  }
}

// The engine's own: the section layout (a define, a probe, a lock gate, groups that skip together).
add(
  'engine-sections',
  script([
    { kind: 'define', body: 'rs_f() { :; }' },
    { kind: 'probe', body: 'rs_f; echo a' },
    { kind: 'step', stop: true, body: applyLockScript({ runId: 'ctl:1:2026-01-01T00:00:00.000Z', timeoutSec: 60 }) },
    { kind: 'step', group: 'a', body: 'echo a' },
    { kind: 'step', group: 'b', skipIf: ['a'], body: 'echo b' },
  ]),
);
add('host-facts-gatherer', gatherScript());
add('ssh-kill-groups', killGroupsScript(['racksmith-tag-1', 'racksmith-tag-2']));
add('transport-stdin', scriptAsStdin('echo x'));
add('engine-apply-lock-session', applyLockScript({ runId: 'ctl:1:x', timeoutSec: 0 }, { sessionPid: 1234 }));
// --drain's commands on the controller: Slurm's, and kubectl's on the first control-plane host
const mark = "racksmith 20261207T000000Z-abcdef on ctl's";
add('drain-slurm-state', nodeStateScript('node-1'));
add('drain-slurm-jobs', runningJobsScript('node-1'));
add('drain-slurm-drain', drainScript('node-1', mark));
add(
  'drain-slurm-resume-under-mark',
  resumeUnderMarkScript('node-1', [mark, 'racksmith 20261206T000000Z-012345 on ctl'], 'racksmith: resumed 0123456789abcdef'),
);
const kube = { kubeconfig: '/etc/kubernetes/admin.conf', kubectl: 'kubectl' };
add('drain-kube-node', nodeScript(kube, 'node-1'));
add('drain-kube-cordon', cordonScript(kube, 'node-1', mark));
add('drain-kube-pods', drainPodsScript(kube, 'node-1', 300));
add('drain-kube-uncordon', uncordonScript(kube, 'node-1', '4711'));
for (const method of ['sudo', 'su'] as const) {
  for (const password of [undefined, new Secret('pw')]) {
    for (const inline of [undefined, 'echo inline']) {
      const b = { method, user: 'root', password };
      const nonce = 'rs-become-0123456789abcdef01234567';
      const { command } = becomeCommand(b, nonce, inline, 'racksmith-tag');
      add(`become-${method}-${password ? 'pw' : 'nopw'}-${inline ? 'inline' : 'stdin'}`, command);
      add(`exec-plan-${method}`, execPlan(b, nonce, 'true', undefined, (s) => s).args[1]);
    }
  }
}

const files = [...scripts].map(([name, text], i) => {
  const f = join(dir, `${String(i).padStart(3, '0')}-${name.slice(0, 120)}.sh`);
  writeFileSync(f, text + '\n');
  return f;
});
// Not checked: SC3013, test -ef: POSIX since Issue 8 (2024), and dash's, bash's and busybox's
// test all have it. SC2016, `$` in single quotes: every value racksmith puts in a script is
// single-quoted by shq (file contents, a target shell's script): data, not an expression.
// SC1003, `\'` in single quotes: a script quoted by shq inside another one quoted by shq.
// SC2317, unreachable code: shellcheck's name for a function the script never calls, and a step
// carries the disk helpers as one set, not only the ones it calls.
const EXCLUDED = 'SC3013,SC2016,SC1003,SC2317';

/** shellcheck over `files`: its gcc-format findings, or the reason it could not run. */
function shellcheck(files: string[]): Promise<{ code: number | null; out: string; error?: string }> {
  return new Promise((done) => {
    const p = spawn('shellcheck', ['-s', 'sh', '-f', 'gcc', '-e', EXCLUDED, ...files], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (b) => (out += b));
    p.stderr.on('data', (b) => (out += b));
    p.on('error', (e) => done({ code: null, out, error: e.message }));
    p.on('close', (code) => done({ code, out }));
  });
}

// one shellcheck per core, each on every n-th script (the scripts are of all sizes)
const n = Math.min(availableParallelism(), 4);
const results = await Promise.all(Array.from({ length: n }, (_, k) => shellcheck(files.filter((_, i) => i % n === k))));
if (!keep) rmSync(dir, { recursive: true, force: true });
const failed = results.find((x) => x.error);
if (failed) {
  process.stderr.write(`lint-shell: shellcheck did not run (${failed.error}): apt-get install shellcheck\n`);
  process.exit(2);
}
const uncovered = coverage.uncovered();
for (const u of uncovered)
  process.stderr.write(`lint-shell: no apply step of kind ${u.id} rendered (scripts/lint-shell/facts.ts): ${u.why}\n`);
if (results.some((x) => x.code !== 0) || uncovered.length) {
  process.stdout.write(results.map((x) => x.out).join(''));
  process.stderr.write(`lint-shell: problems in the scripts above (${keep ? dir : 'rerun with --keep to read them'})\n`);
  process.exit(1);
}
process.stdout.write(`lint-shell: ${files.length} scripts clean\n`);
