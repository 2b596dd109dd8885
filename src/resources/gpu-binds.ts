import { shq } from '../shell/quote.ts';
import { InputError } from '../util/errors.ts';
import { atomicWriteScript, checkAbsolutePath, contentDiff, fileProbe, parseFileFacts, predictWrite, type FileFacts } from './file-common.ts';
import { fstabEscape } from './fstab.ts';
import { editBlock } from './text-edit.ts';
import { common, ProbeError, type Change, type CommonOptions, type Resource, type Step } from './types.ts';

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
  'libcuda.so.*', 'libcudadebugger.so.*', 'libnvidia-*.so.*', 'libnvcuvid.so.*', 'libnvoptix.so.*', 'libvdpau_nvidia.so.*',
  'libGLX_nvidia.so.*', 'libEGL_nvidia.so.*', 'libGLESv2_nvidia.so.*',
  'nvidia-smi', 'nvidia-debugdump', 'nvidia-persistenced', 'nvidia-cuda-mps-control', 'nvidia-cuda-mps-server', 'nv-fabricmanager',
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
  return files.map((f) => `${fstabEscape(f.host)} ${fstabEscape(f.target)} none bind,ro,x-systemd.requires-mounts-for=${fstabEscape(jail)} 0 0`).join('\n');
}

/**
 * NVIDIA user-space driver files of this host, bound read-only into the shared jail onto
 * placeholders (created once, on the shared FS, under a cross-node flock), persisted in an fstab
 * block, and the jail's ld.so.cache refreshed under the same lock only when it lacks them.
 * A host without driver files gets nothing and no error.
 */
