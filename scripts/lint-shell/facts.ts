// Probe answers for scripts/lint-shell.ts: per resource kind, host states that make its diff
// change something, so its apply renders every kind of step it sends. A kind missing here is
// reported (and fails the lint) unless it is listed in NEVER_APPLIES.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Resource, Step } from '../../src/contract/resource.ts';
import type { ProbeOutput } from '../../src/contract/probe.ts';
import { inline } from '../../src/contract/probe.ts';
import { FILE_FACTS } from '../../src/resources/core/file-common.ts';
import { probeOf } from '../../src/engine/host-caches.ts';

export interface Uncovered {
  id: string;
  why: string;
}

/**
 * One host state: the text each probe part answers (by its index among the parts that answer),
 * and the files that exist (every other file the probe asks about is absent).
 */
interface HostState {
  /** The answer to the probe's part i (not counting definitions); arg: a batch part's argument. */
  text?: (i: number, arg?: string) => string;
  files?: Record<string, string>;
}

/** Kinds whose diff only checks (a refusal or nothing): no apply steps to render. */
const NEVER_APPLIES = new Set(['gpu-driver', 'kube-artifacts', 'kube-guard', 'storage-wipe-check', 'xattr-check']);

const INLINE = inline('').batch;
const DISK_PROBES = join(import.meta.dirname, '../../test/unit/fixtures/disk-probes');

/** The FILE_FACTS batch's stdout for these files (find's line, contents, hashes). */
function fileAnswer(paths: readonly string[], files: Record<string, string>): string {
  const present = paths.filter((p) => p in files);
  const meta = present.map((p) => `f ${Buffer.byteLength(files[p])} 644 0 root 0 root ${p}`).join('\n');
  // (od's hex bytes, one line: the reader skips the blanks)
  const content = Buffer.from(present.map((p) => files[p]).join(''))
    .toString('hex')
    .replace(/../g, ' $&');
  const sha = present.map((p) => `${createHash('sha256').update(files[p]).digest('hex')}  ${p}`).join('\n');
  return `${meta}\n@content\n${content}\n@sha\n${sha}\n@sensitive\n`;
}

function answer(r: Resource, s: HostState): ProbeOutput {
  const p = probeOf(r);
  const parts = (typeof p === 'string' ? [p] : p).filter((x) => typeof x === 'string' || !('define' in x));
  const answers = parts.map((x, i) => {
    const text = s.text?.(i, typeof x === 'string' || 'define' in x ? undefined : x.arg) ?? '';
    if (typeof x === 'string' || 'define' in x || x.batch === INLINE) return text;
    const out = x.batch === (FILE_FACTS as unknown) ? fileAnswer([x.arg], s.files ?? {}) : text;
    return x.batch.split(out, [x.arg])[0];
  });
  const stdout = answers.filter((a) => typeof a === 'string').join('');
  return { parts: answers, stdout, code: 0, stderr: '' };
}

const lines = (...l: string[]) => l.join('\n') + '\n';
const NIC = lines(
  'ethtool=yes',
  '@nic ens1 aa:bb:cc:dd:ee:ff 1500',
  'driver: mlx5_core',
  '@channels',
  'Channel parameters for ens1:',
  'Pre-set maximums:',
  'RX:\t\tn/a',
  'TX:\t\tn/a',
  'Other:\t\t1',
  'Combined:\t63',
  'Current hardware settings:',
  'RX:\t\tn/a',
  'TX:\t\tn/a',
  'Other:\t\t1',
  'Combined:\t8',
  '@rings',
  'Ring parameters for ens1:',
  'Pre-set maximums:',
  'RX:\t\t8192',
  'TX:\t\t8192',
  'Current hardware settings:',
  'RX:\t\t1024',
  'TX:\t\t1024',
  '@core 0:0',
  '@core 0:1',
);

/** Disks as the disk probe answered on the test bed, with a serial and WWN as udev gives them, and where they are mounted. */
const diskText = (fixture: string, ...more: string[]) =>
  readFileSync(join(DISK_PROBES, `${fixture}.txt`), 'utf8').replace(
    /^end=1$/m,
    lines('udev.ID_SERIAL=Disk_ZL2ABC12', 'udev.ID_SERIAL_SHORT=ZL2ABC12', 'udev.ID_WWN=0x5000c500a1b2c301', ...more, 'end=1').trimEnd(),
  );
