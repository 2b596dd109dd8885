import {
  playbook,
  varsSchema,
  type HostContext,
  directory,
  gpuBinds,
  gpuDriver,
  gpuStandins,
  DEFAULT_GPU_CAPS,
  GPU_CAPS,
  parseGpuCaps,
  DEFAULT_LOCK_TIMEOUT_S,
  mount,
  type Resource,
  jailPackages,
  prerequisites,
  InputError,
  jailStorageOptions,
  jailNfsUsed,
  nfsMountOptions,
  type JailNfs,
} from '../src/index.ts';
import { jailBootOptions, needsNetwork, networkJailPaths } from '../src/resources/jail/jail-boot.ts';

/**
 * The Soperator-style jail on bare-metal hosts (facts: shared/reference/soperator-jail.md): the
 * shared jail root, its submounts, node-local paths bound into it, and the host's GPU driver
 * files, all persisted in fstab with x-systemd.requires-mounts-for so a reboot rebuilds it: under a
 * network jail with _netdev (remote-fs.target, after the network), GPU binds and optional files
 * with nofail (their sources may be missing at boot); docs/jail.md "After a reboot".
 *
 * Hosts: group `jail`; point it at your own group or pattern without editing this file with
 *   racksmith_play_hosts: { jail: 'ais:&gpu-nodes' } (all's vars or -e; docs/playbooks.md "Plays on your groups").
 *
 * Inventory variables:
 *   jail_path:     /mnt/jail
 *   jail_source:   nfs.example:/export/jail   (required; hosts with the same source share one jail)
 *   jail_fstype:   nfs | virtiofs | glusterfs | none (bind of a local path: `bind` is implied) ...
 *   jail_options:  default for nfs/nfs4: Soperator's NFS chart's mount options with jail_nfs (NFS_JAIL_OPTIONS);
 *                  for none: [bind] (a list without bind or rbind gets bind first); else [defaults, _netdev]
 *   jail_nfs:      { nconnect: 16, actimeo: 30, hard: true, vers: 4.2 }   (the defaults) the NFS options of
 *                  the jail root and of every nfs/nfs4 submount without options of its own (none: exit 3)
 *   jail_marker:   etc/soperator-jail-populated   (must exist: the jail is never populated here)
 *   jail_submounts: [{ path: /home, source: nfs:/home, fstype: nfs, options: [...], readonly: false }]
 *                  each its own filesystem type; options default as for the root (without _netdev
 *                  for non-NFS types, which racksmith adds under a network jail root: docs/jail.md
 *                  "After a reboot"): e.g. the jail on NFS, /mnt/data on a shared filesystem
 *   jail_tmp_source: /var/lib/racksmith/jail-tmp   (node-local directory bound on the jail's /tmp)
 *   jail_bind_files: [/etc/resolv.conf, /etc/hosts]
 *   jail_bind_dirs: [/var/spool/slurmd, /var/lib/sss/pipes]   (node-local directories, e.g. a
 *                  daemon's socket directory: bind the directory, daemons recreate their sockets)
 *   jail_gpu:      true (a GPU node: its driver's files are bound) | false (a CPU or login node:
 *                  a stand-in library is bound over the GPU placeholders)
 *   jail_gpu_caps: compute,utility (NVIDIA driver capabilities, as NVIDIA_DRIVER_CAPABILITIES)
 *   jail_gpu_driver_root: where the driver's files live: / (the host's own) or a driver container's
 *                  root; default /run/nvidia/driver (NVIDIA's GPU Operator) when it holds a driver
 *                  and the host has none, else /. Files are bound at their places relative to it.
 *   jail_lock_timeout: 60   (seconds to wait for a jail lock, then the host fails)
 *   jail_gpu_dirs, jail_gpu_patterns (the globs, used where nvidia-container-cli is missing),
 *   jail_lib_dir (default /usr/lib/<uname -m>-linux-gnu, from the host), jail_gpu_standin
 *   package_mirror, install_packages: each filesystem type's client installed (FS_CLIENT_PACKAGES: nfs-common /
 *                  nfs-utils for nfs and nfs4, glusterfs-client, ceph-common, cifs-utils)
 */
