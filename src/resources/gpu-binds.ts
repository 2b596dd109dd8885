import { shq } from '../shell/quote.ts';
import { InputError } from '../util/errors.ts';
import { checkAbsolutePath, contentText, fileFacts, type FileFacts } from './file-common.ts';
import { managedFile, type FileWrite } from './managed-file.ts';
import { fstabEscape } from './fstab.ts';
import { inline } from '../contract/probe.ts';
import { mountTableProbe, parseMountTable } from './mount-table.ts';
import { editBlock } from './text-edit.ts';
import { common, ProbeError, type Change, type CommonOptions, type Resource, type Step } from '../contract/resource.ts';

export interface GpuBindOptions extends CommonOptions {
  /** The jail root on this host, e.g. /mnt/jail. */
  jail: string;
  /** Library directory inside the jail that driver libraries are flattened into. */
  libDir?: string;
  /** Host directories searched for driver files (one level, plus one more for firmware/<ver>/). */
  searchDirs?: string[];
  /** File name globs of NVIDIA user-space driver files. */
  patterns?: string[];
  /** Lock file relative to the jail root: shared by every node (flock over the shared FS). */
  lockFile?: string;
  fstabFile?: string;
}

export const DEFAULT_GPU_PATTERNS = [
  'libcuda.so.*',
  'libcudadebugger.so.*',
  'libnvidia-*.so.*',
  'libnvcuvid.so.*',
  'libnvoptix.so.*',
  'libvdpau_nvidia.so.*',
  'libGLX_nvidia.so.*',
  'libEGL_nvidia.so.*',
  'libGLESv2_nvidia.so.*',
  'nvidia-smi',
  'nvidia-debugdump',
  'nvidia-persistenced',
  'nvidia-cuda-mps-control',
  'nvidia-cuda-mps-server',
  'nv-fabricmanager',
  'gsp*.bin',
];
export const DEFAULT_GPU_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/usr/lib', '/usr/bin', '/lib/firmware/nvidia'];

export interface GpuFile {
  host: string;
  /** Target path (absolute, on this host, inside the jail). */
  target: string;
  hostDevIno: string;
  mode: string;
  targetKind: 'absent' | 'file' | 'other';
  targetDevIno?: string;
  mounted: boolean;
  readOnly: boolean;
  /** For libraries: the soname link in the jail points at it and the jail's ld.so.cache lists that link. */
  cached?: boolean;
}

export interface GpuFacts {
  files: GpuFile[];
  fstab: FileFacts;
}

const GLOB = /^[A-Za-z0-9_.*?+-]+$/;
const MARKER = '# {mark} RACKSMITH JAIL GPU BINDS';

export function gpuFstabBlock(jail: string, files: Array<{ host: string; target: string }>): string {
  return files
    .map((f) => `${fstabEscape(f.host)} ${fstabEscape(f.target)} none bind,ro,x-systemd.requires-mounts-for=${fstabEscape(jail)} 0 0`)
    .join('\n');
}

/**
 * NVIDIA user-space driver files of this host, bound read-only into the shared jail onto
 * placeholders (created once, on the shared FS, under a cross-node flock), persisted in an fstab
 * block, and the jail's ld.so.cache refreshed under the same lock only when it lacks them.
 * A host without driver files gets nothing and no error.
 */
