// A driver in a container's root (the GPU Operator's /run/nvidia/driver): which root a host's
// files come from and when its loss fails the host (tables), the version read from the root's
// files, and the real probe shell run over a temp root: the files found under it, each with its
// place in the jail relative to the root.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gpuProbePart, gpuProbeSettings } from '../../../../src/resources/jail/gpu-driver.ts';
import { driverSource } from '../../../../src/resources/jail/gpu-binds.ts';
import { shq } from '../../../../src/shell/quote.ts';
import {
  DEFAULT_GPU_CAPS,
  DEFAULT_GPU_PATTERNS,
  driverFileSet,
  driverRootGone,
  OPERATOR_DRIVER_ROOT,
  readDriverScan,
  type DriverScan,
  type ScannedFile,
} from '../../../../src/resources/jail/gpu-files.ts';
import { driverScan as scan, LIB, scannedFile as file } from '../../../support/gpu-scan.ts';

const OP = OPERATOR_DRIVER_ROOT;
const V = '550.54.15';
const GONE = `the GPU Operator's driver root ${OP} is gone (its driver container is not running?): binds left as they are; if a driver of the host's own is to serve the jail now, set jail_gpu_driver_root: /`;

const opMl = file(`${OP}${LIB}/libnvidia-ml.so.${V}`, `${LIB}/libnvidia-ml.so.${V}`);

describe('a driver root that goes away', () => {
  it.each<[string, Parameters<typeof driverRootGone>[0], string | undefined]>([
    ['the host never bound from the root', { root: '/', watchedRoot: OP, recorded: [], files: [] }, undefined],
    [
      'its binds came from the root, the root still has the driver',
      { root: OP, watchedRoot: OP, recorded: [opMl.host], files: [opMl] },
      undefined,
    ],
    ['its binds came from the root, the host fell back to /', { root: '/', watchedRoot: OP, recorded: [opMl.host], files: [] }, GONE],
    [
      'its binds came from the root, the root holds no driver file now',
      { root: OP, watchedRoot: OP, recorded: [opMl.host], files: [] },
      GONE,
    ],
    [
      'the root watched is / (configured): nothing to lose',
      { root: '/', watchedRoot: '/', recorded: ['/usr/lib/x'], files: [] },
      undefined,
    ],
    [
      'its binds came from the root, which still has a driver, and the host has one of its own now: not switched silently',
      {
        root: '/',
        watchedRoot: OP,
        watchedHasDriver: true,
        recorded: [opMl.host],
        files: [file(`${LIB}/libnvidia-ml.so.${V}`, `${LIB}/libnvidia-ml.so.${V}`)],
      },
      `this host's GPU binds come from the driver root ${OP}, which still holds a driver, and the host now has one of its own: set jail_gpu_driver_root (${OP} or /) to say which; binds left as they are`,
    ],
  ])('%s', (_, s, want) => {
    expect(driverRootGone(s)).toBe(want);
  });

  it('is the file set problem: the host is refused, no empty set that would drop its binds', () => {
    const set = driverFileSet(scan([], { root: '/', watchedRoot: OP, recorded: [opMl.host] }), DEFAULT_GPU_CAPS);
    expect(set).toEqual({ problem: GONE, files: [], stale: [] });
  });
});

describe('the version of a driver under a root', () => {
  it.each<[string, Partial<DriverScan>, ScannedFile[], { version?: string; versionFrom?: string; problem?: string }]>([
    [
      'from the library suffix, said to be under the root',
      { root: OP },
      [opMl],
      { version: V, versionFrom: `libnvidia-ml.so.${V} under ${OP}` },
    ],
    [
      "from the root's own version file when the host's /proc has none",
      {
        root: OP,
        procLine: `NVRM version: NVIDIA UNIX x86_64 Kernel Module  ${V}  Tue Mar  5 22:23:56 UTC 2024`,
        procFrom: `${OP}/proc/driver/nvidia/version`,
      },
      [opMl],
      { version: V, versionFrom: `${OP}/proc/driver/nvidia/version` },
    ],
    [
      'the host root: as before',
      { root: '/' },
      [file(`${LIB}/libnvidia-ml.so.${V}`, `${LIB}/libnvidia-ml.so.${V}`)],
      { version: V, versionFrom: `libnvidia-ml.so.${V}` },
    ],
    [
      'a configured root without a driver: said, not "set jail_gpu: false"',
      { root: '/opt/drv', watchedRoot: '/opt/drv' },
      [],
      { problem: 'no NVIDIA driver found under the driver root /opt/drv (jail_gpu_driver_root)' },
    ],
  ])('%s', (_, more, files, want) => {
    const got = driverFileSet(scan(files, more), DEFAULT_GPU_CAPS);
    expect({ version: got.version, versionFrom: got.versionFrom, problem: got.problem }).toEqual({
      version: want.version,
      versionFrom: want.versionFrom,
      problem: want.problem,
    });
  });

  it.each<[Pick<DriverScan, 'source' | 'root'>, string]>([
    [{ source: 'globs', root: '/' }, 'globs'],
    [{ source: 'globs', root: OP }, `globs under ${OP}`],
    [{ source: 'nvidia-container-cli', root: OP }, `nvidia-container-cli --root ${OP} list`],
    [{ source: 'nvidia-container-cli' }, 'nvidia-container-cli list'],
  ])('the file set source %j reads %s', (s, want) => {
    expect(driverSource(s)).toBe(want);
  });
});

