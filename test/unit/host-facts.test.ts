// The host facts gatherer and its parsers (src/facts/): the real gather script run over captured
// /proc, /sys and /etc trees (test/support/host-trees.ts), and the pure decisions in tables.
import { describe, expect, it } from 'vitest';
import { parseFacts, cpus, disk, memTotal, nvidiaVersion } from '../../src/facts/parse.ts';
import { keyValues, splitFacts } from '../../src/facts/frame.ts';
import { osFamily, parseOsRelease } from '../../src/facts/os-release.ts';
import { virtualization, type VirtEvidence } from '../../src/facts/virtualization.ts';
import type { HostFacts } from '../../src/facts/types.ts';
import { alpineContainer, debianVm, gatherOver, gpuServer, rockyMetal, type HostTree } from '../support/host-trees.ts';

describe('the gatherer over captured host trees', () => {
  it.each<[string, HostTree, HostFacts]>([
    [
      'a Debian KVM guest without systemd-detect-virt (DMI names the hypervisor; unused and read-only loops, RAM disks left out)',
      debianVm,
      {
        arch: 'x86_64',
        os: { id: 'debian', versionId: '12', family: 'debian' },
        kernel: '6.1.0-18-amd64',
        virtualization: 'kvm',
        memory: { totalBytes: 4028520 * 1024 },
        cpu: { count: 2, cores: 2 },
        nics: [{ name: 'ens3', mac: '52:54:00:12:34:56', mtu: 1500, driver: 'virtio_net', speedMbps: null }],
        disks: [{ name: 'vda', rotational: true, sizeBytes: 41943040 * 512, serial: 'QM00001', wwn: null, model: null }],
        gpus: [{ vendor: '0x1234', model: null, pciId: '1234:1111', address: '0000:00:01.0' }],
      },
    ],
    [
      'a Rocky Linux server on bare metal (2 sockets x 2 cores x 2 threads; ID_LIKE rhel)',
      rockyMetal,
      {
        arch: 'x86_64',
        os: { id: 'rocky', versionId: '9.4', family: 'rhel' },
        kernel: '5.14.0-427.13.1.el9_4.x86_64',
        virtualization: 'none',
        memory: { totalBytes: 263842716 * 1024 },
        cpu: { count: 8, cores: 4 },
        nics: [
          { name: 'bond0', mac: 'b4:96:91:0a:0b:0c', mtu: 9000, driver: null, speedMbps: 10000 },
          { name: 'eno1', mac: 'b4:96:91:0a:0b:0c', mtu: 9000, driver: 'ixgbe', speedMbps: 10000 },
          { name: 'eno2', mac: 'b4:96:91:0a:0b:0d', mtu: 1500, driver: 'ixgbe', speedMbps: null },
        ],
        disks: [
          {
            name: 'nvme0n1',
            rotational: false,
            sizeBytes: 3750748848 * 512,
            serial: 'S4EWNX0R123456',
            wwn: 'eui.0025388b91b12345',
            model: 'SAMSUNG MZQLB1T9HAJR-00007',
          },
          {
            name: 'sda',
            rotational: true,
            sizeBytes: 7814037168 * 512,
            serial: null,
            wwn: 'naa.5000c500a1b2c3d4',
            model: 'ST4000NM0035-1V4',
          },
        ],
        gpus: [],
      },
    ],
    [
      'an Alpine container on ARM (podman; no topology in cpuinfo: cores = CPUs; no disks)',
      alpineContainer,
      {
        arch: 'aarch64',
        os: { id: 'alpine', versionId: '3.19.1', family: 'alpine' },
        kernel: '6.8.0-1008-raspi',
        virtualization: 'podman',
        memory: { totalBytes: 8000000 * 1024 },
        cpu: { count: 4, cores: 4 },
        nics: [{ name: 'eth0', mac: '0a:58:0a:58:00:05', mtu: 1450, driver: null, speedMbps: 10000 }],
        disks: [],
        gpus: [],
      },
    ],
    [
      'an Ubuntu GPU server: 2 NVIDIA GPUs with the driver loaded, the board VGA without',
      gpuServer,
      {
        arch: 'x86_64',
        os: { id: 'ubuntu', versionId: '22.04', family: 'debian' },
        kernel: '5.15.0-105-generic',
        virtualization: 'none',
        memory: { totalBytes: 1056462336 * 1024 },
        cpu: { count: 4, cores: 4 },
        nics: [{ name: 'ens1f0np0', mac: '0c:42:a1:11:22:33', mtu: 9000, driver: 'mlx5_core', speedMbps: 100000 }],
        disks: [
          {
            name: 'nvme0n1',
            rotational: false,
            sizeBytes: 7501476528 * 512,
            serial: 'Y0Z0A01BT1234',
            wwn: null,
            model: 'Dell Ent NVMe CM6 RI 3.84TB',
          },
        ],
        gpus: [
          { vendor: '0x1a03', model: null, pciId: '1a03:2000', address: '0000:03:00.0' },
          { vendor: 'nvidia', model: 'NVIDIA A100 80GB PCIe', pciId: '10de:20b5', address: '0000:3b:00.0', driverVersion: '535.161.08' },
          { vendor: 'nvidia', model: 'NVIDIA A100 80GB PCIe', pciId: '10de:20b5', address: '0000:86:00.0', driverVersion: '535.161.08' },
        ],
      },
    ],
  ])('%s', (_name, tree, facts) => {
    expect(parseFacts(gatherOver(tree))).toEqual(facts);
  });

  it('an NVIDIA GPU whose driver is not loaded (bound to vfio-pci, no /proc/driver/nvidia) has no model nor driverVersion', () => {
    const files = Object.fromEntries(
      Object.entries(gpuServer.files)
        .filter(([p]) => !p.startsWith('proc/driver/nvidia'))
        .map(([p, e]) => [p, p === 'sys/bus/pci/devices/0000:3b:00.0/driver' ? { link: '../../../bus/pci/drivers/vfio-pci' } : e]),
    );
    const gpus = parseFacts(gatherOver({ ...gpuServer, files })).gpus.filter((g) => g.vendor === 'nvidia');
    expect(gpus).toEqual([
      { vendor: 'nvidia', model: null, pciId: '10de:20b5', address: '0000:3b:00.0' },
      { vendor: 'nvidia', model: null, pciId: '10de:20b5', address: '0000:86:00.0' },
    ]);
  });

  it('a file whose content looks like a frame stays content (os-release cannot add a disk)', () => {
    const tree = { ...rockyMetal, files: { ...rockyMetal.files, 'etc/os-release': 'ID=evil\n@ disk sdz\n|size=100\n@ end\n' } };
    const facts = parseFacts(gatherOver(tree));
    expect(facts.os.id).toBe('evil');
    expect(facts.disks.map((d) => d.name)).toEqual(['nvme0n1', 'sda']);
  });
});

