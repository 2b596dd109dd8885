// What a reboot does with the jail's fstab entries (docs/jail.md "After a reboot"): which wait for
// the network (_netdev) and which may fail alone (nofail), as a table of the decision and of the
// lines the jail playbook renders; then those lines fed to the real systemd-fstab-generator, and
// its units to `systemd-analyze verify` with a wait-online unit that keeps its default
// dependencies (NetworkManager-wait-online), which finds the ordering cycle of systemd issue #1258
// when a bind under an NFS jail lacks _netdev.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import jail from '../../../../playbooks/jail.ts';
import { prepare } from '../../../../src/engine/run.ts';
import { loadInventory } from '../../../../src/inventory/load.ts';
import type { Resource } from '../../../../src/contract/resource.ts';
import { FileWrite } from '../../../../src/resources/core/managed-file.ts';
import type { MountFacts } from '../../../../src/resources/core/mount.ts';
import type { GpuFacts, GpuFile } from '../../../../src/resources/jail/gpu-binds.ts';
import type { StandinFacts } from '../../../../src/resources/jail/gpu-standins.ts';
import { isNetworkMount, jailBootOptions, needsNetwork, networkJailPaths } from '../../../../src/resources/jail/jail-boot.ts';
import { fileWith } from '../../facts.ts';

const scratch = mkdtempSync(join(tmpdir(), 'rs-jailboot-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the decision', () => {
  it.each<[string, string[], boolean]>([
    ['nfs', [], true],
    ['nfs4', ['vers=4.2'], true],
    ['fuse.sshfs', [], true],
    ['glusterfs', ['defaults'], true],
    ['virtiofs', ['defaults', '_netdev'], true], // the jail root's default for other types
    ['virtiofs', ['defaults'], false],
    ['none', ['bind'], false], // a bind of a local path
    ['none', ['bind', '_netdev'], true], // the operator says the bound path is on the network
    ['tmpfs', ['size=16m'], false],
  ])('%s %j: network %s', (fstype, options, net) => expect(isNetworkMount(fstype, options)).toBe(net));

  it.each<[string, Parameters<typeof networkJailPaths>[0], string[]]>([
    ['an NFS root: everything under it', [{ path: '/mnt/jail', fstype: 'nfs', options: [] }], ['/mnt/jail']],
    ['a local root', [{ path: '/mnt/jail', fstype: 'none', options: ['bind'] }], []],
    [
      'a local root with an NFS submount, a tmpfs inside it listed first',
      [
        { path: '/mnt/jail', fstype: 'none', options: ['bind'] },
        { path: '/mnt/jail/home/scratch', fstype: 'tmpfs', options: [] },
        { path: '/mnt/jail/home', fstype: 'nfs4', options: [] },
      ],
      ['/mnt/jail/home', '/mnt/jail/home/scratch'],
    ],
  ])('%s', (_, mounts, paths) => expect(networkJailPaths(mounts)).toEqual(paths));

  it.each<[string[], string, boolean]>([
    [['/mnt/jail'], '/mnt/jail/tmp', true],
    [['/mnt/jail'], '/mnt/jail', false], // the mount itself: its own type decides
    [['/mnt/jail'], '/mnt/jailbreak/tmp', false],
    [['/mnt/jail/home'], '/mnt/jail/tmp', false],
    [[], '/mnt/jail/tmp', false],
  ])('under %j: %s waits for the network: %s', (paths, target, net) => expect(needsNetwork(paths, target)).toBe(net));

  it.each<[string[], { network: boolean; nofail: boolean }, string[]]>([
    [['bind'], { network: false, nofail: false }, ['bind']],
    [['bind'], { network: true, nofail: false }, ['bind', '_netdev']],
    [['bind', 'ro'], { network: true, nofail: true }, ['bind', 'ro', '_netdev', 'nofail']],
    [['defaults', '_netdev'], { network: true, nofail: false }, ['defaults', '_netdev']], // not repeated
    [['bind', 'nofail'], { network: false, nofail: true }, ['bind', 'nofail']],
  ])('%j %j → %j', (given, o, out) => expect(jailBootOptions(given, o)).toEqual(out));
});

// ---- the lines the playbook renders -------------------------------------------------------------

const V = '550.54.15';
const LIB = '/usr/lib/x86_64-linux-gnu';
const ROOT = '/run/nvidia/driver';

function resources(vars: string): Resource<unknown, unknown>[] {
  const dir = mkdtempSync(join(scratch, 'inv-'));
  const file = join(dir, 'hosts.yaml');
  writeFileSync(file, `all:\n  children:\n    jail:\n      vars:\n${vars}\n      hosts:\n        gpu1: {}\n`);
  return prepare(loadInventory(file), [jail], {})[0].hosts[0].resources as Resource<unknown, unknown>[];
}

const gpuFile = (name: string): GpuFile => ({
  host: `${ROOT}${LIB}/${name}`,
  target: `/mnt/jail${LIB}/${name}`,
  dir: false,
  hostDevIno: '254:10',
  mode: '755',
  targetKind: 'file',
  bound: false,
  emptyPlaceholder: false,
  mounted: false,
  staleMounts: 0,
  readOnly: false,
});

/** /etc/fstab as the jail play leaves it on a fresh GPU Operator host: each resource's write, in order. */
function renderFstab(rs: Resource<unknown, unknown>[]): string {
  let text = '';
  const written = (changes: { data?: unknown }[]) => {
    const w = changes.map((c) => c.data).find((d): d is FileWrite => d instanceof FileWrite && d.path === '/etc/fstab');
    if (w?.content) text = w.content.toString();
  };
  for (const r of rs) {
    if (r.kind === 'mount') {
      const facts: MountFacts = { fstab: fileWith(text), target: { kind: 'dir', empty: true }, source: { exists: true }, marker: true };
      written(r.diff(facts));
    } else if (r.kind === 'gpu-binds') {
      const facts: GpuFacts = {
        files: [gpuFile(`libcuda.so.${V}`), gpuFile(`libnvidia-ml.so.${V}`)],
        fstab: fileWith(text),
        source: `globs under ${ROOT}`,
        version: V,
        versionFrom: `libnvidia-ml.so.${V} under ${ROOT}`,
        libDir: LIB,
      };
      written(r.diff(facts));
    } else if (r.kind === 'gpu-standins') {
      const facts: StandinFacts = {
        role: 'cpu',
        arch: 'x86_64',
        libDir: LIB,
        realLibDir: `/mnt/jail${LIB}`,
        placeholders: new Map([[`libcuda.so.${V}`, 26]]),
        bound: new Set(),
        mounts: new Map(),
        mountCounts: new Map(),
        standin: fileWith(''),
        fstab: fileWith(text),
        fleetLibs: new Map(),
      };
      written(r.diff(facts));
    }
  }
  return text;
}

/** target → options of each fstab line. */
const optionsByTarget = (fstab: string) =>
  Object.fromEntries(
    fstab
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split(' '))
      .map((f) => [f[1], f[3]]),
  );

