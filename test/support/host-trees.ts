// Captured /proc, /sys and /etc trees of four kinds of host, for the facts gatherer's table tests
// (test/unit/host-facts.test.ts), and a runner that executes the real gatherer over one of them.
// Only the files the gatherer reads are kept. The GPU host's shape follows NVIDIA's driver
// README ("Using the /proc File System Interface": /proc/driver/nvidia/version and
// /proc/driver/nvidia/gpus/<domain:bus:device.function>/information) and the kernel's sysfs
// PCI layout (Documentation/PCI/sysfs-pci.rst: /sys/bus/pci/devices/<address>/{class,vendor,device,driver}),
// not a live GPU.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gatherScript } from '../../src/facts/gather-script.ts';

/** A file's content, or a symlink (sysfs's device/driver links; their targets need not exist). */
export type TreeEntry = string | { link: string };

export interface HostTree {
  /** What the stand-ins print: `uname -r`, `uname -m`, and systemd-detect-virt (absent: the host has none). */
  kernel: string;
  machine: string;
  detectVirt?: string;
  files: Record<string, TreeEntry>;
}

const cpu = (processor: number, physical?: number, core?: number, flags = 'fpu vme de pse') =>
  [
    `processor\t: ${processor}`,
    'vendor_id\t: GenuineIntel',
    ...(physical === undefined ? [] : [`physical id\t: ${physical}`]),
    ...(core === undefined ? [] : [`core id\t\t: ${core}`]),
    `flags\t\t: ${flags}`,
    '\n',
  ].join('\n');

const meminfo = (kb: number) => `MemTotal:       ${kb} kB\nMemFree:         1234567 kB\nMemAvailable:    2345678 kB\n`;

/** A network interface's sysfs files (`driver`: a device/driver link, as physical NICs have). */
function nic(name: string, mac: string, mtu: number, speed: string | null, driver?: string): Record<string, TreeEntry> {
  const d = `sys/class/net/${name}`;
  const out: Record<string, TreeEntry> = { [`${d}/address`]: `${mac}\n`, [`${d}/mtu`]: `${mtu}\n` };
  if (speed !== null) out[`${d}/speed`] = speed;
  if (driver) out[`${d}/device/driver`] = { link: `../../../../bus/pci/drivers/${driver}` };
  return out;
}

/** A block device's sysfs files; `extra` adds device/model, serial, wwid, loop/backing_file... */
function block(name: string, sectors: number, rotational: 0 | 1, extra: Record<string, string> = {}, ro = 0): Record<string, TreeEntry> {
  const d = `sys/block/${name}`;
  const out: Record<string, TreeEntry> = {
    [`${d}/size`]: `${sectors}\n`,
    [`${d}/ro`]: `${ro}\n`,
    [`${d}/queue/rotational`]: `${rotational}\n`,
  };
  for (const [k, v] of Object.entries(extra)) out[`${d}/${k}`] = v;
  return out;
}

/** A PCI device's sysfs files. */
function pci(address: string, cls: string, vendor: string, device: string, driver?: string): Record<string, TreeEntry> {
  const d = `sys/bus/pci/devices/${address}`;
  const out: Record<string, TreeEntry> = { [`${d}/class`]: `${cls}\n`, [`${d}/vendor`]: `${vendor}\n`, [`${d}/device`]: `${device}\n` };
  if (driver) out[`${d}/driver`] = { link: `../../../bus/pci/drivers/${driver}` };
  return out;
}

