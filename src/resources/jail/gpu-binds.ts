import { probed } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { contentText, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite, type ManagedFile } from '../core/managed-file.ts';
import { deletedRoot, MOUNTINFO, mountCounts, mountTableProbe, parseMountTable, rootIsOf } from '../core/mount-table.ts';
import { editBlock } from '../core/text-edit.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';
import { gpuProbePart, gpuProbeSettings, type GpuDriverOptions } from './gpu-driver.ts';
import { DEFAULT_GPU_CAPS, driverFileSet, fileKind, readDriverScan, type DriverScan, type GpuCap } from './gpu-files.ts';
import {
  bindFstabBlock,
  DEFAULT_LOCK_TIMEOUT_S,
  inPlaceOf,
  placeholderScript,
  PLACEHOLDER_MARKER,
  underJailLock,
  bindOverStale,
} from './jail-shared.ts';

export interface GpuBindOptions extends CommonOptions, Pick<GpuDriverOptions, 'libDir' | 'searchDirs' | 'patterns' | 'driverRoot'> {
  /** The jail root on this host, e.g. /mnt/jail. */
  jail: string;
  caps?: readonly GpuCap[];
  /** Seconds to wait for a jail lock before this host fails. */
  lockTimeout?: number;
  fstabFile?: string;
  /** The jail's mounts on a network filesystem (networkJailPaths): the binds under them wait for the network at boot. */
  networkPaths?: readonly string[];
}

export interface GpuFile {
  host: string;
  /** Target path on this host (inside the jail, symlinks resolved). */
  target: string;
  /** A directory (the CLI's MPS pipe directory), bound read-write; files are bound read-only. */
  dir: boolean;
  hostDevIno: string;
  mode: string;
  targetKind: 'absent' | 'file' | 'dir' | 'other';
  /** The target is this host's file (bound here). */
  bound: boolean;
  /** A 0-byte target: an old-style placeholder, to be given the marker. */
  emptyPlaceholder: boolean;
  mounted: boolean;
  /**
   * The mounts at the target to let go before its bind (stacked ones count): an older bind of this
   * file's path is on top there (the driver container's root mounted anew, a library replaced by
   * a package: mountinfo's root, `//deleted` or not, ends the host path; rootIsOf). 0 when
   * another file is bound there: bound over, as ever.
   */
  staleMounts: number;
  readOnly: boolean;
  /** For libraries: a soname link in the jail points at it and the jail's ld.so.cache lists that link. */
  cached?: boolean;
}

export interface GpuFacts {
  files: GpuFile[];
  fstab: FileFacts;
  /** Where the file set came from, and the running driver: recorded with the fstab block, shown in the run. */
  source: string;
  version?: string;
  versionFrom?: string;
  /** The jail's library directory on this host (its own architecture's). */
  libDir: string;
  /** Why this host's set cannot be bound (a driver problem, a target outside the jail). */
  problem?: string;
}

const MARKER = '# {mark} RACKSMITH JAIL GPU BINDS';

/** What a change does, decided in diff (besides writing fstab: a FileWrite). */
export type GpuChange = GpuFileChange | GpuCacheChange;
type GpuFileChange = { do: 'placeholder' | 'mark' | 'bind' | 'remount'; file: GpuFile };
/** nvml: this host's libnvidia-ml, which the jail's libnvidia-ml.so.1 must lead to afterwards. */
type GpuCacheChange = { do: 'cache'; nvml?: string };

/** Where a host's file set came from, as the run and its fstab block say it. */
export function driverSource(scan: Pick<DriverScan, 'source' | 'root'>): string {
  const root = scan.root ?? '/';
  if (scan.source === 'nvidia-container-cli')
    return root === '/' ? 'nvidia-container-cli list' : `nvidia-container-cli --root ${root} list`;
  return root === '/' ? 'globs' : `globs under ${root}`;
}

/** The fstab block of a host's GPU binds, with a comment saying where its file set came from. */
export function gpuFstabBlock(
  jail: string,
  f: Pick<GpuFacts, 'files' | 'source' | 'version' | 'versionFrom'>,
  caps: readonly GpuCap[],
  networkPaths: readonly string[] = [],
): string {
  const comment = `driver ${f.version} (${f.versionFrom}); files from ${f.source}, capabilities ${caps.join(',')}`;
  return bindFstabBlock(
    jail,
    f.files.map((g) => ({ source: g.host, target: g.target, readOnly: !g.dir })),
    comment,
    networkPaths,
  );
}

/**
 * This host's NVIDIA driver files bound into the shared jail onto placeholders (created once, on
 * the shared FS, with marker content, under Soperator's placeholder lock), persisted in an fstab
 * block, and the jail's ld.so.cache refreshed under Soperator's ldconfig lock when it lacks
 * them; after a refresh libnvidia-ml.so.1 must resolve to this host's driver file. The file set
 * is the driver check's (gpu-driver.ts): the CLI's list or the globs, the running version only.
 */
