// What playbooks/jail.ts builds per host from its variables: the NFS defaults, the GPU check that
// gates a GPU node's jail, the stand-ins of a CPU node, directory binds, bad input located.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepare } from '../../src/engine/run.ts';
import { loadInventory } from '../../src/inventory/load.ts';
import jail, { NFS_JAIL_OPTIONS } from '../../playbooks/jail.ts';
import type { MountFacts } from '../../src/resources/core/mount.ts';
import { fileWith } from './facts.ts';

function build(groupVars: string, hostVars: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'rs-jailpb-'));
  const file = join(dir, 'hosts.yaml');
  const hosts = ['gpu1', 'cpu1'].map((h) => `        ${h}: ${hostVars[h] ?? '{}'}`).join('\n');
  writeFileSync(file, `all:\n  children:\n    jail:\n      vars:\n${groupVars}\n      hosts:\n${hosts}\n`);
  const [p] = prepare(loadInventory(file), [jail], {});
  return { file, byHost: Object.fromEntries(p.hosts.map((h) => [h.host.name, h.resources])) };
}
const rootEntry = (resources: ReturnType<typeof build>['byHost'][string]) => {
  const root = resources.find((r) => r.id === 'mount:/mnt/jail')!;
  const facts: MountFacts = { fstab: fileWith(''), target: { kind: 'dir', empty: true }, source: { exists: true }, marker: true };
  return root.diff(facts).find((c) => c.summary.startsWith('/etc/fstab: add'))!.summary;
};

