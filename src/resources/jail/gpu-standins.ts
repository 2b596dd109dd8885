import { inline, probed } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { MACHINE_ARCH } from '../core/machine-arch.ts';
import { checkAbsolutePath, contentText, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite, type ManagedFile } from '../core/managed-file.ts';
import { MOUNTINFO, mountCounts, mountTableProbe, parseMountTable, type MountEntry } from '../core/mount-table.ts';
import { editBlock } from '../core/text-edit.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';
import { jailFleetKey, type GpuDriverFacts } from './gpu-driver.ts';
import { fileKind } from './gpu-files.ts';
import { fleetSummary } from '../../contract/fleet-summary.ts';
import { standinLibrary, STANDIN_ARCHES } from './elf-standin.ts';
import {
  bindFstabBlock,
  DEFAULT_LOCK_TIMEOUT_S,
  inPlaceOf,
  placeholderScript,
  PLACEHOLDER_MAX_BYTES,
  underJailLock,
  bindOverStale,
} from './jail-shared.ts';

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
  /** The jail's mounts on a network filesystem (networkJailPaths): the binds under them wait for the network at boot. */
  networkPaths?: readonly string[];
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
  /** How many mounts each mountpoint under the jail has (stacked ones count). */
  mountCounts: Map<string, number>;
  standin: FileFacts;
  fstab: FileFacts;
  /** From the group (useFleet): the GPU hosts' library targets in this directory, with their modes. */
  fleetLibs: ReadonlyMap<string, string>;
}

/**
 * What a change does, decided in diff (besides writing the stand-in or fstab: a FileWrite). A
 * bind's overMount: something is mounted at its target (bound over, as ever); staleMounts: the
 * mounts there to let go first, an older stand-in (olderStandins) on top.
 */
export type StandinChange = {
  do: 'placeholder' | 'bind' | 'remount';
  target: string;
  mode?: string;
  overMount?: boolean;
  staleMounts?: number;
};

const MARKER = '# {mark} RACKSMITH JAIL GPU STAND-INS';

/**
 * On a CPU or login node of a jail that GPU nodes share: a harmless stand-in library (see
 * elf-standin.ts) bound read-only over every GPU library placeholder of the jail, so that every
 * entry of the shared ld.so.cache leads to a loadable object here too (Soperator binds its
 * libdummy.so the same way: complement_jail.sh, CPU workers and login nodes in GPU clusters).
 * The placeholders are the ones in the jail (versioned lib*.so.* under 64 bytes, Soperator's
 * rule) and the ones the GPU hosts of the run are about to bind (their file sets, through the
 * jail's fleet group: this host need not wait for them; missing ones are created here, under
 * the placeholder lock). This host never runs ldconfig on the shared jail: a stand-in has no
 * soname, and a cache built here would drop the drivers' entries for everyone.
 */