const UUID = '5b5fbf8f-ab7a-4bd5-989a-16ad6e386468';
const BLANK = diskText('blank');
const XFS = diskText('xfs-kept');
const MOUNTED = diskText('xfs-kept', 'mount=7:26 /dev/loop26 /ais/d2', 'mountfs=xfs', `fsuuid=${UUID}`, 'iddisks=ZL2ABC12\tloop26');
const RECORD = JSON.stringify({
  version: 1,
  disks: [
    { mountpoint: '/ais/d2', name: 'd2', kname: 'loop26', uuid: UUID, serial: 'ZL2ABC12' },
    { mountpoint: '/ais/old', name: 'old', kname: 'sdz', uuid: '11111111-2222-3333-4444-555555555555' },
  ],
});
const FSTAB = `UUID=${UUID} /ais/d2 xfs noatime 0 0\nUUID=11111111-2222-3333-4444-555555555555 /ais/old xfs noatime 0 0\n`;
const recorded = { '/var/lib/racksmith/storage.json': RECORD, '/etc/fstab': FSTAB };
/** The disk part first, then the host's other listed disks (another disk). */
const OTHER_DISK = BLANK.replace(/^kname=.*$/m, 'kname=nvme0n1').replace(/^majmin=.*$/m, 'majmin=259:0');
/** A disk's answer with a /dev/disk/by-id link of its own. */
const byId = (text: string, name: string) => text.replace(/^end=1$/m, `byid=/dev/disk/by-id/${name}\nend=1`);
const firstDisk = (text: string): HostState => ({ text: (i) => (i === 0 ? text : OTHER_DISK) });
const disk = (text: string): HostState => ({ text: () => text, files: recorded });

const V = '550.54.15';
const LIB = '/usr/lib/x86_64-linux-gnu';
const GPU_SCAN = lines(
  'gpu-arch=x86_64',
  `gpu-libdir=${LIB}`,
  `gpu-proc=NVRM version: NVIDIA UNIX x86_64 Kernel Module  ${V}  Tue Mar  5 22:23:56 UTC 2024`,
  'gpu-jail\t/mnt/jail\t/mnt/jail',
  'gpu-source=cli',
  'gpu-cli-rc=0',
  `gpu-f\t${LIB}/libcuda.so.${V}\tf\t254:3\t755\t${LIB}/libcuda.so.${V}\tabsent\tno\tno`,
  `gpu-f\t${LIB}/libnvidia-ml.so.${V}\tf\t254:4\t755\t${LIB}/libnvidia-ml.so.${V}\tfile\tno\tyes`,
  `gpu-f\t/usr/bin/nvidia-smi\tf\t254:5\t755\t/usr/bin/nvidia-smi\tfile\tyes\tno`,
  `gpu-f\t/lib/firmware/nvidia/${V}\td\t254:6\t755\t/lib/firmware/nvidia/${V}\tabsent\tno\tno`,
  `gpu-link\tlibcuda.so.1\tlibcuda.so.${V}`,
  `gpu-link\tlibnvidia-ml.so.1\tlibnvidia-ml.so.${V}`,
);