describe('jail playbook', () => {
  it('an NFS jail without jail_options is mounted as Soperator’s NFS chart mounts its volumes', () => {
    const { byHost } = build('        jail_source: nfs.rack:/export/jail');
    expect(rootEntry(byHost.gpu1)).toBe(`/etc/fstab: add nfs.rack:/export/jail /mnt/jail nfs ${NFS_JAIL_OPTIONS.join(',')} 0 0`);
    expect(NFS_JAIL_OPTIONS).toEqual(expect.arrayContaining(['nconnect=16', 'vers=4.2', 'hard', 'rsize=1048576', 'wsize=1048576']));
  });
  it('jail_options, when given, are used as they are; other filesystems keep defaults', () => {
    expect(rootEntry(build('        jail_source: nfs:/j\n        jail_options: [vers=4.1]').byHost.gpu1)).toBe(
      '/etc/fstab: add nfs:/j /mnt/jail nfs vers=4.1 0 0',
    );
    expect(rootEntry(build('        jail_source: jailfs\n        jail_fstype: virtiofs').byHost.gpu1)).toBe(
      '/etc/fstab: add jailfs /mnt/jail virtiofs defaults,_netdev 0 0',
    );
  });

  it('jail_fstype none binds without jail_options: [bind]; options given keep theirs after bind; a none submount binds too', () => {
    expect(rootEntry(build('        jail_source: /srv/shared/jail\n        jail_fstype: none').byHost.gpu1)).toBe(
      '/etc/fstab: add /srv/shared/jail /mnt/jail none bind 0 0',
    );
    expect(
      rootEntry(build('        jail_source: /srv/j\n        jail_fstype: none\n        jail_options: [ro, _netdev]').byHost.gpu1),
    ).toBe('/etc/fstab: add /srv/j /mnt/jail none bind,ro,_netdev 0 0');
    expect(rootEntry(build('        jail_source: /srv/j\n        jail_fstype: none\n        jail_options: [rbind]').byHost.gpu1)).toBe(
      '/etc/fstab: add /srv/j /mnt/jail none rbind 0 0',
    );
    const { byHost } = build('        jail_source: nfs:/j\n        jail_submounts: [{ path: /home, source: /srv/home, fstype: none }]');
    const home = byHost.gpu1.find((r) => r.id === 'mount:/mnt/jail/home')!;
    const facts: MountFacts = { fstab: fileWith(''), target: { kind: 'dir', empty: true }, source: { exists: true } };
    expect(home.diff(facts).map((c) => c.summary)).toContain(
      'mount /srv/home on /mnt/jail/home (none, bind,x-systemd.requires-mounts-for=/mnt/jail,_netdev)',
    );
  });

  it('a GPU node: the driver check first, and the jail waits for it; a CPU node: stand-ins, no driver check', () => {
    const { byHost } = build('        jail_source: nfs:/j\n        jail_bind_dirs: [/var/spool/slurmd]', { cpu1: '{ jail_gpu: false }' });
    const gpu = byHost.gpu1;
    expect(gpu[0].id).toBe('gpu-driver:/mnt/jail');
    expect(gpu[0].fleet).toBe('jail-gpu:nfs:/j');
    expect(gpu.find((r) => r.id === 'mount:/mnt/jail')!.dependsOn).toEqual(['gpu-driver:/mnt/jail']);
    expect(gpu.find((r) => r.id === 'directory:/var/lib/racksmith/jail-tmp')!.dependsOn).toEqual(['gpu-driver:/mnt/jail']);
    expect(gpu.find((r) => r.id === 'gpu-binds:/mnt/jail')!.dependsOn).toEqual(['gpu-driver:/mnt/jail', 'mount:/mnt/jail']);
    expect(gpu.some((r) => r.id === 'mount:/mnt/jail/var/spool/slurmd')).toBe(true);
    const cpu = byHost.cpu1;
    expect(cpu.map((r) => r.id)).not.toContain('gpu-driver:/mnt/jail');
    const standins = cpu.find((r) => r.id === 'gpu-standins:/mnt/jail')!;
    expect(standins.fleet).toBe(gpu[0].fleet); // it learns the GPU hosts' file sets
    expect(standins.dependsOn).toEqual(['mount:/mnt/jail']);
  });

  it('the driver check is selected with any of the jail tags (a gate left out would count as satisfied)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-jailpb-'));
    const file = join(dir, 'hosts.yaml');
    writeFileSync(file, 'all:\n  children:\n    jail:\n      vars: { jail_source: nfs:/j }\n      hosts: { gpu1: {} }\n');
    for (const tag of ['jail-root', 'jail-local', 'jail-gpu']) {
      const [p] = prepare(loadInventory(file), [jail], { tags: [tag] });
      expect(p.hosts[0].resources.map((r) => r.id)).toContain('gpu-driver:/mnt/jail');
    }
  });

  it('the driver check and the binds share one probe part (run once per host)', () => {
    const gpu = build('        jail_source: nfs:/j').byHost.gpu1;
    const driver = gpu.find((r) => r.id === 'gpu-driver:/mnt/jail')!.probe() as string[];
    const binds = gpu.find((r) => r.id === 'gpu-binds:/mnt/jail')!.probe() as unknown[];
    expect(binds[0]).toBe(driver[0]);
  });

  it.each([
    [
      '        jail_source: nfs:/j\n        jail_gpu_caps: compute,bogus',
      /hosts\.yaml:\d+:\d+: gpu1: unknown NVIDIA driver capability "bogus"/,
    ],
    ['        jail_source: nfs:/j\n        jail_gpu_caps: [compute, bogus]', /hosts\.yaml:\d+:\d+/],
    ['        jail_source: nfs:/j\n        jail_lock_timeout: 0', /hosts\.yaml:\d+:\d+/],
    ['        jail_source: nfs:/j\n        jail_bind_dirs: [relative]', /hosts\.yaml:\d+:\d+/],
    ['        jail_source: nfs:/j\n        jail_gpu_driver_root: run/nvidia/driver', /hosts\.yaml:\d+:\d+/],
    ['        jail_source: nfs:/j\n        jail_gpu_driver_root: /run/nvidia/driver/', /hosts\.yaml:\d+:\d+/],
  ])('bad input is located: %j', (vars, msg) => expect(() => build(vars)).toThrow(msg));
});