/** A Debian 12 KVM guest without systemd-detect-virt: virtio disk and NIC, an unused loop node, a snap's read-only loop, a RAM disk. */
export const debianVm: HostTree = {
  kernel: '6.1.0-18-amd64',
  machine: 'x86_64',
  files: {
    'proc/meminfo': meminfo(4028520),
    'proc/cpuinfo': [cpu(0, 0, 0, 'fpu vme hypervisor lahf_lm'), cpu(1, 0, 1, 'fpu vme hypervisor lahf_lm')].join(''),
    'proc/1/environ': 'HOME=/\0TERM=linux\0',
    'etc/os-release':
      'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nVERSION="12 (bookworm)"\nID=debian\n',
    'sys/class/dmi/id/product_name': 'Standard PC (Q35 + ICH9, 2009)\n',
    'sys/class/dmi/id/sys_vendor': 'QEMU\n',
    ...nic('lo', '00:00:00:00:00:00', 65536, null),
    ...nic('ens3', '52:54:00:12:34:56', 1500, '-1\n', 'virtio_net'),
    ...block('vda', 41943040, 1, { serial: 'QM00001\n' }),
    ...block('loop0', 0, 1),
    ...block('loop1', 131072, 1, { 'loop/backing_file': '/var/lib/snapd/snaps/core22_1122.snap\n' }, 1),
    ...block('ram0', 131072, 0),
    ...pci('0000:00:01.0', '0x030000', '0x1234', '0x1111', 'bochs-drm'),
    ...pci('0000:00:02.0', '0x020000', '0x1af4', '0x1000', 'virtio-pci'),
  },
};

/** A Rocky Linux 9 server on bare metal: 2 sockets x 2 cores x 2 threads, a 10G NIC and a bond, an HDD and an NVMe drive. */
export const rockyMetal: HostTree = {
  kernel: '5.14.0-427.13.1.el9_4.x86_64',
  machine: 'x86_64',
  detectVirt: 'none',
  files: {
    'proc/meminfo': meminfo(263842716),
    'proc/cpuinfo': [cpu(0, 0, 0), cpu(1, 0, 1), cpu(2, 1, 0), cpu(3, 1, 1), cpu(4, 0, 0), cpu(5, 0, 1), cpu(6, 1, 0), cpu(7, 1, 1)].join(
      '',
    ),
    'proc/1/environ': 'HOME=/\0',
    'etc/os-release':
      'NAME="Rocky Linux"\nVERSION="9.4 (Blue Onyx)"\nID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\nPLATFORM_ID="platform:el9"\n',
    'sys/class/dmi/id/product_name': 'PowerEdge R740xd\n',
    'sys/class/dmi/id/sys_vendor': 'Dell Inc.\n',
    ...nic('lo', '00:00:00:00:00:00', 65536, null),
    ...nic('eno1', 'B4:96:91:0A:0B:0C', 9000, '10000\n', 'ixgbe'),
    ...nic('eno2', 'b4:96:91:0a:0b:0d', 1500, '', 'ixgbe'),
    ...nic('bond0', 'b4:96:91:0a:0b:0c', 9000, '10000\n'),
    ...block('sda', 7814037168, 1, { 'device/model': 'ST4000NM0035-1V4\n', 'device/wwid': 'naa.5000c500a1b2c3d4\n' }),
    ...block('nvme0n1', 3750748848, 0, {
      'device/model': 'SAMSUNG MZQLB1T9HAJR-00007              \n',
      'device/serial': 'S4EWNX0R123456      \n',
      wwid: 'eui.0025388b91b12345\n',
    }),
  },
};

/** An Alpine container on an ARM host (podman): no DMI, no disks, a veth without a driver link, cpuinfo without topology. */
export const alpineContainer: HostTree = {
  kernel: '6.8.0-1008-raspi',
  machine: 'aarch64',
  files: {
    'proc/meminfo': meminfo(8000000),
    'proc/cpuinfo':
      'processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd\n\nprocessor\t: 1\nBogoMIPS\t: 108.00\n\nprocessor\t: 2\n\nprocessor\t: 3\n',
    'proc/1/environ': 'PATH=/usr/bin\0container=podman\0HOME=/root\0',
    'etc/os-release': "NAME='Alpine Linux'\nID=alpine\nVERSION_ID=3.19.1\nPRETTY_NAME='Alpine Linux v3.19'\n",
    'run/.containerenv': '',
    ...nic('lo', '00:00:00:00:00:00', 65536, null),
    ...nic('eth0', '0a:58:0a:58:00:05', 1450, '10000\n'),
  },
};

