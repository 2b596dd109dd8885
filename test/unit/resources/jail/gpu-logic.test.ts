// The jail's GPU decisions as tables: which driver files a host has (capabilities, running
// version), whether a jail's GPU hosts agree, what the binds and the CPU stand-ins would change,
// and the stand-in library itself (loaded by the real ld.so and indexed by the real ldconfig).
import { spawnSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileWith, absent } from '../../facts.ts';
import { Refusal } from '../../../../src/contract/resource.ts';
import {
  DEFAULT_GPU_CAPS,
  driverDisagreement,
  driverFileSet,
  parseGpuCaps,
  procDriverVersion,
  readDriverScan,
  wantedByCaps,
  type DriverScan,
  type GpuCap,
  type ScannedFile,
} from '../../../../src/resources/jail/gpu-files.ts';
import { driverScan as scan, LIB, scannedFile as file } from '../../../support/gpu-scan.ts';
import { gpuDriver, PROC_VERSION_CUT, type GpuDriverFacts } from '../../../../src/resources/jail/gpu-driver.ts';
import { gpuBinds, gpuFstabBlock, type GpuFacts, type GpuFile } from '../../../../src/resources/jail/gpu-binds.ts';
import { gpuStandins, olderStandins, type StandinFacts } from '../../../../src/resources/jail/gpu-standins.ts';
import { standinLibrary } from '../../../../src/resources/jail/elf-standin.ts';
import { bindOverStale, underJailLock } from '../../../../src/resources/jail/jail-shared.ts';
import type { MountEntry } from '../../../../src/resources/core/mount-table.ts';

const V = '550.54.15';
const OLD = '535.104.05';

const hostsOf = (files: ScannedFile[]) => files.map((f) => f.host);

describe('capabilities', () => {
  it.each<[string | string[], GpuCap[]]>([
    ['compute,utility', ['compute', 'utility']],
    [['utility'], ['utility']],
    ['all', ['compute', 'compat32', 'display', 'graphics', 'utility', 'video']],
    ['video, compute', ['compute', 'video']],
  ])('%j', (value, want) => expect(parseGpuCaps(value)).toEqual(want));
  it.each(['compute,bogus', '', []])('refuses %j', (value) => expect(() => parseGpuCaps(value as string)).toThrow(/capability/));

  it.each<[string, string, GpuCap[], boolean]>([
    ['NVML with utility', `${LIB}/libnvidia-ml.so.${V}`, ['utility'], true],
    ['NVML without utility', `${LIB}/libnvidia-ml.so.${V}`, ['compute'], false],
    ['libcuda with compute', `${LIB}/libcuda.so.${V}`, ['compute'], true],
    ['a video library with compute,utility', `${LIB}/libnvcuvid.so.${V}`, DEFAULT_GPU_CAPS as GpuCap[], false],
    ['a video library with video', `${LIB}/libnvcuvid.so.${V}`, ['video'], true],
    ['libcuda with video (video implies compute libraries)', `${LIB}/libcuda.so.${V}`, ['video'], true],
    ['GLX with compute,utility', `${LIB}/libGLX_nvidia.so.${V}`, DEFAULT_GPU_CAPS as GpuCap[], false],
    ['GLX with display', `${LIB}/libGLX_nvidia.so.${V}`, ['display'], true],
    ['pkcs11-openssl3 is compute', `${LIB}/libnvidia-pkcs11-openssl3.so.${V}`, ['compute'], true],
    ['a name the tables do not know (a pattern asked for it)', `${LIB}/libnvidia-egl-wayland.so.1.1.13`, ['compute'], true],
    ['nvidia-smi with utility', '/usr/bin/nvidia-smi', ['utility'], true],
    ['nvidia-smi with compute only', '/usr/bin/nvidia-smi', ['compute'], false],
    ['MPS server with compute', '/usr/bin/nvidia-cuda-mps-server', ['compute'], true],
    ['firmware with anything', `/lib/firmware/nvidia/${V}/gsp_ga10x.bin`, ['compute'], true],
  ])('%s', (_, host, caps, want) => {
    const target = host.includes('/lib/firmware/') ? host : host.includes('/bin/') ? host : undefined;
    expect(wantedByCaps(file(host, target), caps)).toBe(want);
  });

  it('32-bit libraries only with compat32', () => {
    const f = file(`/usr/lib/i386-linux-gnu/libcuda.so.${V}`, `/usr/lib/i386-linux-gnu/libcuda.so.${V}`);
    expect(wantedByCaps(f, ['compute'])).toBe(false);
    expect(wantedByCaps(f, ['compute', 'compat32'])).toBe(true);
  });
});