export function gpuBinds(o: GpuBindOptions): Resource<GpuFacts, FileWrite | GpuStep> {
  const jail = checkAbsolutePath(o.jail, 'jail');
  const libDir = checkAbsolutePath(o.libDir ?? '/usr/lib/x86_64-linux-gnu', 'libDir');
  const dirs = (o.searchDirs ?? DEFAULT_GPU_DIRS).map((d) => checkAbsolutePath(d, 'searchDirs'));
  const patterns = o.patterns ?? DEFAULT_GPU_PATTERNS;
  for (const p of patterns) if (!GLOB.test(p)) throw new InputError(`gpu patterns: invalid glob ${JSON.stringify(p)}`);
  const lock = `${jail}/${o.lockFile ?? 'etc/racksmith-jail-gpu.lock'}`;
  const fstabFile = checkAbsolutePath(o.fstabFile ?? '/etc/fstab', 'fstabFile');
  const newFstab = (f: GpuFacts) =>
    editBlock(contentText(f.fstab), gpuFstabBlock(jail, f.files), MARKER, f.files.length ? 'present' : 'absent');

  const fstab = managedFile<GpuFacts>({
    path: fstabFile,
    get: (f) => f.fstab,
    set: (f, file) => ({ ...f, fstab: file }),
    backup: true,
    stepName: 'fstab GPU binds',
  });

  /** Facts from the probe's own lines (driver files, jail links, ld.so.cache), the jail's mount table lines and fstab. */
  const readFacts = (own: string, table: string, fstabAnswer: unknown): GpuFacts => {
    const found = new Map<string, string[]>();
    const links = new Map<string, string[]>(); // link target (a library file name) -> link names
    const cache = new Set<string>(); // names ld.so.cache points at
    for (const line of own.split('\n')) {
      const f = line.split('\t');
      if (f[0] === 'gpu' && f.length === 7) found.set(f[1], f);
      else if (f[0] === 'link' && f.length === 3) links.set(f[2], [...(links.get(f[2]) ?? []), f[1]]);
      else if (line.includes(' => ')) cache.add(line.slice(line.lastIndexOf('/') + 1)); // ldconfig -p
    }
    // The mount table only matters for driver files found (most hosts without GPUs have none).
    const mounts = found.size ? parseMountTable(table) : new Map<string, never>();
    const files: GpuFile[] = [...found.values()]
      .sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
      .map(([, host, target, hostDevIno, mode, tk, same]) => {
        const mount = mounts.get(target);
        const name = host.slice(host.lastIndexOf('/') + 1);
        return {
          host,
          target,
          hostDevIno,
          mode,
          targetKind: tk as GpuFile['targetKind'],
          targetDevIno: same === 'yes' ? hostDevIno : undefined,
          mounted: mount !== undefined,
          readOnly: mount?.options.includes('ro') ?? false,
          // a soname link in the jail points at it, and the jail's ld.so.cache lists that link
          cached: /^lib.*\.so/.test(name) ? (links.get(name) ?? []).some((l) => cache.has(l)) : undefined,
        };
      });
    return { files, fstab: fileFacts(fstabAnswer) };
  };

  return {
    ...common('gpu-binds', `gpu-binds:${jail}`, o),
    verifiable: true,
    files: [fstab],
    probe() {
      const names = patterns.map((p) => `-name ${shq(p)}`).join(' -o ');
      // Target layout as Soperator's: libraries flattened into the jail's multiarch directory,
      // binaries into /usr/bin, anything else (firmware) at its own path. One find lists the
      // driver files; the jail's ld.so.cache is read only when there are libraries; whether a
      // target is mounted comes from the shared mount table.
      return [
        inline(`J=${shq(jail)}; L=${shq(libDir)}; tab='\t'
set --; for d in ${dirs.map(shq).join(' ')}; do [ -d "$d" ] && set -- "$@" "$d"; done
if [ $# -gt 0 ]; then
rs_f=$(find "$@" -maxdepth 2 -type f \\( ${names} \\) -printf '%p\\t%D:%i\\t%m\\n' 2>/dev/null)
rs_lib=
while IFS="$tab" read -r f id m; do
  [ -n "$f" ] || continue
  b=\${f##*/}
  case "$b" in lib*.so*) t="$J$L/$b"; rs_lib=1 ;; *) case "$f" in */bin/*|*/sbin/*) t="$J/usr/bin/$b" ;; *) t="$J$f" ;; esac ;; esac
  if [ -f "$t" ]; then tk=file; elif [ -e "$t" ]; then tk=other; else tk=absent; fi
  same=no; [ "$tk" = file ] && [ "$t" -ef "$f" ] && same=yes
  printf 'gpu\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' "$f" "$t" "$id" "$m" "$tk" "$same"
done <<RS_GPU_EOF
$rs_f
RS_GPU_EOF
if [ -n "$rs_lib" ]; then
  find "$J$L" -maxdepth 1 -type l -printf 'link\\t%f\\t%l\\n' 2>/dev/null
  [ -d "$J/etc" ] && chroot "$J" /sbin/ldconfig -p 2>/dev/null
fi
fi`),
        mountTableProbe(`${jail}/`),
        fstab.probe(),
      ];
    },
    parse(out) {
      const [own, table, fstabAnswer] = out.parts;
      if (out.parts.length !== 3 || typeof own !== 'string' || typeof table !== 'string') {
        throw new ProbeError(`unexpected probe output: ${out.stdout.slice(0, 200)}`);
      }
      return readFacts(own, table, fstabAnswer);
    },
    diff(f): Change<FileWrite | GpuStep>[] {
      const changes: Change<FileWrite | GpuStep>[] = [];
      for (const g of f.files) {
        if (g.targetKind === 'other') throw new ProbeError(`${g.target} exists and is not a regular file`);
        if (g.targetKind === 'absent') changes.push({ summary: `create placeholder ${g.target} (shared jail)`, data: 'placeholders' });
        if (!g.mounted || g.targetDevIno !== g.hostDevIno) changes.push({ summary: `bind ${g.host} → ${g.target} (ro)`, data: 'binds' });
        else if (!g.readOnly) changes.push({ summary: `remount ${g.target} read-only`, data: 'binds' });
      }
      const text = `${fstabFile}: GPU bind entries`;
      changes.push(...fstab.changes(f, newFstab(f), { create: text, update: text }));
      const uncached = f.files.filter((g) => g.cached === false);
      if (uncached.length)
        changes.push({
          summary: `refresh ${jail}/etc/ld.so.cache (missing ${uncached.map((g) => g.host.slice(g.host.lastIndexOf('/') + 1)).join(', ')})`,
          data: 'cache',
        });
      return changes;
    },
    apply(f, changes): Step[] {
      const steps: Step[] = [];
      const missing = f.files.filter((g) => g.targetKind === 'absent');
      if (missing.length) {
        // Placeholders live on the shared FS: create them once, under the cross-node lock.
        const body = missing
          .map(
            (g) =>
              `[ -e ${shq(g.target)} ] || { mkdir -p -- ${shq(g.target.slice(0, g.target.lastIndexOf('/')))} && : > ${shq(g.target)} && chmod --reference=${shq(g.host)} -- ${shq(g.target)}; }`,
          )
          .join('\n');
        steps.push({ name: 'GPU placeholders', script: `umask 022\nflock ${shq(lock)} sh -ec ${shq(body)}` });
      }
      const binds = f.files.filter((g) => !g.mounted || g.targetDevIno !== g.hostDevIno || !g.readOnly);
      if (binds.length) {
        steps.push({
          name: 'GPU binds',
          script: binds
            .map(
              (g) =>
                `${g.mounted && g.targetDevIno === g.hostDevIno ? '' : `mount --bind -- ${shq(g.host)} ${shq(g.target)}\n`}mount -o remount,bind,ro ${shq(g.target)}`,
            )
            .join('\n'),
        });
      }
      steps.push(...fstab.steps(changes));
      if (changes.some((c) => c.data === 'cache')) {
        // Build a candidate cache, replace the shared one (atomic rename) only if it differs.
        const body = `chroot "$J" /sbin/ldconfig -C /etc/ld.so.cache.racksmith-new
if cmp -s "$J/etc/ld.so.cache.racksmith-new" "$J/etc/ld.so.cache"; then rm -f "$J/etc/ld.so.cache.racksmith-new"; else mv -f "$J/etc/ld.so.cache.racksmith-new" "$J/etc/ld.so.cache"; fi`;
        steps.push({ name: 'jail ld.so.cache', script: `J=${shq(jail)} flock ${shq(lock)} sh -ec ${shq(body)}` });
      }
      return steps;
    },
  };
}

/** What a GPU bind change does (besides writing fstab): the data of its changes. */
type GpuStep = 'placeholders' | 'binds' | 'cache';
