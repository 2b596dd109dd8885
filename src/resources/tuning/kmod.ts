import { shq } from '../../shell/quote.ts';
import { KERNEL_MODULES } from '../../contract/state-topics.ts';
import { InputError } from '../../util/errors.ts';
import { inline, probed } from '../../contract/probe.ts';
import { checkAbsolutePath, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite } from '../core/managed-file.ts';
import { common, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';

export interface KmodOptions extends CommonOptions {
  modules: string[];
  /** modules-load.d file that loads them at boot. */
  file?: string;
}

export interface KmodFacts {
  file: FileFacts;
  loaded: Record<string, boolean>;
}

const MODULE = /^[A-Za-z0-9_-]+$/;

/**
 * Where a module shows itself when /sys/module does not list it (built into the kernel, without
 * parameters): br_netfilter registers the net.bridge sysctls, the file kubeadm's preflight checks.
 * Such a module costs no look into modules.builtin (a process on every host at every run).
 */
export const LOADED_EVIDENCE: Readonly<Record<string, string>> = { br_netfilter: '/proc/sys/net/bridge/bridge-nf-call-iptables' };

export function renderModulesFile(modules: string[]): string {
  return ['# Managed by racksmith. Loaded at boot by systemd-modules-load.', ...modules].join('\n') + '\n';
}

/**
 * Kernel modules loaded now (modprobe) and at boot (modules-load.d). A module counts as loaded
 * when /sys/module has it (every loaded module is there), it shows itself (LOADED_EVIDENCE) or
 * the kernel has it built in.
 */
export function kmod(o: KmodOptions): Resource<KmodFacts, FileWrite | string> {
  if (!o.modules.length) throw new InputError('kmod: no modules');
  for (const m of o.modules) if (!MODULE.test(m)) throw new InputError(`kmod: invalid module name ${JSON.stringify(m)}`);
  const path = checkAbsolutePath(o.file ?? '/etc/modules-load.d/racksmith.conf', 'kmod file');
  const content = renderModulesFile(o.modules);
  const mf = managedFile<KmodFacts>({ path, get: (f) => f.file, set: (f, file) => ({ ...f, file }), mode: '644' });
  return {
    ...common('kmod', `kmod:${path}`, o),
    verifiable: true,
    files: [mf],
    claims: [`file:${path}`],
    ...probed(
      () => {
        // Loaded modules are in /sys/module or show themselves (builtin tests); modules.builtin
        // is read once, and only when some module is in neither.
        const checks = o.modules
          .map((m) => {
            const u = m.replace(/-/g, '_');
            const shows = LOADED_EVIDENCE[u] ? ` || [ -e ${shq(LOADED_EVIDENCE[u])} ]` : '';
            return `if [ -d /sys/module/${u} ]${shows}; then echo ${shq(m)} yes; else echo ${shq(m)} '?'; rs_miss=1; fi`;
          })
          .join('\n');
        const names = [...new Set(o.modules.flatMap((m) => [m.replace(/-/g, '_'), m.replace(/_/g, '-')]))].join('|');
        return {
          live: inline(`rs_miss=
${checks}
if [ -n "$rs_miss" ]; then
  echo builtin:
  # the kernel release as uname -r gives it, read by a builtin (no process)
  read -r rs_rel 2>/dev/null < /proc/sys/kernel/osrelease || rs_rel=$(uname -r)
  grep -E '/(${names})\\.ko' "/lib/modules/$rs_rel/modules.builtin" 2>/dev/null
fi`),
          file: mf.probe(),
        };
      },
      ({ live, file }) => {
        const loaded: Record<string, boolean> = {};
        const cut = live.indexOf('builtin:\n');
        const builtin = new Set(
          cut < 0 ? [] : [...live.slice(cut).matchAll(/\/([A-Za-z0-9_-]+)\.ko/g)].map((x) => x[1].replace(/-/g, '_')),
        );
        for (const l of (cut < 0 ? live : live.slice(0, cut)).split('\n')) {
          const [m, v] = l.split(' ');
          if (m && v) loaded[m] = v === 'yes' || builtin.has(m.replace(/-/g, '_'));
        }
        return { file: fileFacts(file), loaded };
      },
    ),
    diff(f) {
      const changes: Change<FileWrite | string>[] = mf.changes(f, content);
      // (a module to load: its name is the change's data)
      for (const m of o.modules) if (!f.loaded[m]) changes.push({ summary: `load module ${m}`, data: m });
      return changes;
    },
    apply(_, changes): Step[] {
      const steps = mf.steps(changes);
      for (const c of changes)
        if (typeof c.data === 'string')
          steps.push({ name: `modprobe ${c.data}`, script: `modprobe -- ${shq(c.data)}`, touches: [KERNEL_MODULES] });
      return steps;
    },
  };
}
