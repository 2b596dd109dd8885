import { playbook, varsSchema, type HostContext } from '../src/contract/playbook.ts';
import { kmod } from '../src/resources/kmod.ts';
import { limits } from '../src/resources/limits.ts';
import { sysctl, SYSCTL_KEY, type SysctlValue } from '../src/resources/sysctl.ts';
import type { Resource } from '../src/contract/resource.ts';
import { SYSCTL_PROFILES } from '../src/profiles/sysctl-profiles.ts';

/**
 * Network tuning for AIStore targets and Kubernetes nodes: socket limits, port reuse, buffers
 * (sysctl.d drop-ins, one per profile, applied live), nofile limits, kernel modules.
 *
 * Inventory variables (group_vars / host_vars / -e):
 *   sysctl_profiles:  [required, network, vm]      profiles to apply
 *   sysctl_overrides: { net.core.somaxconn: 32768, net.core.netdev_max_backlog: null }
 *                     change a profile value; null drops the key (e.g. absent in containers)
 *   sysctl_extra:     { net.ipv4.tcp_keepalive_time: 600 }   keys outside the profiles
 *   nofile:           1048576 | { soft: 1048576, hard: 1048576 }
 *   kernel_modules:   [tcp_bbr]                     loaded now and at boot
 */
const INT_VECTOR = '^[0-9]+( [0-9]+)*$';
const value = {
  anyOf: [
    { type: 'integer', minimum: 0 },
    { type: 'string', pattern: INT_VECTOR },
  ],
};

const validateVars = varsSchema({
  properties: {
    sysctl_profiles: { type: 'array', items: { enum: Object.keys(SYSCTL_PROFILES) }, uniqueItems: true },
    sysctl_overrides: {
      type: 'object',
      propertyNames: { pattern: SYSCTL_KEY.source },
      additionalProperties: { anyOf: [value, { type: 'null' }] },
    },
    sysctl_extra: { type: 'object', propertyNames: { pattern: SYSCTL_KEY.source }, additionalProperties: value },
    nofile: {
      anyOf: [
        { type: 'integer', minimum: 1024 },
        {
          type: 'object',
          required: ['soft', 'hard'],
          additionalProperties: false,
          properties: { soft: { type: 'integer', minimum: 1024 }, hard: { type: 'integer', minimum: 1024 } },
        },
      ],
    },
    kernel_modules: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' } },
  },
});

export function networkResources(host: HostContext): Resource[] {
  host.validate(validateVars);
  const profiles = host.var<string[]>('sysctl_profiles', ['required', 'network', 'vm']);
  const overrides = host.var<Record<string, number | string | null>>('sysctl_overrides', {});
  const known = new Set(profiles.flatMap((p) => Object.keys(SYSCTL_PROFILES[p])));
  for (const k of Object.keys(overrides)) {
    if (!known.has(k))
      throw host.error(
        'sysctl_overrides',
        `sysctl_overrides: '${k}' is not in the enabled profiles (${profiles.join(', ')}); use sysctl_extra for other keys`,
      );
  }
  const out: Resource[] = [];
  for (const p of profiles) {
    const values: Record<string, SysctlValue> = {};
    for (const [k, v] of Object.entries(SYSCTL_PROFILES[p])) {
      const o = overrides[k];
      if (o === null) continue;
      values[k] = o ?? v;
    }
    if (Object.keys(values).length)
      out.push(sysctl({ file: `/etc/sysctl.d/90-racksmith-${p}.conf`, profile: p, values, tags: ['sysctl'] }));
  }
  const extra = host.var<Record<string, number | string>>('sysctl_extra', {});
  if (Object.keys(extra).length)
    out.push(sysctl({ file: '/etc/sysctl.d/91-racksmith-extra.conf', profile: 'extra', values: extra, tags: ['sysctl'] }));
  const nofile = host.var<number | { soft: number; hard: number }>('nofile', 1048576);
  out.push(...limits({ nofile, tags: ['limits'] }));
  const modules = host.var<string[]>('kernel_modules', []);
  if (modules.length) out.push(kmod({ modules, tags: ['kmod'] }));
  return out;
}

export default playbook({
  name: 'network tuning',
  hosts: 'all',
  tags: ['network'],
  resources: networkResources,
});
