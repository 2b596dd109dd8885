import { isDeepStrictEqual } from 'node:util';
import type { Playbook } from '../contract/playbook.ts';
import type { Host, Inventory } from '../inventory/model.ts';
import { selectHosts } from '../inventory/limit.ts';
import { InputError } from '../util/errors.ts';
import { printable } from '../util/printable.ts';

/** The variable that points the plays' groups at the operator's own groups or patterns. */
export const PLAY_HOSTS_VAR = 'racksmith_play_hosts';

/**
 * The groups racksmith's bundled playbooks target or ask about (`hosts:` patterns, host.inGroup):
 * always valid keys of racksmith_play_hosts, so one inventory serves every playbook of a run.
 */
export const PLAY_GROUPS = ['storage', 'jail', 'kube_control_plane', 'kube_node'] as const;

const GROUP_KEY = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * The groups the plays of `playbooks` name in their `hosts` patterns (`kube_control_plane[0]` ->
 * kube_control_plane; `all`, globs and regexes are not groups one can redefine).
 */
export function playGroupsOf(playbooks: readonly Playbook[]): string[] {
  const out = new Set<string>(PLAY_GROUPS);
  for (const pb of playbooks)
    for (const p of pb.plays)
      for (const raw of p.hosts.includes('~') ? [] : p.hosts.split(/[:,]/)) {
        const term = raw
          .trim()
          .replace(/^[&!]/, '')
          .replace(/\[[^\]]*\]?$/, '');
        if (GROUP_KEY.test(term) && term !== 'all') out.add(term);
      }
  return [...out];
}

/**
 * The inventory as the plays see it under `racksmith_play_hosts: {GROUP: PATTERN}`: each GROUP
 * is exactly the hosts PATTERN selects (in inventory order), for the plays' `hosts` patterns
 * (`kube_control_plane[0]` is the first host of the pattern) and for what a playbook asks of a
 * host (inGroup, groups, inventoryHosts). The playbooks stay as they are; the inventory's own
 * groups are not changed (`provision inventory --list` shows them as written).
 *
 * The mapping is one for the run: set in `all`'s vars or with -e; hosts that disagree, a key
 * that is no group a play targets, or a pattern that selects no host is exit 3 at its file:line.
 */
export function withPlayGroups(inv: Inventory, playbooks: readonly Playbook[]): Inventory {
  const mapping = runMapping(inv);
  if (!mapping) return inv;
  const { value, host } = mapping;
  const at = host.varSources[PLAY_HOSTS_VAR] ?? host.pos;
  const known = playGroupsOf(playbooks);
  const members = new Map<string, Set<string>>();
  for (const [group, pattern] of Object.entries(value)) {
    if (!known.includes(group))
      throw new InputError(`${PLAY_HOSTS_VAR}: '${printable(group)}' is no group the plays target (they target: ${known.join(', ')})`, at);
    if (typeof pattern !== 'string' || pattern.trim() === '')
      throw new InputError(`${PLAY_HOSTS_VAR}.${group} must be a host pattern (a non-empty string), e.g. 'ais:&gpu-nodes'`, at);
    members.set(group, new Set(selectHosts(inv, pattern, `${PLAY_HOSTS_VAR}.${group}`)));
  }
  const hosts = inv.hosts.map((h) => {
    let groups = h.groups;
    for (const [group, set] of members) {
      const want = set.has(h.name);
      if (want === groups.includes(group)) continue;
      groups = want ? [...groups, group] : groups.filter((g) => g !== group);
    }
    return groups === h.groups ? h : { ...h, groups };
  });
  const groups = new Map(inv.groups);
  for (const [group, set] of members) {
    const prev = inv.groups.get(group);
    groups.set(group, {
      name: group,
      hosts: [...set],
      children: [],
      parents: ['all'],
      vars: prev?.vars ?? {},
      varSources: prev?.varSources ?? {},
      depth: prev?.depth ?? 1,
      priority: prev?.priority ?? 1,
      pos: prev?.pos ?? at,
    });
  }
  return { ...inv, hosts, groups };
}

/** The run's racksmith_play_hosts: the same on every host that sets it, and set on all or none. */
function runMapping(inv: Inventory): { value: Record<string, unknown>; host: Host } | undefined {
  const setting = inv.hosts.filter((h) => PLAY_HOSTS_VAR in h.vars);
  if (setting.length === 0) return undefined;
  const first = setting[0];
  const value = first.vars[PLAY_HOSTS_VAR];
  const at = (h: Host) => h.varSources[PLAY_HOSTS_VAR] ?? h.pos;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InputError(
      `${PLAY_HOSTS_VAR} must be a mapping of group to host pattern, e.g. {storage: ais, jail: 'ais:&gpu-nodes'}`,
      at(first),
    );
  const odd = inv.hosts.find((h) => !isDeepStrictEqual(h.vars[PLAY_HOSTS_VAR], value));
  if (odd)
    throw new InputError(
      `${PLAY_HOSTS_VAR} is one for the whole run (set it in all's vars or with -e): host ${odd.name} ${PLAY_HOSTS_VAR in odd.vars ? 'has another value' : 'does not have it'}`,
      PLAY_HOSTS_VAR in odd.vars ? at(odd) : odd.pos,
    );
  return { value: value as Record<string, unknown>, host: first };
}
