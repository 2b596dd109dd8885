/**
 * Which NVIDIA driver files of a host belong in the jail: pure decisions over what the host's
 * probe reported (gpu-driver.ts prints it). The capability tables are libnvidia-container's
 * (src/nvc_info.c utility_libs, compute_libs, ..., match_library_flags; src/options.h
 * container_opts), the capability set Soperator passes to nvidia-container-cli configure
 * (images/common/scripts/complement_jail.sh: NVIDIA_DRIVER_CAPABILITIES, default
 * compute,utility; `all` = compute,compat32,display,graphics,utility,video).
 */
import { InputError } from '../../util/errors.ts';

export const GPU_CAPS = ['compute', 'compat32', 'display', 'graphics', 'utility', 'video', 'ngx'] as const;
export type GpuCap = (typeof GPU_CAPS)[number];
export const DEFAULT_GPU_CAPS: readonly GpuCap[] = ['compute', 'utility'];

/** Library name prefixes per library class (nvc_info.c). */
const LIBS = {
  utility: ['libnvidia-ml.so', 'libnvidia-cfg.so', 'libnvidia-nscq.so'],
  compute: [
    'libcuda.so',
    'libcudadebugger.so',
    'libnvidia-opencl.so',
    'libnvidia-gpucomp.so',
    'libnvidia-ptxjitcompiler.so',
    'libnvidia-fatbinaryloader.so',
    'libnvidia-allocator.so',
    'libnvidia-compiler.so',
    'libnvidia-pkcs11.so',
    'libnvidia-pkcs11-openssl3.so',
    'libnvidia-nvvm.so',
    'libnvidia-tileiras.so',
  ],
  video: ['libvdpau_nvidia.so', 'libnvidia-encode.so', 'libnvidia-opticalflow.so', 'libnvcuvid.so'],
  graphics: [
    'libnvidia-eglcore.so',
    'libnvidia-glcore.so',
    'libnvidia-tls.so',
    'libnvidia-glsi.so',
    'libnvidia-fbc.so',
    'libnvidia-ifr.so',
    'libnvidia-rtcore.so',
    'libnvoptix.so',
    'libGLX_nvidia.so',
    'libEGL_nvidia.so',
    'libGLESv2_nvidia.so',
    'libGLESv1_CM_nvidia.so',
    'libnvidia-glvkspirv.so',
    'libnvidia-cbl.so',
    'libGL.so',
    'libEGL.so',
    'libGLESv1_CM.so',
    'libGLESv2.so',
  ],
  ngx: ['libnvidia-ngx.so'],
} as const;
type LibClass = keyof typeof LIBS;

/** Binary names per class (nvc_info.c utility_bins, compute_bins). */
const BINS = {
  utility: ['nvidia-smi', 'nvidia-debugdump', 'nvidia-persistenced', 'nv-fabricmanager'],
  compute: ['nvidia-cuda-mps-control', 'nvidia-cuda-mps-server'],
} as const;

/** Library classes each capability enables (options.h: video is OPT_VIDEO_LIBS|OPT_COMPUTE_LIBS, display implies graphics). */
const CAP_LIBS: Record<GpuCap, readonly LibClass[]> = {
  utility: ['utility'],
  compute: ['compute'],
  video: ['video', 'compute'],
  graphics: ['graphics'],
  display: ['graphics'],
  ngx: ['ngx'],
  compat32: [],
};

/** `compute,utility`, `all` or a list: the capability set, checked. */
export function parseGpuCaps(value: string | readonly string[]): GpuCap[] {
  const names = (typeof value === 'string' ? value.split(',') : value).map((s) => s.trim()).filter(Boolean);
  const out = new Set<GpuCap>();
  for (const n of names) {
    if (n === 'all') for (const c of ['compute', 'compat32', 'display', 'graphics', 'utility', 'video'] as const) out.add(c);
    else if ((GPU_CAPS as readonly string[]).includes(n)) out.add(n as GpuCap);
    else throw new InputError(`unknown NVIDIA driver capability ${JSON.stringify(n)} (known: ${GPU_CAPS.join(', ')}, all)`);
  }
  if (out.size === 0) throw new InputError('no NVIDIA driver capability given');
  return GPU_CAPS.filter((c) => out.has(c));
}

/** File name globs that find every driver file any capability may want (the caps filter comes after). */
export const DEFAULT_GPU_PATTERNS: readonly string[] = [
  ...Object.values(LIBS).flatMap((names) => names.map((n) => `${n}.*`)),
  ...Object.values(BINS).flat(),
  'gsp*.bin',
];

