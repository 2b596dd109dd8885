import { inline, probed, type ProbeBatch } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { SYSCTL } from '../../contract/state-topics.ts';
import { InputError } from '../../util/errors.ts';
import { checkAbsolutePath, fileFacts, type FileFacts } from '../core/file-common.ts';
import { FileWrite, managedFile } from '../core/managed-file.ts';
import { applyFloors, isNumericSysctl, keptText, type NeverLower } from './sysctl-floor.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';

/** Host facts a value may be computed from (RAM-scaled values). */
export interface HostMemory {
  memTotalKb: number;
  pageSize: number;
}

export type SysctlValue = number | string | ((m: HostMemory) => number | string);

export interface SysctlOptions extends CommonOptions {
  /** Drop-in file, e.g. /etc/sysctl.d/90-racksmith-net.conf. */
  file: string;
  values: Record<string, SysctlValue>;
  /** Name shown in the file header. */
  profile?: string;
  /**
   * Keys set only where the kernel has them (net.netfilter.* exists once nf_conntrack is loaded):
   * written with `-` (the loader ignores them where absent), no change where missing.
   */
  optional?: string[];
  /**
   * Floors (`sysctl_never_lower`): `true` for every numeric key, or a list of keys (keys of other
   * resources are ignored here). A live value already higher is kept and written, field by field.
   */
  neverLower?: NeverLower;
}

export interface SysctlFacts {
  file: FileFacts;
  /** Live value as the kernel prints it, normalised; null when the key does not exist here. */
  live: Record<string, string | null>;
  memory: HostMemory;
}

export const SYSCTL_KEY = /^[a-z0-9_]+(\.[A-Za-z0-9_-]+)+$/;
const SYSCTL_VALUE = /^[A-Za-z0-9_.:, -]*$/;

/**
 * Shared by every sysctl resource of a script (one part, run once): RAM and page size. The page
 * size is the shell's own first mapping's KernelPageSize (builtins only: getconf is a process on
 * every host and run), getconf where smaps cannot tell.
 */
export const MEMORY_PROBE = `read -r _ kb _ < /proc/meminfo
rs_ps=
while read -r k v _; do case $k in KernelPageSize:) rs_ps=$v; break ;; esac; done 2>/dev/null < /proc/self/smaps
case $rs_ps in ''|*[!0-9]*) rs_ps=$(getconf PAGESIZE 2>/dev/null || echo 4096) ;; *) rs_ps=$((rs_ps * 1024)) ;; esac
echo "mem=$kb $rs_ps"`;

/** The boot-time loader's directories, highest precedence first (systemd-sysctl and procps agree). */
export const SYSCTL_DIRS = ['/etc/sysctl.d', '/run/sysctl.d', '/usr/local/lib/sysctl.d', '/usr/lib/sysctl.d', '/lib/sysctl.d'];
export const SYSCTL_CONF = '/etc/sysctl.conf';

/**
 * SYSCTL_LIVE's argument for the config files the loader reads (sysctlEffect): their listing, `@f
 * PATH` each (empty files too), then `@lines` and each line that is not blank or a comment, as
 * `grep -Hn` prints it (`PATH:N:LINE`). A key never starts with `@`.
 */
export const SYSCTL_CONF_FILES = '@conf';

/**
 * Live values of every sysctl key of a script, and the lines of the sysctl config files, in one
 * grep: a process per key adds up over dozens of keys on every host, and the shell cannot read
 * them itself (/proc/sys answers one byte per read call; dash's `read` takes a system call per
 * byte, some milliseconds for a node's config files). Per key: its value normalised (its first
 * line), null when the key does not exist here, '' when it could not be read; for
 * SYSCTL_CONF_FILES, the text described there.
 */
