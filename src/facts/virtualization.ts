/** What the gatherer read about virtualization (its `virt` section and cpuinfo's hypervisor flag). */
export interface VirtEvidence {
  /** systemd-detect-virt's answer, when the host has it. */
  detect?: string;
  /** /sys/class/dmi/id product_name and sys_vendor. */
  product?: string;
  vendor?: string;
  /** `container=` of PID 1's environment (readable as root). */
  container?: string;
  /** /run/.containerenv (podman) or /.dockerenv exist. */
  containerenv: boolean;
  dockerenv: boolean;
  /** cpuinfo's `hypervisor` flag: some hypervisor, name unknown. */
  hypervisorFlag: boolean;
}

/** DMI names of the common hypervisors, as systemd-detect-virt names them. */
const DMI: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(KVM|QEMU|Standard PC|OpenStack|Google Compute Engine)/i, 'kvm'],
  [/^Amazon EC2|^Amazon/i, 'amazon'],
  [/VMware/i, 'vmware'],
  [/VirtualBox|innotek/i, 'oracle'],
  [/^Virtual Machine$|Microsoft Corporation/i, 'microsoft'],
  [/HVM domU|^Xen/i, 'xen'],
  [/Parallels/i, 'parallels'],
  [/BHYVE/i, 'bhyve'],
];

/**
 * The host's virtualization: systemd-detect-virt's answer when the host has it (it knows more
 * than racksmith does); else a container first (PID 1's `container=`, podman's and docker's
 * marker files), then a VM by its DMI names, then 'vm' for a hypervisor flag of no known name,
 * else 'none'.
 */
export function virtualization(e: VirtEvidence): string {
  if (e.detect) return e.detect;
  if (e.container) return e.container;
  if (e.containerenv) return 'podman';
  if (e.dockerenv) return 'docker';
  for (const text of [e.product, e.vendor]) for (const [re, name] of DMI) if (text && re.test(text)) return name;
  return e.hypervisorFlag ? 'vm' : 'none';
}