/** One regular file (or, from the CLI, directory) the probe found, with the state of its jail target. */
export interface ScannedFile {
  /** Path on the host. */
  host: string;
  /** Where it goes, inside the jail (relative to the jail root, with a leading '/'). */
  target: string;
  dir: boolean;
  devIno: string;
  mode: string;
  /** The target as seen now (through the jail mountpoint). */
  targetKind: 'absent' | 'file' | 'dir' | 'other';
  /** The target is the host file itself (bound here). */
  targetSame: boolean;
  targetEmpty: boolean;
}

/** What the host's driver probe printed, read. */
export interface DriverScan {
  /** `uname -m` */
  arch: string;
  /** The jail's library directory for this host (`/usr/lib/<arch>-linux-gnu` unless configured). */
  libDir: string;
  /** The first line of /proc/driver/nvidia/version, when the kernel module is loaded. */
  procLine?: string;
  /** Where procLine was read when not the host's own /proc (the driver root's). */
  procFrom?: string;
  /** The driver root the files were searched under (`/`: the host's own paths; default `/`). */
  root?: string;
  /** The root whose disappearance fails the host (the GPU Operator's, or the configured one). */
  watchedRoot?: string;
  /** Sources of this host's recorded GPU binds (its fstab block) under watchedRoot. */
  recorded?: string[];
  /** The watched root holds a driver (a libnvidia-ml) now. */
  watchedHasDriver?: boolean;
  source: 'nvidia-container-cli' | 'globs';
  /** Exit status of `nvidia-container-cli list`. */
  cliExit?: number;
  files: ScannedFile[];
  /** The jail root's physical path, and each target directory's (symlinks such as /lib -> usr/lib resolved). */
  jailReal?: string;
  realDirs: Map<string, string>;
  /** Symlinks in the jail's library directory: the file each points at -> their names (soname links). */
  links: Map<string, string[]>;
  /** Names the jail's ld.so.cache resolves (the last path component of each entry). */
  cached: Set<string>;
}

/** Read the driver probe's lines (see gpu-driver.ts); lines of other parts are ignored. */
export function readDriverScan(text: string): DriverScan {
  const scan: DriverScan = { arch: '', libDir: '', source: 'globs', files: [], realDirs: new Map(), links: new Map(), cached: new Set() };
  for (const line of text.split('\n')) {
    const f = line.split('\t');
    if (f[0] === 'gpu-f' && f.length === 9) {
      scan.files.push({
        host: f[1],
        dir: f[2] === 'd',
        devIno: f[3],
        mode: f[4],
        target: f[5],
        targetKind: f[6] as ScannedFile['targetKind'],
        targetSame: f[7] === 'yes',
        targetEmpty: f[8] === 'yes',
      });
    } else if (f[0] === 'gpu-dir' && f.length === 3) scan.realDirs.set(f[1], f[2]);
    else if (f[0] === 'gpu-jail' && f.length === 3) scan.jailReal = f[2];
    else if (f[0] === 'gpu-link' && f.length === 3) scan.links.set(f[2], [...(scan.links.get(f[2]) ?? []), f[1]]);
    else if (line.includes(' => '))
      scan.cached.add(line.slice(line.lastIndexOf('/') + 1)); // ldconfig -p
    else if (line.startsWith('gpu-arch=')) scan.arch = line.slice(9);
    else if (line.startsWith('gpu-libdir=')) scan.libDir = line.slice(11);
    else if (line.startsWith('gpu-proc=')) scan.procLine = line.slice(9) || undefined;
    else if (line.startsWith('gpu-proc-from=')) scan.procFrom = line.slice(14) || undefined;
    else if (line.startsWith('gpu-root=')) scan.root = line.slice(9);
    else if (line.startsWith('gpu-root-watch=')) scan.watchedRoot = line.slice(15);
    else if (line === 'gpu-root-watch-driver=yes') scan.watchedHasDriver = true;
    else if (f[0] === 'gpu-rec' && f.length === 2) scan.recorded = [...(scan.recorded ?? []), f[1]];
    else if (line.startsWith('gpu-source=')) scan.source = line.slice(11) === 'cli' ? 'nvidia-container-cli' : 'globs';
    else if (line.startsWith('gpu-cli-rc=')) scan.cliExit = Number(line.slice(11));
  }
  return scan;
}

const VERSION = /^\d+(?:\.\d+)+$/;

/** The driver version in /proc/driver/nvidia/version's first line (proprietary or open kernel module). */
export function procDriverVersion(line: string | undefined): string | undefined {
  return line ? /Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)(?:\s|$)/.exec(line)?.[1] : undefined;
}

const base = (p: string) => p.slice(p.lastIndexOf('/') + 1);

/** The version of a versioned library name (`libcuda.so.550.54.15` -> `550.54.15`). */
const libVersion = (name: string) => {
  const at = name.indexOf('.so.');
  const v = at < 0 ? '' : name.slice(at + 4);
  return VERSION.test(v) ? v : undefined;
};

export type FileKind = 'lib' | 'lib32' | 'bin' | 'firmware' | 'other';

