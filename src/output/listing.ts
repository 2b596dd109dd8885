import type { Playbook } from '../contract/playbook.ts';
import type { PreparedPlay } from '../engine/run.ts';
import { printable } from '../util/printable.ts';

/** What ansible-playbook's listing flags print, from plays built and checked but never run. */
export type ListingMode = 'tasks' | 'tags' | 'syntax';

const DEPENDS_ON_FACTS = ' (depends on facts)';

const tagList = (tags: Iterable<string>) => `[${[...tags].join(', ')}]`;

/**
 * `--list-tasks`: per play, each host's resources (id and tags) in the order they run; hosts
 * whose lists are the same are printed once (a fleet's hosts mostly are). `--list-tags`: per
 * play, every tag its resources carry. `--syntax-check`: the playbooks, once all is checked.
 * A `facts: true` play's resources are its hosts' facts' to decide: listed as "(depends on facts)".
 */
export function listing(mode: ListingMode, playbooks: readonly Playbook[], prepared: readonly PreparedPlay[]): string {
  const named = (pb: Playbook) => `playbook: ${printable(pb.file ?? pb.name)}\n`;
  if (mode === 'syntax') return playbooks.map(named).join('');
  let out = '';
  let i = 0;
  for (const pb of playbooks) {
    out += `\n${named(pb)}`;
    pb.plays.forEach((play, n) => {
      const pp = prepared[i++];
      out += `\n  play #${n + 1} (${printable(play.hosts)}): ${printable(play.name)}\tTAGS: ${tagList(play.tags ?? [])}\n`;
      if (mode === 'tags') {
        const tags = new Set(pp.hosts.flatMap((h) => h.resources.flatMap((r) => r.tags)));
        out += `      TASK TAGS: ${tagList([...tags].sort())}${pp.awaitsFacts ? DEPENDS_ON_FACTS : ''}\n`;
        return;
      }
      if (pp.hosts.length === 0) out += '    hosts (0)\n';
      else if (pp.awaitsFacts) {
        // (built only from the hosts' facts, which a listing does not gather: no host is contacted)
        out += `    hosts (${pp.hosts.length}): ${pp.hosts.map((h) => h.host.name).join(', ')}\n      ${DEPENDS_ON_FACTS.trim()}\n`;
        return;
      }
      for (const [text, hosts] of groupByList(pp)) out += `    hosts (${hosts.length}): ${hosts.join(', ')}\n${text}`;
    });
  }
  return out.slice(1);
}

/** Hosts with the same resource list (ids and tags), in inventory order, with that list's text. */
function groupByList(pp: PreparedPlay): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const { host, resources } of pp.hosts) {
    const text = resources.map((r) => `      ${printable(r.id)}\tTAGS: ${tagList(r.tags)}\n`).join('') || '      (no resources)\n';
    const hosts = groups.get(text);
    if (hosts) hosts.push(host.name);
    else groups.set(text, [host.name]);
  }
  return groups;
}
