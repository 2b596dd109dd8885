// prepare() shares one build of a play between hosts that answer the play's reads the same
// (engine/play-memo.ts): what each host gets must be what building it alone gives.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepare } from '../../src/engine/run.ts';
import { HostContext, playbook, varsSchema, type Play } from '../../src/contract/playbook.ts';
import { same } from '../../src/engine/play-memo.ts';
import { loadInventory } from '../../src/inventory/load.ts';
import type { Inventory } from '../../src/inventory/model.ts';
import { directory } from '../../src/resources/core/directory.ts';
import type { Resource } from '../../src/contract/resource.ts';
import { InputError } from '../../src/util/errors.ts';
import { Secret } from '../../src/util/secret.ts';
import site from '../../playbooks/site.ts';

function inventory(yaml: string): Inventory {
  const dir = mkdtempSync(join(tmpdir(), 'rs-memo-'));
  const file = join(dir, 'hosts.yaml');
  writeFileSync(file, yaml);
  return loadInventory(file);
}

/** A play that counts its builds. */
function counting(resources: Play['resources']): { play: Play; builds: () => number } {
  let n = 0;
  return {
    play: { name: 'p', hosts: 'all', resources: (h) => (n++, resources(h)) },
    builds: () => n,
  };
}

const hostsOf = (inv: Inventory, play: Play) => prepare(inv, [playbook(play)], {})[0].hosts;
const ids = (rs: Resource[]) => rs.map((r) => r.id);

describe('one build per distinct answers', () => {
  const inv = inventory(`all:
  vars: { dir: /srv/a }
  hosts:
    h1: { ansible_host: 10.0.0.1 }
    h2: { ansible_host: 10.0.0.2 }
    h3: { ansible_host: 10.0.0.3, dir: /srv/b }
    h4: { ansible_host: 10.0.0.4 }
`);

  it('hosts that differ only in variables the play does not read share one build', () => {
    const c = counting((h) => [directory({ path: h.var('dir', '/srv/none'), mode: '0755' })]);
    const hosts = hostsOf(inv, c.play);
    expect(c.builds()).toBe(2); // h1 (= h2, h4) and h3
    expect(hosts.map((h) => ids(h.resources))).toEqual([
      ['directory:/srv/a'],
      ['directory:/srv/a'],
      ['directory:/srv/b'],
      ['directory:/srv/a'],
    ]);
    expect(hosts[1].resources).toBe(hosts[0].resources);
  });

  it('a play that reads the host name (or all its vars) builds for every host', () => {
    const byName = counting((h) => [directory({ path: `/srv/${h.name}`, mode: '0755' })]);
    expect(hostsOf(inv, byName.play).map((h) => ids(h.resources)[0])).toEqual([
      'directory:/srv/h1',
      'directory:/srv/h2',
      'directory:/srv/h3',
      'directory:/srv/h4',
    ]);
    expect(byName.builds()).toBe(4);
    const byVars = counting((h) => [directory({ path: `/srv/${String(h.vars.ansible_host)}`, mode: '0755' })]);
    hostsOf(inv, byVars.play);
    expect(byVars.builds()).toBe(4);
  });

  it('groups, inGroup and unset variables are part of the answers', () => {
    const inv2 = inventory(`all:
  children:
    a: { hosts: { h1: null, h2: null } }
    b: { hosts: { h3: null } }
  hosts: { h4: { x: 1 } }
`);
    const c = counting((h) => [directory({ path: h.inGroup('a') ? '/a' : `/x${h.var('x', 0)}`, mode: '0755' })]);
    const got = Object.fromEntries(hostsOf(inv2, c.play).map((h) => [h.host.name, ids(h.resources)[0]]));
    expect(got).toEqual({ h1: 'directory:/a', h2: 'directory:/a', h3: 'directory:/x0', h4: 'directory:/x1' });
    expect(c.builds()).toBe(3);
  });

  it('variable checks run for every host: a bad value is reported where that host set it', () => {
    const validate = varsSchema({ properties: { mode: { type: 'string' } } });
    const c = counting((h) => (h.validate(validate), [directory({ path: h.var('dir', '/srv'), mode: '0755' })]));
    const bad = inventory(`all:
  vars: { dir: /srv/a, mode: '0755' }
  hosts:
    h1: null
    h2:
      mode: 755
`);
    expect(() => hostsOf(bad, c.play)).toThrow(InputError);
    try {
      hostsOf(bad, c.play);
    } catch (e) {
      expect((e as InputError).message).toMatch(/mode must be string/);
      expect((e as InputError).pos).toMatchObject({ line: 6 });
    }
  });

  it('an input error of a shared build is still reported for the first host that has it', () => {
    const dup: Play = {
      name: 'p',
      hosts: 'all',
      resources: () => [directory({ path: '/a', mode: '0755' }), directory({ path: '/a', mode: '0755' })],
    };
    expect(() => hostsOf(inv, dup)).toThrow(/declares directory:\/a twice for host h1/);
  });
});

