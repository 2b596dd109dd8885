// Host facts in a play's HostContext and in saved plans: what a play without `facts: true` meets,
// and which changes of a host's facts refuse a plan (src/plan/host-facts.ts).
import { describe, expect, it } from 'vitest';
import { HostContext, NoFacts } from '../../src/contract/playbook.ts';
import { changedFactParts, factsDrift, factsFingerprint } from '../../src/plan/host-facts.ts';
import type { HostFacts } from '../../src/facts/types.ts';
import type { Host } from '../../src/inventory/model.ts';

const facts: HostFacts = {
  arch: 'x86_64',
  os: { id: 'debian', versionId: '12', family: 'debian' },
  kernel: '6.1.0-18-amd64',
  virtualization: 'none',
  memory: { totalBytes: 64 << 30 },
  cpu: { count: 16, cores: 8 },
  nics: [
    { name: 'eth0', mac: '52:54:00:12:34:56', mtu: 1500, driver: 'ixgbe', speedMbps: 10000 },
    { name: 'eth1', mac: '52:54:00:12:34:57', mtu: 9000, driver: 'ixgbe', speedMbps: 10000 },
  ],
  disks: [{ name: 'sda', rotational: true, sizeBytes: 4e12, serial: 'ZC1', wwn: null, model: 'ST4000' }],
  gpus: [{ vendor: 'nvidia', model: 'NVIDIA A100 80GB PCIe', pciId: '10de:20b5', address: '0000:3b:00.0', driverVersion: '535.161.08' }],
};
const host = { name: 'h1', vars: {}, varSources: {}, groups: [] } as unknown as Host;

describe('host.facts in a play', () => {
  it('a play with facts gets them, and the memo records the read', () => {
    const ctx = new HostContext(host, [], facts);
    ctx.reads = [];
    expect(ctx.facts).toBe(facts);
    expect(ctx.reads).toEqual([{ kind: 'facts', value: facts }]);
  });

  it('a play without `facts: true` reading them is told how to ask for them', () => {
    expect(() => new HostContext(host).facts).toThrow('host.facts is read by a play without `facts: true`: add `facts: true` to the play');
  });

  it('a host whose facts could not be gathered: the reason', () => {
    expect(() => new HostContext(host, [], new NoFacts('gathering facts: exit 2')).facts).toThrow('gathering facts: exit 2');
  });
});

describe('facts in a saved plan', () => {
  const planned = factsFingerprint(facts);
  const moved = (edit: (f: HostFacts) => void) => {
    const f = structuredClone(facts);
    edit(f);
    return f;
  };

  it('one hash per part, one per NIC, disk and GPU by name; no fact in clear', () => {
    expect(Object.keys(planned)).toEqual([
      'arch',
      'os',
      'kernel',
      'virtualization',
      'memory',
      'cpu',
      'nics.eth0',
      'nics.eth1',
      'disks.sda',
      'gpus.0000:3b:00.0',
    ]);
    expect(Object.values(planned).every((h) => /^[0-9a-f]{64}$/.test(h))).toBe(true);
  });

  it.each<[string, (f: HostFacts) => void, string[]]>([
    ['nothing moved', () => {}, []],
    ['an MTU', (f) => (f.nics[0].mtu = 9000), ['nics.eth0']],
    ['a NIC gone', (f) => f.nics.pop(), ['nics.eth1']],
    ['a pod came and went', (f) => f.nics.push({ ...f.nics[0], name: 'cali1a2b3c4d5e6' }, { ...f.nics[0], name: 'veth9f8e7d6' }), []],
    ['a disk added', (f) => f.disks.push({ ...f.disks[0], name: 'sdb' }), ['disks.sdb']],
    ['the driver upgraded', (f) => (f.gpus[0].driverVersion = '550.54.15'), ['gpus.0000:3b:00.0']],
    ['the driver unloaded', (f) => delete f.gpus[0].driverVersion, ['gpus.0000:3b:00.0']],
    [
      'memory and kernel',
      (f) => {
        f.memory.totalBytes -= 4096;
        f.kernel = '6.1.0-20-amd64';
      },
      ['kernel', 'memory'],
    ],
  ])('%s: %j', (_name, edit, changed) => {
    expect(changedFactParts(planned, factsFingerprint(moved(edit)))).toEqual(changed);
  });

  it('apply refuses a host whose facts moved, naming the parts; a host of the plan without facts too', () => {
    expect(factsDrift(planned, facts)).toBeUndefined();
    expect(
      factsDrift(
        planned,
        moved((f) => (f.nics[1].mtu = 1500)),
      ),
    ).toBe('refused: host facts changed since the plan: nics.eth1 (make a new plan)');
    expect(factsDrift(undefined, facts)).toBe('refused: the plan holds no facts of this host (make a new plan)');
  });
});