/** An Ubuntu 22.04 GPU server: 2 NVIDIA A100 (3D controllers, driver loaded) and the board's ASPEED VGA. */
export const gpuServer: HostTree = {
  kernel: '5.15.0-105-generic',
  machine: 'x86_64',
  detectVirt: 'none',
  files: {
    'proc/meminfo': meminfo(1056462336),
    'proc/cpuinfo': [cpu(0, 0, 0), cpu(1, 0, 1), cpu(2, 1, 0), cpu(3, 1, 1)].join(''),
    'etc/os-release':
      'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=jammy\n',
    ...nic('ens1f0np0', '0c:42:a1:11:22:33', 9000, '100000\n', 'mlx5_core'),
    ...block('nvme0n1', 7501476528, 0, { 'device/model': 'Dell Ent NVMe CM6 RI 3.84TB\n', 'device/serial': 'Y0Z0A01BT1234\n' }),
    ...pci('0000:03:00.0', '0x030000', '0x1a03', '0x2000', 'ast'),
    ...pci('0000:3b:00.0', '0x030200', '0x10de', '0x20b5', 'nvidia'),
    ...pci('0000:86:00.0', '0x030200', '0x10de', '0x20b5', 'nvidia'),
    ...pci('0000:5e:00.0', '0x020000', '0x15b3', '0x101d', 'mlx5_core'),
    'proc/driver/nvidia/gpus/0000:3b:00.0/information':
      'Model: \t\t NVIDIA A100 80GB PCIe\nIRQ:   \t\t 160\nGPU UUID: \t GPU-6c1e9e0b-8a3f-2b1d-7a55-0f2c4f1e9d01\nVideo BIOS: \t 92.00.68.00.01\nBus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\nBus Location: \t 0000:3b:00.0\nDevice Minor: \t 0\nGPU Excluded:\t No\n',
    'proc/driver/nvidia/gpus/0000:86:00.0/information':
      'Model: \t\t NVIDIA A100 80GB PCIe\nIRQ:   \t\t 161\nGPU UUID: \t GPU-0d9b2c71-4e6a-9f3c-1b2a-5c8d7e6f0a12\nVideo BIOS: \t 92.00.68.00.01\nBus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\nBus Location: \t 0000:86:00.0\nDevice Minor: \t 1\nGPU Excluded:\t No\n',
    'proc/driver/nvidia/version':
      'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n',
  },
};

/** Write `tree` under a fresh directory and run the gatherer over it (stand-ins first in PATH): its output. */
export function gatherOver(tree: HostTree): string {
  const dir = mkdtempSync(join(tmpdir(), 'rs-host-tree-'));
  const root = join(dir, 'root');
  for (const [path, entry] of Object.entries(tree.files)) {
    const at = join(root, path);
    mkdirSync(dirname(at), { recursive: true });
    if (typeof entry === 'string') writeFileSync(at, entry);
    else symlinkSync(entry.link, at);
  }
  mkdirSync(join(root, 'sys/block'), { recursive: true }); // (a host with no disk still has the directory)
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  // Only the tools the gatherer uses, so the runner's own systemd-detect-virt is not found.
  for (const tool of ['sed', 'grep', 'head', 'readlink', 'tr']) {
    symlinkSync(
      execFileSync('/bin/sh', ['-c', `command -v ${tool}`])
        .toString()
        .trim(),
      join(bin, tool),
    );
  }
  writeFileSync(join(bin, 'uname'), `#!/bin/sh\ncase "$1" in -r) echo '${tree.kernel}' ;; -m) echo '${tree.machine}' ;; esac\n`, {
    mode: 0o755,
  });
  if (tree.detectVirt !== undefined)
    writeFileSync(join(bin, 'systemd-detect-virt'), `#!/bin/sh\necho '${tree.detectVirt}'\n[ '${tree.detectVirt}' != none ]\n`, {
      mode: 0o755,
    });
  return execFileSync('/bin/sh', ['-c', gatherScript(root)], { env: { PATH: bin } }).toString();
}