export function gpuBinds(o: GpuBindOptions): Resource<GpuFacts> {
  const jail = checkAbsolutePath(o.jail, 'jail');
  const libDir = checkAbsolutePath(o.libDir ?? '/usr/lib/x86_64-linux-gnu', 'libDir');
  const dirs = (o.searchDirs ?? DEFAULT_GPU_DIRS).map((d) => checkAbsolutePath(d, 'searchDirs'));
  const patterns = o.patterns ?? DEFAULT_GPU_PATTERNS;
  for (const p of patterns) if (!GLOB.test(p)) throw new InputError(`gpu patterns: invalid glob ${JSON.stringify(p)}`);
  const lock = `${jail}/${o.lockFile ?? 'etc/racksmith-jail-gpu.lock'}`;
  const fstabFile = checkAbsolutePath(o.fstabFile ?? '/etc/fstab', 'fstabFile');
  const newFstab = (f: GpuFacts) =>
    editBlock(f.fstab.content?.toString('utf8') ?? '', gpuFstabBlock(jail, f.files), MARKER, f.files.length ? 'present' : 'absent');

  return {
    ...common('gpu-binds', `gpu-binds:${jail}`, o),
    verifiable: true,
    writes: [fstabFile],
    probe() {
      const names = patterns.map((p) => `-name ${shq(p)}`).join(' -o ');
      // Target layout as Soperator's: libraries flattened into the jail's multiarch directory,
      // binaries into /usr/bin, anything else (firmware) at its own path.
      return `J=${shq(jail)}; L=${shq(libDir)}
cache=$( [ -d "$J/etc" ] && chroot "$J" /sbin/ldconfig -p 2>/dev/null )
for d in ${dirs.map(shq).join(' ')}; do [ -d "$d" ] && find "$d" -maxdepth 2 -type f \\( ${names} \\) 2>/dev/null; done | sort -u | while IFS= read -r f; do
  b=\${f##*/}
  case "$b" in lib*.so*) t="$J$L/$b" ;; *) case "$f" in */bin/*|*/sbin/*) t="$J/usr/bin/$b" ;; *) t="$J$f" ;; esac ;; esac
  if [ -f "$t" ]; then tk=file; td=$(stat -L -c %d:%i -- "$t"); elif [ -e "$t" ]; then tk=other; td=-; else tk=absent; td=-; fi
  mo=$(findmnt -rn -o OPTIONS --mountpoint "$t" 2>/dev/null | tail -n 1)
  c=-
  case "$b" in lib*.so*)
    c=no
    for s in $(find "$J$L" -maxdepth 1 -type l -lname "$b" 2>/dev/null); do
      printf '%s\\n' "$cache" | grep -q " => .*/\${s##*/}\$" && c=yes
    done ;;
  esac
  printf 'gpu\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' "$f" "$t" "$(stat -c %d:%i -- "$f")" "$(stat -c %a -- "$f")" "$tk" "$td" "\${mo:--}" "$c"
done
echo '== fstab'
${fileProbe(fstabFile)}`;
    },
    parse(out): GpuFacts {
      const cut = out.indexOf('== fstab\n');
      if (cut < 0) throw new ProbeError(`unexpected probe output: ${out.slice(0, 200)}`);
      const files: GpuFile[] = [];
      for (const line of out.slice(0, cut).split('\n')) {
        if (!line.startsWith('gpu\t')) continue;
        const [, host, target, hostDevIno, mode, tk, td, mo, c] = line.split('\t');
        const opts = mo === '-' ? [] : mo.split(',');
        files.push({
          host, target, hostDevIno, mode,
          targetKind: tk as GpuFile['targetKind'],
          targetDevIno: td === '-' ? undefined : td,
          mounted: opts.length > 0,
          readOnly: opts.includes('ro'),
          cached: c === '-' ? undefined : c === 'yes',
        });
      }
      return { files, fstab: parseFileFacts(out.slice(cut + '== fstab\n'.length)) };
    },
    diff(f): Change[] {
      const changes: Change[] = [];
      for (const g of f.files) {
        if (g.targetKind === 'other') throw new ProbeError(`${g.target} exists and is not a regular file`);
        if (g.targetKind === 'absent') changes.push({ summary: `create placeholder ${g.target} (shared jail)` });
        if (!g.mounted || g.targetDevIno !== g.hostDevIno) changes.push({ summary: `bind ${g.host} → ${g.target} (ro)` });
        else if (!g.readOnly) changes.push({ summary: `remount ${g.target} read-only` });
      }
      const after = newFstab(f);
      const before = f.fstab.content?.toString('utf8') ?? '';
      if (after !== before) changes.push({ summary: `${fstabFile}: GPU bind entries`, diff: contentDiff(fstabFile, f.fstab.content, Buffer.from(after), f.fstab.type === 'file') });
      const uncached = f.files.filter((g) => g.cached === false);
      if (uncached.length) changes.push({ summary: `refresh ${jail}/etc/ld.so.cache (missing ${uncached.map((g) => g.host.slice(g.host.lastIndexOf('/') + 1)).join(', ')})` });
      return changes;
    },
    predictFiles: (f) => ({ [fstabFile]: predictWrite(f.fstab, Buffer.from(newFstab(f))) }),
    useFiles: (f, files) => ({ ...f, fstab: (files[fstabFile] as FileFacts | undefined) ?? f.fstab }),
    apply(f): Step[] {
      const steps: Step[] = [];
      const missing = f.files.filter((g) => g.targetKind === 'absent');
      if (missing.length) {
        // Placeholders live on the shared FS: create them once, under the cross-node lock.
        const body = missing
          .map((g) => `[ -e ${shq(g.target)} ] || { mkdir -p -- ${shq(g.target.slice(0, g.target.lastIndexOf('/')))} && : > ${shq(g.target)} && chmod --reference=${shq(g.host)} -- ${shq(g.target)}; }`)
          .join('\n');
        steps.push({ name: 'GPU placeholders', script: `umask 022\nflock ${shq(lock)} sh -ec ${shq(body)}` });
      }
      const binds = f.files.filter((g) => !g.mounted || g.targetDevIno !== g.hostDevIno || !g.readOnly);
      if (binds.length) {
        steps.push({
          name: 'GPU binds',
          script: binds
            .map((g) => `${g.mounted && g.targetDevIno === g.hostDevIno ? '' : `mount --bind -- ${shq(g.host)} ${shq(g.target)}\n`}mount -o remount,bind,ro ${shq(g.target)}`)
            .join('\n'),
        });
      }
      const after = newFstab(f);
      if (after !== (f.fstab.content?.toString('utf8') ?? '')) {
        steps.push({
          name: 'fstab GPU binds',
          script: atomicWriteScript({ path: fstabFile, content: Buffer.from(after), expectSha256: f.fstab.type === 'absent' ? 'absent' : f.fstab.sha256, backup: true }),
        });
      }
      if (f.files.some((g) => g.cached === false)) {
        // Build a candidate cache, replace the shared one (atomic rename) only if it differs.
        const body = `chroot "$J" /sbin/ldconfig -C /etc/ld.so.cache.racksmith-new
if cmp -s "$J/etc/ld.so.cache.racksmith-new" "$J/etc/ld.so.cache"; then rm -f "$J/etc/ld.so.cache.racksmith-new"; else mv -f "$J/etc/ld.so.cache.racksmith-new" "$J/etc/ld.so.cache"; fi`;
        steps.push({ name: 'jail ld.so.cache', script: `J=${shq(jail)} flock ${shq(lock)} sh -ec ${shq(body)}` });
      }
      return steps;
    },
  };
}