export function gpuBinds(o: GpuBindOptions): Resource<GpuFacts, GpuChange | FileWrite> {
  const settings = gpuProbeSettings(o);
  const jail = settings.jail;
  const caps = o.caps ?? DEFAULT_GPU_CAPS;
  const timeout = o.lockTimeout ?? DEFAULT_LOCK_TIMEOUT_S;
  const fstabFile = settings.fstabFile;
  const part = gpuProbePart(settings);
  const newFstab = (f: GpuFacts) =>
    editBlock(contentText(f.fstab), gpuFstabBlock(jail, f, caps, o.networkPaths), MARKER, f.files.length ? 'present' : 'absent');
  const fstab = managedFile<GpuFacts>({
    path: fstabFile,
    get: (f) => f.fstab,
    set: (f, file) => ({ ...f, fstab: file }),
    backup: true,
    stepName: 'fstab GPU binds',
  });

  /** This host's libnvidia-ml, when bound: after a cache refresh, the jail's libnvidia-ml.so.1 must be it. */
  const nvml = (f: GpuFacts) =>
    f.files.find((g) => /^libnvidia-ml\.so\.\d/.test(g.host.slice(g.host.lastIndexOf('/') + 1)) && fileKind(g) === 'lib');

  return {
    ...common('gpu-binds', `gpu-binds:${jail}`, o),
    verifiable: true,
    readsSharedState: true, // the shared jail tree's placeholders
    files: [fstab],
    ...probed(
      () => ({ own: part, mountinfo: MOUNTINFO, table: mountTableProbe(`${jail}/`), fstab: fstab.probe() }),
      (a) => readGpuFacts(jail, caps, a.own, a.table, fileFacts(a.fstab)),
    ),
    diff(f): Change<GpuChange | FileWrite>[] {
      if (f.problem) throw new Refusal(`GPU binds: ${f.problem}`);
      const changes: Change<GpuChange | FileWrite>[] = [];
      for (const g of f.files) {
        if (g.targetKind === 'other' || (g.targetKind !== 'absent' && (g.targetKind === 'dir') !== g.dir)) {
          throw new Refusal(
            `${g.target} exists and is not a ${g.dir ? 'directory' : 'regular file'} (a symlink?); not binding ${g.host} over it`,
          );
        }
        if (g.targetKind === 'absent')
          changes.push({ summary: `create placeholder ${g.target} (shared jail)`, data: { do: 'placeholder', file: g } });
        else if (g.emptyPlaceholder)
          changes.push({ summary: `mark placeholder ${g.target} (0 bytes → ${PLACEHOLDER_MARKER.length})`, data: { do: 'mark', file: g } });
        if (!g.mounted || !g.bound)
          changes.push({
            summary: `bind ${g.host} → ${g.target}${g.dir ? '' : ' (ro)'}, from ${f.source}${inPlaceOf(g.staleMounts)}`,
            data: { do: 'bind', file: g },
          });
        else if (!g.dir && !g.readOnly) changes.push({ summary: `remount ${g.target} read-only`, data: { do: 'remount', file: g } });
      }
      const text = f.files.length
        ? `${fstabFile}: GPU bind entries (driver ${f.version} from ${f.versionFrom}, files from ${f.source})`
        : `${fstabFile}: GPU bind entries removed`;
      changes.push(...fstab.changes(f, newFstab(f), { create: text, update: text }));
      const uncached = f.files.filter((g) => g.cached === false);
      if (uncached.length)
        changes.push({
          summary: `refresh ${jail}/etc/ld.so.cache (missing ${uncached.map((g) => g.host.slice(g.host.lastIndexOf('/') + 1)).join(', ')})`,
          data: { do: 'cache', nvml: nvml(f)?.host },
        });
      return changes;
    },
    apply: (f, changes) => gpuBindSteps(jail, timeout, f, changes, fstab),
  };
}

