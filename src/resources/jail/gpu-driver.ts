import { fleetSummary } from '../../contract/fleet-summary.ts';
import { shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { MACHINE_ARCH } from '../core/machine-arch.ts';
import { checkAbsolutePath } from '../core/file-common.ts';
import { common, ProbeError, Refusal, type CommonOptions, type Resource } from '../../contract/resource.ts';
import {
  DEFAULT_GPU_CAPS,
  DEFAULT_GPU_PATTERNS,
  driverDisagreement,
  OPERATOR_DRIVER_ROOT,
  driverFileSet,
  readDriverScan,
  type DriverFileSet,
  type DriverReport,
  type DriverScan,
  type GpuCap,
  type ScannedFile,
} from './gpu-files.ts';

export interface GpuDriverOptions extends CommonOptions {
  /** The jail root on this host, e.g. /mnt/jail. */
  jail: string;
  /**
   * What the jail is (its source), the same on every host that shares it: the hosts whose GPU
   * drivers must agree.
   */
  jailId: string;
  /** Library directory inside the jail; default `/usr/lib/<uname -m>-linux-gnu`, from the host's own answer. */
  libDir?: string;
  /** Host directories searched when there is no nvidia-container-cli; default the host's multiarch directory and the usual ones. */
  searchDirs?: string[];
  /** File name globs searched for then (default: every name libnvidia-container knows, firmware). */
  patterns?: readonly string[];
  /** NVIDIA driver capabilities (default compute,utility, as Soperator). */
  caps?: readonly GpuCap[];
  /**
   * Where the driver's files live: `/` (the host's own paths) or a driver container's root such
   * as the GPU Operator's /run/nvidia/driver. Default: decided on the host: the one whose
   * libnvidia-ml.so.<version> is the loaded kernel module's (/proc/driver/nvidia/version; `/`
   * first), else /run/nvidia/driver when it holds a driver (a libnvidia-ml) and the host itself
   * has none, else `/`.
   */
  driverRoot?: string;
  /** The fstab holding this host's GPU binds (read for the driver root they came from). */
  fstabFile?: string;
}

/** The search directories after the host's own multiarch one (`/usr/lib/<arch>-linux-gnu`). */
const OTHER_GPU_DIRS = ['/usr/lib64', '/usr/lib', '/usr/bin', '/lib/firmware/nvidia'];
const GLOB = /^[A-Za-z0-9_.*?+-]+$/;

/** The probe settings every GPU resource of a host shares word for word (one shell part, run once). */
export interface GpuProbeSettings {
  jail: string;
  libDir?: string;
  searchDirs?: readonly string[];
  patterns: readonly string[];
  /** Configured driver root; undefined: decided on the host. */
  driverRoot?: string;
  fstabFile: string;
}

/** Checked probe settings from resource options. */
export function gpuProbeSettings(
  o: Pick<GpuDriverOptions, 'jail' | 'libDir' | 'searchDirs' | 'patterns' | 'driverRoot' | 'fstabFile'>,
): GpuProbeSettings {
  const patterns = o.patterns ?? DEFAULT_GPU_PATTERNS;
  for (const p of patterns) if (!GLOB.test(p)) throw new InputError(`gpu patterns: invalid glob ${JSON.stringify(p)}`);
  return {
    jail: checkAbsolutePath(o.jail, 'jail'),
    libDir: o.libDir === undefined ? undefined : checkAbsolutePath(o.libDir, 'libDir'),
    searchDirs: o.searchDirs?.map((d) => checkAbsolutePath(d, 'searchDirs')),
    patterns,
    driverRoot: o.driverRoot === undefined ? undefined : checkAbsolutePath(o.driverRoot, 'driverRoot'),
    fstabFile: checkAbsolutePath(o.fstabFile ?? '/etc/fstab', 'fstabFile'),
  };
}

const parts = new Map<string, string>();

/**
 * The host's driver files and their places in the jail, as one shell part that the driver check
 * and the binds share (the engine runs a part shared word for word once per script). The file
 * set comes from `nvidia-container-cli list` where the CLI is installed (every path it lists but
 * devices and procfs), else from the globs in the search directories (every version: the pure
 * side keeps the running one). Each file's jail target follows Soperator's jail_mount_target
 * (complement_jail.sh): libraries flattened into the jail's multiarch directory, binaries into
 * /usr/bin, anything else (firmware) at its own path. Read-only: nothing is created here.
 * Under a driver root (the GPU Operator's driver container keeps its root filesystem at
 * /run/nvidia/driver, its usr/lib/<arch>-linux-gnu and usr/bin: shared/reference/
 * fleet-ops-and-drains.md) the search runs inside the root (`nvidia-container-cli --root`, whose
 * list gives paths inside it, or the globs under it) and each file's place is decided on its
 * path relative to the root; the fstab block's sources under the watched root are printed too.
 */
/**
 * A test every one of `patterns` implies, for find to try before them: the patterns' literal
 * beginnings, at most 5 characters each (most of a library directory fails it at once; find would
 * otherwise try every pattern on every file). None when a pattern begins with a wildcard.
 */
export function namePrefilter(patterns: readonly string[]): string | undefined {
  const prefixes = new Set<string>();
  for (const p of patterns) {
    const literal = /^[^*?[\\]*/.exec(p)![0].slice(0, 5);
    if (literal === '') return undefined;
    prefixes.add(literal);
  }
  return [...prefixes].map((x) => `-name ${shq(`${x}*`)}`).join(' -o ');
}

/**
 * Shell: the driver version in /proc's first line ($v) into $rs_v, with builtins only (the probe
 * runs on every host each run); empty when the line names no kernel module. procDriverVersion
 * is the same reading on the pure side (the unit tests hold them to one table).
 */
export const PROC_VERSION_CUT = `rs_v=; case "$v" in *'Kernel Module'*) rs_v=\${v#*Kernel Module}; case "$rs_v" in ' for '*) rs_v=\${rs_v# for }; rs_v=\${rs_v#* } ;; esac
  rs_v=\${rs_v#"\${rs_v%%[! ]*}"}; rs_v=\${rs_v%% *} ;; esac`;

export function gpuProbePart(s: GpuProbeSettings): string {
  const key = JSON.stringify(s);
  const known = parts.get(key);
  if (known !== undefined) return known;
  const names = s.patterns.map((p) => `-name ${shq(p)}`).join(' -o ');
  const first = namePrefilter(s.patterns);
  // The host's own multiarch directory first (its answer to uname -m), unless configured.
  // Searched under the driver root ($P: empty for the host's own paths).
  const dirs = (s.searchDirs ? s.searchDirs.map(shq) : ['"/usr/lib/$a-linux-gnu"', ...OTHER_GPU_DIRS.map(shq)]).map((d) => `"$P"${d}`);
  const watch = s.driverRoot ?? OPERATOR_DRIVER_ROOT;
  // The driver root: configured, else the one whose libnvidia-ml is the loaded module's version
  // (the host's own first: a host moved to the GPU Operator may keep old host libraries, and those
  // must not hide the root's), else the GPU Operator's when it holds a driver and the host has none.
  // A root of another version than the module's is refused on the pure side (missingDriverLibs).
  const op = shq(OPERATOR_DRIVER_ROOT);
  const chooseRoot = `# shellcheck disable=SC2086 # \${2:-*}: the version asked for, or any (a glob)
rs_nvml() { for f in "$1/usr/lib/$a-linux-gnu"/libnvidia-ml.so.\${2:-*} "$1"/usr/lib64/libnvidia-ml.so.\${2:-*} "$1"/usr/lib/libnvidia-ml.so.\${2:-*}; do [ -f "$f" ] && return 0; done; return 1; }
v=; [ -r /proc/driver/nvidia/version ] && IFS= read -r v < /proc/driver/nvidia/version
${PROC_VERSION_CUT}
${
  s.driverRoot
    ? `R=${shq(s.driverRoot)}`
    : `R=/; if [ -n "$rs_v" ] && rs_nvml '' "$rs_v"; then :; elif { [ -n "$rs_v" ] && rs_nvml ${op} "$rs_v"; } || { ! rs_nvml '' && rs_nvml ${op}; }; then R=${op}; fi`
}`;
  // The sources of the binds recorded under the watched root: had this host a driver there?
  const recorded =
    watch === '/'
      ? ''
      : `[ -r ${shq(s.fstabFile)} ] && sed -n '/^# BEGIN RACKSMITH JAIL GPU BINDS$/,/^# END RACKSMITH JAIL GPU BINDS$/p' ${shq(s.fstabFile)} | while read -r rs_s _; do case "$rs_s" in ${shq(watch)}/*) printf 'gpu-rec\\t%s\\n' "$rs_s" ;; esac; done
`;
  const part = `J=${shq(s.jail)}; tab='\t'; rs_f=; rs_seen=; rs_lib=
${MACHINE_ARCH}; echo "gpu-arch=$a"
L=${s.libDir ? shq(s.libDir) : '"/usr/lib/$a-linux-gnu"'}; echo "gpu-libdir=$L"
${chooseRoot}
P=; [ "$R" = / ] || P=$R; echo "gpu-root=$R"; echo ${shq(`gpu-root-watch=${watch}`)}
rs_nvml ${shq(watch === '/' ? '' : watch)} && echo gpu-root-watch-driver=yes
${recorded}if [ -z "$v" ] && [ -n "$P" ] && [ -r "$P/proc/driver/nvidia/version" ]; then IFS= read -r v < "$P/proc/driver/nvidia/version"; echo "gpu-proc-from=$P/proc/driver/nvidia/version"; fi
echo "gpu-proc=$v"
rs_real() { q=$1; r=; while [ ! -d "$q" ]; do r=/\${q##*/}$r; q=\${q%/*}; [ -n "$q" ] || q=/; done
  if cd -P -- "$q" 2>/dev/null; then printf '%s\\t%s\\t%s%s\\n' "$2" "$1" "\${PWD%/}" "$r"; fi; cd /; }
rs_real "$J" gpu-jail
set --
if command -v nvidia-container-cli >/dev/null 2>&1; then
  echo gpu-source=cli
  # under a driver root, --root: it lists the paths inside the root (libnvidia-container's path_resolve)
  if [ -n "$P" ]; then rs_l=$(nvidia-container-cli --root "$R" list); else rs_l=$(nvidia-container-cli list); fi; echo "gpu-cli-rc=$?"
  # (the lists are walked with builtins: \`read\` of a here-document takes a system call per byte)
  rs_gd_ifs=$IFS; rs_gd_opts=$-; set -f; IFS='
'
  for p in $rs_l; do case "$p" in /dev/*|/proc/*) ;; "$P"/*) set -- "$@" "$p" ;; /*) set -- "$@" "$P$p" ;; esac; done
  IFS=$rs_gd_ifs; case $rs_gd_opts in *f*) ;; *) set +f ;; esac
  [ $# -gt 0 ] && rs_f=$(find -L "$@" -maxdepth 0 \\( -type f -printf 'f\\t%p\\t%D:%i\\t%m\\n' -o -type d -printf 'd\\t%p\\t%D:%i\\t%m\\n' \\) 2>/dev/null)
else
  echo gpu-source=globs
  for d in ${dirs.join(' ')}; do [ -d "$d" ] && set -- "$@" "$d"; done
  [ $# -gt 0 ] && rs_f=$(find "$@" -maxdepth 2 -type f ${first ? `\\( ${first} \\) ` : ''}\\( ${names} \\) -printf 'f\\t%p\\t%D:%i\\t%m\\n' 2>/dev/null)
fi
rs_gd_ifs=$IFS; rs_gd_opts=$-; set -f; IFS='
'
for rs_gd_l in $rs_f; do
  IFS=$tab
  # shellcheck disable=SC2086 # find's line split at its tabs (set -f: no globbing)
  set -- $rs_gd_l
  k=\${1-}; f=\${2-}; id=\${3-}; m=\${4-}
  [ -n "$k" ] || continue
  b=\${f##*/}; rel=\${f#"$P"}
  case "$b" in
    lib*.so*) rs_lib=1; case "$rel" in */i386-linux-gnu/*|*/lib32/*) t=/usr/lib/i386-linux-gnu/$b ;; *) t=$L/$b ;; esac ;;
    *) case "$rel" in */bin/*|*/sbin/*) t=/usr/bin/$b ;; *) t=$rel ;; esac ;;
  esac
  p=$J$t
  if [ -L "$p" ]; then tk=other; elif [ -d "$p" ]; then tk=dir; elif [ -f "$p" ]; then tk='file'; elif [ -e "$p" ]; then tk=other; else tk=absent; fi
  same=no; [ "$tk" != absent ] && [ "$p" -ef "$f" ] && same=yes
  empty=no; [ "$tk" = file ] && [ ! -s "$p" ] && empty=yes
  printf 'gpu-f\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' "$f" "$k" "$id" "$m" "$t" "$tk" "$same" "$empty"
  case "$rs_seen" in *"|\${p%/*}|"*) ;; *) rs_seen="$rs_seen|\${p%/*}|"; rs_real "\${p%/*}" gpu-dir ;; esac
done
IFS=$rs_gd_ifs; case $rs_gd_opts in *f*) ;; *) set +f ;; esac
if [ -n "$rs_lib" ]; then
  find "$J$L" -maxdepth 1 -type l -printf 'gpu-link\\t%f\\t%l\\n' 2>/dev/null
  [ -d "$J/etc" ] && chroot "$J" /sbin/ldconfig -p 2>/dev/null
fi
:`;
  parts.set(key, part);
  return part;
}

/**
 * A GPU host's driver, as the jail agreement sees it: only what it decides on (the version, the
 * file set's host paths and jail targets), not the state of the jail (that is the binds' part).
 */
export interface GpuDriverFacts {
  role: 'gpu';
  arch: string;
  source: DriverScan['source'];
  /** The driver root its files were found under (`/`: the host's own paths). */
  root?: string;
  set: Omit<DriverFileSet, 'files'> & { files: Array<Pick<ScannedFile, 'host' | 'target' | 'dir' | 'mode'>> };
  /** With the group's answers (useFleet): why the group's hosts cannot share the jail. */
  disagreement?: string;
}

/** The driver of one host from its answer, as the group compares it. */
export function driverReport(host: string, f: unknown): DriverReport | undefined {
  const g = f as GpuDriverFacts;
  if (g?.role !== 'gpu' || !g.set.version) return undefined;
  return { host, version: g.set.version, from: g.set.versionFrom ?? '?' };
}

/** A GPU node (jail_gpu true, the default) where no driver file and no running driver were found. */
export const NO_DRIVER = 'no NVIDIA driver found: set jail_gpu: false for a CPU node';

/** The group's driver reports, and the disagreement they make (per jail: the key's), once per group, not per host. */
const groupReports = fleetSummary((fleet) => ({
  reports: [...fleet].map(([host, facts]) => driverReport(host, facts)).filter((r): r is DriverReport => !!r),
  said: new Map<string, string | undefined>(),
}));
function groupDisagreement(fleet: ReadonlyMap<string, unknown>, jailId: string): string | undefined {
  const g = groupReports(fleet);
  if (!g.said.has(jailId)) g.said.set(jailId, driverDisagreement(jailId, g.reports));
  return g.said.get(jailId);
}

/** The agreement key of a jail: hosts that mount the same source share one jail. */
export const jailFleetKey = (jailId: string) => `jail-gpu:${jailId}`;

/**
 * The GPU driver of a host whose jail GPU nodes share: its running version and file set, decided
 * before anything of the jail is applied, and agreed across the jail's GPU hosts of the run (one
 * shared ld.so.cache serves one driver version). Changes nothing; the jail's resources depend on
 * it, so a refusal here leaves the host's jail untouched. A host without a driver takes no part
 * in the agreement, and is refused: a GPU node that binds nothing would otherwise report ok.
 */
export function gpuDriver(o: GpuDriverOptions): Resource<GpuDriverFacts> {
  const settings = gpuProbeSettings(o);
  const caps = o.caps ?? DEFAULT_GPU_CAPS;
  const part = gpuProbePart(settings);
  return {
    ...common('gpu-driver', `gpu-driver:${settings.jail}`, o),
    verifiable: true,
    fleet: jailFleetKey(o.jailId),
    probe: () => [part],
    parse({ stdout, code, stderr }) {
      if (code !== 0) throw new ProbeError(`GPU driver probe failed (exit ${code}): ${stderr.trim().slice(-300)}`);
      const scan = readDriverScan(stdout);
      const { files, ...set } = driverFileSet(scan, caps);
      if (set.problem && scan.cliExit) set.problem += `: ${stderr.trim().split('\n').slice(-2).join(' ')}`;
      return {
        role: 'gpu',
        arch: scan.arch,
        source: scan.source,
        root: scan.root ?? '/',
        set: { ...set, files: files.map((f) => ({ host: f.host, target: f.target, dir: f.dir, mode: f.mode })) },
      };
    },
    useFleet(f, fleet) {
      const disagreement = f.set.version ? groupDisagreement(fleet, o.jailId) : undefined;
      return disagreement === f.disagreement ? f : { ...f, disagreement };
    },
    diff(f) {
      if (f.set.problem) throw new Refusal(`GPU driver: ${f.set.problem}; nothing of the jail is applied`);
      if (!f.set.version) throw new Refusal(NO_DRIVER);
      if (f.disagreement) throw new Refusal(f.disagreement);
      return [];
    },
    apply: () => [],
  };
}
