/**
 * Host prerequisites of the bundled playbooks: the packages each needs on a bare-metal host, and
 * one `packages` resource per play that installs the missing ones in one transaction. site.ts
 * starts with a play that installs what all its playbooks need at once (one transaction per
 * host); each playbook still declares its own, so that it works alone (converged after site's).
 *
 * Inventory variables:
 *   package_mirror:   { apt: 'deb [trusted=yes] http://mirror/debian bookworm main', dnf: http://mirror/el9/ }
 *                     the operator's mirror, used for these installs only (host sources untouched)
 *   install_packages: true       false: never install (a missing program then fails its resource)
 * A package is missing unless dpkg (or rpm) has it installed; one held with `apt-mark hold` is
 * installed, and is never upgraded or reinstalled by these plays. On apt, installed for the
 * host's architecture (or `all`), as apt takes the name: `attr:arm64` alone is not `attr`, which
 * is then asked for as `attr:amd64` (the plan says it replaces the other).
 */
import { varsSchema, type HostContext } from '../contract/playbook.ts';
import type { Resource } from '../contract/resource.ts';
import { packages, type PackageMirror, type PackageName } from '../resources/core/packages.ts';
import { fsClientPackages } from './jail-storage.ts';

const validateVars = varsSchema({
  properties: {
    package_mirror: {
      type: 'object',
      additionalProperties: false,
      properties: {
        apt: { type: 'string', pattern: '^deb (\\[[^\\]\\n]*\\] )?(https?|file):[^\\s]+ [^\\s]+( [^\\s]+)*$' },
        dnf: { type: 'string', pattern: '^(https?|file)://[^\\s]+$' },
      },
    },
    install_packages: { type: 'boolean' },
  },
});

/** storage.ts: mkfs.xfs, setfattr (the xattr check). */
export const STORAGE_PACKAGES: PackageName[] = ['xfsprogs', 'attr'];

/** jail.ts: the client of each filesystem type of the jail and its submounts (nfs-common for NFS, ...). */
export function jailPackages(host: HostContext): PackageName[] {
  const types = [host.var('jail_fstype', 'nfs'), ...host.var<Array<{ fstype: string }>>('jail_submounts', []).map((s) => s.fstype)];
  return fsClientPackages(types);
}

/** node.ts: chrony where NTP servers or pools are set, ethtool where NIC queues are tuned. */
export function nodePackages(host: HostContext): PackageName[] {
  const out: PackageName[] = [];
  if (host.var<string[]>('ntp_servers', []).length || host.var<string[]>('ntp_pools', []).length) out.push('chrony');
  if (host.var<unknown[]>('nic_queues', []).length) out.push('ethtool');
  return out;
}

/** The play's `packages` resource (none when it needs none, or installing is turned off). */
export function prerequisites(host: HostContext, name: string, wanted: PackageName[]): Resource[] {
  host.validate(validateVars);
  if (!wanted.length || !host.var('install_packages', true)) return [];
  const seen = new Set<string>();
  const unique = wanted.filter((p) => {
    const k = JSON.stringify(p);
    return !seen.has(k) && seen.add(k) !== undefined;
  });
  return [
    packages({ name, packages: unique, mirror: host.var<PackageMirror | undefined>('package_mirror', undefined), tags: ['packages'] }),
  ];
}