const NFS_JAIL = `        jail_source: nfs.rack:/export/jail
        jail_bind_dirs: [/var/spool/slurmd]
        jail_gpu_driver_root: ${ROOT}
        jail_submounts:
          - { path: /mnt/data, source: datafs, fstype: virtiofs }
          - { path: /mnt/scratch, source: tmpfs, fstype: tmpfs, options: [size=16m] }`;
const LOCAL_JAIL = `        jail_source: /srv/shared/jail
        jail_fstype: none
        jail_gpu_driver_root: ${ROOT}
        jail_submounts:
          - { path: /home, source: 'nfs.rack:/export/home', fstype: nfs4 }
          - { path: /home/scratch, source: tmpfs, fstype: tmpfs }`;
const R = 'x-systemd.requires-mounts-for=/mnt/jail';

describe('the fstab lines of the jail play', () => {
  it('an NFS jail: every entry under it waits for the network; GPU binds and optional files may fail alone', () => {
    const o = optionsByTarget(renderFstab(resources(NFS_JAIL)));
    expect(o['/mnt/jail']).toMatch(/,_netdev$/);
    expect(o['/mnt/jail/mnt/data']).toBe(`defaults,${R},_netdev`);
    expect(o['/mnt/jail/mnt/scratch']).toBe(`size=16m,${R},_netdev`);
    expect(o['/mnt/jail/tmp']).toBe(`bind,${R},_netdev`);
    expect(o['/mnt/jail/run']).toBe(`rbind,${R},_netdev`);
    expect(o['/mnt/jail/proc']).toBe(`nosuid,nodev,noexec,${R},_netdev`);
    expect(o['/mnt/jail/sys']).toBe(`rbind,${R},_netdev`);
    expect(o['/mnt/jail/dev']).toBe(`rbind,${R},_netdev`);
    expect(o['/mnt/jail/var/log']).toBe(`bind,${R},_netdev`);
    expect(o['/mnt/jail/var/spool/slurmd']).toBe(`bind,${R},_netdev`);
    expect(o['/mnt/jail/etc/resolv.conf']).toBe(`bind,${R},_netdev,nofail`);
    expect(o[`/mnt/jail${LIB}/libcuda.so.${V}`]).toBe(`bind,ro,${R},_netdev,nofail`);
  });

  it('a CPU node of an NFS jail: its stand-in binds over the GPU placeholders wait for the network and may fail alone', () => {
    const o = optionsByTarget(renderFstab(resources(`${NFS_JAIL}\n        jail_gpu: false`)));
    expect(o[`/mnt/jail${LIB}/libcuda.so.${V}`]).toBe(`bind,ro,${R},_netdev,nofail`);
    expect(o['/mnt/jail/tmp']).toBe(`bind,${R},_netdev`);
  });

  it('a local jail (a bind of a local path): its node-local binds stay in local-fs.target; under its NFS submount they wait', () => {
    const o = optionsByTarget(renderFstab(resources(LOCAL_JAIL)));
    expect(o['/mnt/jail']).toBe('bind');
    expect(o['/mnt/jail/home']).toBe(
      `${'nconnect=16,vers=4.2,hard,rsize=1048576,wsize=1048576,timeo=150,retrans=2,actimeo=30'},proto=tcp,noresvport,noatime,nodiratime,noacl,_netdev,${R}`,
    );
    expect(o['/mnt/jail/home/scratch']).toBe(`defaults,${R},_netdev`);
    expect(o['/mnt/jail/tmp']).toBe(`bind,${R}`);
    expect(o['/mnt/jail/proc']).toBe(`nosuid,nodev,noexec,${R}`);
    expect(o['/mnt/jail/etc/hosts']).toBe(`bind,${R},nofail`);
    expect(o[`/mnt/jail${LIB}/libcuda.so.${V}`]).toBe(`bind,ro,${R},nofail`);
  });

  it('a local bind of a path on the network, said with jail_options: [_netdev]: everything waits', () => {
    const o = optionsByTarget(renderFstab(resources(`${LOCAL_JAIL}\n        jail_options: [_netdev]`)));
    expect(o['/mnt/jail']).toBe('bind,_netdev');
    expect(o['/mnt/jail/tmp']).toBe(`bind,${R},_netdev`);
    expect(o[`/mnt/jail${LIB}/libcuda.so.${V}`]).toBe(`bind,ro,${R},_netdev,nofail`);
  });
});

