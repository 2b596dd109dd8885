import { keyValues, splitFacts, type FactsSection } from './frame.ts';
import { osFamily, parseOsRelease } from './os-release.ts';
import type { Disk, Gpu, HostFacts, Nic } from './types.ts';
import { virtualization } from './virtualization.ts';

/** The gatherer's output (gather-script.ts) as typed facts. Throws on an output it cannot read. */
export function parseFacts(text: string): HostFacts {
  const sections = splitFacts(text);
  const one = (name: string): readonly string[] => sections.find((s) => s.name === name)?.lines ?? [];
  const many = (kind: string): Array<{ name: string; values: Map<string, string>; lines: string[] }> =>
    sections
      .filter((s: FactsSection) => s.name.startsWith(`${kind} `))
      .map((s) => ({ name: s.name.slice(kind.length + 1), values: keyValues(s.lines), lines: s.lines }));

  const uname = keyValues(one('uname'));
  const osr = parseOsRelease(one('os-release'));
  const id = osr.get('ID') ?? '';
  const cpuLines = one('cpuinfo');
  const virt = keyValues(one('virt'));
  const nvidia = one('nvidia');
  return {
    arch: uname.get('machine') ?? '',
    os: { id, versionId: osr.get('VERSION_ID') ?? '', family: osFamily(id, osr.get('ID_LIKE') ?? '') },
    kernel: uname.get('kernel') ?? '',
    virtualization: virtualization({
      detect: virt.get('detect'),
      product: virt.get('product'),
      vendor: virt.get('vendor'),
      container: virt.get('container'),
      containerenv: virt.has('containerenv'),
      dockerenv: virt.has('dockerenv'),
      hypervisorFlag: cpuLines.includes('hypervisor=yes'),
    }),
    memory: { totalBytes: memTotal(one('meminfo')) },
    cpu: cpus(cpuLines),
    nics: many('nic')
      .filter((n) => n.name !== 'lo')
      .map((n) => nic(n.name, n.values))
      .sort(byName),
    disks: many('disk')
      .flatMap((d) => disk(d.name, d.values) ?? [])
      .sort(byName),
    gpus: many('gpu')
      .map((g) => gpu(g.name, g.values, g.lines, nvidia))
      .sort((a, b) => (a.address < b.address ? -1 : 1)),
  };
}

// By name with numbers as numbers (loop9 before loop10, eth2 before eth10), whatever order the
// host's shell globbed them in (its locale's): a play building from the lists builds the same.
// (The collator is made at first use: making it loads ICU's data, ~6 ms of every CLI start when
// made as the module loads, and most runs gather no facts.)
let naturally: Intl.Collator | undefined;
const byName = (a: { name: string }, b: { name: string }) =>
  (naturally ??= new Intl.Collator('en', { numeric: true })).compare(a.name, b.name);

/** /proc/meminfo's MemTotal (kB) in bytes. */
export function memTotal(lines: readonly string[]): number {
  for (const line of lines) {
    const m = /^MemTotal:\s*(\d+)\s*kB/.exec(line);
    if (m) return Number(m[1]) * 1024;
  }
  throw new Error('no MemTotal in /proc/meminfo');
}

/** Logical CPUs (processor entries) and distinct cores (physical id, core id pairs; else one per CPU). */
export function cpus(lines: readonly string[]): HostFacts['cpu'] {
  let count = 0;
  let socket = '';
  const cores = new Set<string>();
  for (const line of lines) {
    const m = /^(processor|physical id|core id)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === 'processor') {
      count++;
      socket = '';
    } else if (m[1] === 'physical id') socket = m[2];
    else cores.add(`${socket}/${m[2]}`);
  }
  if (count === 0) throw new Error('no processor in /proc/cpuinfo');
  return { count, cores: cores.size || count };
}

/** A number the kernel wrote, or null: empty (a read that failed), not a number, negative (speed -1: unknown). */
function num(v: string | undefined): number | null {
  if (v === undefined || !/^\d+$/.test(v)) return null;
  return Number(v);
}

function nic(name: string, v: Map<string, string>): Nic {
  const speed = num(v.get('speed'));
  return {
    name,
    mac: (v.get('mac') ?? '').toLowerCase(),
    mtu: num(v.get('mtu')) ?? 0,
    driver: v.get('driver') || null,
    // (ethtool's "unknown" is -1, or 4294967295 / 65535 on older drivers)
    speedMbps: speed === null || speed === 0 || speed === 0xffffffff || speed === 0xffff ? null : speed,
  };
}

/**
 * A whole block device, or null for one that is no disk of the host: a RAM disk (ram*, zram*),
 * a device of size 0 (an empty card reader, an unused nbd), and a loop device unless it is
 * attached to a file and writable. That keeps a machine's data disks that are loop devices (a
 * test bed's, a disk image given to a VM builder) and leaves out the unused loop nodes and the
 * read-only images (snap packages, ISO mounts).
 */
export function disk(name: string, v: Map<string, string>): Disk | null {
  if (/^(ram|zram)\d+$/.test(name)) return null;
  const sectors = num(v.get('size'));
  if (!sectors) return null;
  if (/^loop\d+$/.test(name) && (v.get('loop') !== 'attached' || v.get('ro') !== '0')) return null;
  return {
    name,
    rotational: v.get('rotational') === '1',
    sizeBytes: sectors * 512, // /sys/block/*/size counts 512-byte sectors whatever the device's block size
    serial: v.get('serial') || null,
    wwn: v.get('wwid') || null,
    model: v.get('model') || null,
  };
}

const VENDORS: Record<string, string> = { '0x10de': 'nvidia', '0x1002': 'amd', '0x8086': 'intel' };

/** A PCI display controller; its model and driver version from NVIDIA's /proc files when its driver is loaded. */
function gpu(address: string, v: Map<string, string>, lines: readonly string[], nvidia: readonly string[]): Gpu {
  const vendorId = (v.get('vendor') ?? '').toLowerCase();
  const deviceId = (v.get('device') ?? '').toLowerCase();
  const vendor = VENDORS[vendorId] ?? vendorId;
  const model = lines.map((l) => /^Model:\s*(.*?)\s*$/.exec(l)?.[1]).find(Boolean) ?? null;
  const out: Gpu = { vendor, model, pciId: `${vendorId.replace(/^0x/, '')}:${deviceId.replace(/^0x/, '')}`, address };
  const version = vendor === 'nvidia' && v.get('driver') === 'nvidia' ? nvidiaVersion(nvidia) : undefined;
  if (version) out.driverVersion = version;
  return out;
}

/** The loaded module's version: /sys/module/nvidia/version, else the one in /proc/driver/nvidia/version's NVRM line. */
export function nvidiaVersion(lines: readonly string[]): string | undefined {
  const module = keyValues(lines).get('module');
  if (module) return module;
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..." (the open module says "Open Kernel Module for x86_64")
  const nvrm = lines.find((l) => l.startsWith('NVRM version:')) ?? '';
  return /\s(\d+\.\d+(?:\.\d+)?)\s/.exec(`${nvrm} `)?.[1];
}
