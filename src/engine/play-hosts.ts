import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import type { Play, Playbook } from '../contract/playbook.ts';
import { addWarning, type Host, type Inventory } from '../inventory/model.ts';
import { groupHosts, selectHosts } from '../inventory/limit.ts';
import { formatPos, InputError, type SourcePos } from '../util/errors.ts';
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
    const warn = (message: string) => addWarning(inv, `${formatPos(at)}: ${message}`, at);
    members.set(group, new Set(selectHosts(inv, pattern, `${PLAY_HOSTS_VAR}.${group}`, false, { at, warn })));
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

/**
 * The hosts of a play group as the plays see it, for what acts on it outside the plays (--drain's
 * control-plane host): those of its racksmith_play_hosts pattern when the run maps it, else the
 * inventory's group; undefined when there is neither. (The mapping was checked by withPlayGroups
 * when the plays were prepared: its warnings are not given twice.)
 */
export function playGroupHosts(inv: Inventory, group: string): string[] | undefined {
  const mapping = runMapping(inv);
  const pattern = mapping?.value[group];
  if (mapping && typeof pattern === 'string' && pattern.trim() !== '') {
    const at = mapping.host.varSources[PLAY_HOSTS_VAR] ?? mapping.host.pos;
    return selectHosts(inv, pattern, `${PLAY_HOSTS_VAR}.${group}`, false, { at, warn: () => undefined });
  }
  return inv.groups.has(group) ? groupHosts(inv, group) : undefined;
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

/**
 * The hosts a play's `hosts` pattern selects, in Ansible's order. A term that matches nothing
 * and a pattern that selects no host at all are warnings naming the play's file:line (the play
 * is skipped, as in Ansible), never a silent skip.
 */
export function playHosts(inv: Inventory, pb: Playbook, play: Play): string[] {
  const at = playPosition(pb, play);
  const where = at ? `${formatPos(at)}: ` : '';
  const what = `pattern of play '${play.name}'`;
  const terms: string[] = [];
  const hosts = selectHosts(inv, play.hosts, what, true, { at, warn: (m) => terms.push(m) });
  // one warning for a skipped play; else one for each term that matched nothing
  if (hosts.length === 0)
    addWarning(
      inv,
      `${where}play '${printable(play.name)}' (hosts: '${printable(play.hosts)}') matches no host in ${inv.file}: the play is skipped`,
      at,
    );
  else for (const m of terms) addWarning(inv, where + m, at);
  return hosts;
}

const SOURCES = new Map<string, string | undefined>();

/**
 * Where a play's `hosts` is written: the first `hosts:` line of the playbook's file that
 * holds the pattern as a string literal (the file alone when none does).
 */
function playPosition(pb: Playbook, play: Play): SourcePos | undefined {
  if (!pb.file) return undefined;
  if (!SOURCES.has(pb.file)) {
    let text: string | undefined;
    try {
      text = readFileSync(pb.file, 'utf8');
    } catch {
      text = undefined;
    }
    SOURCES.set(pb.file, text);
  }
  const lines = SOURCES.get(pb.file)?.split('\n') ?? [];
  for (let i = 0; i < lines.length; i++) {
    const col = lines[i].search(/\bhosts\s*:/);
    if (col >= 0 && ['"', "'", '`'].some((q) => lines[i].includes(q + play.hosts + q))) return { file: pb.file, line: i + 1, col: col + 1 };
  }
  return { file: pb.file };
}
