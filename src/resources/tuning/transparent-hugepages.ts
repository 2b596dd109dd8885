/**
 * transparentHugepages: the kernel's transparent hugepage modes (`enabled`, `defrag` under
 * /sys/kernel/mm/transparent_hugepage), set live through sysfs and at boot by `w` lines in a
 * tmpfiles.d drop-in. Why tmpfiles.d: the knob is kernel-wide, not a device's attribute (no udev
 * event carries it) nor a /proc/sys key (sysctl.d cannot say it); systemd-tmpfiles-setup writes `w`
 * lines early at every boot, before the services that map memory start, from one declarative file
 * (no unit to enable, no daemon-reload), and the kernel command line would need a boot loader
 * change and a reboot to take effect.
 */
import { inline, probed } from '../../contract/probe.ts';
import { common, NotApplicable, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';
import { shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { checkAbsolutePath, fileFacts, type FileFacts } from '../core/file-common.ts';
import { FileWrite, managedFile } from '../core/managed-file.ts';

export const THP_DIR = '/sys/kernel/mm/transparent_hugepage';
export const THP_TMPFILES = '/etc/tmpfiles.d/racksmith-thp.conf';
/** The knobs, in the order they are probed, written and persisted. */
export const THP_KNOBS = ['enabled', 'defrag'] as const;
export type ThpKnob = (typeof THP_KNOBS)[number];
/** The modes each knob takes (Documentation/admin-guide/mm/transhuge.rst). */
export const THP_MODES: Readonly<Record<ThpKnob, readonly string[]>> = {
  enabled: ['always', 'madvise', 'never'],
  defrag: ['always', 'defer', 'defer+madvise', 'madvise', 'never'],
};

export interface TransparentHugepagesOptions extends CommonOptions {
  enabled?: string;
  defrag?: string;
  /** The tmpfiles.d drop-in (default /etc/tmpfiles.d/racksmith-thp.conf). */
  file?: string;
}

/** A knob as the kernel shows it: `always [madvise] never`. */
export interface ThpMode {
  selected: string;
  offered: string[];
}

export interface TransparentHugepagesFacts {
  /** Each knob's mode; null where the kernel has no such file. */
  knobs: Record<ThpKnob, ThpMode | null>;
  file: FileFacts;
}

type ThpData = FileWrite | { knob: ThpKnob; mode: string };

// builtin reads only: a converged host pays no process for it
const PROBE = THP_KNOBS.map(
  (k) => `if [ -r ${THP_DIR}/${k} ] && read -r rs_t < ${THP_DIR}/${k} 2>/dev/null; then echo "${k} $rs_t"; else echo "${k} -"; fi`,
).join('\n');

/** `always [madvise] never` → the bracketed word and all words; null for anything else. */
export function parseThpMode(text: string): ThpMode | null {
  const words = text.trim().split(/\s+/).filter(Boolean);
  const selected = words.filter((w) => /^\[.+\]$/.test(w));
  if (selected.length !== 1) return null;
  return { selected: selected[0].slice(1, -1), offered: words.map((w) => w.replace(/^\[(.+)\]$/, '$1')) };
}

export function parseThpProbe(out: string): Record<ThpKnob, ThpMode | null> {
  const knobs = { enabled: null, defrag: null } as Record<ThpKnob, ThpMode | null>;
  for (const line of out.split('\n')) {
    const sp = line.indexOf(' ');
    const k = line.slice(0, sp) as ThpKnob;
    if (THP_KNOBS.includes(k)) knobs[k] = parseThpMode(line.slice(sp + 1));
  }
  return knobs;
}

/** The tmpfiles.d drop-in: one `w` line per knob set. */
export function renderThpTmpfiles(want: Partial<Record<ThpKnob, string>>): string {
  const lines = ['# Managed by racksmith: transparent hugepages at boot (systemd-tmpfiles-setup writes these).'];
  for (const k of THP_KNOBS) if (want[k]) lines.push(`w ${THP_DIR}/${k} - - - - ${want[k]}`);
  return lines.join('\n') + '\n';
}

export function transparentHugepages(o: TransparentHugepagesOptions): Resource<TransparentHugepagesFacts, ThpData> {
  const want: Partial<Record<ThpKnob, string>> = {};
  for (const k of THP_KNOBS) {
    const v = o[k];
    if (v === undefined) continue;
    if (!THP_MODES[k].includes(v))
      throw new InputError(`transparent hugepages: ${k} ${JSON.stringify(v)} is not one of ${THP_MODES[k].join(', ')}`);
    want[k] = v;
  }
  const knobs = THP_KNOBS.filter((k) => want[k]);
  if (!knobs.length) throw new InputError('transparent hugepages: neither enabled nor defrag given');
  const path = checkAbsolutePath(o.file ?? THP_TMPFILES, 'transparent hugepages tmpfiles.d file');
  const mf = managedFile<TransparentHugepagesFacts>({ path, get: (f) => f.file, set: (f, file) => ({ ...f, file }), mode: '644' });
  return {
    ...common('transparent-hugepages', 'transparent-hugepages', o),
    verifiable: true,
    files: [mf],
    claims: [`file:${path}`, ...knobs.map((k) => `sysfs:${THP_DIR}/${k}`)],
    ...probed(
      () => ({ knobs: inline(PROBE), file: mf.probe() }),
      ({ knobs, file }) => ({ knobs: parseThpProbe(knobs), file: fileFacts(file) }),
    ),
    diff(f): Change<ThpData>[] {
      const missing = knobs.filter((k) => !f.knobs[k]);
      if (missing.length)
        throw new NotApplicable(
          `transparent hugepages: not supported on this host (no ${missing.map((k) => `${THP_DIR}/${k}`).join(', ')})`,
        );
      const unoffered = knobs.filter((k) => !f.knobs[k]!.offered.includes(want[k]!));
      if (unoffered.length)
        throw new Refusal(
          unoffered.map((k) => `${k} ${want[k]} is not offered by this kernel (offered: ${f.knobs[k]!.offered.join(', ')})`).join('; '),
        );
      const changes: Change<ThpData>[] = mf.changes(f, renderThpTmpfiles(want));
      for (const k of knobs) {
        const now = f.knobs[k]!.selected;
        if (now !== want[k]) changes.push({ summary: `transparent_hugepage/${k}: ${now} → ${want[k]}`, data: { knob: k, mode: want[k]! } });
      }
      return changes;
    },
    apply(_, changes): Step[] {
      const steps = mf.steps(changes);
      for (const { data } of changes) {
        if (!data || data instanceof FileWrite) continue;
        steps.push({ name: `set transparent_hugepage/${data.knob}`, script: `echo ${shq(data.mode)} > ${shq(`${THP_DIR}/${data.knob}`)}` });
      }
      return steps;
    },
  };
}
