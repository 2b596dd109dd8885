// The inventories shipped in inventories/ must stay valid for the site playbook: loading and
// preparing them (every resource of every host built and its variables validated) never throws.
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.ts';
import { prepare } from '../../src/engine/run.ts';
import site from '../../playbooks/site.ts';

describe('shipped inventories', () => {
  it.each(['inventories/local.yaml', 'inventories/example-prod/hosts.yaml'])('%s prepares for playbooks/site.ts', (file) => {
    const inv = loadInventory(file);
    const plays = prepare(inv, [site], {});
    const resources = plays.reduce((n, p) => n + p.hosts.reduce((m, h) => m + h.resources.length, 0), 0);
    expect(resources).toBeGreaterThan(0);
  });

  it('example-prod: storage and jail plays reach the storage hosts, group_vars are read', () => {
    const inv = loadInventory('inventories/example-prod/hosts.yaml');
    expect(inv.hosts.map((h) => h.name)).toEqual(['cp1.rack12', 'st01.rack12', 'st02.rack12', 'st03.rack12', 'st04.rack12']);
    const st = inv.hosts.find((h) => h.name === 'st02.rack12')!;
    expect(st.groups).toEqual(['all', 'jail', 'storage']); // storage is a child of jail: deeper, so it wins
    expect(st.vars.jail_fstype).toBe('nfs');
    const plays = prepare(inv, [site], {});
    const byPlay = Object.fromEntries(plays.map((p) => [p.play.name, p.hosts.map((h) => h.host.name)]));
    expect(byPlay['storage']).toHaveLength(4);
    expect(byPlay['jail']).toHaveLength(4);
    expect(byPlay['network tuning']).toHaveLength(5);
  });
});
