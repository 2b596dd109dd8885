// Sysctl floors (sysctl_never_lower, issue #38): the kept value field by field, what the sysctl
// resource writes and reports, what the boot-effect check compares, and the playbook variable.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import network from '../../../../playbooks/network.ts';
import { prepare } from '../../../../src/engine/run.ts';
import { loadInventory } from '../../../../src/inventory/load.ts';
import { sysctl, type SysctlFacts } from '../../../../src/resources/tuning/sysctl.ts';
import { sysctlEffect, type SysctlConfFile } from '../../../../src/resources/tuning/sysctl-effect.ts';
import { applyFloors, flooredKeys, floorValue } from '../../../../src/resources/tuning/sysctl-floor.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { absent, fileWith } from '../../facts.ts';

describe('floorValue', () => {
  it.each<[string, string, string, string | null, string, boolean]>([
    ['the host has more: kept', 'net.core.somaxconn', '65535', '100000', '100000', true],
    ['the host has less: racksmith raises it', 'net.core.somaxconn', '65535', '4096', '65535', false],
    ['equal: nothing kept', 'net.core.somaxconn', '65535', '65535', '65535', false],
    [
      'vector: the larger of each field',
      'net.ipv4.tcp_rmem',
      '4096 262144 134217728',
      '8192 131072 268435456',
      '8192 262144 268435456',
      true,
    ],
    [
      'vector, the host less in every field',
      'net.ipv4.tcp_rmem',
      '4096 262144 134217728',
      '4096 87380 6291456',
      '4096 262144 134217728',
      false,
    ],
    ['a range: a lower first bound is more (wider)', 'net.ipv4.ip_local_port_range', '2048 65535', '1024 60999', '1024 65535', true],
    ["a range: a narrower one is raised to racksmith's", 'net.ipv4.ip_local_port_range', '2048 65535', '32768 60999', '2048 65535', false],
    ['signed: -1 is less than 0', 'kernel.perf_event_paranoid', '0', '-1', '0', false],
    ['beyond 2^53 compared exactly', 'net.ipv4.tcp_mem', '9007199254740993 1 1', '9007199254740992 1 1', '9007199254740993 1 1', false],
    ["missing key: racksmith's", 'net.core.somaxconn', '65535', null, '65535', false],
    ["unreadable: racksmith's", 'net.core.somaxconn', '65535', '', '65535', false],
    ["not numeric: racksmith's", 'net.ipv4.tcp_congestion_control', 'bbr', 'cubic', 'bbr', false],
    ["another number of fields: racksmith's", 'net.ipv4.tcp_rmem', '4096 262144 134217728', '9999999', '4096 262144 134217728', false],
  ])('%s', (_, key, want, live, value, kept) => expect(floorValue(key, want, live)).toEqual({ value, kept }));
});

describe('flooredKeys', () => {
  const want = { 'net.core.somaxconn': '65535', 'net.ipv4.tcp_rmem': '1 2 3', 'net.ipv4.tcp_congestion_control': 'bbr' };
  it.each<[string, boolean | string[] | undefined, string[]]>([
    ['unset: none', undefined, []],
    ['false: none', false, []],
    ['true: every numeric key', true, ['net.core.somaxconn', 'net.ipv4.tcp_rmem']],
    ['a list: its keys among these (others belong to other drop-ins)', ['net.ipv4.tcp_rmem', 'vm.swappiness'], ['net.ipv4.tcp_rmem']],
  ])('%s', (_, never, keys) => expect(flooredKeys(never, want)).toEqual(keys));

  it('applyFloors says what it kept', () => {
    expect(
      applyFloors(
        ['net.core.somaxconn'],
        { 'net.core.somaxconn': '65535', 'vm.swappiness': '10' },
        { 'net.core.somaxconn': '100000', 'vm.swappiness': '60' },
      ),
    ).toEqual({
      values: { 'net.core.somaxconn': '100000', 'vm.swappiness': '10' },
      kept: ["net.core.somaxconn 100000 (racksmith's 65535)"],
    });
  });
});