export const SYSCTL_LIVE: ProbeBatch<string | null> = {
  shared: true,
  script(args) {
    const keys = args.filter((a) => a !== SYSCTL_CONF_FILES);
    const lines = [
      'set --',
      ...keys.map((k) => `[ -e ${shq(sysctlPath(k))} ] && set -- "$@" ${shq(sysctlPath(k))} || echo ${shq(`missing=${k}`)}`),
    ];
    if (keys.length < args.length)
      lines.push(
        `for rs_d in ${SYSCTL_DIRS.join(' ')}; do`,
        '  for rs_f in "$rs_d"/*.conf; do [ -e "$rs_f" ] && { echo "@f $rs_f"; set -- "$@" "$rs_f"; }; done',
        'done',
        `[ -e ${SYSCTL_CONF} ] && { echo "@f ${SYSCTL_CONF}"; set -- "$@" ${SYSCTL_CONF}; }`,
      );
    // (-a: a config file with a NUL byte is still read as lines)
    lines.push('echo @lines', '[ $# -gt 0 ] && grep -aHn \'\' -- "$@" 2>/dev/null', ':');
    return lines.join('\n');
  },
  split(stdout, args) {
    const cut = stdout.indexOf('@lines\n');
    const head = cut < 0 ? stdout : stdout.slice(0, cut);
    const body = cut < 0 ? '' : stdout.slice(cut + 7);
    const missing = new Set<string>();
    const confPaths: string[] = [];
    for (const l of head.split('\n')) {
      if (l.startsWith('missing=')) missing.add(l.slice(8));
      else if (l.startsWith('@f ')) confPaths.push(l.slice(3));
    }
    // grep -Hn: /proc/sys/net/core/somaxconn:1:4096 (a value's first line is its line 1)
    const live = new Map<string, string>();
    const conf: string[] = [];
    // longest path first: a config path that is a prefix of another never takes its lines
    const byLength = [...confPaths].sort((a, b) => b.length - a.length);
    for (const l of body.split('\n')) {
      if (l.startsWith('/proc/sys/')) {
        const c = l.indexOf(':1:');
        if (c > 0 && !live.has(l.slice(0, c))) live.set(l.slice(0, c), l.slice(c + 3));
        continue;
      }
      const p = byLength.find((x) => l.startsWith(`${x}:`));
      if (p === undefined) continue;
      const numbered = l.slice(p.length + 1);
      if (!COMMENT_OR_BLANK.test(numbered.slice(numbered.indexOf(':') + 1))) conf.push(l);
    }
    return args.map((a) => {
      if (a === SYSCTL_CONF_FILES)
        return cut < 0 ? '' : `${confPaths.map((p) => `@f ${p}\n`).join('')}@lines\n${conf.map((l) => `${l}\n`).join('')}`;
      if (missing.has(a)) return null;
      const v = live.get(sysctlPath(a));
      return v === undefined ? '' : normaliseSysctl(v);
    });
  },
};

/**
 * A config line the loader skips: blank, or a comment (`#` or `;` after blanks). The blanks are
 * the C locale's [:space:], as the shell and grep read them (JavaScript's \s takes more).
 */