/** What a driver file is, from where the probe put it in the jail. */
export function fileKind(f: Pick<ScannedFile, 'host' | 'target'>): FileKind {
  const name = base(f.host);
  if (/^lib.*\.so/.test(name)) return f.target.startsWith('/usr/lib/i386-linux-gnu/') ? 'lib32' : 'lib';
  if (f.target.startsWith('/usr/bin/')) return 'bin';
  if (f.host.includes('/firmware/')) return 'firmware';
  return 'other';
}

/** Whether a capability set wants this file (names the tables do not know are kept: someone listed them). */
export function wantedByCaps(f: Pick<ScannedFile, 'host' | 'target'>, caps: readonly GpuCap[]): boolean {
  const name = base(f.host);
  const kind = fileKind(f);
  if (kind === 'lib' || kind === 'lib32') {
    if (kind === 'lib32' && !caps.includes('compat32')) return false;
    const classes = Object.entries(LIBS).filter(([, names]) => names.some((n) => name.startsWith(n)));
    if (!classes.length) return true;
    return classes.some(([cls]) => caps.some((c) => CAP_LIBS[c].includes(cls as LibClass)));
  }
  if (kind === 'bin') {
    if ((BINS.utility as readonly string[]).includes(name)) return caps.includes('utility');
    if ((BINS.compute as readonly string[]).includes(name)) return caps.includes('compute');
    return true;
  }
  // Firmware is mounted whatever the capabilities (nvc_mount.c). IPC: the persistenced and
  // fabric manager sockets for utility, everything else (the MPS pipe directory) for compute.
  if (kind === 'other' && /nvidia-(persistenced|fabricmanager)/.test(f.host)) return caps.includes('utility');
  if (kind === 'other') return caps.includes('compute');
  return true;
}

export interface DriverFileSet {
  /** The running driver version, and where it was read. */
  version?: string;
  versionFrom?: string;
  /** Why this host's file set cannot be decided (it is refused). */
  problem?: string;
  files: ScannedFile[];
  /** Files left out because they belong to another driver version than the running one. */
  stale: string[];
}

/**
 * The host's driver file set: the running version (from /proc, else the one versioned
 * libnvidia-ml on the host), and the files the capabilities want, of that version only (a
 * library must end in `.so.<version>`, as libnvidia-container's select_libraries checks; firmware
 * must sit in `firmware/nvidia/<version>/`), one per jail target.
 */
export function driverFileSet(scan: DriverScan, caps: readonly GpuCap[]): DriverFileSet {
  const root = scan.root ?? '/';
  const gone = driverRootGone(scan);
  if (gone) return { problem: gone, files: [], stale: [] };
  if (root !== '/' && !scan.files.length && !scan.procLine)
    return { problem: `no NVIDIA driver found under the driver root ${root} (jail_gpu_driver_root)`, files: [], stale: [] };
  if (scan.source === 'nvidia-container-cli' && scan.cliExit !== 0)
    return { problem: `nvidia-container-cli list failed (exit ${scan.cliExit})`, files: [], stale: [] };
  const mlVersions = [...new Set(scan.files.map((f) => base(f.host)).filter((n) => n.startsWith('libnvidia-ml.so.')))]
    .map(libVersion)
    .filter((v): v is string => v !== undefined)
    .sort();
  let version = procDriverVersion(scan.procLine);
  let versionFrom = version ? (scan.procFrom ?? '/proc/driver/nvidia/version') : undefined;
  if (!version && scan.procLine)
    return { problem: `cannot read the driver version in ${JSON.stringify(scan.procLine)}`, files: [], stale: [] };
  if (!version && mlVersions.length > 1)
    return {
      problem: `driver versions ${mlVersions.join(' and ')} are installed and /proc/driver/nvidia/version is missing: cannot tell which one runs`,
      files: [],
      stale: [],
    };
  if (!version && mlVersions.length === 1) {
    version = mlVersions[0];
    versionFrom = `libnvidia-ml.so.${version}${root === '/' ? '' : ` under ${root}`}`;
  }
  if (!version) {
    if (!scan.files.length) return { files: [], stale: [] }; // no driver on this host
    return {
      problem: `cannot tell the running driver version: /proc/driver/nvidia/version is missing and no libnvidia-ml.so.<version> was found (found ${scan.files.map((f) => f.host).join(', ')})`,
      files: [],
      stale: [],
    };
  }
  const files: ScannedFile[] = [];
  const stale: string[] = [];
  const targets = new Set<string>();
  for (const f of scan.files) {
    const kind = fileKind(f);
    const ofVersion =
      kind === 'lib' || kind === 'lib32'
        ? base(f.host).endsWith(`.so.${version}`)
        : kind === 'firmware'
          ? !/\/nvidia\/[^/]+\//.test(f.host) || f.host.includes(`/nvidia/${version}/`)
          : true;
    if (!ofVersion) {
      stale.push(f.host);
      continue;
    }
    if (!wantedByCaps(f, caps) || targets.has(f.target)) continue;
    targets.add(f.target);
    files.push(f);
  }
  const missing = missingDriverLibs(scan, version, versionFrom!, stale);
  // (no version: like every refused set, it takes no part in the jail's version agreement)
  if (missing) return { problem: missing, files: [], stale };
  return { version, versionFrom, files, stale };
}

