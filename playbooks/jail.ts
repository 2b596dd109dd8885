import { playbook, varsSchema, type HostContext } from '../src/contract/playbook.ts';
import { directory } from '../src/resources/directory.ts';
import { gpuBinds, DEFAULT_GPU_DIRS, DEFAULT_GPU_PATTERNS } from '../src/resources/gpu-binds.ts';
import { mount } from '../src/resources/mount.ts';
import type { Resource } from '../src/contract/resource.ts';
import { jailPackages, prerequisites } from '../src/plays/prerequisites.ts';

/**
 * The Soperator-style jail on bare-metal hosts (facts: shared/reference/soperator-jail.md): the
 * shared jail root, its submounts, node-local paths bound into it, and the host's GPU driver
 * files, all persisted in fstab with x-systemd.requires-mounts-for so a reboot rebuilds it.
 *
 * Inventory variables:
 *   jail_path:     /mnt/jail
 *   jail_source:   nfs.example:/export/jail   (required)
 *   jail_fstype:   nfs | virtiofs | glusterfs | none (bind of a local path) ...
 *   jail_options:  [nfsvers=4.2, nconnect=16]
 *   jail_marker:   etc/soperator-jail-populated   (must exist: the jail is never populated here)
 *   jail_submounts: [{ path: /home, source: nfs:/home, fstype: nfs, options: [...], readonly: false }]
 *   jail_tmp_source: /var/lib/racksmith/jail-tmp   (node-local directory bound on the jail's /tmp)
 *   jail_bind_files: [/etc/resolv.conf, /etc/hosts]
 *   jail_gpu:      true | false;  jail_gpu_dirs, jail_gpu_patterns, jail_lib_dir
 *   package_mirror, install_packages: nfs-common (nfs-utils) installed where the jail is NFS
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
    jail_gpu: { type: 'boolean' },
    jail_gpu_dirs: { type: 'array', items: { type: 'string', pattern: ABS } },
    jail_gpu_patterns: { type: 'array', items: { type: 'string' } },
    jail_lib_dir: { type: 'string', pattern: ABS },
  },
});

interface Submount {
  path: string;
  source: string;
  fstype: string;
  options?: string[];
  readonly?: boolean;
}

export function jailResources(host: HostContext): Resource[] {
  host.validate(validateVars);
  const J = host.var('jail_path', '/mnt/jail');
  const after = `x-systemd.requires-mounts-for=${J}`;
  const pre = prerequisites(host, 'jail', jailPackages(host)); // mount.nfs before the jail mounts
  const root = mount({
    path: J,
    after: pre.map((r) => r.id),
    source: host.var<string>('jail_source', ''),
    fstype: host.var('jail_fstype', 'nfs'),
    options: host.var<string[]>('jail_options', ['defaults', '_netdev']),
    requireMarker: host.var('jail_marker', 'etc/soperator-jail-populated'),
    overNonEmpty: false,
    tags: ['jail-root'],
  });
  const inJail = (p: string) => `${J}${p}`;
  /** A mount under the jail: its facts need the jail mounted, and it may never escape the jail. */
  const sub = (o: Parameters<typeof mount>[0]) =>
    mount({ ...o, dependsOn: [root.id, ...(o.dependsOn ?? [])], within: J, options: [...(o.options ?? []), after] });

  const out: Resource[] = [...pre, root];
  for (const s of host.var<Submount[]>('jail_submounts', [])) {
    out.push(
      sub({
        path: inJail(s.path),
        source: s.source,
        fstype: s.fstype,
        options: [...(s.options ?? ['defaults']), ...(s.readonly ? ['ro'] : [])],
        tags: ['jail-submounts'],
      }),
    );
  }
  // Node-local paths: never the shared FS.
  const tmpSource = host.var('jail_tmp_source', '/var/lib/racksmith/jail-tmp');
  const tmpDir = directory({ path: tmpSource, mode: '1777', tags: ['jail-local'] });
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
  if (host.var('jail_gpu', true)) {
    out.push(
      gpuBinds({
        jail: J,
        libDir: host.var('jail_lib_dir', '/usr/lib/x86_64-linux-gnu'),
        searchDirs: host.var('jail_gpu_dirs', DEFAULT_GPU_DIRS),
        patterns: host.var('jail_gpu_patterns', DEFAULT_GPU_PATTERNS),
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