describe('the running driver version', () => {
  const lines: Array<[string, string | undefined]> = [
    [`NVRM version: NVIDIA UNIX x86_64 Kernel Module  ${V}  Tue Mar  5 22:23:56 UTC 2024`, V],
    ['NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  555.42.06  Release Build  (abuild@host)', '555.42.06'],
    ['NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  540.4.0  Release Build', '540.4.0'],
    ['NVRM version: NVIDIA UNIX x86 Kernel Module  169.12  Thu Feb 14 17:53:07 PST 2008', '169.12'],
    ['something else entirely', undefined],
  ];
  it.each(lines)('%s', (line, want) => expect(procDriverVersion(line)).toBe(want));
  // the probe's own reading, in sh with builtins (it picks the driver root whose libraries match)
  it.each(lines)('the probe shell reads %s the same', (line, want) => {
    const r = spawnSync('sh', ['-c', `v=$1; ${PROC_VERSION_CUT}; printf %s "$rs_v"`, 'sh', line], { encoding: 'utf8' });
    expect(r.stdout).toBe(want ?? '');
  });
});

describe('driver file set', () => {
  const ml = (v: string) => file(`${LIB}/libnvidia-ml.so.${v}`);
  const cuda = (v: string) => file(`${LIB}/libcuda.so.${v}`);
  const smi = file('/usr/bin/nvidia-smi', '/usr/bin/nvidia-smi');
  const fw = (v: string) => file(`/lib/firmware/nvidia/${v}/gsp_ga10x.bin`, `/lib/firmware/nvidia/${v}/gsp_ga10x.bin`);
  const proc = (v: string) => `NVRM version: NVIDIA UNIX x86_64 Kernel Module  ${v}  Tue Mar  5 22:23:56 UTC 2024`;
  it.each<[string, DriverScan, Partial<ReturnType<typeof driverFileSet>> & { hosts?: string[] }]>([
    ['no driver: nothing, no problem', scan([]), { version: undefined, problem: undefined, hosts: [] }],
    [
      'one versioned NVML: its version',
      scan([ml(V), cuda(V), smi]),
      { version: V, versionFrom: `libnvidia-ml.so.${V}`, hosts: [ml(V).host, cuda(V).host, smi.host] },
    ],
    [
      'two versions and the kernel module says which runs: only its files',
      scan([ml(OLD), cuda(OLD), ml(V), cuda(V), fw(OLD), fw(V), smi], { procLine: proc(V) }),
      { version: V, versionFrom: '/proc/driver/nvidia/version', hosts: [ml(V).host, cuda(V).host, fw(V).host, smi.host] },
    ],
    [
      'two versions and no kernel module answer: refused',
      scan([ml(OLD), ml(V)]),
      { problem: `driver versions ${OLD} and ${V} are installed and /proc/driver/nvidia/version is missing: cannot tell which one runs` },
    ],
    [
      'driver files without a versioned NVML, no /proc: refused',
      scan([smi]),
      { problem: expect.stringMatching(/cannot tell the running driver version/) },
    ],
    [
      'an unreadable /proc line: refused',
      scan([ml(V)], { procLine: 'NVRM garbage' }),
      { problem: expect.stringMatching(/cannot read the driver version/) },
    ],
    [
      'the CLI failed: refused',
      scan([], { source: 'nvidia-container-cli', cliExit: 1 }),
      { problem: 'nvidia-container-cli list failed (exit 1)' },
    ],
    [
      'the CLI listed a video library: left out with compute,utility',
      scan([ml(V), file(`${LIB}/libnvcuvid.so.${V}`)], { source: 'nvidia-container-cli', cliExit: 0 }),
      { version: V, hosts: [ml(V).host] },
    ],
    ['one file per jail target (the first found)', scan([ml(V), file(`/usr/lib64/libnvidia-ml.so.${V}`)]), { hosts: [ml(V).host] }],
    [
      "a GPU Operator host's leftover host libraries of the old driver, the module newer: refused, nothing (not nvidia-smi alone) bound",
      scan([ml(OLD), cuda(OLD), smi], { procLine: proc(V) }),
      {
        version: undefined,
        problem: `driver files on disk are ${OLD}, the loaded kernel module is ${V} (/proc/driver/nvidia/version): no libnvidia-ml.so.${V} or libcuda.so.${V}, nothing bound; reboot the host (its driver was changed since it booted), or set jail_gpu_driver_root to where the ${V} driver's files are`,
        stale: [ml(OLD).host, cuda(OLD).host],
        hosts: [],
      },
    ],
    [
      'a driver upgraded without a reboot (files newer than the module): refused',
      scan([ml(V), cuda(V), fw(V), smi], { procLine: proc(OLD) }),
      {
        version: undefined,
        problem: expect.stringMatching(new RegExp(`^driver files on disk are ${V}, the loaded kernel module is ${OLD} .*reboot the host`)),
        hosts: [],
      },
    ],
    [
      'the same under a driver root: the root named',
      scan([file(`/run/nvidia/driver${LIB}/libnvidia-ml.so.${OLD}`)], { procLine: proc(V), root: '/run/nvidia/driver' }),
      {
        problem: expect.stringMatching(
          new RegExp(`^driver files on disk under /run/nvidia/driver are ${OLD}, the loaded kernel module is ${V}`),
        ),
      },
    ],
    [
      'a loaded module and no library at all (only nvidia-smi): refused, not an ok with nothing bound',
      scan([smi], { procLine: proc(V) }),
      {
        problem: `the loaded kernel module is ${V} (/proc/driver/nvidia/version) but there is no libnvidia-ml.so.${V} or libcuda.so.${V}: install the driver's libraries, or set jail_gpu_driver_root to where they are`,
        hosts: [],
      },
    ],
    [
      'libcuda of the running version is enough (the CLI found no NVML)',
      scan([cuda(V), ml(OLD)], { procLine: proc(V) }),
      { problem: undefined, hosts: [cuda(V).host] },
    ],
  ])('%s', (_, s, want) => {
    const got = driverFileSet(s, DEFAULT_GPU_CAPS);
    const { hosts, ...rest } = want;
    for (const [k, v] of Object.entries(rest)) expect(got[k as keyof typeof got], k).toEqual(v);
    if (hosts) expect(hostsOf(got.files).sort()).toEqual([...hosts].sort());
  });

  it('names what it left out for another version', () => {
    const got = driverFileSet(scan([ml(OLD), ml(V)], { procLine: proc(V) }), DEFAULT_GPU_CAPS);
    expect(got.stale).toEqual([ml(OLD).host]);
  });

  it('reads the probe lines', () => {
    const text = [
      'gpu-arch=aarch64',
      'gpu-libdir=/usr/lib/aarch64-linux-gnu',
      `gpu-proc=${proc(V)}`,
      'gpu-jail\t/mnt/jail\t/mnt/jail',
      'gpu-source=cli',
      'gpu-cli-rc=0',
      `gpu-f\t/usr/lib/aarch64-linux-gnu/libcuda.so.${V}\tf\t254:3\t755\t/usr/lib/aarch64-linux-gnu/libcuda.so.${V}\tfile\tyes\tno`,
      `gpu-dir\t/mnt/jail/lib/firmware/nvidia/${V}\t/mnt/jail/usr/lib/firmware/nvidia/${V}`,
      `gpu-link\tlibcuda.so.1\tlibcuda.so.${V}`,
      `\tlibcuda.so.1 (libc6,AArch64) => /usr/lib/aarch64-linux-gnu/libcuda.so.1`,
    ].join('\n');
    const s = readDriverScan(text);
    expect(s).toMatchObject({
      arch: 'aarch64',
      libDir: '/usr/lib/aarch64-linux-gnu',
      procLine: proc(V),
      source: 'nvidia-container-cli',
      cliExit: 0,
      jailReal: '/mnt/jail',
    });
    expect(s.files).toEqual([
      file(`/usr/lib/aarch64-linux-gnu/libcuda.so.${V}`, `/usr/lib/aarch64-linux-gnu/libcuda.so.${V}`, {
        devIno: '254:3',
        targetKind: 'file',
        targetSame: true,
      }),
    ]);
    expect(s.realDirs.get(`/mnt/jail/lib/firmware/nvidia/${V}`)).toBe(`/mnt/jail/usr/lib/firmware/nvidia/${V}`);
    expect(s.links.get(`libcuda.so.${V}`)).toEqual(['libcuda.so.1']);
    expect([...s.cached]).toEqual(['libcuda.so.1']);
  });
});