// ---- the real systemd ---------------------------------------------------------------------------

const GENERATOR = '/usr/lib/systemd/system-generators/systemd-fstab-generator';
const SYSTEM_UNITS = '/usr/lib/systemd/system';
const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const missing = !existsSync(GENERATOR)
  ? `${GENERATOR} is not installed`
  : analyze.status !== 0
    ? 'systemd-analyze is not installed'
    : !existsSync(join(SYSTEM_UNITS, 'local-fs.target'))
      ? `${SYSTEM_UNITS} has no local-fs.target`
      : undefined;

interface Generated {
  /** Where= of each generated mount unit, by unit name. */
  where: Map<string, string>;
  /** The generated unit of a mountpoint. */
  unit: (where: string) => string;
  /** The mountpoints each target's .requires / .wants holds. */
  linked: (dir: string) => string[];
  /** What `systemd-analyze verify` says about these units, each started with the boot's units. */
  verify: () => string;
}

/** Run the generator on `fstab` (read from $SYSTEMD_FSTAB), into a fresh directory. */
function generate(fstab: string): Generated {
  const dir = mkdtempSync(join(scratch, 'gen-'));
  const out = join(dir, 'out');
  mkdirSync(out);
  writeFileSync(join(dir, 'fstab'), fstab);
  const env = { ...process.env, SYSTEMD_FSTAB: join(dir, 'fstab'), SYSTEMD_PROC_CMDLINE: '', SYSTEMD_LOG_LEVEL: 'notice' };
  const gen = spawnSync(GENERATOR, [out, out, out], { encoding: 'utf8', env });
  expect(gen.status, gen.stderr).toBe(0);
  const where = new Map<string, string>();
  for (const f of readdirSync(out).filter((n) => n.endsWith('.mount')))
    where.set(f, /^Where=(.*)$/m.exec(readFileSync(join(out, f), 'utf8'))![1]);
  // A wait-online unit that keeps its default dependencies (After=sysinit.target), as
  // NetworkManager-wait-online.service does, wanted by network-online.target.
  const units = join(dir, 'units');
  mkdirSync(join(units, 'network-online.target.wants'), { recursive: true });
  writeFileSync(
    join(units, 'NetworkManager-wait-online.service'),
    '[Unit]\nBefore=network-online.target\n\n[Service]\nType=oneshot\nExecStart=/bin/true\nRemainAfterExit=yes\n',
  );
  symlinkSync('../NetworkManager-wait-online.service', join(units, 'network-online.target.wants/NetworkManager-wait-online.service'));
  return {
    where,
    unit: (w) => readFileSync(join(out, [...where].find(([, x]) => x === w)![0]), 'utf8'),
    linked: (target) => {
      const d = join(out, target);
      return existsSync(d) ? readdirSync(d).flatMap((u) => (where.has(u) ? [where.get(u)!] : [])) : [];
    },
    verify: () => {
      const r = spawnSync('systemd-analyze', ['verify', '--man=no', ...where.keys(), 'local-fs.target', 'remote-fs.target'], {
        encoding: 'utf8',
        env: { ...env, SYSTEMD_UNIT_PATH: [out, units, SYSTEM_UNITS].join(':') },
      });
      return `${r.stdout}${r.stderr}`;
    },
  };
}

