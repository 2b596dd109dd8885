// --profile at a production node's size (issue #39). The bed's hosts are small where a node is
// large: 82 mount table lines against a Kubernetes node's thousands (its pods' volumes), 2 disks
// with a 42-byte udev entry against a storage node's two dozen with a kilobyte or more each. A
// probe that looks through such a table per resource grows with both, unseen on the bed. Two
// measurements make it seen:
//   - a bed host's converged exec with MOUNTS tmpfs mounts more in its mount namespace (removed
//     again after), against its own table;
//   - the converged probe of a storage node's disks given by serial, all mounted, on a fake root
//     (sysfs, udev's database, the mount table: files in a temp dir; the disk probes read a root
//     given to them) run by the local sh.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Testbed } from './bed.ts';

/** Mounts a Kubernetes node of ~300 pods holds: each pod's volumes and its containers' rootfs. */
export const NODE_MOUNTS = 1800;
/** Data disks of a storage node (AIStore targets run 10 to 24). */
export const NODE_DISKS = 24;

const MOUNT_DIR = '/run/racksmith-bench-mounts';

/** `fn` run while `host` has `n` tmpfs mounts more; they are unmounted again whatever happens. */
export async function withMoreMounts<T>(tb: Testbed, host: string, n: number, fn: (lines: number) => Promise<T>): Promise<T> {
  try {
    const r = await tb.hostExec(
      host,
      `i=1; while [ $i -le ${n} ]; do mkdir -p ${MOUNT_DIR}/$i && mount -t tmpfs -o size=4k tmpfs ${MOUNT_DIR}/$i || exit 1; i=$((i + 1)); done; wc -l < /proc/self/mountinfo`,
    );
    if (r.code !== 0) throw new Error(`bench: could not mount ${n} tmpfs on ${host}: ${r.stderr.trim()}`);
    return await fn(Number(r.stdout.trim()));
  } finally {
    await tb.hostExec(host, `for d in ${MOUNT_DIR}/*; do umount "$d" 2>/dev/null; done; rm -rf ${MOUNT_DIR}`);
  }
}

/** A udev database entry as a SATA disk has one (~1.2 KB): identity, features, links, tags. */
function udevEntry(i: number): string {
  const serial = `ZVT0${i}ABC`;
  const path = `pci-0000:3b:00.0-sas-phy${i}-lun-0`;
  const wwn = `0x5000c500d${i}abcdef`;
  return [
    `S:disk/by-id/ata-ST20000NM007D-3DJ103_${serial}`,
    `S:disk/by-path/${path}`,
    `S:disk/by-id/wwn-${wwn}`,
    'W:3',
    'I:2871623',
    ...['ATA=1', 'TYPE=disk', 'BUS=ata', 'MODEL=ST20000NM007D-3DJ103', `MODEL_ENC=ST20000NM007D-3DJ103${'\\x20'.repeat(20)}`].map(
      (p) => `E:ID_${p}`,
    ),
    ...['REVISION=SN03', `SERIAL=ST20000NM007D-3DJ103_${serial}`, `SERIAL_SHORT=${serial}`].map((p) => `E:ID_${p}`),
    ...['WRITE_CACHE', 'WRITE_CACHE_ENABLED', 'FEATURE_SET_HPA', 'FEATURE_SET_HPA_ENABLED', 'FEATURE_SET_PM', 'FEATURE_SET_PM_ENABLED'].map(
      (f) => `E:ID_ATA_${f}=1`,
    ),
    ...['FEATURE_SET_SMART', 'FEATURE_SET_SMART_ENABLED', 'DOWNLOAD_MICROCODE', 'SATA', 'SATA_SIGNAL_RATE_GEN2'].map(
      (f) => `E:ID_ATA_${f}=1`,
    ),
    'E:ID_ATA_ROTATION_RATE_RPM=7200',
    `E:ID_WWN=${wwn}`,
    `E:ID_WWN_WITH_EXTENSION=${wwn}`,
    `E:ID_PATH=${path}`,
    `E:ID_PATH_TAG=${path.replace(/[:.-]/g, '_')}`,
    'E:ID_PART_TABLE_TYPE=gpt',
    'E:DEVTYPE=disk',
    'E:SUBSYSTEM=block',
    'G:systemd',
    'Q:systemd',
    'V:1',
  ].join('\n');
}

/**
 * The converged probe of `disks` data disks given by serial, all mounted (XFS at /ais/dN), of a
 * storage node with 2 devices more (its boot disk and a spare): milliseconds of the local sh
 * running it, median of `runs`.
 */
export async function storageNodeProbeMs(disks: number, runs = 5): Promise<{ ms: number; found: number }> {
  const { diskFactsProbe } = await import('../../src/resources/storage/blockdev.ts');
  const { ProbeSet } = await import('../../src/engine/probe-set.ts');
  const { buildScript } = await import('../../src/engine/script.ts');
  const root = mkdtempSync(join(tmpdir(), 'rs-bench-node-'));
  try {
    for (const d of ['sys/dev/block', 'sys/block', 'run/udev/data', 'dev', 'proc/self']) mkdirSync(join(root, d), { recursive: true });
    const mounts = ['20 1 0:25 / / rw - overlay overlay rw'];
    for (let i = 0; i < disks + 2; i++) {
      const name = `sd${String.fromCharCode(97 + (i % 26))}${i >= 26 ? String(i) : ''}`;
      const majmin = `${8 + 57 * (i >> 4)}:${(i % 16) * 16}`;
      const dir = join(root, 'sys/devices/pci0/host0/block', name);
      mkdirSync(join(dir, 'queue'), { recursive: true });
      writeFileSync(join(dir, 'dev'), `${majmin}\n`);
      writeFileSync(join(dir, 'size'), '39063650304\n');
      writeFileSync(join(dir, 'ro'), '0\n');
      writeFileSync(join(dir, 'queue/rotational'), '1\n');
      symlinkSync(`../devices/pci0/host0/block/${name}`, join(root, 'sys/block', name));
      symlinkSync(`../../devices/pci0/host0/block/${name}`, join(root, 'sys/dev/block', majmin));
      writeFileSync(join(root, `run/udev/data/b${majmin}`), `${udevEntry(i)}\n`);
      writeFileSync(join(root, 'dev', name), '');
      if (i < disks)
        mounts.push(`${30 + i} 20 ${majmin} / /ais/d${i + 1} rw,noatime shared:${i} - xfs /dev/${name} rw,attr2,inode64,noquota`);
    }
    writeFileSync(join(root, 'proc/self/mountinfo'), `${mounts.join('\n')}\n`);
    writeFileSync(join(root, 'proc/swaps'), 'Filename\tType\tSize\tUsed\tPriority\n');
    const specs = Array.from({ length: disks }, (_, i) => ({ serial: `ZVT0${i}ABC` }));
    // every disk's probe in one script, as the engine lays a storage play's out (helpers once)
    const sections: Parameters<typeof buildScript>[0] = [];
    new ProbeSet(
      sections,
      specs.map((s) => diskFactsProbe(s, specs, { root }).probe()),
    );
    const { script } = buildScript(sections);
    const times: number[] = [];
    let found = 0;
    for (let k = 0; k < runs; k++) {
      const t = performance.now();
      const r = spawnSync('sh', ['-c', script], { encoding: 'utf8' });
      times.push(performance.now() - t);
      found = (r.stdout.match(/^content=mounted$/gm) ?? []).length;
    }
    times.sort((a, b) => a - b);
    return { ms: times[times.length >> 1], found };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