describe('the framed output', () => {
  it.each<[string, string, string]>([
    ['another program', 'hello\n', "not the facts gatherer's output"],
    ['an empty output', '', "not the facts gatherer's output"],
    ['cut short', '@ racksmith-facts 1\n\n@ uname\n|kernel=6.1\n', 'did not finish'],
  ])('%s is an error, never facts', (_name, text, error) => {
    expect(() => splitFacts(text)).toThrow(error);
  });

  it('sections in order, content lines without their prefix, blank lines skipped', () => {
    expect(splitFacts('@ racksmith-facts 1\n\n@ a\n|x=1\n\n|y\n\n@ nic eth0\n@ end\n')).toEqual([
      { name: 'a', lines: ['x=1', 'y'] },
      { name: 'nic eth0', lines: [] },
    ]);
  });

  it('key=value: the first non-empty value of a key wins', () => {
    expect([...keyValues(['serial=', 'serial=ABC ', 'serial=DEF', 'noequals', '=x'])]).toEqual([['serial', 'ABC']]);
  });
});

describe('os-release and the OS family', () => {
  it('quoting as os-release(5) allows', () => {
    const v = parseOsRelease([
      '# comment',
      'ID="opensuse-leap"',
      "NAME='openSUSE Leap'",
      'X="a \\"b\\" \\$c"',
      'VERSION_ID=15.5',
      'bad line',
    ]);
    expect(Object.fromEntries(v)).toEqual({ ID: 'opensuse-leap', NAME: 'openSUSE Leap', X: 'a "b" $c', VERSION_ID: '15.5' });
  });

  it.each<[string, string, string]>([
    ['debian', '', 'debian'],
    ['ubuntu', 'debian', 'debian'],
    ['pop', 'ubuntu debian', 'debian'],
    ['rhel', 'fedora', 'rhel'],
    ['rocky', 'rhel centos fedora', 'rhel'],
    ['almalinux', 'rhel centos fedora', 'rhel'],
    ['amzn', 'centos rhel fedora', 'rhel'],
    ['fedora', '', 'rhel'],
    ['sles', '', 'suse'],
    ['opensuse-tumbleweed', 'opensuse suse', 'suse'],
    ['arch', '', 'arch'],
    ['manjaro', 'arch', 'arch'],
    ['alpine', '', 'alpine'],
    ['someos', 'unknown', 'other'],
    ['', '', 'other'],
  ])('%s (ID_LIKE %j): %s', (id, like, family) => {
    expect(osFamily(id, like)).toBe(family);
  });
});

