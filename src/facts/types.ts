/** What `facts: true` gives a play about its host (`host.facts`): read from the host's own /proc, /sys and os-release. */
export interface HostFacts {
  /** `uname -m`: x86_64, aarch64... */
  arch: string;
  os: {
    /** os-release ID: debian, ubuntu, rhel, rocky, sles... ('' when the host has no os-release). */
    id: string;
    /** os-release VERSION_ID: 12, 22.04, 9.4 ('' when unset, e.g. a rolling release). */
    versionId: string;
    /** The family by ID and ID_LIKE: ubuntu is debian, rocky and fedora are rhel, opensuse is suse. */
    family: OsFamily;
  };
  /** `uname -r`. */
  kernel: string;
  /** systemd-detect-virt's name (kvm, vmware, docker, lxc...) or, without it, racksmith's own guess; 'none' on bare metal. */
  virtualization: string;
  memory: { totalBytes: number };
  cpu: {
    /** Logical CPUs (processor entries of /proc/cpuinfo). */
    count: number;
    /** Distinct physical cores (physical id, core id); `count` where cpuinfo does not say (most ARM kernels). */
    cores: number;
  };
  /** Every network interface but `lo`, by name. */
  nics: Nic[];
  /** Whole block devices (see docs/playbooks.md, "Host facts", for which), by name. */
  disks: Disk[];
  /** PCI display controllers (VGA 0x0300, 3D 0x0302), by PCI address. */
  gpus: Gpu[];
}

export type OsFamily = 'debian' | 'rhel' | 'suse' | 'arch' | 'alpine' | 'other';

export interface Nic {
  name: string;
  /** The hardware address, lower case ('' for interfaces without one, e.g. a tunnel). */
  mac: string;
  mtu: number;
  /** The kernel driver of its device (ixgbe, mlx5_core, virtio_net); null for virtual interfaces (bridge, bond, veth). */
  driver: string | null;
  /** Link speed; null when the link is down or the driver does not say. */
  speedMbps: number | null;
}

export interface Disk {
  /** The kernel name: sda, nvme0n1, vda, loop3. */
  name: string;
  rotational: boolean;
  sizeBytes: number;
  serial: string | null;
  /** The World Wide Name as the kernel gives it (naa.…, eui.…, t10.…); null when none. */
  wwn: string | null;
  model: string | null;
}

export interface Gpu {
  /** nvidia, amd, intel, or the PCI vendor id (0x1a03) for another. */
  vendor: string;
  /** The driver's model name (NVIDIA: /proc/driver/nvidia/gpus/<address>/information); null when no driver says. */
  model: string | null;
  /** vendor:device, the PCI ids in hex: 10de:20b2. */
  pciId: string;
  /** The PCI address: 0000:3b:00.0. */
  address: string;
  /** The loaded NVIDIA kernel module's version; absent when it is not loaded or the GPU is not NVIDIA's. */
  driverVersion?: string;
}
