import { probed } from '../../contract/probe.ts';
/**
 * The udev rule file that persists the data disks' I/O tuning across reboots and disk
 * re-plugs: one line per disk, matched by WWN/serial (or an explicit match), with the same
 * clamped values the ioTuning resource writes to sysfs. Rules are reloaded where udevd runs.
 */
import { shq } from '../../shell/quote.ts';
import { fileTopic } from '../../contract/state-topics.ts';
import { InputError } from '../../util/errors.ts';
import { BadValue, checkToken, shown } from '../../util/input-value.ts';
import {
  ioTarget,
  mergeProfiles,
  parseDiskFacts,
  profileFor,
  udevGlobError,
  udevMatch,
  UDEV_MATCH_KEY,
  udevRuleLine,
  udevRulesFile,
  type DiskFacts,
  type IoProfile,
  type ProfileName,
  type UdevEntry,
} from './blockdev-logic.ts';
import { DISK_READS, diskHelpers, diskProbeBody, type DiskSpec } from './blockdev.ts';
import { checkAbsolutePath, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite } from '../core/managed-file.ts';
import { common, Refusal, type CommonOptions, type Resource } from '../../contract/resource.ts';

export const IO_RULES_FILE = '/etc/udev/rules.d/60-racksmith-io.rules';

export interface UdevDisk {
  name: string;
  spec: DiskSpec;
  /** Explicit udev match, e.g. { KERNEL: 'loop3' } or { 'ENV{ID_SERIAL_SHORT}': 'S' }. */
  match?: Record<string, string>;
  profile?: ProfileName;
}

export interface IoUdevRulesOptions extends CommonOptions {
  path?: string;
  disks: UdevDisk[];
  profiles?: Record<ProfileName, IoProfile>;
}

export interface IoUdevFacts {
  file: FileFacts;
  disks: DiskFacts[];
}

/**
 * A disk's explicit match, checked when the resource is built: a key udev knows, a glob that
 * compiles, and nothing that would end the rule's quoted value or line (`"`, `\`, control characters).
 */
function checkUdevMatch(d: UdevDisk): void {
  for (const [k, v] of Object.entries(d.match ?? {})) {
    if (!UDEV_MATCH_KEY.test(k)) throw new InputError(`${d.name}: udev match key ${shown(k)} is not KERNEL, ENV{NAME} or ATTR{name}`);
    checkToken(v, `${d.name}: udev match ${k}`, 1024);
    const bad = /["\\]/.test(v) ? 'a quote or backslash would end the rule value' : udevGlobError(v);
    if (bad) throw new BadValue(`${d.name}: udev match ${k}=${shown(v)} is not a udev glob: ${bad}`, (s) => s === v);
  }
}

/** Rule file content for these disk facts (pure). Throws Refusal when a disk cannot be matched. */
export function ioRulesContent(disks: UdevDisk[], facts: DiskFacts[], profiles: Record<ProfileName, IoProfile>): string {
  const entries: UdevEntry[] = disks.map((d, i) => {
    const f = facts[i];
    if (f.error) throw new Refusal(`${d.name}: ${f.error}`);
    if (f.isPartition) throw new Refusal(`${d.name}: ${f.spec} is a partition (${f.kname})`);
    const profile = profileFor(f, d.profile);
    try {
      // Persist only what is deterministic: runtime caps reset at boot, the kernel re-applies them.
      const target = ioTarget(profiles[profile], f.queue, false);
      return { name: d.name, profile, line: target.values.length ? udevRuleLine(udevMatch(f, d.match), target) : undefined };
    } catch (e) {
      if (e instanceof Refusal) throw new Refusal(`${d.name} (/dev/${f.kname}): ${e.message}`);
      throw e;
    }
  });
  return udevRulesFile(entries);
}

export function ioUdevRules(o: IoUdevRulesOptions): Resource<IoUdevFacts, FileWrite> {
  const path = checkAbsolutePath(o.path ?? IO_RULES_FILE, 'udev rules path');
  for (const d of o.disks) checkUdevMatch(d);
  const profiles = o.profiles ?? mergeProfiles();
  const mf = managedFile<IoUdevFacts>({
    path,
    get: (f) => f.file,
    set: (f, file) => ({ ...f, file }),
    mode: '644',
    owner: 0,
    group: 0,
    // No udevd (containers, early boot): the rule applies when udevd starts; sysfs is already set.
    then: `udevadm control --reload-rules >/dev/null 2>&1 || echo ${shq(`udevd is not running: ${path} not reloaded (it applies when udevd starts)`)} >&2`,
  });
  return {
    ...common('udev-rules', `udev-rules:${path}`, o),
    verifiable: true,
    reads: [fileTopic(path), ...DISK_READS],
    files: [mf],
    claims: [`file:${path}`],
    // The disks' parts are their own resources' probes word for word: they run once per script.
    ...probed(
      () => ({ file: mf.probe(), helpers: diskHelpers(), disks: o.disks.map((d) => diskProbeBody(d.spec)) }),
      ({ file, disks }): IoUdevFacts => ({ file: fileFacts(file), disks: disks.map((p) => parseDiskFacts(p)) }),
    ),
    diff(f) {
      if (f.file.type !== 'file' && f.file.type !== 'absent') throw new Refusal(`${path} is a ${f.file.type}, not a file`);
      const n = o.disks.length;
      return mf.changes(f, ioRulesContent(o.disks, f.disks, profiles), { create: `create ${path} (${n} disk${n === 1 ? '' : 's'})` });
    },
    apply: (_, changes) => mf.steps(changes),
  };
}
