/**
 * The jail's storage choices (Soperator issue #111, shared/reference/soperator-jail.md §4): the
 * mount options of the jail root and its submounts by filesystem type, the NFS options operators
 * tune (`jail_nfs`), and the client package each type needs. Pure: the jail play and the
 * prerequisites read them.
 */
import type { PackageName } from '../resources/core/packages.ts';

/** The NFS options operators tune (`jail_nfs`), and their defaults: Soperator's NFS chart's. */
export interface JailNfs {
  /** TCP connections per server (Linux 5.3+); 16 as Soperator's chart. */
  nconnect: number;
  /** Seconds attributes are cached; 30 as Soperator's chart (0: none, for files written from several nodes at once). */
  actimeo: number;
  /** `hard`: I/O waits for the server (no silent data loss); false gives `soft`. */
  hard: boolean;
  /** Protocol version (YAML may give `4.2` as a number). */
  vers: string | number;
}

export const NFS_DEFAULTS: Readonly<JailNfs> = { nconnect: 16, actimeo: 30, hard: true, vers: '4.2' };

const isNfs = (fstype: string) => fstype === 'nfs' || fstype === 'nfs4';

/**
 * NFS mount options: the tuned ones, then the rest of Soperator's NFS chart's
 * (helm/nfs-server/values.yaml, storageClass.mountOptions), and `_netdev` for boot ordering.
 */
export function nfsMountOptions(tuning: Partial<JailNfs> = {}): string[] {
  const t = { ...NFS_DEFAULTS, ...tuning };
  return [
    `nconnect=${t.nconnect}`,
    `vers=${t.vers}`,
    t.hard ? 'hard' : 'soft',
    'rsize=1048576',
    'wsize=1048576',
    'timeo=150',
    'retrans=2',
    `actimeo=${t.actimeo}`,
    'proto=tcp',
    'noresvport',
    'noatime',
    'nodiratime',
    'noacl',
    '_netdev',
  ];
}

/**
 * Options of a mount of `fstype`: `none` mounts nothing by itself (mount -t none fails), so it
 * binds, whether or not the operator wrote `bind` (or `rbind`) too.
 */
export function jailMountOptions(fstype: string, options: string[]): string[] {
  if (fstype !== 'none' || options.includes('bind') || options.includes('rbind')) return options;
  return ['bind', ...options.filter((o) => o !== 'defaults')];
}

/**
 * The options of the jail root or a submount: the operator's when given; else NFS's for nfs/nfs4
 * (with `jail_nfs`), `bind` for none, and `defaults` (plus `_netdev` on the root: a network
 * filesystem waits for the network at boot) for the rest.
 */
export function jailStorageOptions(fstype: string, given: string[] | undefined, nfs: Partial<JailNfs>, root: boolean): string[] {
  if (given) return jailMountOptions(fstype, given);
  if (isNfs(fstype)) return nfsMountOptions(nfs);
  if (fstype === 'none') return ['bind'];
  return root ? ['defaults', '_netdev'] : ['defaults'];
}

/**
 * Whether `jail_nfs` reaches any of these mounts (the jail root and its submounts): only an
 * nfs/nfs4 mount without options of its own takes it; else it would be ignored without a word.
 */
export function jailNfsUsed(mounts: ReadonlyArray<{ fstype: string; options?: readonly string[] }>): boolean {
  return mounts.some((m) => isNfs(m.fstype) && !m.options);
}

/**
 * The client each filesystem type needs on the host (Debian, and EL names). Types the kernel
 * mounts alone (virtiofs, a bind, local filesystems) need none; vendor filesystems (lustre, gpfs,
 * weka, ...) come with their vendor's client, which racksmith does not install.
 */
const NFS_CLIENT: PackageName = { apt: 'nfs-common', dnf: 'nfs-utils' };
export const FS_CLIENT_PACKAGES: Readonly<Record<string, PackageName>> = {
  nfs: NFS_CLIENT,
  nfs4: NFS_CLIENT,
  glusterfs: { apt: 'glusterfs-client', dnf: 'glusterfs-fuse' },
  ceph: { apt: 'ceph-common', dnf: 'ceph-common' },
  cifs: { apt: 'cifs-utils', dnf: 'cifs-utils' },
};

/** The client packages of these filesystem types, each once. */
export function fsClientPackages(fstypes: readonly string[]): PackageName[] {
  const out: PackageName[] = [];
  for (const t of fstypes) {
    const p = FS_CLIENT_PACKAGES[t];
    if (p && !out.includes(p)) out.push(p);
  }
  return out;
}
