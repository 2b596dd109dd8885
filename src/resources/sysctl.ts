import { shq } from '../shell/quote.ts';
import { InputError } from '../util/errors.ts';
import { checkAbsolutePath } from './file-common.ts';
import { fileChange, predictFile, probeWithFile, splitWithFile, writeStep } from './managed-file.ts';
import type { FileFacts } from './file-common.ts';
import { common, type Change, type CommonOptions, type Resource, type Step } from './types.ts';

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
}

export interface SysctlFacts {
  file: FileFacts;
  /** Live value as the kernel prints it, normalised; null when the key does not exist here. */
  live: Record<string, string | null>;
  memory: HostMemory;
}

export const SYSCTL_KEY = /^[a-z0-9_]+(\.[A-Za-z0-9_-]+)+$/;
const SYSCTL_VALUE = /^[A-Za-z0-9_.:, -]*$/;

/** The kernel prints vectors with tabs (`2048\t65535`); compare with single spaces. */
export function normaliseSysctl(v: string | number): string {
  return String(v).trim().split(/\s+/).join(' ');
}

export function sysctlPath(key: string): string {
  return '/proc/sys/' + key.split('.').join('/');
}

export function renderSysctlFile(profile: string, values: Record<string, string>): string {
  const lines = [`# Managed by racksmith (profile: ${profile}). Local edits are overwritten.`];
  for (const [k, v] of Object.entries(values)) lines.push(`${k} = ${v}`);
  return lines.join('\n') + '\n';
}

/**
 * Kernel parameters: persisted in a sysctl.d drop-in and applied live. The diff compares the file
 * AND the live kernel values: a file that matches while the kernel differs is still a change.
 */
export function sysctl(o: SysctlOptions): Resource<SysctlFacts> {
  const path = checkAbsolutePath(o.file, 'sysctl file');
  const keys = Object.keys(o.values);
  if (keys.length === 0) throw new InputError(`sysctl ${path}: no values`);
  for (const k of keys) {
    if (!SYSCTL_KEY.test(k)) throw new InputError(`sysctl ${path}: invalid key ${JSON.stringify(k)}`);
    const v = o.values[k];
    if (typeof v === 'string' && !SYSCTL_VALUE.test(v)) throw new InputError(`sysctl ${path}: invalid value for ${k}: ${JSON.stringify(v)}`);
  }
  const profile = o.profile ?? path;
  const desired = (m: HostMemory): Record<string, string> =>
    Object.fromEntries(keys.map((k) => {
      const v = o.values[k];
      return [k, normaliseSysctl(typeof v === 'function' ? v(m) : v)];
    }));

  return {
    ...common('sysctl', `sysctl:${path}`, o),
    verifiable: true,
    writes: [path],
    probe() {
      const live = keys
        .map((k) => `if [ -e ${shq(sysctlPath(k))} ]; then printf '%s\\t%s\\n' ${shq(k)} "$(tr '\\t\\n' '  ' < ${shq(sysctlPath(k))})"; else printf '%s\\t!missing\\n' ${shq(k)}; fi`)
        .join('\n');
      return probeWithFile(`echo "mem=$(awk '/^MemTotal:/{print $2}' /proc/meminfo) $(getconf PAGESIZE 2>/dev/null || echo 4096)"\n${live}`, path);
    },
    parse(out) {
      const { live, file } = splitWithFile(out);
      const values: Record<string, string | null> = {};
      let memory: HostMemory = { memTotalKb: 0, pageSize: 4096 };
      for (const l of live.split('\n')) {
        if (l.startsWith('mem=')) {
          const [kb, ps] = l.slice(4).split(' ');
          memory = { memTotalKb: Number(kb), pageSize: Number(ps) || 4096 };
          continue;
        }
        const tab = l.indexOf('\t');
        if (tab < 0) continue;
        const v = l.slice(tab + 1);
        values[l.slice(0, tab)] = v === '!missing' ? null : normaliseSysctl(v);
      }
      return { file, live: values, memory };
    },
    diff(f): Change[] {
      const want = desired(f.memory);
      const changes: Change[] = [];
      const fc = fileChange(path, f.file, renderSysctlFile(profile, want));
      if (fc) changes.push(fc);
      for (const [k, v] of Object.entries(want)) {
        const live = f.live[k];
        if (live === null || live === undefined) changes.push({ summary: `${k}: unknown on this host (${sysctlPath(k)} missing)` });
        else if (live !== v) changes.push({ summary: `${k}: ${live} → ${v}` });
      }
      return changes;
    },
    predictFiles: (f) => ({ [path]: predictFile(f.file, renderSysctlFile(profile, desired(f.memory))) }),
    useFiles: (f, files) => ({ ...f, file: (files[path] as FileFacts | undefined) ?? f.file }),
    apply(f): Step[] {
      const want = desired(f.memory);
      const steps: Step[] = [];
      const w = writeStep(path, f.file, renderSysctlFile(profile, want));
      if (w) steps.push(w);
      const stale = Object.keys(want).filter((k) => f.live[k] !== want[k]);
      if (stale.length) {
        // `sysctl -p` exits 0 even when a write fails: the verify probe afterwards catches that.
        steps.push({ name: `apply ${path}`, script: `sysctl -q -p ${shq(path)}` });
      }
      return steps;
    },
  };
}