describe('virtualization', () => {
  const none: VirtEvidence = { containerenv: false, dockerenv: false, hypervisorFlag: false };
  it.each<[string, Partial<VirtEvidence>, string]>([
    ['bare metal', {}, 'none'],
    ["systemd-detect-virt's answer wins", { detect: 'microsoft', product: 'KVM', hypervisorFlag: true }, 'microsoft'],
    ["systemd-detect-virt's none", { detect: 'none', hypervisorFlag: true }, 'none'],
    ["PID 1's container= before DMI", { container: 'lxc', product: 'KVM' }, 'lxc'],
    ['podman marker', { containerenv: true }, 'podman'],
    ['docker marker', { dockerenv: true, product: 'VMware Virtual Platform' }, 'docker'],
    ['QEMU by product', { product: 'Standard PC (i440FX + PIIX, 1996)', vendor: 'QEMU' }, 'kvm'],
    ['KVM', { product: 'KVM' }, 'kvm'],
    ['VMware', { product: 'VMware Virtual Platform', vendor: 'VMware, Inc.' }, 'vmware'],
    ['VirtualBox', { product: 'VirtualBox', vendor: 'innotek GmbH' }, 'oracle'],
    ['Hyper-V', { product: 'Virtual Machine', vendor: 'Microsoft Corporation' }, 'microsoft'],
    ['EC2', { product: 't3.large', vendor: 'Amazon EC2' }, 'amazon'],
    ['Xen', { product: 'HVM domU', vendor: 'Xen' }, 'xen'],
    ['a hypervisor of no known name', { product: 'Custom Board', hypervisorFlag: true }, 'vm'],
    ['a server by its DMI name', { product: 'PowerEdge R740xd', vendor: 'Dell Inc.' }, 'none'],
  ])('%s: %s', (_name, e, expected) => {
    expect(virtualization({ ...none, ...e })).toBe(expected);
  });
});

describe('memory and CPUs', () => {
  it('MemTotal in bytes; none is an error', () => {
    expect(memTotal(['MemTotal:       16384 kB'])).toBe(16384 * 1024);
    expect(() => memTotal([])).toThrow('no MemTotal');
  });

  it.each<[string, string[], { count: number; cores: number }]>([
    [
      'one socket, hyper-threads',
      ['processor : 0', 'physical id : 0', 'core id : 0', 'processor : 1', 'physical id : 0', 'core id : 0'],
      { count: 2, cores: 1 },
    ],
    [
      'the same core id on two sockets is two cores',
      ['processor : 0', 'physical id : 0', 'core id : 3', 'processor : 1', 'physical id : 1', 'core id : 3'],
      { count: 2, cores: 2 },
    ],
    ['no topology (ARM): one core per CPU', ['processor : 0', 'processor : 1', 'processor : 2'], { count: 3, cores: 3 }],
  ])('%s', (_name, lines, expected) => {
    expect(cpus(lines)).toEqual(expected);
  });

  it('no processor is an error', () => {
    expect(() => cpus([])).toThrow('no processor');
  });
});

describe('which block devices are disks', () => {
  const v = (o: Record<string, string>) => new Map(Object.entries({ size: '2097152', ro: '0', rotational: '0', ...o }));
  it.each<[string, string, Record<string, string>, boolean]>([
    ['a SATA disk', 'sda', {}, true],
    ['an NVMe namespace', 'nvme0n1', {}, true],
    ['a loop device attached to a writable file (a test bed data disk)', 'loop7', { loop: 'attached' }, true],
    ['an unused loop node', 'loop0', {}, false],
    ['a read-only loop (a snap, an ISO)', 'loop3', { loop: 'attached', ro: '1' }, false],
    ['a RAM disk', 'ram0', {}, false],
    ['zram swap', 'zram0', {}, false],
    ['an empty card reader (size 0)', 'sdb', { size: '0' }, false],
  ])('%s: %s', (_name, name, values, kept) => {
    expect(disk(name, v(values)) !== null).toBe(kept);
  });
});

describe('the NVIDIA driver version', () => {
  it.each<[string, string[], string | undefined]>([
    ['from /sys/module/nvidia/version', ['module=550.54.15', 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.1.1  Tue'], '550.54.15'],
    ['from the NVRM line', ['NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC 2024'], '535.161.08'],
    [
      'the open kernel module',
      [
        'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:02:47 UTC 2024',
      ],
      '550.54.15',
    ],
    ['not loaded', [], undefined],
  ])('%s', (_name, lines, expected) => {
    expect(nvidiaVersion(lines)).toBe(expected);
  });
});

describe('order', () => {
  it('NICs and disks by name with numbers as numbers, whatever the host globbed first', () => {
    const files = { ...alpineContainer.files };
    for (const n of ['eth10', 'eth2']) {
      files[`sys/class/net/${n}/address`] = '02:00:00:00:00:01\n';
      files[`sys/class/net/${n}/mtu`] = '1500\n';
    }
    for (const d of ['loop10', 'loop9']) {
      files[`sys/block/${d}/size`] = '2048\n';
      files[`sys/block/${d}/ro`] = '0\n';
      files[`sys/block/${d}/loop/backing_file`] = '/srv/disk.img\n';
    }
    const facts = parseFacts(gatherOver({ ...alpineContainer, files }));
    expect(facts.nics.map((n) => n.name)).toEqual(['eth0', 'eth2', 'eth10']);
    expect(facts.disks.map((d) => d.name)).toEqual(['loop9', 'loop10']);
  });
});
