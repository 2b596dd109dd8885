/**
 * How the fstab entries racksmith writes under a jail come back at boot (pure): which of them wait
 * for the network (`_netdev`) and which may fail alone (`nofail`). The jail play's mounts and the
 * GPU bind and stand-in blocks read it; docs/jail.md "After a reboot" says why.
 */

/**
 * The filesystem types systemd counts as network filesystems (its `fstype_is_network`,
 * src/basic/mountpoint-util.c, `fuse.` stripped), with the vendor filesystems the jail's docs
 * name (GPFS, WEKA): a mount of one of them, or with `_netdev`, is ordered after the network and
 * belongs to remote-fs.target. Counting one too many here is harmless (an entry under it waits
 * for the network); one too few puts a local mount after a remote one (an ordering cycle).
 */
export const NETWORK_FSTYPES: ReadonlySet<string> = new Set([
  'afs',
  'ceph',
  'cifs',
  'smb3',
  'smbfs',
  'sshfs',
  'ncpfs',
  'ncp',
  'nfs',
  'nfs4',
  'gfs',
  'gfs2',
  'glusterfs',
  'pvfs2',
  'ocfs2',
  'lustre',
  'davfs',
  'gpfs',
  'wekafs',
]);

/** Whether systemd mounts this at boot as a network filesystem (remote-fs.target, after the network). */
export function isNetworkMount(fstype: string, options: readonly string[]): boolean {
  return options.includes('_netdev') || NETWORK_FSTYPES.has(fstype.replace(/^fuse\./, ''));
}

/** A mount of the jail: its root or a submount (the path on the host, e.g. /mnt/jail/home). */
export interface JailMount {
  path: string;
  fstype: string;
  options: readonly string[];
}

/**
 * The mounts of the jail (its root first, then its submounts) under which an fstab entry waits
 * for the network: a network filesystem, or one under such a mount (systemd orders a mount after
 * the mounts of its parent paths, so it inherits their waiting). The paths are the prefixes
 * `needsNetwork` takes.
 */
export function networkJailPaths(mounts: readonly JailMount[]): string[] {
  const net: string[] = [];
  // outer mounts first: a submount inside another one inherits from it, whatever the list's order
  const outerFirst = [...mounts].sort((a, b) => a.path.length - b.path.length);
  for (const m of outerFirst) if (isNetworkMount(m.fstype, m.options) || needsNetwork(net, m.path)) net.push(m.path);
  return net;
}

/** Whether an entry at `target` lies under one of these mounts (strictly: not the mount itself). */
export function needsNetwork(networkPaths: readonly string[], target: string): boolean {
  return networkPaths.some((p) => target.startsWith(`${p}/`));
}

/**
 * The boot options of an fstab entry racksmith writes under the jail (besides
 * `x-systemd.requires-mounts-for=<jail>`), in this order:
 * - `_netdev` when it lies under a network mount of the jail: systemd-fstab-generator puts it in
 *   remote-fs.target after the network, as the mount it waits for. Without it, a bind or a local
 *   filesystem (tmpfs, proc) lands in local-fs.target while requiring the NFS jail (a bind of an
 *   NFS path does not inherit `_netdev`, systemd issue #1258): an ordering cycle where a
 *   wait-online unit keeps its default dependencies, and emergency mode when the NFS server is
 *   unreachable (local-fs.target fails). With it, an unreachable jail fails remote-fs.target
 *   only: the host boots, with sshd, without its jail.
 * - `nofail` when its source may be missing at boot (GPU driver files, under a driver container's
 *   root until its pod runs or gone after a driver upgrade; a stand-in's target placeholder on the
 *   shared tree; an optional file such as /etc/resolv.conf, a link into /run on hosts with
 *   systemd-resolved): wanted by its target, not required, and nothing is ordered after it, so a
 *   missing source fails that mount alone. (`x-systemd.device-timeout` does not apply: a bind waits
 *   for no device unit; its mount fails at once when the source is missing.)
 * Options already given are not repeated.
 */
export function jailBootOptions(given: readonly string[], o: { network: boolean; nofail: boolean }): string[] {
  const out = [...given];
  if (o.network && !out.includes('_netdev')) out.push('_netdev');
  if (o.nofail && !out.includes('nofail')) out.push('nofail');
  return out;
}