describe('driver agreement across a jail', () => {
  const driver = gpuDriver({ jail: '/mnt/jail', jailId: 'nfs:/jail' });
  const facts = (version?: string, problem?: string): GpuDriverFacts => ({
    role: 'gpu',
    arch: 'x86_64',
    source: 'globs',
    set: { version, versionFrom: version && `libnvidia-ml.so.${version}`, problem, files: [], stale: [] },
  });
  const cpu = { role: 'cpu' };
  it.each<[string, Record<string, unknown>, string | undefined]>([
    ['one host', { a: facts(V) }, undefined],
    ['all agree (CPU hosts and driverless hosts take no part)', { a: facts(V), b: facts(V), c: cpu, d: facts() }, undefined],
    [
      'two versions: every host named with its own',
      { b: facts(OLD), a: facts(V) },
      `the GPU hosts sharing the jail nfs:/jail run different driver versions: a ${V} (libnvidia-ml.so.${V}), b ${OLD} (libnvidia-ml.so.${OLD}); one shared ld.so.cache serves one version, so nothing is applied on any of them`,
    ],
  ])('%s', (_, group, refusal) => {
    const own = group.a as GpuDriverFacts;
    const f = driver.useFleet!(own, new Map(Object.entries(group)));
    if (refusal) expect(() => driver.diff(f)).toThrow(new Refusal(refusal));
    else expect(driver.diff(f)).toEqual([]);
  });
  it.each<[string, GpuDriverFacts, Record<string, unknown>]>([
    ['alone', facts(), {}],
    ['beside GPU hosts that have one', facts(), { b: facts(V) }],
    ['with the CLI, which lists nothing', { ...facts(), source: 'nvidia-container-cli' }, {}],
  ])('a GPU node with no driver found is refused (%s): it would bind nothing and say ok', (_, own, group) => {
    const f = driver.useFleet!(own, new Map(Object.entries({ a: own, ...group })));
    expect(() => driver.diff(f)).toThrow(new Refusal('no NVIDIA driver found: set jail_gpu: false for a CPU node'));
  });
  it('a host whose own driver cannot be told is refused whatever the group', () => {
    expect(() => driver.diff(facts(undefined, 'cannot tell'))).toThrow(/GPU driver: cannot tell; nothing of the jail is applied/);
  });
  it('the disagreement text is the same on every host of the group', () => {
    const reports = [
      { host: 'b', version: OLD, from: 'x' },
      { host: 'a', version: V, from: 'y' },
    ];
    expect(driverDisagreement('j', reports)).toBe(driverDisagreement('j', [...reports].reverse()));
    expect(driverDisagreement('j', [reports[0]])).toBeUndefined();
  });
});