/** A host's facts from its driver scan (own lines), the jail's mount table and its fstab. */
function readGpuFacts(jail: string, caps: readonly GpuCap[], own: string, table: string, fstabFacts: FileFacts): GpuFacts {
  const scan = readDriverScan(own);
  const set = driverFileSet(scan, caps);
  const base: Omit<GpuFacts, 'files'> = {
    fstab: fstabFacts,
    source: driverSource(scan),
    version: set.version,
    versionFrom: set.versionFrom,
    libDir: scan.libDir,
    problem: set.problem,
  };
  // The mount table only matters for driver files found (most hosts without GPUs have none).
  const mounts = set.files.length ? parseMountTable(table) : new Map<string, never>();
  // counted only where a file is not bound and an older bind of its path is there (never when converged)
  let counts: Map<string, number> | undefined;
  const mountsAt = (target: string) => (counts ??= mountCounts(table)).get(target) ?? 0;
  const realJail = scan.jailReal ?? jail;
  const files: GpuFile[] = [];
  for (const g of set.files) {
    const logical = `${jail}${g.target}`;
    const dir = logical.slice(0, logical.lastIndexOf('/'));
    const target = `${scan.realDirs.get(dir) ?? dir}${logical.slice(dir.length)}`;
    if (!target.startsWith(`${realJail}/`)) return { ...base, files: [], problem: `${logical} resolves to ${target}, outside the jail` };
    const mount = mounts.get(target);
    const name = g.host.slice(g.host.lastIndexOf('/') + 1);
    const kind = fileKind(g);
    files.push({
      host: g.host,
      target,
      dir: g.dir,
      hostDevIno: g.devIno,
      mode: g.mode,
      targetKind: g.targetKind,
      bound: g.targetSame,
      emptyPlaceholder: g.targetKind === 'file' && g.targetEmpty && !g.targetSame,
      mounted: mount !== undefined,
      staleMounts: !g.targetSame && mount && rootIsOf(deletedRoot(mount) ?? mount.root ?? '/', g.host) ? mountsAt(target) : 0,
      readOnly: mount?.options.includes('ro') ?? false,
      // a soname link in the jail points at it, and the jail's ld.so.cache lists that link
      cached: kind === 'lib' || kind === 'lib32' ? (scan.links.get(name) ?? []).some((l) => scan.cached.has(l)) : undefined,
    });
  }
  files.sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0));
  return { ...base, files };
}

/** The data of the changes to files of the set that do one of `what`. */
const decided = (changes: readonly Change<GpuChange | FileWrite>[], what: readonly GpuFileChange['do'][]): GpuFileChange[] =>
  changes.flatMap((c) => (c.data && 'file' in c.data && what.includes(c.data.do) ? [c.data] : []));

/**
 * The steps of the decided changes: placeholders under the jail's lock, the binds, fstab, and the
 * jail's ld.so.cache under its ldconfig lock.
 */
function gpuBindSteps(
  jail: string,
  timeout: number,
  f: GpuFacts,
  changes: readonly Change<GpuChange | FileWrite>[],
  fstab: ManagedFile<GpuFacts>,
): Step[] {
  const steps: Step[] = [];
  const placeholders = decided(changes, ['placeholder', 'mark']);
  if (placeholders.length) {
    // Placeholders live on the shared FS: created (or given the marker) once, under the
    // cross-node lock, re-checked under it; never written while something is bound there.
    const body = placeholders
      .map(({ do: what, file: g }) => {
        const t = shq(g.target);
        if (g.dir) return `[ -e ${t} ] || mkdir -p -- ${t}`;
        if (what === 'placeholder') return placeholderScript(g.target, `--reference=${shq(g.host)}`);
        return `if [ -f ${t} ] && [ ! -s ${t} ] && ! [ ${t} -ef ${shq(g.host)} ]; then printf %s ${shq(PLACEHOLDER_MARKER)} > ${t}; fi`;
      })
      .join('\n');
    steps.push({ name: 'GPU placeholders', script: `umask 022\n${underJailLock(jail, 'placeholders', timeout, body)}` });
  }
  const binds = decided(changes, ['bind', 'remount']);
  if (binds.length) {
    steps.push({
      name: 'GPU binds',
      script: binds
        .map(({ do: what, file: g }) => {
          const t = shq(g.target);
          const bind = what === 'bind' ? bindOverStale(g.host, g.target, g.staleMounts) : '';
          return g.dir ? bind || ':' : `${bind}mount -o remount,bind,ro ${t}`;
        })
        .join('\n'),
    });
  }
  steps.push(...fstab.steps(changes));
  const cache = changes.map((c) => c.data).find((d): d is GpuCacheChange => d !== undefined && 'do' in d && d.do === 'cache');
  if (cache) {
    // A candidate cache replaces the shared one (atomic rename) only if it differs; then the
    // NVML soname must lead to this host's driver (Soperator's ensure_nvml_soname, stricter).
    const so1 = `${jail}${f.libDir}/libnvidia-ml.so.1`;
    const check = cache.nvml
      ? `\nif ! [ ${shq(so1)} -ef ${shq(cache.nvml)} ]; then printf '%s %s, %s\\n' ${shq(`after refreshing ${jail}/etc/ld.so.cache, ${so1} resolves to`)} "$(readlink -f ${shq(so1)} || echo nothing)" ${shq(`not this host's driver file ${cache.nvml}`)} >&2; exit 6; fi`
      : '';
    const body = `J=${shq(jail)}
chroot "$J" /sbin/ldconfig -C /etc/ld.so.cache.racksmith-new
if cmp -s "$J/etc/ld.so.cache.racksmith-new" "$J/etc/ld.so.cache"; then rm -f "$J/etc/ld.so.cache.racksmith-new"; else mv -f "$J/etc/ld.so.cache.racksmith-new" "$J/etc/ld.so.cache"; fi${check}`;
    steps.push({ name: 'jail ld.so.cache', script: underJailLock(jail, 'ldconfig', timeout, body) });
  }
  return steps;
}
