/**
 * Names for parts of a host's state: what a step may change (Step.touches) and what a probe
 * reads (Resource.reads). The engine compares the two to keep answers probed ahead for a later
 * play (one exec probes every play of a host) across an apply on the host that cannot have
 * changed them; anything left undeclared counts as touching, or reading, everything.
 *
 * A file topic names a path and everything under it: `file:/etc` and `file:/etc/fstab` overlap.
 */

/** Live kernel parameters (/proc/sys). */
export const SYSCTL = 'sysctl';
/** Loaded kernel modules (a module can bring sysctls, devices, filesystems). */
export const KERNEL_MODULES = 'kernel-modules';
/** Installed packages, and with them which programs a probe finds. */
export const PACKAGES = 'packages';
/** The unit files the service manager has loaded (a daemon-reload; a restart, which stops processes, says nothing). */
export const SERVICE_UNITS = 'service-units';
/** The mount table. */
export const MOUNTS = 'mounts';
/** Block devices: their content and signatures, partitions, holders and users (swap, device mapper), queue settings, udev's data on them. */
export const BLOCK_DEVICES = 'block-devices';

/** The file or directory tree at `path` (absolute). */
export function fileTopic(path: string): string {
  return `file:${path}`;
}

const FILE = 'file:';

/** Whether a change of `touched` can change what `read` names. */
export function topicsOverlap(touched: string, read: string): boolean {
  if (touched === read) return true;
  if (!touched.startsWith(FILE) || !read.startsWith(FILE)) return false;
  return isUnder(touched, read) || isUnder(read, touched);
}

/** `inner` is a path below `outer` (`file:/` contains every path). */
function isUnder(inner: string, outer: string): boolean {
  return inner.startsWith(outer) && (outer.endsWith('/') || inner[outer.length] === '/');
}

/** Whether anything in `touched` can change anything in `reads`. */
export function anyOverlap(touched: readonly string[], reads: readonly string[]): boolean {
  for (const t of touched) for (const r of reads) if (topicsOverlap(t, r)) return true;
  return false;
}