describe('the probe under a configured driver root (real sh and find over a temp tree)', () => {
  let dir: string;
  const arch = execFileSync('uname', ['-m'], { encoding: 'utf8' }).trim();
  const lib = `/usr/lib/${arch}-linux-gnu`;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rs-gpu-root-'));
    const put = (p: string, text = 'x') => {
      mkdirSync(join(dir, p, '..'), { recursive: true });
      writeFileSync(join(dir, p), text);
    };
    put(`root${lib}/libnvidia-ml.so.${V}`);
    put(`root${lib}/libcuda.so.${V}`);
    put('root/usr/bin/nvidia-smi');
    put(`root/lib/firmware/nvidia/${V}/gsp_ga10x.bin`);
    mkdirSync(join(dir, 'jail'));
    put(
      'fstab',
      `# BEGIN RACKSMITH JAIL GPU BINDS\n${join(dir, 'root')}${lib}/libcuda.so.${V} /mnt/jail${lib}/libcuda.so.${V} none bind,ro 0 0\n/usr/bin/other /mnt/jail/usr/bin/other none bind,ro 0 0\n# END RACKSMITH JAIL GPU BINDS\n`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the files under the root, places them relative to it, and reads the binds recorded from it', () => {
    const root = join(dir, 'root');
    const part = gpuProbePart(
      gpuProbeSettings({ jail: join(dir, 'jail'), driverRoot: root, patterns: DEFAULT_GPU_PATTERNS, fstabFile: join(dir, 'fstab') }),
    );
    // the host's own nvidia-container-cli, if any, is kept out: this is the globs' path
    const out = execFileSync('sh', ['-c', part], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' } });
    const s = readDriverScan(out);
    expect(s.root).toBe(root);
    expect(s.watchedRoot).toBe(root);
    expect(s.recorded).toEqual([`${root}${lib}/libcuda.so.${V}`]);
    const placed = Object.fromEntries(s.files.map((f) => [f.host.slice(root.length), f.target]));
    expect(placed).toEqual({
      [`${lib}/libnvidia-ml.so.${V}`]: `${lib}/libnvidia-ml.so.${V}`,
      [`${lib}/libcuda.so.${V}`]: `${lib}/libcuda.so.${V}`,
      '/usr/bin/nvidia-smi': '/usr/bin/nvidia-smi',
      [`/lib/firmware/nvidia/${V}/gsp_ga10x.bin`]: `/lib/firmware/nvidia/${V}/gsp_ga10x.bin`,
    });
    for (const f of s.files) expect(f.host.startsWith(`${root}/`)).toBe(true);
    const set = driverFileSet(s, DEFAULT_GPU_CAPS);
    expect(set.version).toBe(V);
    expect(set.versionFrom).toBe(`libnvidia-ml.so.${V} under ${root}`);
  });

  it('with nvidia-container-cli: asks it with --root and takes its paths as inside the root', () => {
    const root = join(dir, 'root');
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    // a recorded `--root R list` (libnvidia-container resolves each path inside the root and prints it so)
    writeFileSync(
      join(bin, 'nvidia-container-cli'),
      `#!/bin/sh\n[ "$1 $2 $3" = ${shq(`--root ${root} list`)} ] || { echo "unexpected: $*" >&2; exit 1; }\nprintf '%s\\n' /dev/nvidiactl /usr/bin/nvidia-smi ${lib}/libnvidia-ml.so.${V} ${lib}/libcuda.so.${V}\n`,
      { mode: 0o755 },
    );
    const part = gpuProbePart(
      gpuProbeSettings({ jail: join(dir, 'jail'), driverRoot: root, patterns: DEFAULT_GPU_PATTERNS, fstabFile: join(dir, 'fstab') }),
    );
    const out = execFileSync('sh', ['-c', part], { encoding: 'utf8', env: { PATH: `${bin}:/usr/bin:/bin:/usr/sbin:/sbin` } });
    const s = readDriverScan(out);
    expect(s.source).toBe('nvidia-container-cli');
    expect(s.cliExit).toBe(0);
    expect(s.files.map((f) => [f.host, f.target]).sort()).toEqual(
      [
        [`${root}/usr/bin/nvidia-smi`, '/usr/bin/nvidia-smi'],
        [`${root}${lib}/libnvidia-ml.so.${V}`, `${lib}/libnvidia-ml.so.${V}`],
        [`${root}${lib}/libcuda.so.${V}`, `${lib}/libcuda.so.${V}`],
      ].sort(),
    );
  });
});
