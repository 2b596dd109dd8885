import {
  playbook,
  varsSchema,
  type HostContext,
  kmod,
  limits,
  type JobLimits,
  restartHandler,
  sysctl,
  SYSCTL_KEY,
  type SysctlValue,
  type Resource,
  OPTIONAL_SYSCTLS,
  RETIRED_SYSCTL_FILES,
  SYSCTL_PROFILES,
  sysctlFile,
  sysctlEffect,
  type ManagedSysctls,
  type NeverLower,
} from '../src/index.ts';

/**
 * Network tuning for AIStore targets and Kubernetes nodes: socket limits, port reuse, buffers
 * (sysctl.d drop-ins /etc/sysctl.d/99-zz-racksmith-<profile>.conf, one per profile, applied
 * live), nofile limits, kernel modules. The drop-ins are checked by their effect at boot: a file
 * the loader reads after them that sets a managed key otherwise fails (file:line, both values).
 *
 * Hosts: all (racksmith_play_hosts, docs/playbooks.md "Plays on your groups", maps the groups other playbooks target).
 *
 * Inventory variables (group_vars / host_vars / -e):
 *   sysctl_profiles:  [required, network, vm]      profiles to apply (also: jobs, vm.max_map_count for RDMA/GPU jobs)
 *   sysctl_overrides: { net.core.somaxconn: 32768, net.core.netdev_max_backlog: null }
 *                     change a profile value; null drops the key (e.g. absent in containers)
 *   sysctl_extra:     { net.ipv4.tcp_keepalive_time: 600 }   keys outside the profiles
 *   sysctl_never_lower: true | [net.core.somaxconn, net.ipv4.tcp_rmem]   floors: a live value already higher is
 *                     kept (and persisted at that value), field by field for vectors; true = every numeric key.
 *                     Default: false (racksmith's values are set, also lower ones)
 *   sysctl_take_over: [/etc/sysctl.d/99-ais-*.conf]  legacy files racksmith takes over: moved aside
 *                     (every key in them must be one racksmith sets)
 *   nofile:           1048576 | { soft: 1048576, hard: 1048576 }
 *   job_limits:       true | { memlock: unlimited, stack: unlimited, nproc: unlimited }   limits of RDMA and
 *                     GPU jobs (Soperator: unlimited) for PAM, systemd and containerd; true = all unlimited.
 *                     Default: none. Use with sysctl_profiles [..., jobs] (vm.max_map_count 655300).
 *                     containerd is restarted (once, after the play) when its limits drop-in changed.
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
    sysctl_never_lower: {
      description: 'true (every numeric key) or a list of sysctl keys this play sets',
      anyOf: [{ type: 'boolean' }, { type: 'array', items: { type: 'string', pattern: SYSCTL_KEY.source }, uniqueItems: true }],
    },
    nofile: {
      description: 'a whole number from 1024 to 1073741816 (soft and hard) or a mapping { soft: N, hard: N } of such numbers',
      anyOf: [
        { type: 'integer', minimum: 1024, maximum: 1073741816 },
        {
          type: 'object',
          required: ['soft', 'hard'],
          additionalProperties: false,
          properties: {
            soft: { type: 'integer', minimum: 1024, maximum: 1073741816 },
            hard: { type: 'integer', minimum: 1024, maximum: 1073741816 },
          },
        },
      ],
    },
    kernel_modules: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' } },
    job_limits: {
      anyOf: [
        { type: 'boolean' },
        {
          type: 'object',
          additionalProperties: false,
          properties: Object.fromEntries(
            ['memlock', 'stack', 'nproc'].map((k) => [k, { anyOf: [{ const: 'unlimited' }, { type: 'integer', minimum: 1 }] }]),
          ),
        },
      ],
    },
    sysctl_take_over: {
      type: 'array',
      items: { type: 'string', pattern: '^/(etc|run|usr/lib|usr/local/lib|lib)/sysctl\\.d/[A-Za-z0-9._*?\\[\\]-]+\\.conf$' },
    },
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
  const managed: ManagedSysctls[] = [];
  const extra = host.var<Record<string, number | string>>('sysctl_extra', {});
  const neverLower = neverLowerVar(host, profiles, overrides, extra);
  for (const p of profiles) {
    const values: Record<string, SysctlValue> = {};
    for (const [k, v] of Object.entries(SYSCTL_PROFILES[p])) {
      const o = overrides[k];
      if (o === null) continue;
      values[k] = o ?? v;
    }
    if (Object.keys(values).length) {
      const optional = OPTIONAL_SYSCTLS.filter((k) => k in values);
      out.push(sysctl({ file: sysctlFile(p), profile: p, values, optional, neverLower, tags: ['sysctl'] }));
      managed.push({ file: sysctlFile(p), values, neverLower });
    }
  }
  const modules = host.var<string[]>('kernel_modules', []);
  const loads = modules.length ? kmod({ modules, tags: ['kmod'] }) : undefined;
  if (Object.keys(extra).length) {
    // An extra key may be one a module of kernel_modules brings: diffed once it is loaded.
    const dependsOn = loads ? [loads.id] : undefined;
    out.push(sysctl({ file: sysctlFile('extra'), profile: 'extra', values: extra, neverLower, dependsOn, tags: ['sysctl'] }));
    managed.push({ file: sysctlFile('extra'), values: extra, neverLower });
  }
  out.push(
    sysctlEffect({
      name: 'network',
      managed,
      takeOver: host.var<string[]>('sysctl_take_over', []),
      retire: RETIRED_SYSCTL_FILES.filter((f) => !f.endsWith('-k8s.conf')), // (the Kubernetes play's own)
      // old files go only after the drop-ins that replace them are written (skipped if one failed)
      after: out.map((r) => r.id),
      tags: ['sysctl'],
    }),
  );
  const nofile = host.var<number | { soft: number; hard: number }>('nofile', 1048576);
  const jobVar = host.var<boolean | JobLimits>('job_limits', false);
  const jobs: JobLimits | undefined =
    jobVar === true ? { memlock: 'unlimited', stack: 'unlimited', nproc: 'unlimited' } : jobVar === false ? undefined : jobVar;
  const containerd = restartHandler({ service: 'containerd', tags: ['limits'] });
  out.push(...limits({ nofile, jobs, containerdNotify: [containerd.id], tags: ['limits'] }), containerd);
  if (loads) out.push(loads);
  return out;
}

/** sysctl_never_lower, a listed key checked against the keys this play sets (a floor of nothing is said). */
function neverLowerVar(
  host: HostContext,
  profiles: string[],
  overrides: Record<string, number | string | null>,
  extra: Record<string, number | string>,
): NeverLower {
  const never = host.var<NeverLower>('sysctl_never_lower', false);
  if (!Array.isArray(never)) return never;
  const set = new Set([
    ...profiles.flatMap((p) => Object.keys(SYSCTL_PROFILES[p]).filter((k) => overrides[k] !== null)),
    ...Object.keys(extra),
  ]);
  const unknown = never.filter((k) => !set.has(k));
  if (unknown.length)
    throw host.error(
      'sysctl_never_lower',
      `sysctl_never_lower: ${unknown.join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not set by this play (profiles ${profiles.join(', ')}, sysctl_extra, less the keys sysctl_overrides drops)`,
    );
  return never;
}

export default playbook({
  name: 'network tuning',
  hosts: 'all',
  tags: ['network'],
  resources: networkResources,
});
