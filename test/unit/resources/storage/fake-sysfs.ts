// A fake sysfs tree laid out as the kernel lays one out, for the storage probes run by the local
// sh over a fake root (the test bed's kernel has no device-mapper, multipath or NVMe): block
// devices under /sys/devices with their /sys/class/block, /sys/block and /sys/dev/block links,
// stacked through relative slaves/ and holders/ links, a SCSI disk's or NVMe namespace's `device`
// linked to the device that has its state. Each device's udev entry gives it the serial SER_NAME.
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FakeBlockDev {
  dir: string;
  /** How many directories its parent path has (the depth its relative links climb). */
  up: number;
}

export interface FakeDm {
  uuid: string;
  name?: string;
  suspended?: 0 | 1;
}

/** The builders over the fake root `root()` (a getter: a test may make a new root each time). */
export function fakeSysfs(root: () => string) {
  /** A block device; its dm/ directory when `dm` gives its uuid. */
  function blockDev(name: string, majmin: string, o: { parent?: string; dm?: FakeDm } = {}): FakeBlockDev {
    const parent = o.parent ?? 'virtual';
    const dir = join(root(), 'sys/devices', parent, 'block', name);
    mkdirSync(join(dir, 'queue'), { recursive: true });
    mkdirSync(join(dir, 'holders'));
    mkdirSync(join(dir, 'slaves'));
    writeFileSync(join(dir, 'dev'), `${majmin}\n`);
    writeFileSync(join(dir, 'size'), '2048\n');
    writeFileSync(join(dir, 'queue/rotational'), '0\n');
    for (const d of ['sys/dev/block', 'sys/class/block', 'sys/block', 'run/udev/data', 'dev', 'proc/self'])
      mkdirSync(join(root(), d), { recursive: true });
    symlinkSync(`../../devices/${parent}/block/${name}`, join(root(), 'sys/dev/block', majmin));
    symlinkSync(`../../devices/${parent}/block/${name}`, join(root(), 'sys/class/block', name));
    symlinkSync(`../devices/${parent}/block/${name}`, join(root(), 'sys/block', name));
    writeFileSync(join(root(), `run/udev/data/b${majmin}`), `E:ID_SERIAL_SHORT=SER_${name}\n`);
    writeFileSync(join(root(), 'dev', name), '');
    if (o.dm) {
      mkdirSync(join(dir, 'dm'));
      writeFileSync(join(dir, 'dm/uuid'), `${o.dm.uuid}\n`);
      writeFileSync(join(dir, 'dm/name'), `${o.dm.name ?? name}\n`);
      writeFileSync(join(dir, 'dm/suspended'), `${o.dm.suspended ?? 0}\n`);
    }
    return { dir, up: parent.split('/').length };
  }

  /** `upper` reads `lower` (slaves/ and holders/ links, relative as sysfs makes them). */
  function stack(upper: FakeBlockDev, lower: FakeBlockDev): void {
    const rel = (from: FakeBlockDev, to: FakeBlockDev) => '../'.repeat(from.up + 3) + to.dir.slice(join(root(), 'sys/devices').length + 1);
    symlinkSync(rel(upper, lower), join(upper.dir, 'slaves', lower.dir.split('/').pop()!));
    symlinkSync(rel(lower, upper), join(lower.dir, 'holders', upper.dir.split('/').pop()!));
  }

  /** A partition of `disk` (its directory inside the disk's, with `partition`, `dev` and `holders/`). */
  function partition(disk: FakeBlockDev, name: string, majmin: string): string {
    const dir = join(disk.dir, name);
    mkdirSync(join(dir, 'holders'), { recursive: true });
    writeFileSync(join(dir, 'partition'), '1\n');
    writeFileSync(join(dir, 'dev'), `${majmin}\n`);
    symlinkSync(`../../devices/${dir.slice(join(root(), 'sys/devices').length + 1)}`, join(root(), 'sys/class/block', name));
    return dir;
  }

  /** A SCSI disk: its `device` a link to the SCSI device (host:channel:target:lun), which has the state. */
  function scsiDisk(name: string, majmin: string, state: string): FakeBlockDev {
    const d = blockDev(name, majmin, { parent: 'pci0/host0' });
    const lun = `0:0:0:${majmin.split(':')[1]}`;
    mkdirSync(join(root(), 'sys/devices/pci0/host0', lun));
    writeFileSync(join(root(), 'sys/devices/pci0/host0', lun, 'state'), `${state}\n`);
    symlinkSync(`../../${lun}`, join(d.dir, 'device'));
    return d;
  }

  /** An NVMe controller (its state) and a namespace of it whose `device` is the controller. */
  function nvmeNamespace(name: string, majmin: string, ctrl: string, state: string): FakeBlockDev {
    const dir = join(root(), 'sys/devices/pci0', ctrl);
    if (!existsSync(join(dir, 'state'))) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'state'), `${state}\n`);
    }
    const d = blockDev(name, majmin, { parent: `pci0/${ctrl}` });
    symlinkSync('../..', join(d.dir, 'device'));
    return d;
  }

  /**
   * Native NVMe multipath: a head nvmeXnZ (its `device` the subsystem, which has no state) and a
   * hidden path nvmeXcYnZ per controller (its `device` that controller), each `STATE` or
   * `STATE/ANA` (its ana_state; none: no ANA).
   */
  function nvmeMultipath(paths: string[], head = 'nvme0n1'): void {
    const subsys = `nvme-subsys${head.slice(4, head.lastIndexOf('n'))}`;
    mkdirSync(join(root(), 'sys/devices/virtual/nvme-subsystem', subsys), { recursive: true });
    const h = blockDev(head, '259:0', { parent: `virtual/nvme-subsystem/${subsys}` });
    symlinkSync('../..', join(h.dir, 'device'));
    paths.forEach((p, i) => {
      const [state, ana] = p.split('/');
      const name = `${head.slice(0, head.lastIndexOf('n'))}c${i}${head.slice(head.lastIndexOf('n'))}`;
      const d = nvmeNamespace(name, `259:${i + 1}`, `nvme${i}`, state);
      if (ana) writeFileSync(join(d.dir, 'ana_state'), `${ana}\n`);
    });
  }

  return { blockDev, stack, partition, scsiDisk, nvmeNamespace, nvmeMultipath };
}
