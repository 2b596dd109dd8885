import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseExtraVars } from '../../src/inventory/extra-vars.ts';
import { loadInventory } from '../../src/inventory/load.ts';
import { prepare } from '../../src/engine/run.ts';
import { playGroupsOf, withPlayGroups } from '../../src/engine/play-hosts.ts';
import { playbook, type Playbook } from '../../src/contract/playbook.ts';
import { selectHosts } from '../../src/inventory/limit.ts';
import { InputError } from '../../src/util/errors.ts';
import bundledSite from '../../playbooks/site.ts';

// ais-k8s's own inventory (test/unit/fixtures/public-inventories/ais-k8s/hosts-example.ini, unchanged).
const AIS = join(import.meta.dirname, 'fixtures', 'public-inventories', 'ais-k8s', 'hosts-example.ini');
const MAPPING = `{racksmith_play_hosts: {storage: ais, jail: 'ais:&gpu-nodes', kube_control_plane: controller, kube_node: ais}}`;
const dir = mkdtempSync(join(tmpdir(), 'rs-play-hosts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** site.ts's plays as they are, their resources left out: what is asked here is where they run. */
const site: Playbook = { ...bundledSite, plays: bundledSite.plays.map((p) => ({ ...p, resources: () => [] })) };
const load = (extra: string[], file = AIS) => {
  const e = parseExtraVars(extra);
  return loadInventory(file, e.vars, e.sources);
};
const probe = (hosts: string): Playbook => playbook({ name: hosts, hosts, resources: () => [] });
const hostsOf = (pbs: Playbook[], extra: string[]) =>
  prepare(load(extra), pbs, {}).map((p) => [p.play.name, p.hosts.map((h) => h.host.name)]);

describe('racksmith_play_hosts', () => {
  it("points the bundled plays at ais-k8s's groups, the playbooks unchanged", () => {
    expect(hostsOf([site], [MAPPING])).toEqual([
      ['host prerequisites', ['worker1', 'worker2', 'controller_host', 'gpu-worker1']],
      ['network tuning', ['worker1', 'worker2', 'controller_host', 'gpu-worker1']],
      ['node', ['worker1', 'worker2', 'controller_host', 'gpu-worker1']],
      ['storage', ['worker1', 'worker2', 'controller_host', 'gpu-worker1']],
      ['jail', ['gpu-worker1']],
      // kube_control_plane:kube_node, term by term: controller's host, then ais's
      ['kubernetes network: nodes', ['controller_host', 'worker1', 'worker2', 'gpu-worker1']],
      ['kubernetes network: cluster', ['controller_host']],
    ]);
  });

  it('without it, the same inventory reaches only the plays on all (its groups are not racksmith names)', () => {
    expect(
      hostsOf([site], [])
        .filter(([, h]) => h.length > 0)
        .map(([p]) => p),
    ).toEqual(['host prerequisites', 'network tuning', 'node']);
  });

  it.each<[string, string, string[]]>([
    // play pattern, mapping, hosts
    ['storage', '{storage: worker1}', ['worker1']],
    ['storage', "{storage: 'ais:!gpu-nodes'}", ['worker1', 'worker2', 'controller_host']], // ais's own hosts, then its children's
    ['kube_control_plane[0]', "{kube_control_plane: 'worker*'}", ['worker1']],
    ['kube_control_plane[-1]', "{kube_control_plane: 'worker*'}", ['worker2']],
    // a group term with & and ! in the play's own pattern is the mapped set, not a spliced string
    ['kube_control_plane:kube_node', "{kube_control_plane: 'ais:&gpu-nodes', kube_node: worker2}", ['gpu-worker1', 'worker2']],
    ['storage:&jail', "{storage: ais, jail: 'gpu-nodes:controller'}", ['controller_host', 'gpu-worker1']],
    ['all:!storage', "{storage: 'ais:!controller'}", ['controller_host']],
  ])('play hosts %j with %s -> %j', (pattern, mapping, want) => {
    expect(hostsOf([probe(pattern)], [`{racksmith_play_hosts: ${mapping}}`])).toEqual([[pattern, want]]);
  });

  it('what a playbook asks of a host follows the mapping too (inGroup, groups, inventoryHosts)', () => {
    const seen: Record<string, unknown> = {};
    const pb = playbook({
      name: 'asks',
      hosts: 'storage',
      resources: (h) => {
        seen[h.name] = {
          inStorage: h.inGroup('storage'),
          groups: h.groups.includes('storage'),
          n: h.inventoryHosts.filter((x) => x.groups.includes('storage')).length,
        };
        return [];
      },
    });
    prepare(load(['{racksmith_play_hosts: {storage: gpu-nodes}}']), [pb], {});
    expect(seen).toEqual({ 'gpu-worker1': { inStorage: true, groups: true, n: 1 } });
  });

  it('the inventory itself is not changed (inventory --list shows it as written)', () => {
    const inv = load([MAPPING]);
    const view = withPlayGroups(inv, [site]);
    expect(view).not.toBe(inv);
    expect(inv.groups.has('storage')).toBe(false);
    expect(inv.hosts.every((h) => !h.groups.includes('storage'))).toBe(true);
    expect(selectHosts(view, 'storage')).toEqual(['worker1', 'worker2', 'controller_host', 'gpu-worker1']);
  });

  it("known keys: the bundled plays' groups, and every group the loaded plays name", () => {
    expect(playGroupsOf([])).toEqual(['storage', 'jail', 'kube_control_plane', 'kube_node']);
    expect(playGroupsOf([probe('racks:&gpu[0]'), probe('~re:x'), probe('all:!login'), probe('web*')])).toEqual([
      'storage',
      'jail',
      'kube_control_plane',
      'kube_node',
      'racks',
      'gpu',
      'login',
    ]);
  });

  it('set in all vars of the inventory works as -e does', () => {
    const f = join(dir, 'inv.yml');
    writeFileSync(f, 'all:\n  vars:\n    racksmith_play_hosts: {jail: w2}\n  hosts: {w1: {}, w2: {}}\n');
    expect(
      prepare(load([], f), [site, probe('jail')], {})
        .at(-1)!
        .hosts.map((h) => h.host.name),
    ).toEqual(['w2']);
  });

  it('a term that matches nothing is a warning at the file:line:col where the mapping is set', () => {
    const f = join(dir, 'warn.yml');
    writeFileSync(f, 'all:\n  vars:\n    racksmith_play_hosts: {jail: "w2:gpus"}\n  hosts: {w1: {}, w2: {}}\n');
    const inv = load([], f);
    expect(prepare(inv, [probe('jail')], {})[0].hosts.map((h) => h.host.name)).toEqual(['w2']);
    expect(inv.warnings?.map((w) => w.message)).toContain(
      `${f}:3:27: host racksmith_play_hosts.jail 'w2:gpus': 'gpus' matches no host or group, ignored`,
    );
  });

  it("a play whose pattern matches no host is skipped with a warning at the playbook's file:line", () => {
    const f = join(dir, 'inv-plain.yml');
    writeFileSync(f, 'all:\n  hosts: {w1: {}, w2: {}}\n');
    const pbFile = join(dir, 'pb.ts');
    writeFileSync(
      pbFile,
      "export default playbook({\n  name: 'x',\n  plays: [\n    { name: 'on racks', hosts: 'rakcs', resources },\n  ],\n});\n",
    );
    const inv = load([], f);
    const pb = { ...playbook({ name: 'on racks', hosts: 'rakcs', resources: () => [] }), file: pbFile };
    expect(prepare(inv, [pb, probe('w1:nosuch')], {}).map((p) => p.hosts.length)).toEqual([0, 1]);
    expect(inv.warnings?.map((w) => w.message)).toEqual([
      `${pbFile}:4:25: play 'on racks' (hosts: 'rakcs') matches no host in ${f}: the play is skipped`,
      "host pattern of play 'w1:nosuch' 'w1:nosuch': 'nosuch' matches no host or group, ignored",
    ]);
  });

  const bad = (vars: string, hostLine = 'w1: {}'): InputError => {
    const f = join(dir, `bad-${Math.random().toString(36).slice(2)}.yml`);
    writeFileSync(f, `all:\n  vars:\n    racksmith_play_hosts: ${vars}\n  hosts:\n    ${hostLine}\n    w2: {}\n`);
    try {
      prepare(load([], f), [site], {});
    } catch (e) {
      expect(e).toBeInstanceOf(InputError);
      return e as InputError;
    }
    throw new Error('no error');
  };

  it.each<[string, string, RegExp, number]>([
    // vars, host line, message, line of the error
    [
      '{stroage: w1}',
      'w1: {}',
      /racksmith_play_hosts: 'stroage' is no group the plays target \(they target: storage, jail, kube_control_plane, kube_node\)/,
      3,
    ],
    ['{storage: nosuch}', 'w1: {}', /host racksmith_play_hosts.storage 'nosuch' matches no host in /, 3],
    ['{storage: "~("}', 'w1: {}', /invalid regular expression in host pattern '~\('/, 3],
    ['{storage: "~["}', 'w1: {}', /'~\[' has a '\[' or '\]' that is not part of a \[...\]/, 3],
    ['{storage: "w1:!"}', 'w1: {}', /host racksmith_play_hosts.storage 'w1:!' has nothing after '!'/, 3],
    ['{storage: "w1[3]"}', 'w1: {}', /host racksmith_play_hosts.storage 'w1\[3\]': no host at 'w1\[3\]'/, 3],
    ["{storage: ''}", 'w1: {}', /racksmith_play_hosts.storage must be a host pattern/, 3],
    ['{storage: [w1]}', 'w1: {}', /racksmith_play_hosts.storage must be a host pattern/, 3],
    ['[storage]', 'w1: {}', /racksmith_play_hosts must be a mapping of group to host pattern/, 3],
    ['{storage: w1}', 'w1: {racksmith_play_hosts: {storage: w2}}', /one for the whole run .* host w2 has another value/, 3],
  ])('%s (host %s) is exit 3: %s', (vars, hostLine, message, line) => {
    const e = bad(vars, hostLine);
    expect(e.message).toMatch(message);
    if (line) expect(e.pos).toMatchObject({ line });
  });

  it('an unknown key given with -e names the -e argument', () => {
    expect(() => prepare(load(['{racksmith_play_hosts: {gpus: gpu-nodes}}']), [site], {})).toThrow(
      /^-e #1: racksmith_play_hosts: 'gpus' is no group/,
    );
  });
});