/** Per kind: the host states to render apply steps for (default: one where nothing exists yet). */
const STATES: Record<string, HostState[]> = {
  'xfs-format': [firstDisk(BLANK), firstDisk(XFS)],
  'io-tuning': [disk(BLANK)],
  'storage-record': [disk(XFS), { text: () => XFS }],
  'udev-rules': [disk(BLANK)],
  'disk-decommission': [disk(MOUNTED), disk(XFS.replace('end=1', 'iddisks=ZL2ABC12\tloop26\nend=1'))],
  'storage-prune': [{ text: () => `xfs=7:30 11111111-2222-3333-4444-555555555555 /dev/sdz /ais/old\n`, files: recorded }],
  // own lines first: a formatted disk's identity (mount), the source of a bind
  mount: [
    {},
    { text: (i) => [`target=dir\nsource=present\nmajmin_dec=7:26\nuuid=${UUID}\nreal=/ais/d1\n`, '2049:131 755 empty /ais/d1\n'][i] ?? '' },
    // a bind that still shows the deleted file its source was (replaced since): bound again
    {
      text: (i, arg = '') =>
        [
          'target=file\nsource=present\nreal=/mnt/jail/etc/hosts\n',
          `2049:131 644 nonempty ${arg}\n`,
          `2049:200 644 nonempty ${arg}\n`,
          `140 27 8:1 /etc/hosts//deleted ${arg.slice(1)} rw,relatime - ext4 /dev/sda1 rw\n`,
        ][i] ?? '',
    },
  ],
  // a GPU host's driver files as nvidia-container-cli lists them: one bound, one missing, one placeholder
  'gpu-binds': [{ text: (i) => (i === 0 ? GPU_SCAN : '') }],
  'gpu-standins': [
    {
      text: (i) =>
        i === 0 ? 'sti-arch=x86_64\nsti-libdir=/usr/lib/x86_64-linux-gnu\nsti-ph\tlibcuda.so.1\t0\nsti-ph\tlibnvidia-ml.so.1\t0\n' : '',
    },
  ],
  'sysctl-effect': [
    {
      text: (i) =>
        i === 1
          ? lines(
              '@f /etc/sysctl.d/99-ais-tuning.conf',
              '@f /etc/sysctl.d/99-zz-racksmith-network.conf',
              '@lines',
              '/etc/sysctl.d/99-ais-tuning.conf:net.core.somaxconn = 1024',
            )
          : 'mem=65536000 4096\n',
    },
  ],
  // before the CRDs serve their kinds: every object is created
  kube: [
    {
      text: () =>
        'rc=1\n== stderr\nerror: resource mapping not found: no matches for kind "Installation" in version "operator.tigera.io/v1"\n',
    },
    {
      text: () =>
        JSON.stringify({ metadata: { resourceVersion: '7' }, data: { 'config.conf': 'mode: ipvs\nipvs:\n  strictARP: false\n' } }),
    },
  ],
  line: [{}, { files: { '/etc/rs/b.conf': 'b = 1\nc = 3\n' } }],
  block: [{}, { files: { '/etc/rs/c.conf': 'old\n' } }],
  file: [{}, { files: { '/etc/rs/a.conf': 'a = 0\n', '/etc/rs/gone.conf': 'x\n' } }],
  // the state's files, then each data disk (its part, then its users'): storage_wipe names both
  'ais-state-purge': [
    {
      text: (i) => ['.ais.smap\n.ais.bmd\n', byId(BLANK, 'wwn-0x5000c500a1b2c301'), '', byId(OTHER_DISK, 'nvme-X'), ''][i] ?? '',
    },
  ],
  chrony: [{ files: { '/etc/chrony/chrony.conf': 'pool 2.debian.pool.ntp.org iburst\nsourcedir /etc/chrony/sources.d\n' } }],
  'cni-conf': [{ text: () => '10-flannel.conflist\n10-calico.conflist\n.old.conf\n' }],
  'cni-plugins': [{ text: () => 'arch x86_64\ntools curl=yes wget=no\n' }, { text: () => 'arch aarch64\ntools curl=no wget=yes\n' }],
  'cpu-governor': [{ text: () => 'cpu0 powersave|performance powersave\ncpu1 powersave|performance powersave\n' }],
  'transparent-hugepages': [{ text: () => 'enabled always [madvise] never\ndefrag always defer defer+madvise [madvise] never\n' }],
  'kubelet-config': [
    { files: { '/var/lib/kubelet/config.yaml': 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n' } },
  ],
  limits: [{ text: () => 'applicable=yes\n' }],
  'nm-unmanaged': [{ text: () => 'nm=yes\nrunning=yes\n' }],
  packages: [{ text: () => 'pm=apt\n' }, { text: () => 'pm=dnf\n' }],
  handler: [{ text: () => 'systemd=yes\n' }],
  'nic-queues': [{ text: (i) => (i === 0 ? NIC : '') }],
  mtu: [
    { text: (i) => [NIC, '@netplan /etc/netplan/01.yaml\n@match\n'][i] ?? '' },
    { text: (i) => [NIC, '@nm\nens1:Wired connection 1\n@match\n'][i] ?? '' },
    {
      text: (i) =>
        [
          NIC,
          '@networkd /etc/systemd/network/10-ens1.network\n@match\n/etc/systemd/network/10-ens1.network:[Match]\n/etc/systemd/network/10-ens1.network:Name=ens1\n',
        ][i] ?? '',
    },
    {
      text: (i) => [NIC, '@match\n'][i] ?? '',
      files: { '/etc/network/interfaces': 'auto ens1\niface ens1 inet static\n    address 10.0.0.2/24\n' },
    },
  ],
};

function render(r: Resource, s: HostState): Step[] {
  const f = r.parse(answer(r, s));
  const c = r.diff(f);
  return c.length ? r.apply(f, c) : [];
}

/** Every apply step `r` sends in the host states of its kind, and why the states that rendered none did not. */
export function applySteps(r: Resource): { steps: Step[]; why: string[] } {
  const steps: Step[] = [];
  const why: string[] = [];
  for (const s of STATES[r.kind] ?? [{}]) {
    try {
      const rendered = render(r, s);
      if (!rendered.length) why.push(`${r.id}: no changes`);
      steps.push(...rendered);
    } catch (e) {
      why.push(`${r.id}: ${(e as Error).message.slice(0, 200)}`);
    }
  }
  return { steps, why };
}

/** Kinds of which no resource rendered an apply step (and why), other than those that never apply. */
export class Coverage {
  private readonly rendered = new Set<string>();
  private readonly why = new Map<string, string[]>();
  add(r: Resource, o: { steps: Step[]; why: string[] }): void {
    if (o.steps.length) this.rendered.add(r.kind);
    else this.why.set(r.kind, [...(this.why.get(r.kind) ?? []), ...o.why]);
  }
  uncovered(): Uncovered[] {
    return [...this.why]
      .filter(([kind]) => !this.rendered.has(kind) && !NEVER_APPLIES.has(kind))
      .map(([kind, why]) => ({ id: kind, why: why.join('; ') }));
  }
}