describe('GPU binds diff', () => {
  const r = gpuBinds({ jail: '/mnt/jail' });
  const lib: GpuFile = {
    host: `${LIB}/libnvidia-ml.so.${V}`,
    target: `/mnt/jail${LIB}/libnvidia-ml.so.${V}`,
    dir: false,
    hostDevIno: '254:10',
    mode: '755',
    targetKind: 'file',
    bound: true,
    emptyPlaceholder: false,
    mounted: true,
    staleMounts: 0,
    readOnly: true,
    cached: true,
  };
  const base = { source: 'globs', version: V, versionFrom: `libnvidia-ml.so.${V}`, libDir: LIB };
  const block = (files: GpuFile[]) =>
    `# BEGIN RACKSMITH JAIL GPU BINDS\n${gpuFstabBlock('/mnt/jail', { ...base, files }, DEFAULT_GPU_CAPS)}\n# END RACKSMITH JAIL GPU BINDS\n`;
  const facts = (files: GpuFile[], fstab = block(files), more: Partial<GpuFacts> = {}): GpuFacts => ({
    ...base,
    files,
    fstab: fileWith(fstab),
    ...more,
  });
  it.each<[string, GpuFacts, string[]]>([
    ['no GPU on this host: nothing to do', facts([], ''), []],
    ['converged', facts([lib]), []],
    [
      'placeholder missing on the shared jail',
      facts([{ ...lib, targetKind: 'absent', bound: false, mounted: false, staleMounts: 0 }], block([lib])),
      [`create placeholder ${lib.target} (shared jail)`, `bind ${lib.host} → ${lib.target} (ro), from globs`],
    ],
    [
      'an old empty placeholder gets the marker before the bind',
      facts([{ ...lib, emptyPlaceholder: true, bound: false, mounted: false, staleMounts: 0 }], block([lib])),
      [`mark placeholder ${lib.target} (0 bytes → 26)`, `bind ${lib.host} → ${lib.target} (ro), from globs`],
    ],
    [
      'bind unmounted',
      facts([{ ...lib, mounted: false, staleMounts: 0, bound: false, readOnly: false }]),
      [`bind ${lib.host} → ${lib.target} (ro), from globs`],
    ],
    ['bound read-write', facts([{ ...lib, readOnly: false }]), [`remount ${lib.target} read-only`]],
    [
      "a bind of an older file there (the driver container's root mounted again): bound in its place",
      facts([{ ...lib, bound: false, staleMounts: 1 }]),
      [`bind ${lib.host} → ${lib.target} (ro), from globs, in place of the stale bind there`],
    ],
    [
      'another file bound there (not of this path): bound over, as ever',
      facts([{ ...lib, bound: false }]),
      [`bind ${lib.host} → ${lib.target} (ro), from globs`],
    ],
    [
      'three stale binds stacked there (an older racksmith bound over them)',
      facts([{ ...lib, bound: false, staleMounts: 3 }]),
      [`bind ${lib.host} → ${lib.target} (ro), from globs, in place of 3 stacked stale binds there`],
    ],
    [
      'ld.so.cache lacks the library',
      facts([{ ...lib, cached: false }]),
      [`refresh /mnt/jail/etc/ld.so.cache (missing libnvidia-ml.so.${V})`],
    ],
    ['fstab block missing', facts([lib], ''), [`/etc/fstab: GPU bind entries (driver ${V} from libnvidia-ml.so.${V}, files from globs)`]],
    [
      'the file set now comes from the CLI: the block says so',
      facts([lib], block([lib]), { source: 'nvidia-container-cli list' }),
      [`/etc/fstab: GPU bind entries (driver ${V} from libnvidia-ml.so.${V}, files from nvidia-container-cli list)`],
    ],
    ['driver removed: stale fstab block dropped', facts([], block([lib])), ['/etc/fstab: GPU bind entries removed']],
  ])('%s', (_, f, want) => expect(r.diff(f).map((c) => c.summary)).toEqual(want));

  it.each<[string, GpuFacts, RegExp]>([
    ['a driver problem', facts([], '', { problem: 'cannot tell' }), /GPU binds: cannot tell/],
    [
      'a target that is a symlink or special file',
      facts([{ ...lib, targetKind: 'other', mounted: false, bound: false }]),
      /is not a regular file/,
    ],
    ['a directory where a file goes', facts([{ ...lib, targetKind: 'dir', mounted: false, bound: false }]), /is not a regular file/],
  ])('refuses %s', (_, f, msg) => expect(() => r.diff(f)).toThrow(msg));

  it('the stale binds at a target are let go, top first, before its bind; none where nothing is mounted', () => {
    const script = (g: GpuFile) => {
      const f = facts([g]);
      return r.apply(f, r.diff(f)).find((s) => s.name === 'GPU binds')!.script;
    };
    const t = lib.target;
    expect(script({ ...lib, bound: false, staleMounts: 2 })).toBe(`${bindOverStale(lib.host, t, 2)}mount -o remount,bind,ro ${t}`);
    expect(script({ ...lib, bound: false, mounted: false })).toBe(
      `[ ${t} -ef ${lib.host} ] || mount --bind -- ${lib.host} ${t}\nmount -o remount,bind,ro ${t}`,
    );
  });

  // The shell itself, run by sh with umount and mount stand-ins that log (a mount table of `left` mounts).
  describe('bindOverStale, run', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-stale-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'bin'));
    writeFileSync(
      join(dir, 'bin/umount'),
      `#!/bin/sh\necho "umount $*" >> "$RS_LOG"; n=$(cat "$RS_LEFT"); [ "$n" -gt 0 ] || exit 32; echo $((n - 1)) > "$RS_LEFT"\n`,
      { mode: 0o755 },
    );
    writeFileSync(join(dir, 'bin/mount'), '#!/bin/sh\necho "mount $*" >> "$RS_LOG"\n', { mode: 0o755 });
    const run = (o: { stale: number; left: number; shown?: boolean; check?: string }) => {
      const src = join(dir, 'src.so');
      const target = join(dir, 'target.so');
      for (const f of [src, target, join(dir, 'log')]) rmSync(f, { force: true });
      writeFileSync(src, 'new');
      if (o.shown) linkSync(src, target);
      else writeFileSync(target, 'placeholder');
      writeFileSync(join(dir, 'left'), String(o.left));
      const res = spawnSync('sh', ['-ec', bindOverStale(src, target, o.stale, o.check)], {
        encoding: 'utf8',
        env: { ...process.env, PATH: `${join(dir, 'bin')}:${process.env.PATH}`, RS_LOG: join(dir, 'log'), RS_LEFT: join(dir, 'left') },
      });
      const log = existsSync(join(dir, 'log')) ? readFileSync(join(dir, 'log'), 'utf8').trim().split('\n') : [];
      return { code: res.status, log: log.map((l) => l.replaceAll(dir, 'D')) };
    };
    it.each<[string, Parameters<typeof run>[0], string[]]>([
      [
        'two stale mounts, as probed',
        { stale: 2, left: 2 },
        ['umount -l -- D/target.so', 'umount -l -- D/target.so', 'mount --bind -- D/src.so D/target.so'],
      ],
      [
        'one of them gone since the probe: stops at the first umount that fails',
        { stale: 2, left: 1 },
        ['umount -l -- D/target.so', 'umount -l -- D/target.so', 'mount --bind -- D/src.so D/target.so'],
      ],
      ['the target shows the source already: nothing unmounted, nothing bound', { stale: 2, left: 2, shown: true }, []],
      ['nothing stale: the bind alone', { stale: 0, left: 0 }, ['mount --bind -- D/src.so D/target.so']],
    ])('%s', (_, o, want) => expect(run(o)).toEqual({ code: 0, log: want }));
    it('a check between the unmounts and the bind that fails stops it', () => {
      expect(run({ stale: 1, left: 1, check: 'exit 7\n' })).toEqual({ code: 7, log: ['umount -l -- D/target.so'] });
    });
  });

  it('the fstab block records the source, driver and capabilities; its binds never fail the boot (nofail)', () => {
    expect(gpuFstabBlock('/mnt/jail', { ...base, files: [lib] }, ['compute', 'utility'])).toBe(
      `# driver ${V} (libnvidia-ml.so.${V}); files from globs, capabilities compute,utility\n${lib.host} ${lib.target} none bind,ro,x-systemd.requires-mounts-for=/mnt/jail,nofail 0 0`,
    );
  });
  it('under a network jail the binds wait for the network too (_netdev): a physical target path included', () => {
    const block = (net: string[], target = lib.target) =>
      gpuFstabBlock('/mnt/jail', { ...base, files: [{ ...lib, target }] }, ['compute'], net);
    expect(block(['/mnt/jail'])).toContain(`${lib.target} none bind,ro,x-systemd.requires-mounts-for=/mnt/jail,_netdev,nofail 0 0`);
    // the jail reached through a symlink: its physical path differs, the jail is still a network mount
    expect(block(['/mnt/jail'], `/srv/j${LIB}/libcuda.so.${V}`)).toContain(',_netdev,nofail 0 0');
    // only a network submount elsewhere in the jail: this bind stays local
    expect(block(['/mnt/jail/home'])).toContain(`${lib.target} none bind,ro,x-systemd.requires-mounts-for=/mnt/jail,nofail 0 0`);
  });

  it('waits for the jail locks with the timeout and names the lock on timeout', () => {
    const b = gpuBinds({ jail: '/mnt/jail', lockTimeout: 7 });
    const f = facts([{ ...lib, targetKind: 'absent', bound: false, mounted: false, cached: false }]);
    const steps = b.apply(f, b.diff(f));
    const byName = Object.fromEntries(steps.map((s) => [s.name, s.script]));
    expect(byName['GPU placeholders']).toContain('flock -w 7 -E 75 /mnt/jail/etc/complement_jail_gpu_placeholders.lock');
    expect(byName['jail ld.so.cache']).toContain('flock -w 7 -E 75 /mnt/jail/etc/complement_jail_ldconfig.lock');
    expect(byName['jail ld.so.cache']).toContain(`-ef ${lib.host}`); // the NVML soname must lead to this host's driver
  });

  it.each(['patterns', 'searchDirs'])('refuses bad %s', (k) =>
    expect(() => gpuBinds({ jail: '/mnt/jail', [k]: k === 'patterns' ? ['lib*.so; rm -rf /'] : ['relative'] })).toThrow(),
  );
});

