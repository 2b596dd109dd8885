/**
 * cpuGovernor: the CPU frequency governor of every CPU (ais-k8s: performance, its `cpufreq` tag),
 * set live through sysfs and at boot by a udev rule (CPU add events at coldplug). Where the
 * kernel has no cpufreq (VMs, containers, the test bed), the resource says "cpufreq: not
 * supported on this host".
 */
import { inline, probed } from '../../contract/probe.ts';
import { common, NotApplicable, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';
import { shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { checkAbsolutePath, fileFacts, type FileFacts } from '../core/file-common.ts';
import { FileWrite, managedFile } from '../core/managed-file.ts';

export interface CpuGovernorOptions extends CommonOptions {
  governor: string;
  rulesFile?: string;
}

export interface CpuGovernorFacts {
  /** Per CPU with cpufreq: its governor and the ones it offers. */
  cpus: Array<{ cpu: string; governor: string; available: string[] }>;
  rules: FileFacts;
}

export const CPUFREQ_RULES_FILE = '/etc/udev/rules.d/60-racksmith-cpufreq.rules';

// builtin reads only: a converged host pays no process for it
const PROBE = `for rs_c in /sys/devices/system/cpu/cpu[0-9]*; do
  [ -r "$rs_c/cpufreq/scaling_governor" ] || continue
  read -r rs_g < "$rs_c/cpufreq/scaling_governor" 2>/dev/null || continue
  rs_a=; read -r rs_a < "$rs_c/cpufreq/scaling_available_governors" 2>/dev/null
  echo "\${rs_c##*/} $rs_g|$rs_a"
done`;

export function parseGovernors(out: string): CpuGovernorFacts['cpus'] {
  return out
    .split('\n')
    .map((l) => /^(cpu\d+) (\S+)\|(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ cpu: m[1], governor: m[2], available: m[3].split(/\s+/).filter(Boolean) }));
}

/** CPU names as ranges for a summary: cpu0-3,8. */
export function cpuList(cpus: string[]): string {
  const n = cpus.map((c) => Number(c.slice(3))).sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < n.length; i++) {
    let j = i;
    while (j + 1 < n.length && n[j + 1] === n[j] + 1) j++;
    parts.push(i === j ? `${n[i]}` : `${n[i]}-${n[j]}`);
    i = j;
  }
  return `cpu${parts.join(',')}`;
}

export function cpuGovernor(o: CpuGovernorOptions): Resource<CpuGovernorFacts, string[] | FileWrite> {
  if (!/^[a-z0-9_]+$/.test(o.governor)) throw new InputError(`cpu governor: invalid name ${JSON.stringify(o.governor)}`);
  const path = checkAbsolutePath(o.rulesFile ?? CPUFREQ_RULES_FILE, 'cpufreq rules file');
  const mf = managedFile<CpuGovernorFacts>({ path, get: (f) => f.rules, set: (f, rules) => ({ ...f, rules }), mode: '644' });
  const rule = `# Managed by racksmith: CPU frequency governor at boot.\nACTION=="add", SUBSYSTEM=="cpu", KERNEL=="cpu[0-9]*", TEST=="cpufreq/scaling_governor", ATTR{cpufreq/scaling_governor}="${o.governor}"\n`;
  return {
    ...common('cpu-governor', 'cpu-governor', o),
    verifiable: true,
    files: [mf],
    claims: [`file:${path}`],
    ...probed(
      () => ({ cpus: inline(PROBE), rules: mf.probe() }),
      ({ cpus, rules }) => ({ cpus: parseGovernors(cpus), rules: fileFacts(rules) }),
    ),
    diff(f): Change<string[] | FileWrite>[] {
      if (!f.cpus.length) throw new NotApplicable('cpufreq: not supported on this host (no /sys/devices/system/cpu/cpu*/cpufreq)');
      const lacking = f.cpus.filter((c) => c.available.length && !c.available.includes(o.governor));
      if (lacking.length)
        throw new Refusal(
          `governor ${o.governor} is not offered by ${cpuList(lacking.map((c) => c.cpu))} (offered: ${lacking[0].available.join(', ')})`,
        );
      const changes: Change<string[] | FileWrite>[] = mf.changes(f, rule);
      const differ = f.cpus.filter((c) => c.governor !== o.governor);
      if (differ.length) {
        const from = [...new Set(differ.map((c) => c.governor))].join('/');
        changes.push({
          summary: `${cpuList(differ.map((c) => c.cpu))} scaling_governor: ${from} → ${o.governor}`,
          data: differ.map((c) => c.cpu),
        });
      }
      return changes;
    },
    apply(_, changes): Step[] {
      const steps = mf.steps(changes);
      for (const c of changes)
        if (Array.isArray(c.data))
          steps.push({
            name: `scaling_governor ${o.governor}`,
            script: c.data.map((cpu) => `echo ${shq(o.governor)} > /sys/devices/system/cpu/${cpu}/cpufreq/scaling_governor`).join('\n'),
          });
      return steps;
    },
  };
}