const COMMENT_OR_BLANK = /^[ \t\n\v\f\r]*([#;]|$)/;

/** The kernel prints vectors with tabs (`2048\t65535`); compare with single spaces. */
export function normaliseSysctl(v: string | number): string {
  return String(v).trim().split(/\s+/).join(' ');
}

// A handful of keys, asked for on every host: each path is made once.
const paths = new Map<string, string>();
export function sysctlPath(key: string): string {
  let p = paths.get(key);
  if (p === undefined) paths.set(key, (p = '/proc/sys/' + key.split('.').join('/')));
  return p;
}

export function renderSysctlFile(profile: string, values: Record<string, string>, optional: readonly string[] = []): string {
  const lines = [`# Managed by racksmith (profile: ${profile}). Local edits are overwritten.`];
  for (const [k, v] of Object.entries(values)) lines.push(`${optional.includes(k) ? '-' : ''}${k} = ${v}`);
  return lines.join('\n') + '\n';
}

/**
 * Shell that sets live values as `sysctl -w` does: each written to its /proc/sys file (by the
 * shell's printf: no process). Only the keys given (the diff's, those that drifted): `sysctl -p`
 * wrote every key of the file again, and a write can act even with the value the key has
 * (vm.drop_caches, vm.compact_memory act on every write). As with `sysctl -p`, a write
 * the kernel refuses is said on stderr and does not fail the step: the verify probe afterwards
 * judges what the kernel holds.
 */
export function liveWritesScript(values: ReadonlyArray<readonly [key: string, value: string]>): string {
  return values.map(([k, v]) => `printf '%s\\n' ${shq(v)} > ${shq(sysctlPath(k))} || :`).join('\n') || ':';
}

/** The memory line of MEMORY_PROBE. */
export function parseMemory(out: string): HostMemory {
  const mem = /^mem=(\d+) (\d+)/m.exec(out);
  return { memTotalKb: mem ? Number(mem[1]) : 0, pageSize: (mem && Number(mem[2])) || 4096 };
}

/** A live value the diff found drifted: what apply writes to its /proc/sys file. */
interface LiveValue {
  key: string;
  value: string;
}

/**
 * Kernel parameters: persisted in a sysctl.d drop-in and applied live. The diff compares the file
 * AND the live kernel values: a file that matches while the kernel differs is still a change.
 */
export function sysctl(o: SysctlOptions): Resource<SysctlFacts, FileWrite | LiveValue> {
  const path = checkAbsolutePath(o.file, 'sysctl file');
  const keys = Object.keys(o.values);
  if (keys.length === 0) throw new InputError(`sysctl ${path}: no values`);
  for (const k of keys) {
    if (!SYSCTL_KEY.test(k)) throw new InputError(`sysctl ${path}: invalid key ${JSON.stringify(k)}`);
    const v = o.values[k];
    if (typeof v === 'string' && !SYSCTL_VALUE.test(v))
      throw new InputError(`sysctl ${path}: invalid value for ${k}: ${JSON.stringify(v)}`);
  }
  const profile = o.profile ?? path;
  const optional = o.optional ?? [];
  for (const k of optional) if (!keys.includes(k)) throw new InputError(`sysctl ${path}: optional key ${k} is not among its values`);
  const neverLower = o.neverLower;
  if (Array.isArray(neverLower))
    for (const k of neverLower) {
      const v = o.values[k];
      if (typeof v === 'string' && !isNumericSysctl(normaliseSysctl(v)))
        throw new InputError(`sysctl ${path}: ${k} = ${v} is not numeric: it cannot be a floor (never lower)`);
    }
  const desired = (m: HostMemory): Record<string, string> =>
    Object.fromEntries(
      keys.map((k) => {
        const v = o.values[k];
        return [k, normaliseSysctl(typeof v === 'function' ? v(m) : v)];
      }),
    );
  const mf = managedFile<SysctlFacts>({ path, get: (f) => f.file, set: (f, file) => ({ ...f, file }), mode: '644' });

  return {
    ...common('sysctl', `sysctl:${path}`, o),
    verifiable: true,
    files: [mf],
    // A key set in two files flips at every run, and the boot order decides which value wins.
    claims: [`file:${path}`, ...keys.map((k) => `sysctl:${k}`)],
    ...probed(
      () => ({ memory: inline(MEMORY_PROBE), live: keys.map((k) => ({ batch: SYSCTL_LIVE, arg: k })), file: mf.probe() }),
      (answers) => {
        const live: Record<string, string | null> = {};
        keys.forEach((k, i) => (live[k] = answers.live[i]));
        return { file: fileFacts(answers.file), live, memory: parseMemory(answers.memory) };
      },
    ),
    diff(f) {
      const floored = applyFloors(neverLower, desired(f.memory), f.live);
      const want = floored.values;
      const kept = keptText(floored.kept);
      const changes: Change<FileWrite | LiveValue>[] = mf.changes(f, renderSysctlFile(profile, want, optional), {
        create: `create ${path}${kept}`,
        update: `update ${path}${kept}`,
      });
      for (const [k, v] of Object.entries(want)) {
        const live = f.live[k];
        if (live === null && optional.includes(k)) continue; // not on this host (its module is not loaded)
        // Refused in check mode as at apply: a reviewed plan would fail there. A key a module brings
        // is `optional`, or its resource depends on the kmod that loads it (pending until then).
        if (live === null || live === undefined)
          throw new Refusal(
            `the host has no sysctl ${k}: ${sysctlPath(k)} does not exist (a module not loaded, or not in this kernel or namespace)`,
          );
        if (live !== v) changes.push({ summary: `${k}: ${live} → ${v}`, data: { key: k, value: v } });
      }
      return changes;
    },
    apply(_, changes): Step[] {
      const steps = mf.steps(changes);
      // the values the diff found drifted, in the file's order
      const drifted = changes.flatMap((c) => (c.data instanceof FileWrite || !c.data ? [] : [[c.data.key, c.data.value] as const]));
      if (drifted.length) steps.push({ name: `apply ${path}`, script: liveWritesScript(drifted), touches: [SYSCTL] });
      return steps;
    },
  };
}