export function gpuStandins(o: GpuStandinOptions): Resource<StandinFacts, StandinChange | FileWrite> {
  const jail = checkAbsolutePath(o.jail, 'jail');
  const standinPath = checkAbsolutePath(o.standin ?? '/var/lib/racksmith/jail-gpu-standin.so', 'standin');
  const libDir = o.libDir === undefined ? undefined : checkAbsolutePath(o.libDir, 'libDir');
  const timeout = o.lockTimeout ?? DEFAULT_LOCK_TIMEOUT_S;
  const fstabFile = checkAbsolutePath(o.fstabFile ?? '/etc/fstab', 'fstabFile');
  const standin = managedFile<StandinFacts>({
    path: standinPath,
    get: (f) => f.standin,
    set: (f, file) => ({ ...f, standin: file }),
    mode: '644',
    stepName: 'GPU stand-in library',
  });
  const fstab = managedFile<StandinFacts>({
    path: fstabFile,
    get: (f) => f.fstab,
    set: (f, file) => ({ ...f, fstab: file }),
    backup: true,
    stepName: 'fstab GPU stand-ins',
  });

  const standinOf = (f: StandinFacts) => {
    const lib = standinLibrary(f.arch);
    if (!lib) throw new Refusal(`no stand-in library for ${f.arch} (made for ${STANDIN_ARCHES.join(', ')})`);
    return lib;
  };
  /** Every name to cover: placeholders seen, stand-ins bound already (an older one too), and the GPU hosts' targets. */
  const names = (f: StandinFacts) =>
    [...new Set([...f.placeholders.keys(), ...f.bound, ...olderStandins(f, standinPath), ...f.fleetLibs.keys()])].sort();
  const targetOf = (f: StandinFacts, name: string) => `${f.realLibDir}/${name}`;
  const newFstab = (f: StandinFacts) => {
    const all = names(f);
    const block = bindFstabBlock(
      jail,
      all.map((n) => ({ source: standinPath, target: targetOf(f, n), readOnly: true })),
      `stand-in for the GPU libraries of the jail (${f.arch})`,
      o.networkPaths,
    );
    return editBlock(contentText(f.fstab), block, MARKER, all.length ? 'present' : 'absent');
  };

  return {
    ...common('gpu-standins', `gpu-standins:${jail}`, o),
    verifiable: true,
    fleet: jailFleetKey(o.jailId),
    readsSharedState: true, // the shared jail tree
    files: [standin, fstab],
    ...probed(
      () => ({
        own: inline(standinProbe(jail, standinPath, libDir)),
        standin: standin.probe(),
        mountinfo: MOUNTINFO,
        table: mountTableProbe(`${jail}/`),
        fstab: fstab.probe(),
      }),
      (a): StandinFacts => ({
        role: 'cpu',
        ...readStandinLines(jail, a.own),
        mounts: parseMountTable(a.table),
        mountCounts: mountCounts(a.table),
        standin: fileFacts(a.standin),
        fstab: fileFacts(a.fstab),
        fleetLibs: new Map(),
      }),
    ),
    useFleet(f, fleet) {
      const fleetLibs = fleetLibsByDir(fleet).get(f.libDir) ?? NO_LIBS;
      return fleetLibs.size || f.fleetLibs.size ? { ...f, fleetLibs } : f;
    },
    diff(f): Change<StandinChange | FileWrite>[] {
      const want = standinOf(f);
      if (f.standin.type !== 'absent' && f.standin.type !== 'file') throw new Refusal(`${standinPath} is a ${f.standin.type}, not a file`);
      const text = `write the GPU stand-in library ${standinPath} (${want.length} bytes, ELF ${f.arch})`;
      const all = names(f);
      // Written only where there is something to cover (a jail without GPU nodes needs none).
      const changes: Change<StandinChange | FileWrite>[] = all.length
        ? [...standin.changes(f, want, { create: text, update: text, hideDiff: true })]
        : [];
      const older = new Set(olderStandins(f, standinPath));
      for (const n of all) {
        const target = targetOf(f, n);
        if (f.bound.has(n)) {
          if (!f.mounts.get(target)?.options.includes('ro'))
            changes.push({ summary: `remount ${target} read-only`, data: { do: 'remount', target } });
          continue;
        }
        const overMount = f.mounts.has(target);
        const staleMounts = older.has(n) ? (f.mountCounts.get(target) ?? 0) : 0;
        if (!f.placeholders.has(n) && !overMount)
          changes.push({
            summary: `create placeholder ${target} (shared jail), if missing`,
            data: { do: 'placeholder', target, mode: f.fleetLibs.get(n) },
          });
        changes.push({
          summary: `bind the stand-in ${standinPath} → ${target} (ro)${inPlaceOf(staleMounts)}`,
          data: { do: 'bind', target, overMount, staleMounts },
        });
      }
      changes.push(
        ...fstab.changes(f, newFstab(f), { create: `${fstabFile}: GPU stand-in entries`, update: `${fstabFile}: GPU stand-in entries` }),
      );
      return changes;
    },
    apply: (_, changes) => standinSteps(jail, standinPath, timeout, changes, standin, fstab),
  };
}

/** The GPU hosts' library targets of the group, by directory (name -> mode): once per group, not per host. */
const fleetLibsByDir = fleetSummary((fleet) => {
  const byDir = new Map<string, Map<string, string>>();
  for (const facts of fleet.values()) {
    const g = facts as GpuDriverFacts;
    if (g?.role !== 'gpu' || g.set.problem) continue;
    for (const file of g.set.files) {
      if (fileKind(file) !== 'lib') continue;
      const dir = file.target.slice(0, file.target.lastIndexOf('/'));
      let libs = byDir.get(dir);
      if (!libs) byDir.set(dir, (libs = new Map()));
      libs.set(file.target.slice(dir.length + 1), file.mode);
    }
  }
  return byDir;
});
const NO_LIBS: ReadonlyMap<string, string> = new Map();

/**
 * Names in the library directory where an older stand-in is bound: the stand-in file was replaced
 * since (written anew by rename), and the bind shows the deleted one (mountinfo's root: the
 * stand-in's path, relative to its filesystem, and `//deleted`). Neither the stand-in itself now
 * nor a placeholder's size, they are still to be covered: bound again, their entries kept.
 */
