import { inline } from '../contract/probe.ts';
import { shq } from '../shell/quote.ts';
import {
  atomicWriteScript,
  checkAbsolutePath,
  contentDiff,
  contentText,
  fileProbe,
  hasContent,
  parseFileFacts,
  predictWrite,
  type FileFacts,
} from './file-common.ts';
import {
  fstabMarkPart,
  mountProbeParsers,
  mountTableProbe,
  parseMountTable,
  type MountEntry,
  type MountProbeOutput,
} from './mount-table.ts';
import { editBlock } from './text-edit.ts';
import { common, ProbeError, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../contract/resource.ts';
import { jailFleetKey, type GpuDriverFacts } from './gpu-driver.ts';
import { fileKind } from './gpu-files.ts';
import { standinLibrary, STANDIN_ARCHES } from './elf-standin.ts';
import { bindFstabBlock, DEFAULT_LOCK_TIMEOUT_S, placeholderScript, PLACEHOLDER_MAX_BYTES, underJailLock } from './jail-shared.ts';

export interface GpuStandinOptions extends CommonOptions {
  /** The jail root on this host, e.g. /mnt/jail. */
  jail: string;
  /** What the jail is (its source), as for gpuDriver: this host learns the GPU hosts' file sets through it. */
  jailId: string;
  /** Library directory inside the jail; default `/usr/lib/<uname -m>-linux-gnu`. */
  libDir?: string;
  /** Where the stand-in library is kept on this host (node-local). */
  standin?: string;
  lockTimeout?: number;
  fstabFile?: string;
}

export interface StandinFacts {
  role: 'cpu';
  arch: string;
  libDir: string;
  /** The library directory's physical path on this host. */
  realLibDir: string;
  /** Placeholders seen in the library directory: name -> size (Soperator's rule: versioned name, under 64 bytes). */
  placeholders: Map<string, number>;
  /** Names in the library directory that are this host's stand-in (bound). */
  bound: Set<string>;
  mounts: Map<string, MountEntry>;
  standin: FileFacts;
  fstab: FileFacts;
  /** From the group (useFleet): the GPU hosts' library targets in this directory, with their modes. */
  fleetLibs: Map<string, string>;
}

const MARKER = '# {mark} RACKSMITH JAIL GPU STAND-INS';
const STANDIN_MARK = '== standin\n';

/**
 * On a CPU or login node of a jail that GPU nodes share: a harmless stand-in library (see
 * elf-standin.ts) bound read-only over every GPU library placeholder of the jail, so that every
 * entry of the shared ld.so.cache leads to a loadable object here too (Soperator binds its
 * libdummy.so the same way: complement_jail.sh, CPU workers and login nodes in GPU clusters).
 * The placeholders are the ones in the jail (versioned lib*.so.* under 64 bytes, Soperator's
 * rule) and the ones the GPU hosts of the run are about to bind (their file sets, through the
 * jail's fleet group: this host needs not wait for them; missing ones are created here, under
 * the placeholder lock). This host never runs ldconfig on the shared jail: a stand-in has no
 * soname, and a cache built here would drop the drivers' entries for everyone.
 */
export function gpuStandins(o: GpuStandinOptions): Resource<StandinFacts> {
  const jail = checkAbsolutePath(o.jail, 'jail');
  const standinPath = checkAbsolutePath(o.standin ?? '/var/lib/racksmith/jail-gpu-standin.so', 'standin');
  const libDir = o.libDir === undefined ? undefined : checkAbsolutePath(o.libDir, 'libDir');
  const timeout = o.lockTimeout ?? DEFAULT_LOCK_TIMEOUT_S;
  const fstabFile = checkAbsolutePath(o.fstabFile ?? '/etc/fstab', 'fstabFile');

  const standinOf = (f: StandinFacts) => {
    const lib = standinLibrary(f.arch);
    if (!lib) throw new Refusal(`no stand-in library for ${f.arch} (made for ${STANDIN_ARCHES.join(', ')})`);
    return lib;
  };
  /** Every name to cover: placeholders seen, stand-ins bound already, and the GPU hosts' targets. */
  const names = (f: StandinFacts) => [...new Set([...f.placeholders.keys(), ...f.bound, ...f.fleetLibs.keys()])].sort();
  const targetOf = (f: StandinFacts, name: string) => `${f.realLibDir}/${name}`;
  const newFstab = (f: StandinFacts) => {
    const all = names(f);
    const block = bindFstabBlock(
      jail,
      all.map((n) => ({ source: standinPath, target: targetOf(f, n), readOnly: true })),
      `stand-in for the GPU libraries of the jail (${f.arch})`,
    );
    return editBlock(contentText(f.fstab), block, MARKER, all.length ? 'present' : 'absent');
  };

  const readFacts = ({ own, table, fstab }: MountProbeOutput): StandinFacts => {
    const cut = own.indexOf(STANDIN_MARK);
    if (cut < 0) throw new ProbeError(`unexpected probe output: ${own.slice(0, 200)}`);
    const f: StandinFacts = {
      role: 'cpu',
      arch: '',
      libDir: '',
      realLibDir: '',
      placeholders: new Map(),
      bound: new Set(),
      mounts: parseMountTable(table),
      standin: parseFileFacts(own.slice(cut + STANDIN_MARK.length)),
      fstab: parseFileFacts(fstab),
      fleetLibs: new Map(),
    };
    for (const line of own.slice(0, cut).split('\n')) {
      const t = line.split('\t');
      if (t[0] === 'sti-ph' && t.length === 3) f.placeholders.set(t[1], Number(t[2]));
      else if (t[0] === 'sti-bound' && t.length === 2) f.bound.add(t[1]);
      else if (line.startsWith('sti-arch=')) f.arch = line.slice(9);
      else if (line.startsWith('sti-libdir=')) f.libDir = line.slice(11);
      else if (line.startsWith('sti-real=')) f.realLibDir = line.slice(9);
    }
    f.realLibDir ||= `${jail}${f.libDir}`;
    return f;
  };

  return {
    ...common('gpu-standins', `gpu-standins:${jail}`, o),
    verifiable: true,
    fleet: jailFleetKey(o.jailId),
    writes: [standinPath, fstabFile],
    probe() {
      const body = `J=${shq(jail)}; S=${shq(standinPath)}
a=$(uname -m); echo "sti-arch=$a"
L=${libDir ? shq(libDir) : '"/usr/lib/$a-linux-gnu"'}; echo "sti-libdir=$L"
if [ -d "$J$L" ]; then
  if cd -P -- "$J$L" 2>/dev/null; then echo "sti-real=$PWD"; fi; cd /
  if [ -f "$S" ]; then find "$J$L" -maxdepth 1 -type f -name 'lib*.so.*' \\( -samefile "$S" -printf 'sti-bound\\t%f\\n' -o -size -${PLACEHOLDER_MAX_BYTES}c -printf 'sti-ph\\t%f\\t%s\\n' \\) 2>/dev/null
  else find "$J$L" -maxdepth 1 -type f -name 'lib*.so.*' -size -${PLACEHOLDER_MAX_BYTES}c -printf 'sti-ph\\t%f\\t%s\\n' 2>/dev/null; fi
fi
echo '${STANDIN_MARK.trim()}'`;
      return [inline(body), fileProbe(standinPath), mountTableProbe(`${jail}/`), fstabMarkPart(), fileProbe(fstabFile)];
    },
    ...mountProbeParsers(readFacts),
    useFleet(f, fleet) {
      const fleetLibs = new Map<string, string>();
      for (const facts of fleet.values()) {
        const g = facts as GpuDriverFacts;
        if (g?.role !== 'gpu' || g.set.problem) continue;
        for (const file of g.set.files) {
          const dir = file.target.slice(0, file.target.lastIndexOf('/'));
          if (fileKind(file) === 'lib' && dir === f.libDir) fleetLibs.set(file.target.slice(dir.length + 1), file.mode);
        }
      }
      return fleetLibs.size || f.fleetLibs.size ? { ...f, fleetLibs } : f;
    },
    diff(f): Change[] {
      const want = standinOf(f);
      const changes: Change[] = [];
      if (f.standin.type !== 'absent' && f.standin.type !== 'file') throw new Refusal(`${standinPath} is a ${f.standin.type}, not a file`);
      if (!hasContent(f.standin, want))
        changes.push({ summary: `write the GPU stand-in library ${standinPath} (${want.length} bytes, ELF ${f.arch})` });
      for (const n of names(f)) {
        const t = targetOf(f, n);
        if (f.bound.has(n)) {
          if (!f.mounts.get(t)?.options.includes('ro')) changes.push({ summary: `remount ${t} read-only` });
          continue;
        }
        if (!f.placeholders.has(n) && !f.mounts.has(t)) changes.push({ summary: `create placeholder ${t} (shared jail), if missing` });
        changes.push({ summary: `bind the stand-in ${standinPath} → ${t} (ro)` });
      }
      const after = newFstab(f);
      if (after !== contentText(f.fstab))
        changes.push({
          summary: `${fstabFile}: GPU stand-in entries`,
          diff: contentDiff(fstabFile, f.fstab.content, Buffer.from(after), f.fstab.type === 'file'),
        });
      return changes;
    },
    predictFiles: (f) => ({
      [standinPath]: predictWrite(f.standin, standinOf(f), '644'),
      [fstabFile]: predictWrite(f.fstab, Buffer.from(newFstab(f))),
    }),
    useFiles: (f, files) => ({
      ...f,
      standin: (files[standinPath] as FileFacts | undefined) ?? f.standin,
      fstab: (files[fstabFile] as FileFacts | undefined) ?? f.fstab,
    }),
    apply(f): Step[] {
      const steps: Step[] = [];
      const want = standinOf(f);
      if (!hasContent(f.standin, want)) {
        steps.push({
          name: 'GPU stand-in library',
          script: atomicWriteScript({
            path: standinPath,
            content: want,
            mode: '644',
            expectSha256: f.standin.type === 'absent' ? 'absent' : f.standin.sha256,
          }),
        });
      }
      const unbound = names(f).filter((n) => !f.bound.has(n));
      const create = unbound.filter((n) => !f.placeholders.has(n) && !f.mounts.has(targetOf(f, n)));
      if (create.length) {
        const body = create.map((n) => placeholderScript(targetOf(f, n), shq(f.fleetLibs.get(n) ?? '644'))).join('\n');
        steps.push({ name: 'GPU placeholders', script: `umask 022\n${underJailLock(jail, 'placeholders', timeout, body)}` });
      }
      const S = shq(standinPath);
      const binds = names(f).map((n) => {
        const t = shq(targetOf(f, n));
        if (f.bound.has(n)) return f.mounts.get(targetOf(f, n))?.options.includes('ro') ? '' : `mount -o remount,bind,ro ${t}`;
        // Only over a placeholder (or a stale bind): a real library at a GPU target is left alone, and this host fails.
        const guard = f.mounts.has(targetOf(f, n))
          ? ''
          : `s=$(stat -c %s -- ${t}); [ "$s" -lt ${PLACEHOLDER_MAX_BYTES} ] || { echo ${shq(`${targetOf(f, n)} is not a placeholder`)}" ($s bytes); not binding the stand-in over it" >&2; exit 7; }\n`;
        return `${guard}mount --bind -- ${S} ${t}\nmount -o remount,bind,ro ${t}`;
      });
      if (binds.some(Boolean)) steps.push({ name: 'GPU stand-in binds', script: binds.filter(Boolean).join('\n') });
      const after = newFstab(f);
      if (after !== contentText(f.fstab)) {
        steps.push({
          name: 'fstab GPU stand-ins',
          script: atomicWriteScript({
            path: fstabFile,
            content: Buffer.from(after),
            expectSha256: f.fstab.type === 'absent' ? 'absent' : f.fstab.sha256,
            backup: true,
          }),
        });
      }
      return steps;
    },
  };
}