describe('a held lock', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-lock-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('fails the step after the timeout with the lock named; runs the body when free', () => {
    spawnSync('mkdir', ['-p', join(dir, 'etc')]);
    const script = underJailLock(dir, 'ldconfig', 1, 'echo inside');
    const holder = spawnSync('flock', [join(dir, 'etc/complement_jail_ldconfig.lock'), 'sh', '-c', script], { encoding: 'utf8' });
    expect(holder.status, holder.stderr).toBe(75);
    expect(holder.stderr).toContain(`timed out after 1 s waiting for the lock ${dir}/etc/complement_jail_ldconfig.lock`);
    const free = spawnSync('sh', ['-c', script], { encoding: 'utf8' });
    expect(free.status, free.stderr).toBe(0);
    expect(free.stdout).toBe('inside\n');
  });
});

describe('GPU stand-ins diff (CPU and login nodes)', () => {
  const r = gpuStandins({ jail: '/mnt/jail', jailId: 'nfs:/jail' });
  const S = '/var/lib/racksmith/jail-gpu-standin.so';
  const lib = (n: string) => `/mnt/jail${LIB}/${n}`;
  const standin = (arch = 'x86_64') => {
    const f = fileWith('');
    const content = standinLibrary(arch)!;
    return { ...f, size: content.length, content, sha256: undefined as never };
  };
  const block = (names: string[]) =>
    `# BEGIN RACKSMITH JAIL GPU STAND-INS\n# stand-in for the GPU libraries of the jail (x86_64)\n${names.map((n) => `${S} ${lib(n)} none bind,ro,x-systemd.requires-mounts-for=/mnt/jail,nofail 0 0`).join('\n')}\n# END RACKSMITH JAIL GPU STAND-INS\n`;
  const ro: MountEntry = { source: 'x', fstype: 'ext4', options: ['ro'], majmin: '0:1' };
  const facts = (more: Partial<StandinFacts>): StandinFacts => ({
    role: 'cpu',
    arch: 'x86_64',
    libDir: LIB,
    realLibDir: `/mnt/jail${LIB}`,
    placeholders: new Map(),
    bound: new Set(),
    mounts: new Map(),
    mountCounts: new Map(),
    standin: standin(),
    fstab: fileWith(''),
    fleetLibs: new Map(),
    ...more,
  });
  const ml = `libnvidia-ml.so.${V}`;
  it.each<[string, StandinFacts, string[]]>([
    ['a jail without GPU placeholders: nothing to do', facts({}), []],
    ['converged', facts({ bound: new Set([ml]), mounts: new Map([[lib(ml), ro]]), fstab: fileWith(block([ml])) }), []],
    [
      'a placeholder in the jail',
      facts({ placeholders: new Map([[ml, 26]]) }),
      [`bind the stand-in ${S} → ${lib(ml)} (ro)`, '/etc/fstab: GPU stand-in entries'],
    ],
    [
      'a GPU host of the run is about to bind it: made here if missing',
      facts({ fleetLibs: new Map([[ml, '755']]) }),
      [
        `create placeholder ${lib(ml)} (shared jail), if missing`,
        `bind the stand-in ${S} → ${lib(ml)} (ro)`,
        '/etc/fstab: GPU stand-in entries',
      ],
    ],
    [
      'the stand-in missing on this host',
      facts({ standin: absent, placeholders: new Map([[ml, 26]]), fstab: fileWith(block([ml])) }),
      [
        `write the GPU stand-in library ${S} (${standinLibrary('x86_64')!.length} bytes, ELF x86_64)`,
        `bind the stand-in ${S} → ${lib(ml)} (ro)`,
      ],
    ],
    ['nothing to cover: no stand-in written', facts({ standin: absent }), []],
    [
      'bound read-write',
      facts({ bound: new Set([ml]), mounts: new Map([[lib(ml), { ...ro, options: ['rw'] }]]), fstab: fileWith(block([ml])) }),
      [`remount ${lib(ml)} read-only`],
    ],
    [
      'older stand-ins bound there (the stand-in rewritten, by rename): unmounted first',
      facts({
        placeholders: new Map([[ml, 26]]),
        mounts: new Map([[lib(ml), { ...ro, root: `${S}//deleted` }]]),
        mountCounts: new Map([[lib(ml), 2]]),
        fstab: fileWith(block([ml])),
      }),
      [`bind the stand-in ${S} → ${lib(ml)} (ro), in place of 2 stacked stale binds there`],
    ],
    [
      'another file bound there: bound over, as ever',
      facts({
        placeholders: new Map([[ml, 26]]),
        mounts: new Map([[lib(ml), ro]]),
        mountCounts: new Map([[lib(ml), 1]]),
        fstab: fileWith(block([ml])),
      }),
      [`bind the stand-in ${S} → ${lib(ml)} (ro)`],
    ],
    [
      'an older stand-in bound there, deleted since (the stand-in written anew), no GPU host in the run: bound again, its entry kept',
      facts({
        mounts: new Map([[lib(ml), { ...ro, root: `${S}//deleted` }]]),
        mountCounts: new Map([[lib(ml), 1]]),
        fstab: fileWith(block([ml])),
      }),
      [`bind the stand-in ${S} → ${lib(ml)} (ro), in place of the stale bind there`],
    ],
    [
      'the same with /var a filesystem of its own (the root relative to it)',
      facts({
        mounts: new Map([[lib(ml), { ...ro, root: '/lib/racksmith/jail-gpu-standin.so//deleted' }]]),
        mountCounts: new Map([[lib(ml), 1]]),
        fstab: fileWith(block([ml])),
      }),
      [`bind the stand-in ${S} → ${lib(ml)} (ro), in place of the stale bind there`],
    ],
  ])('%s', (_, f, want) => expect(r.diff(f).map((c) => c.summary)).toEqual(want));

  it('an older stand-in is told by its deleted path; another deleted file, or one outside the library directory, is not one', () => {
    const at = (target: string, root: string) => ({ mounts: new Map([[target, { ...ro, root }]]), realLibDir: `/mnt/jail${LIB}` });
    expect(olderStandins(at(lib(ml), `${S}//deleted`), S)).toEqual([ml]);
    expect(olderStandins(at(lib(ml), '/opt/other.so//deleted'), S)).toEqual([]);
    expect(olderStandins(at(lib(ml), S), S)).toEqual([]); // not deleted: the stand-in itself (sti-bound tells)
    expect(olderStandins(at(`/mnt/jail/usr/lib64/${ml}`, `${S}//deleted`), S)).toEqual([]);
  });

  it('applies exactly what diff decided: placeholders under the lock, binds guarded against real libraries', () => {
    const f = facts({
      fleetLibs: new Map([[ml, '755']]),
      mounts: new Map([
        [lib('libcuda.so.1'), ro],
        [lib('libnvidia-ml.so.1'), { ...ro, root: `${S}//deleted` }],
      ]),
      mountCounts: new Map([
        [lib('libcuda.so.1'), 1],
        [lib('libnvidia-ml.so.1'), 1],
      ]),
      placeholders: new Map([['libcuda.so.1', 0]]),
    });
    const steps = Object.fromEntries(r.apply(f, r.diff(f)).map((s) => [s.name, s.script]));
    expect(Object.keys(steps)).toEqual(['GPU placeholders', 'GPU stand-in binds', 'fstab GPU stand-ins']);
    expect(steps['GPU placeholders']).toContain('/mnt/jail/etc/complement_jail_gpu_placeholders.lock');
    expect(steps['GPU placeholders']).toContain(`chmod 755 -- ${lib(ml)}`);
    expect(steps['GPU stand-in binds']).toContain(`is not a placeholder`);
    const bind = (n: string) => steps['GPU stand-in binds'].split('\n').filter((l) => l.includes(lib(n)));
    // an older stand-in there: let go, then the placeholder beneath checked, then bound
    expect(bind('libnvidia-ml.so.1')[0]).toMatch(/^rs_n=0; while .* umount -l -- /);
    expect(bind('libnvidia-ml.so.1')[1]).toMatch(/^s=\$\(stat -c %s -- /);
    // another mount there: bound over without the size guard, as ever
    expect(bind('libcuda.so.1').some((l) => l.includes('stat -c %s') || l.includes('umount'))).toBe(false);
    expect(bind(ml)[0]).toMatch(/^s=\$\(stat -c %s -- /);
  });

  it('refuses an architecture it has no stand-in for', () =>
    expect(() => r.diff(facts({ arch: 'ppc64le' }))).toThrow(/no stand-in library for ppc64le/));

  it('learns the GPU hosts’ libraries of its own directory from the group', () => {
    const gpu: GpuDriverFacts = {
      role: 'gpu',
      arch: 'x86_64',
      source: 'globs',
      set: {
        version: V,
        files: [
          { host: `${LIB}/${ml}`, target: `${LIB}/${ml}`, dir: false, mode: '755' },
          { host: '/usr/bin/nvidia-smi', target: '/usr/bin/nvidia-smi', dir: false, mode: '755' },
          { host: `/usr/lib/aarch64-linux-gnu/${ml}`, target: `/usr/lib/aarch64-linux-gnu/${ml}`, dir: false, mode: '644' },
        ],
        stale: [],
      },
    };
    const f = r.useFleet!(
      facts({}),
      new Map<string, unknown>([
        ['gpu1', gpu],
        ['cpu1', facts({})],
      ]),
    );
    expect([...f.fleetLibs]).toEqual([[ml, '755']]);
    // one group, hosts of another library directory (another architecture): each its own directory's
    const arm = r.useFleet!(
      facts({ libDir: '/usr/lib/aarch64-linux-gnu' }),
      new Map<string, unknown>([
        ['gpu1', gpu],
        ['cpu1', facts({})],
      ]),
    );
    expect([...arm.fleetLibs]).toEqual([[ml, '644']]);
  });
});

describe('the stand-in library', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-standin-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it.each([
    ['x86_64', 62],
    ['aarch64', 183],
  ])('%s: an ELF64 shared object for its machine', (arch, machine) => {
    const b = standinLibrary(arch)!;
    expect(b.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect([b[4], b[5], b.readUInt16LE(16), b.readUInt16LE(18)]).toEqual([2, 1, 3, machine]);
    expect(b.length).toBeGreaterThanOrEqual(64); // never taken for a placeholder itself
  });
  const own = process.arch === 'x64' ? 'x86_64' : process.arch === 'arm64' ? 'aarch64' : undefined;
  it.runIf(own)('this machine’s ld.so loads it and its ldconfig indexes it', () => {
    const path = join(dir, `libnvidia-ml.so.${V}`);
    writeFileSync(path, standinLibrary(own!)!);
    symlinkSync(`libnvidia-ml.so.${V}`, join(dir, 'libnvidia-ml.so.1'));
    const py = spawnSync('python3', ['-c', `import ctypes; ctypes.CDLL(${JSON.stringify(path)}); print("loaded")`], { encoding: 'utf8' });
    expect(py.stdout, py.stderr).toBe('loaded\n');
    const cache = join(dir, 'ld.so.cache');
    const built = spawnSync('/sbin/ldconfig', ['-X', '-C', cache, '-f', '/dev/null', dir], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    const listed = spawnSync('/sbin/ldconfig', ['-C', cache, '-p'], { encoding: 'utf8' });
    expect(listed.stdout).toContain(`=> ${path}`);
  });
});