const ABS = '^/[^\\n\\0]*$';
const OPTION = '^[^\\s,]+$';
const validateVars = varsSchema({
  required: ['jail_source'],
  properties: {
    jail_path: { type: 'string', pattern: ABS },
    jail_source: { type: 'string', minLength: 1, pattern: '^[^\\s]+$' },
    jail_fstype: { type: 'string', pattern: '^[a-z0-9._]+$' },
    jail_options: { type: 'array', items: { type: 'string', pattern: OPTION } },
    jail_marker: { type: 'string', pattern: '^[^/\\n\\0][^\\n\\0]*$' },
    jail_submounts: {
      type: 'array',
      items: {
        type: 'object',
        required: ['path', 'source', 'fstype'],
        additionalProperties: false,
        properties: {
          path: { type: 'string', pattern: ABS },
          source: { type: 'string', minLength: 1, pattern: '^[^\\s]+$' },
          fstype: { type: 'string', pattern: '^[a-z0-9._]+$' },
          options: { type: 'array', items: { type: 'string', pattern: OPTION } },
          readonly: { type: 'boolean' },
        },
      },
    },
    jail_tmp_source: { type: 'string', pattern: ABS },
    jail_bind_files: { type: 'array', items: { type: 'string', pattern: ABS } },
    jail_bind_dirs: { type: 'array', items: { type: 'string', pattern: ABS } },
    jail_gpu: { type: 'boolean' },
    jail_gpu_caps: {
      anyOf: [
        { type: 'string', pattern: '^[a-z0-9]+(,[a-z0-9]+)*$' },
        { type: 'array', minItems: 1, items: { enum: [...GPU_CAPS, 'all'] } },
      ],
    },
    jail_lock_timeout: { type: 'integer', minimum: 1, maximum: 3600 },
    jail_gpu_standin: { type: 'string', pattern: ABS },
    jail_gpu_dirs: { type: 'array', items: { type: 'string', pattern: ABS } },
    jail_gpu_patterns: { type: 'array', items: { type: 'string' } },
    jail_lib_dir: { type: 'string', pattern: ABS },
    jail_gpu_driver_root: { type: 'string', pattern: '^/([^/\\n\\0]+(/[^/\\n\\0]+)*)?$' },
    jail_nfs: {
      type: 'object',
      additionalProperties: false,
      properties: {
        nconnect: { type: 'integer', minimum: 1, maximum: 16 },
        actimeo: { type: 'integer', minimum: 0, maximum: 3600 },
        hard: { type: 'boolean' },
        vers: { enum: ['3', '4', '4.0', '4.1', '4.2', 3, 4, 4.1, 4.2] },
      },
    },
  },
});

interface Submount {
  path: string;
  source: string;
  fstype: string;
  options?: string[];
  readonly?: boolean;
}

/** The jail mounted over NFS with jail_nfs's defaults (Soperator's NFS chart's options, and _netdev). */
export const NFS_JAIL_OPTIONS = nfsMountOptions();

export { jailMountOptions } from '../src/plays/jail-storage.ts';

/** The NVIDIA driver capabilities of a host (an unknown one is bad input, located where it was set). */
function gpuCaps(host: HostContext) {
  try {
    return parseGpuCaps(host.var<string | string[]>('jail_gpu_caps', [...DEFAULT_GPU_CAPS]));
  } catch (e) {
    if (e instanceof InputError) throw host.error('jail_gpu_caps', e.detail);
    throw e;
  }
}