describe('sysctl with floors', () => {
  const FILE = '/etc/sysctl.d/99-zz-racksmith-required.conf';
  const memory = { memTotalKb: 1 << 20, pageSize: 4096 };
  const r = sysctl({
    file: FILE,
    profile: 'required',
    values: { 'net.core.somaxconn': 65535, 'net.ipv4.tcp_rmem': '4096 262144 134217728', 'vm.swappiness': 10 },
    neverLower: ['net.core.somaxconn', 'net.ipv4.tcp_rmem'],
  });
  const facts = (file: SysctlFacts['file'], live: Record<string, string>): SysctlFacts => ({ file, live, memory });
  const kept = `# Managed by racksmith (profile: required). Local edits are overwritten.
net.core.somaxconn = 100000
net.ipv4.tcp_rmem = 4096 1000000 134217728
vm.swappiness = 10
`;

  it('a higher live value is written as it is, reported kept; a vector field by field; an unfloored key lowered', () => {
    const changes = r.diff(
      facts(absent, { 'net.core.somaxconn': '100000', 'net.ipv4.tcp_rmem': '4096 1000000 6291456', 'vm.swappiness': '60' }),
    );
    expect(changes.map((c) => c.summary)).toEqual([
      `create ${FILE} (kept: the host has more: net.core.somaxconn 100000 (racksmith's 65535), net.ipv4.tcp_rmem 4096 1000000 134217728 (racksmith's 4096 262144 134217728))`,
      'net.ipv4.tcp_rmem: 4096 1000000 6291456 → 4096 1000000 134217728',
      'vm.swappiness: 60 → 10',
    ]);
    expect(changes[0].diff).toContain('+net.core.somaxconn = 100000');
  });

  it('converged at the kept value (a re-run, or after a reboot that loaded the file): no change', () => {
    expect(
      r.diff(
        facts(fileWith(kept), { 'net.core.somaxconn': '100000', 'net.ipv4.tcp_rmem': '4096 1000000 134217728', 'vm.swappiness': '10' }),
      ),
    ).toEqual([]);
  });

  it("a lower live value is raised to racksmith's, and the file follows", () => {
    const changes = r.diff(
      facts(fileWith(kept), { 'net.core.somaxconn': '4096', 'net.ipv4.tcp_rmem': '4096 1000000 134217728', 'vm.swappiness': '10' }),
    );
    expect(changes.map((c) => c.summary)).toEqual([
      `update ${FILE} (kept: the host has more: net.ipv4.tcp_rmem 4096 1000000 134217728 (racksmith's 4096 262144 134217728))`,
      'net.core.somaxconn: 4096 → 65535',
    ]);
    expect(changes[0].diff).toContain('+net.core.somaxconn = 65535');
  });

  it('a listed key whose value is not numeric is bad input', () => {
    expect(() =>
      sysctl({ file: FILE, values: { 'net.ipv4.tcp_congestion_control': 'bbr' }, neverLower: ['net.ipv4.tcp_congestion_control'] }),
    ).toThrow(InputError);
  });
});

describe('the boot-effect check follows the kept value', () => {
  const OURS = '/etc/sysctl.d/99-zz-racksmith-required.conf';
  const later = (value: string): SysctlConfFile => ({
    path: '/etc/sysctl.d/99-zzz-workload.conf',
    assignments: [{ line: 1, key: 'net.core.somaxconn', value }],
  });
  const memory = { memTotalKb: 1 << 20, pageSize: 4096 };
  const check = (neverLower: boolean) =>
    sysctlEffect({ name: 'network', managed: [{ file: OURS, values: { 'net.core.somaxconn': 65535 }, neverLower }] });

  it('a later file setting the kept value is no override', () => {
    expect(check(true).diff({ files: [later('100000')], memory, live: { 'net.core.somaxconn': '100000' } })).toEqual([]);
  });
  it('without floors it is', () => {
    expect(() => check(false).diff({ files: [later('100000')], memory, live: {} })).toThrow(
      /overridden at boot by \/etc\/sysctl.d\/99-zzz-workload.conf:1/,
    );
  });
  it('a later file setting another value than the kept one still is', () => {
    expect(() => check(true).diff({ files: [later('70000')], memory, live: { 'net.core.somaxconn': '100000' } })).toThrow(
      'net.core.somaxconn = 100000 (/etc/sysctl.d/99-zz-racksmith-required.conf) is overridden at boot',
    );
  });
  it('probes live values only with floors', () => {
    expect(check(false).probe()).toHaveLength(2);
    expect(check(true).probe()).toHaveLength(3);
  });
});

describe('sysctl_never_lower in the network playbook', () => {
  function build(vars: string) {
    const dir = mkdtempSync(join(tmpdir(), 'rs-floor-'));
    const file = join(dir, 'hosts.yaml');
    writeFileSync(file, `all:\n  hosts:\n    n1: {}\n  vars:\n${vars}`);
    return () => prepare(loadInventory(file), [network], {})[0].hosts[0].resources;
  }
  it('a list reaches every drop-in and the boot-effect check', () => {
    const resources = build('    sysctl_never_lower: [net.core.somaxconn]\n    sysctl_extra: { kernel.pid_max: 4194304 }\n')();
    const sysctls = resources.filter((r) => r.kind === 'sysctl');
    expect(sysctls.length).toBeGreaterThan(1);
    // the effect check reads the live values of its drop-ins' keys (floors need them)
    expect(resources.find((r) => r.kind === 'sysctl-effect')!.probe().length).toBeGreaterThan(2);
  });
  it.each([
    [
      'a key no profile or extra sets',
      '    sysctl_never_lower: [net.core.nosuchkey]\n',
      /sysctl_never_lower: net.core.nosuchkey is not set by this play/,
    ],
    [
      'a key sysctl_overrides drops',
      '    sysctl_never_lower: [net.core.somaxconn]\n    sysctl_overrides: { net.core.somaxconn: null }\n',
      /net.core.somaxconn is not set by this play/,
    ],
    ['not a key', "    sysctl_never_lower: ['a b']\n", /sysctl_never_lower/],
    ['neither true/false nor a list', '    sysctl_never_lower: yes please\n', /sysctl_never_lower/],
  ])('%s: exit 3 at the variable', (_, vars, msg) => {
    expect(build(vars)).toThrow(msg);
    expect(build(vars)).toThrow(InputError);
  });
});