/** The driver libraries a running version must have on disk to be served (libnvidia-container's core: NVML, CUDA). */
const CORE_LIBS = ['libnvidia-ml.so', 'libcuda.so'];

/**
 * Why the running version cannot be served from the files found: none of its core libraries
 * (libnvidia-ml, libcuda) is on disk under the root searched. The loaded module is newer or older
 * than the files (a driver upgraded without a reboot; a host moved to the GPU Operator whose old
 * host libraries are all that is left); binding what is there (binaries, firmware) and reporting
 * ok would leave the jail without a driver. Undefined when they are there.
 */
export function missingDriverLibs(
  scan: Pick<DriverScan, 'root' | 'files'>,
  version: string,
  versionFrom: string,
  stale: readonly string[],
): string | undefined {
  const core = (name: string) => CORE_LIBS.some((n) => name.startsWith(`${n}.`));
  const have = scan.files.some((f) => fileKind(f) === 'lib' && core(base(f.host)) && base(f.host).endsWith(`.so.${version}`));
  if (have) return undefined;
  const root = scan.root ?? '/';
  const under = root === '/' ? '' : ` under ${root}`;
  const want = `no ${CORE_LIBS.map((n) => `${n}.${version}`).join(' or ')}${under}`;
  const onDisk = [...new Set(stale.map((p) => libVersion(base(p))).filter((v): v is string => v !== undefined))].sort();
  if (onDisk.length)
    return `driver files on disk${under} are ${onDisk.join(' and ')}, the loaded kernel module is ${version} (${versionFrom}): ${want}, nothing bound; reboot the host (its driver was changed since it booted), or set jail_gpu_driver_root to where the ${version} driver's files are`;
  return `the loaded kernel module is ${version} (${versionFrom}) but there is ${want}: install the driver's libraries, or set jail_gpu_driver_root to where they are`;
}

/** Where NVIDIA's GPU Operator keeps its driver container's root filesystem (shared/reference/fleet-ops-and-drains.md). */
export const OPERATOR_DRIVER_ROOT = '/run/nvidia/driver';

/**
 * Why the host fails because the driver root its binds came from was left: the GPU Operator's
 * driver container comes and goes, and its files are bound into the shared jail. Its fstab block
 * recorded binds from the watched root, and that root is not the one searched now (the host fell
 * back to `/`) or holds no driver file any more. Undefined otherwise. The binds are never undone
 * for it: a driver container restarting is no reason to take the driver from running jobs, and a
 * driver of the host's own next to the root's is no reason to switch without being told.
 */
export function driverRootGone(
  s: Pick<DriverScan, 'root' | 'watchedRoot' | 'watchedHasDriver' | 'recorded' | 'files'>,
): string | undefined {
  if (!s.watchedRoot || s.watchedRoot === '/' || !s.recorded?.length) return undefined;
  const root = s.root ?? '/';
  if (root === s.watchedRoot && s.files.length) return undefined;
  if (root !== s.watchedRoot && s.watchedHasDriver)
    return `this host's GPU binds come from the driver root ${s.watchedRoot}, which still holds a driver, and the host now has one of its own: set jail_gpu_driver_root (${s.watchedRoot} or /) to say which; binds left as they are`;
  return `the GPU Operator's driver root ${s.watchedRoot} is gone (its driver container is not running?): binds left as they are; if a driver of the host's own is to serve the jail now, set jail_gpu_driver_root: /`;
}

/** One host's answer in a jail's driver agreement. */
export interface DriverReport {
  host: string;
  version: string;
  from: string;
}

/**
 * Refusal text when the GPU hosts sharing a jail run more than one driver version (one shared
 * ld.so.cache and one set of soname links can point at only one: Soperator issue #184), naming
 * each host's version; undefined when they agree.
 */
export function driverDisagreement(jail: string, reports: readonly DriverReport[]): string | undefined {
  const versions = new Set(reports.map((r) => r.version));
  if (versions.size <= 1) return undefined;
  const each = [...reports]
    .sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0))
    .map((r) => `${r.host} ${r.version} (${r.from})`)
    .join(', ');
  return `the GPU hosts sharing the jail ${jail} run different driver versions: ${each}; one shared ld.so.cache serves one version, so nothing is applied on any of them`;
}