/** The options racksmith wrote before _netdev and nofail: the same lines without them. */
const withoutBootOptions = (fstab: string) =>
  fstab.replace(
    /^(\S+ \/mnt\/jail\/\S* \S+ )(\S+)/gm,
    (_, head: string, opts: string) =>
      head +
      opts
        .split(',')
        .filter((x) => x !== '_netdev' && x !== 'nofail')
        .join(','),
  );

describe.skipIf(missing !== undefined)(
  `systemd-fstab-generator and systemd-analyze verify${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    const nfsFstab = () => renderFstab(resources(NFS_JAIL));
    const binds = ['/mnt/jail/tmp', '/mnt/jail/run', '/mnt/jail/proc', '/mnt/jail/var/log', '/mnt/jail/var/spool/slurmd'];
    const gpu = [`/mnt/jail${LIB}/libcuda.so.${V}`, `/mnt/jail${LIB}/libnvidia-ml.so.${V}`];

    it('an NFS jail: its binds are required by remote-fs.target, its GPU binds only wanted; nothing of it in local-fs.target; no ordering cycle', () => {
      const g = generate(nfsFstab());
      const required = g.linked('remote-fs.target.requires');
      expect(required).toEqual(expect.arrayContaining(['/mnt/jail', ...binds, '/mnt/jail/dev', '/mnt/jail/mnt/scratch']));
      expect(required).not.toEqual(expect.arrayContaining([gpu[0]]));
      expect(g.linked('remote-fs.target.wants').sort()).toEqual(['/mnt/jail/etc/hosts', '/mnt/jail/etc/resolv.conf', ...gpu].sort());
      expect(g.linked('local-fs.target.requires')).toEqual([]);
      expect(g.linked('local-fs.target.wants')).toEqual([]);
      // a nofail mount is not ordered before its target: a missing driver root holds nothing up
      expect(g.unit(gpu[0])).not.toMatch(/^Before=/m);
      expect(g.unit('/mnt/jail/tmp')).toMatch(/^Before=remote-fs\.target$/m);
      expect(g.verify()).not.toMatch(/ordering cycle/i);
    });

    it('the lines as racksmith wrote them before (no _netdev, no nofail): the binds land in local-fs.target and systemd finds the cycle', () => {
      const g = generate(withoutBootOptions(nfsFstab()));
      expect(g.linked('local-fs.target.requires')).toEqual(expect.arrayContaining([...binds, ...gpu]));
      expect(g.verify()).toMatch(/Found ordering cycle on .*\n(.*\n)*.*mnt-jail\.mount/);
    });

    it('a local jail: node-local binds in local-fs.target after the jail, GPU binds only wanted, the NFS submount’s in remote-fs.target; no cycle', () => {
      const g = generate(renderFstab(resources(LOCAL_JAIL)));
      expect(g.linked('local-fs.target.requires')).toEqual(expect.arrayContaining(['/mnt/jail', '/mnt/jail/tmp', '/mnt/jail/proc']));
      expect(g.linked('local-fs.target.wants')).toEqual(expect.arrayContaining([...gpu, '/mnt/jail/etc/hosts']));
      expect(g.linked('remote-fs.target.requires').sort()).toEqual(['/mnt/jail/home', '/mnt/jail/home/scratch']);
      expect(g.verify()).not.toMatch(/ordering cycle/i);
    });
  },
);