describe('same()', () => {
  it('compares inventory values structurally, key order included', () => {
    expect(same({ a: [1, { b: 'x' }], c: null }, { a: [1, { b: 'x' }], c: null })).toBe(true);
    expect(same({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false); // a play may iterate them in order
    expect(same([1, 2], [1, 2, 3])).toBe(false);
    expect(same({ a: undefined }, {})).toBe(false);
    expect(same(0, -0)).toBe(false);
    expect(same(NaN, NaN)).toBe(true);
    expect(same('1', 1)).toBe(false);
  });

  it('a secret only equals itself (its value is never compared)', () => {
    const s = new Secret('x');
    expect(same({ t: s }, { t: s })).toBe(true);
    expect(same({ t: s }, { t: new Secret('x') })).toBe(false);
  });
});

describe('the shipped playbooks', () => {
  /** What prepare gave each host equals a build of that host alone. */
  const expectSameAsAlone = (inv: Inventory) => {
    const plays = prepare(inv, [site], {});
    for (const pp of plays) {
      for (const { host, resources } of pp.hosts) {
        const alone = pp.play.resources(new HostContext(host, inv.hosts));
        expect(ids(resources), `${pp.play.name} ${host.name}`).toEqual(ids(alone));
        expect(resources.map((r) => r.probe())).toEqual(alone.map((r) => r.probe()));
      }
    }
    return plays;
  };

  it.each(['inventories/local.yaml', 'inventories/example-prod/hosts.yaml'])('%s: prepared resources equal a build per host', (file) => {
    expectSameAsAlone(loadInventory(file));
  });

  it('a fleet of alike hosts shares builds; a host with its own disks gets its own', () => {
    const disks = (n: number) => `[{ device: /dev/loop${n}, name: d1, match: { KERNEL: loop${n} } }]`;
    const hosts = Array.from(
      { length: 12 },
      (_, i) => `    n${i}: { ansible_host: 10.0.0.${i}, storage_disks: ${disks(i === 5 ? 9 : 1)} }`,
    );
    const inv = inventory(`all:
  vars:
    jail_source: /srv/shared/jail
    jail_fstype: none
    jail_options: [bind]
  hosts:
${hosts.join('\n')}
  children:
    jail: { hosts: { ${hosts.map((_, i) => `n${i}: null`).join(', ')} } }
    storage: { hosts: { ${hosts.map((_, i) => `n${i}: null`).join(', ')} } }
`);
    const plays = expectSameAsAlone(inv);
    const storage = plays.find((p) => p.play.name === 'storage')!.hosts;
    expect(storage[1].resources).toBe(storage[0].resources);
    expect(storage[5].resources).not.toBe(storage[0].resources);
    expect(JSON.stringify(storage[5].resources.map((r) => r.probe()))).toContain('loop9');
  });
});