export function olderStandins(f: Pick<StandinFacts, 'mounts' | 'realLibDir'>, standinPath: string): string[] {
  const names: string[] = [];
  for (const [target, m] of f.mounts) {
    const slash = target.lastIndexOf('/');
    const was = m.root?.endsWith('//deleted') ? m.root.slice(0, -'//deleted'.length) : '';
    if (target.slice(0, slash) === f.realLibDir && was.startsWith('/') && standinPath.endsWith(was)) names.push(target.slice(slash + 1));
  }
  return names;
}

/** The probe's own lines: the architecture, the library directory (and its physical path), placeholders and bound stand-ins. */
function readStandinLines(jail: string, own: string) {
  const f = { arch: '', libDir: '', realLibDir: '', placeholders: new Map<string, number>(), bound: new Set<string>() };
  for (const line of own.split('\n')) {
    const t = line.split('\t');
    if (t[0] === 'sti-ph' && t.length === 3) f.placeholders.set(t[1], Number(t[2]));
    else if (t[0] === 'sti-bound' && t.length === 2) f.bound.add(t[1]);
    else if (line.startsWith('sti-arch=')) f.arch = line.slice(9);
    else if (line.startsWith('sti-libdir=')) f.libDir = line.slice(11);
    else if (line.startsWith('sti-real=')) f.realLibDir = line.slice(9);
  }
  f.realLibDir ||= `${jail}${f.libDir}`;
  return f;
}

/**
 * Shell that prints this host's architecture, the jail's library directory for it (and its
 * physical path), the placeholders in it and the names bound to the stand-in already.
 */
function standinProbe(jail: string, standinPath: string, libDir: string | undefined): string {
  return `J=${shq(jail)}; S=${shq(standinPath)}
${MACHINE_ARCH}; echo "sti-arch=$a"
L=${libDir ? shq(libDir) : '"/usr/lib/$a-linux-gnu"'}; echo "sti-libdir=$L"
if [ -d "$J$L" ]; then
  if cd -P -- "$J$L" 2>/dev/null; then echo "sti-real=$PWD"; fi; cd /
  if [ -f "$S" ]; then find "$J$L" -maxdepth 1 -type f -name 'lib*.so.*' \\( -samefile "$S" -printf 'sti-bound\\t%f\\n' -o -size -${PLACEHOLDER_MAX_BYTES}c -printf 'sti-ph\\t%f\\t%s\\n' \\) 2>/dev/null
  else find "$J$L" -maxdepth 1 -type f -name 'lib*.so.*' -size -${PLACEHOLDER_MAX_BYTES}c -printf 'sti-ph\\t%f\\t%s\\n' 2>/dev/null; fi
fi`;
}

/** The steps of the decided changes: the stand-in, missing placeholders under the jail's lock, the binds, fstab. */
function standinSteps(
  jail: string,
  standinPath: string,
  timeout: number,
  changes: readonly Change<StandinChange | FileWrite>[],
  standin: ManagedFile<StandinFacts>,
  fstab: ManagedFile<StandinFacts>,
): Step[] {
  const steps: Step[] = [...standin.steps(changes)];
  const decided = (what: StandinChange['do']) => changes.flatMap((c) => (c.data && 'do' in c.data && c.data.do === what ? [c.data] : []));
  const create = decided('placeholder');
  if (create.length) {
    const body = create.map((c) => placeholderScript(c.target, shq(c.mode ?? '644'))).join('\n');
    steps.push({ name: 'GPU placeholders', script: `umask 022\n${underJailLock(jail, 'placeholders', timeout, body)}` });
  }
  const binds = [
    ...decided('bind').map((c) => {
      const t = shq(c.target);
      // Only over a placeholder (older stand-ins unmounted first; another mount bound over): a real
      // library at a GPU target is left alone, and this host fails.
      const guard =
        c.overMount && !c.staleMounts
          ? ''
          : `s=$(stat -c %s -- ${t}); [ "$s" -lt ${PLACEHOLDER_MAX_BYTES} ] || { echo ${shq(`${c.target} is not a placeholder`)}" ($s bytes); not binding the stand-in over it" >&2; exit 7; }\n`;
      return `${bindOverStale(standinPath, c.target, c.staleMounts ?? 0, guard)}mount -o remount,bind,ro ${t}`;
    }),
    ...decided('remount').map((c) => `mount -o remount,bind,ro ${shq(c.target)}`),
  ];
  if (binds.length) steps.push({ name: 'GPU stand-in binds', script: binds.join('\n') });
  steps.push(...fstab.steps(changes));
  return steps;
}
