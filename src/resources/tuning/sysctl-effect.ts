/**
 * sysctlEffect: racksmith's sysctl drop-ins checked by their effect at boot. The boot-time loader
 * (systemd-sysctl, or procps `sysctl --system`) reads every *.conf of /etc/sysctl.d, /run/sysctl.d,
 * /usr/local/lib/sysctl.d, /usr/lib/sysctl.d and /lib/sysctl.d in the order of their names (a
 * name in an earlier directory hides the same name in a later one), then /etc/sysctl.conf; the
 * last assignment of a key wins. A file read after racksmith's that sets a managed key to another
 * value would undo it at every boot (and racksmith would report drift after each reboot): that is
 * a failure naming the file:line and both values. Named legacy files (ais-k8s's 99-ais-*.conf) can
 * be taken over (moved aside: racksmith's drop-ins set their keys), and racksmith's own earlier
 * file names are removed.
 */
import { posix } from 'node:path';
import { inline, probed } from '../../contract/probe.ts';
import { common, ProbeError, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';
import { shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { checkAbsolutePath } from '../core/file-common.ts';
import {
  MEMORY_PROBE,
  normaliseSysctl,
  parseMemory,
  SYSCTL_CONF,
  SYSCTL_CONF_FILES,
  SYSCTL_DIRS,
  SYSCTL_LIVE,
  type HostMemory,
  type SysctlValue,
} from './sysctl.ts';
import { applyFloors, type NeverLower } from './sysctl-floor.ts';

/** Where a taken-over file goes (the loader reads *.conf only). */
export const TAKEN_OVER_SUFFIX = '.racksmith-taken-over';

export interface ManagedSysctls {
  file: string;
  values: Record<string, SysctlValue>;
  /** The drop-in's floors (its sysctl's `neverLower`): checked against the value it keeps. */
  neverLower?: NeverLower;
}

export interface SysctlEffectOptions extends CommonOptions {
  /** Id suffix: one check per play (`sysctl-effect:network`). */
  name: string;
  /** racksmith's drop-ins and what they set: each key is checked against the files read after it. */
  managed: ManagedSysctls[];
  /** Files to take over, paths or globs in a sysctl.d directory (`/etc/sysctl.d/99-ais-*.conf`): moved aside. */
  takeOver?: string[];
  /** racksmith's own earlier names of its drop-ins: removed. */
  retire?: string[];
}

/** One assignment in a sysctl config file. */
export interface SysctlAssignment {
  line: number;
  key: string;
  value: string;
}

export interface SysctlConfFile {
  path: string;
  assignments: SysctlAssignment[];
}

export interface SysctlEffectFacts {
  /** Every config file found, in no particular order. */
  files: SysctlConfFile[];
  memory: HostMemory;
  /** Live values of the floored drop-ins' keys (none without floors). */
  live: Record<string, string | null>;
}

type EffectData = { op: 'remove' | 'take-over'; path: string };

const TAKE_OVER = /^\/(etc|run|usr\/lib|usr\/local\/lib|lib)\/sysctl\.d\/[A-Za-z0-9._*?[\]-]+\.conf$/;

/**
 * A sysctl.d line's key as the kernel names it: a leading `-` (ignore errors) dropped, and a key
 * whose first separator is `/` read with `/` and `.` swapped (sysctl.d(5)).
 */
export function normaliseKey(raw: string): string {
  const k = raw.trim().replace(/^-/, '');
  const slash = k.indexOf('/');
  const dot = k.indexOf('.');
  if (slash >= 0 && (dot < 0 || slash < dot)) return k.replace(/[./]/g, (c) => (c === '/' ? '.' : '/'));
  return k;
}

/** The assignments of a file's lines (`N:text`, as grep -n prints them). */
export function parseAssignments(lines: string[]): SysctlAssignment[] {
  const out: SysctlAssignment[] = [];
  for (const l of lines) {
    const colon = l.indexOf(':');
    const n = Number(l.slice(0, colon));
    const text = l.slice(colon + 1);
    const eq = text.indexOf('=');
    if (!Number.isInteger(n) || eq < 0) continue;
    out.push({ line: n, key: normaliseKey(text.slice(0, eq)), value: normaliseSysctl(text.slice(eq + 1)) });
  }
  return out;
}

export function parseEffectProbe(stdout: string): SysctlConfFile[] {
  const cut = stdout.indexOf('@lines\n');
  if (cut < 0) throw new ProbeError('sysctl config listing is incomplete');
  const paths = stdout
    .slice(0, cut)
    .split('\n')
    .filter((l) => l.startsWith('@f '))
    .map((l) => l.slice(3));
  const lines = new Map<string, string[]>(paths.map((p) => [p, []]));
  // longest path first: a path that is a prefix of another never takes its lines
  const byLength = [...paths].sort((a, b) => b.length - a.length);
  for (const l of stdout.slice(cut + 7).split('\n')) {
    const p = byLength.find((x) => l.startsWith(`${x}:`));
    if (p) lines.get(p)!.push(l.slice(p.length + 1));
  }
  return paths.map((path) => ({ path, assignments: parseAssignments(lines.get(path)!) }));
}

/** The files in the order the boot-time loader reads them (a name in a higher directory hides the others). */
export function loaderOrder<T extends { path: string }>(files: readonly T[]): T[] {
  const byName = new Map<string, { file: T; rank: number }>();
  let conf: T | undefined;
  for (const f of files) {
    if (f.path === SYSCTL_CONF) {
      conf = f;
      continue;
    }
    const rank = SYSCTL_DIRS.indexOf(posix.dirname(f.path));
    if (rank < 0) continue;
    const name = posix.basename(f.path);
    const seen = byName.get(name);
    if (!seen || rank < seen.rank) byName.set(name, { file: f, rank });
  }
  const ordered = [...byName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v.file);
  return conf ? [...ordered, conf] : ordered;
}

/** A glob (`*`, `?`, `[...]`) as a RegExp over the whole string. */
function globRegExp(glob: string): RegExp {
  const re = glob
    .replace(/[.+^${}()|\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`);
}

const keyMatches = (pattern: string, key: string) => pattern === key || (/[*?[]/.test(pattern) && globRegExp(pattern).test(key));

/** A managed key that a file read later sets to another value at boot. */
export interface SysctlOverride {
  key: string;
  want: string;
  managedBy: string;
  by: string;
  line: number;
  value: string;
}

/**
 * Every later assignment that undoes a managed value at boot. `managed` gives the wanted values
 * by file (their content as racksmith will write it, whatever the files hold now); `ignore` are
 * files that will be gone (taken over, retired).
 */
export function findOverrides(
  files: readonly SysctlConfFile[],
  managed: ReadonlyArray<{ file: string; values: Record<string, string> }>,
  ignore: ReadonlySet<string> = new Set(),
): SysctlOverride[] {
  const managedPaths = new Map(managed.map((m) => [m.file, m]));
  const present = files.filter((f) => !ignore.has(f.path) && !managedPaths.has(f.path));
  const own = managed.map((m) => ({
    path: m.file,
    assignments: Object.entries(m.values).map(([key, value], i) => ({ line: i + 2, key, value })),
  }));
  const order = loaderOrder([...present, ...own]);
  const out: SysctlOverride[] = [];
  for (const m of managed) {
    const at = order.findIndex((f) => f.path === m.file);
    for (const [key, want] of Object.entries(m.values)) {
      for (const f of order.slice(at + 1)) {
        for (const a of f.assignments) {
          if (!keyMatches(a.key, key) || a.value === want) continue;
          out.push({ key, want, managedBy: m.file, by: f.path, line: a.line, value: a.value });
        }
      }
    }
  }
  return out;
}

export function overrideText(o: SysctlOverride): string {
  return `${o.key} = ${o.want} (${o.managedBy}) is overridden at boot by ${o.by}:${o.line} (${o.key} = ${o.value})`;
}

export function sysctlEffect(o: SysctlEffectOptions): Resource<SysctlEffectFacts, EffectData> {
  if (!/^[a-z0-9-]+$/.test(o.name)) throw new InputError(`sysctl effect check: invalid name ${JSON.stringify(o.name)}`);
  for (const m of o.managed) checkAbsolutePath(m.file, 'sysctl file');
  const takeOver = o.takeOver ?? [];
  for (const t of takeOver)
    if (!TAKE_OVER.test(t))
      throw new InputError(`sysctl take-over: ${JSON.stringify(t)} is not a *.conf path or glob in a sysctl.d directory`);
  const retire = (o.retire ?? []).map((p) => checkAbsolutePath(p, 'retired sysctl file'));
  const takeOverRes = takeOver.map(globRegExp);
  // The kept value depends on the live one: read with the sysctl resources' own batch (no extra process).
  const liveKeys = [...new Set(o.managed.filter((m) => m.neverLower).flatMap((m) => Object.keys(m.values)))];
  return {
    ...common('sysctl-effect', `sysctl-effect:${o.name}`, o),
    verifiable: true,
    ...probed(
      () => ({
        memory: inline(MEMORY_PROBE),
        live: liveKeys.map((k) => ({ batch: SYSCTL_LIVE, arg: k })), // each floored key's live value
        files: { batch: SYSCTL_LIVE, arg: SYSCTL_CONF_FILES }, // the config files' lines, by the same grep
      }),
      ({ memory, live, files }) => ({
        memory: parseMemory(memory),
        live: Object.fromEntries(liveKeys.map((k, i) => [k, live[i] ?? null])),
        files: parseEffectProbe(files ?? ''),
      }),
    ),
    diff(f) {
      const managed = o.managed.map((m) => {
        const want = Object.fromEntries(
          Object.entries(m.values).map(([k, v]) => [k, normaliseSysctl(typeof v === 'function' ? v(f.memory) : v)]),
        );
        return { file: m.file, values: applyFloors(m.neverLower, want, f.live).values };
      });
      const managedKeys = new Set(managed.flatMap((m) => Object.keys(m.values)));
      const changes: Change<EffectData>[] = [];
      const gone = new Set<string>();
      const problems: string[] = [];
      for (const file of f.files) {
        if (retire.includes(file.path)) {
          gone.add(file.path);
          changes.push({
            summary: `remove ${file.path} (racksmith's earlier name for its drop-in)`,
            data: { op: 'remove', path: file.path },
          });
        } else if (takeOverRes.some((re) => re.test(file.path))) {
          const unmanaged = [...new Set(file.assignments.map((a) => a.key).filter((k) => !managedKeys.has(k)))];
          if (unmanaged.length) {
            problems.push(
              `cannot take over ${file.path}: racksmith does not manage ${unmanaged.join(', ')} (add them to its sysctls first)`,
            );
            continue;
          }
          gone.add(file.path);
          changes.push({
            summary: `take over ${file.path}: moved to ${posix.basename(file.path)}${TAKEN_OVER_SUFFIX} (racksmith sets its ${file.assignments.length} keys)`,
            data: { op: 'take-over', path: file.path },
          });
        }
      }
      problems.push(...findOverrides(f.files, managed, gone).map(overrideText));
      if (problems.length) throw new Refusal(problems.join('; '));
      return changes;
    },
    apply(_, changes): Step[] {
      // A file is retired or taken over only once the drop-ins that replace it are written: the
      // plays order this check after them (`after`: skipped when one failed), and each step
      // checks again that they are there, so a failed write leaves the old file in place.
      const replaced = replacedCheck(o.managed.map((m) => m.file));
      return changes.map(({ data }) =>
        data!.op === 'remove'
          ? { name: `remove ${data!.path}`, script: `${replaced(data!.path)}rm -f -- ${shq(data!.path)}` }
          : {
              name: `take over ${data!.path}`,
              script: `${replaced(data!.path)}mv -f -- ${shq(data!.path)} ${shq(data!.path + TAKEN_OVER_SUFFIX)}`,
            },
      );
    },
  };
}

/** Shell that fails (keeping `path`) unless every one of racksmith's drop-ins is a non-empty file. */
export function replacedCheck(dropins: readonly string[]): (path: string) => string {
  return (path) =>
    dropins
      .map(
        (f) =>
          `{ [ -f ${shq(f)} ] && [ -s ${shq(f)} ]; } || { echo ${shq(`not removing ${path}: racksmith's drop-in ${f} that replaces it is not written`)} >&2; exit 1; }\n`,
      )
      .join('');
}