export function jailResources(host: HostContext): Resource[] {
  host.validate(validateVars);
  const J = host.var('jail_path', '/mnt/jail');
  const after = `x-systemd.requires-mounts-for=${J}`;
  const source = host.var<string>('jail_source', '');
  const fstype = host.var('jail_fstype', 'nfs');
  const nfs = host.var<Partial<JailNfs>>('jail_nfs', {});
  const gpu = host.var('jail_gpu', true);
  const lockTimeout = host.var('jail_lock_timeout', DEFAULT_LOCK_TIMEOUT_S);
  const libDir = host.var<string | undefined>('jail_lib_dir', undefined);
  const caps = gpuCaps(host);
  const driverRoot = host.var<string | undefined>('jail_gpu_driver_root', undefined);
  // A GPU node's jail waits for its driver check: disagreeing drivers leave the jail unmounted.
  const driver = gpu
    ? gpuDriver({
        jail: J,
        jailId: source,
        libDir,
        searchDirs: host.var<string[] | undefined>('jail_gpu_dirs', undefined),
        patterns: host.var<string[] | undefined>('jail_gpu_patterns', undefined),
        caps,
        driverRoot,
        // every tag of the jail's resources: whichever of them a run selects, the check gates them
        tags: ['jail-gpu', 'jail-root', 'jail-submounts', 'jail-local'],
      })
    : undefined;
  const gate = driver ? [driver.id] : [];
  const pre = prerequisites(host, 'jail', jailPackages(host)); // mount.nfs before the jail mounts
  const rootOptions = host.var<string[] | undefined>('jail_options', undefined);
  const submounts = host.var<Submount[]>('jail_submounts', []);
  if (
    host.var<Partial<JailNfs> | undefined>('jail_nfs', undefined) !== undefined &&
    !jailNfsUsed([{ fstype, options: rootOptions }, ...submounts])
  )
    throw host.error(
      'jail_nfs',
      "jail_nfs: no mount takes it (it tunes an nfs/nfs4 jail root or submount without options of its own: jail_options or the submount's options win)",
    );
  const rootOpts = jailStorageOptions(fstype, rootOptions, nfs, true);
  const inJail = (p: string) => `${J}${p}`;
  const subOptions = (s: Submount) => [...jailStorageOptions(s.fstype, s.options, nfs, false), ...(s.readonly ? ['ro'] : [])];
  // The jail's mounts that wait for the network at boot: every entry under one of them waits too.
  const network = networkJailPaths([
    { path: J, fstype, options: rootOpts },
    ...submounts.map((s) => ({ path: inJail(s.path), fstype: s.fstype, options: subOptions(s) })),
  ]);
  const root = mount({
    path: J,
    after: pre.map((r) => r.id),
    source,
    fstype,
    options: rootOpts,
    requireMarker: host.var('jail_marker', 'etc/soperator-jail-populated'),
    overNonEmpty: false,
    dependsOn: gate,
    tags: ['jail-root'],
  });
  /**
   * A mount under the jail: its facts need the jail mounted, and it may never escape the jail; at
   * boot it waits for the jail, and for the network under a network mount; `nofail` where its
   * source may be missing then.
   */
  const sub = (o: Parameters<typeof mount>[0]) =>
    mount({
      ...o,
      dependsOn: [root.id, ...(o.dependsOn ?? [])],
      within: J,
      options: jailBootOptions([...(o.options ?? []), after], { network: needsNetwork(network, o.path), nofail: o.optional === true }),
    });

  const out: Resource[] = [...(driver ? [driver] : []), ...pre, root];
  for (const s of submounts) {
    out.push(
      sub({
        path: inJail(s.path),
        source: s.source,
        fstype: s.fstype,
        options: subOptions(s),
        tags: ['jail-submounts'],
      }),
    );
  }
  // Node-local paths: never the shared FS.
  const tmpSource = host.var('jail_tmp_source', '/var/lib/racksmith/jail-tmp');
  const tmpDir = directory({ path: tmpSource, mode: '1777', dependsOn: gate, tags: ['jail-local'] });
  out.push(tmpDir);
  const local = (path: string, source: string, fstype: string, options: string[], extra: Partial<Parameters<typeof mount>[0]> = {}) =>
    sub({ path: inJail(path), source, fstype, options, overNonEmpty: true, tags: ['jail-local'], ...extra });
  out.push(
    // dependsOn, not just after: the bind needs its source to exist when it is diffed
    local('/tmp', tmpSource, 'none', ['bind'], { dependsOn: [tmpDir.id] }),
    local('/run', '/run', 'none', ['rbind']), // the jail's /var/run is a symlink to /run
    local('/proc', 'proc', 'proc', ['nosuid', 'nodev', 'noexec']),
    local('/sys', '/sys', 'none', ['rbind']),
    local('/dev', '/dev', 'none', ['rbind']),
    local('/var/log', '/var/log', 'none', ['bind']),
  );
  for (const f of host.var('jail_bind_files', ['/etc/resolv.conf', '/etc/hosts'])) {
    out.push(local(f, f, 'none', ['bind'], { mkdir: 'file', optional: true }));
  }
  // Node-local directories (a spool, a daemon's socket directory), each persisted like the rest.
  for (const d of host.var<string[]>('jail_bind_dirs', [])) out.push(local(d, d, 'none', ['bind']));
  if (driver) {
    out.push(
      gpuBinds({
        jail: J,
        libDir,
        searchDirs: host.var<string[] | undefined>('jail_gpu_dirs', undefined),
        patterns: host.var<string[] | undefined>('jail_gpu_patterns', undefined),
        caps,
        driverRoot,
        lockTimeout,
        networkPaths: network,
        dependsOn: [driver.id, root.id],
        tags: ['jail-gpu'],
      }),
    );
  } else {
    out.push(
      gpuStandins({
        jail: J,
        jailId: source,
        libDir,
        standin: host.var<string | undefined>('jail_gpu_standin', undefined),
        lockTimeout,
        networkPaths: network,
        dependsOn: [root.id],
        tags: ['jail-gpu'],
      }),
    );
  }
  return out;
}

export default playbook({
  name: 'jail',
  hosts: 'jail',
  tags: ['jail'],
  resources: jailResources,
});
