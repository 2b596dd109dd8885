// "Did you mean" (issue #36): a variable set in the inventory that no play reads, close to one a
// play reads, is a warning with where it was set; everything else is quiet.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { editDistance, likelyTypos, typoWarning } from '../../src/inventory/did-you-mean.ts';
import type { Host } from '../../src/inventory/model.ts';
import { cli } from './run-cli.ts';

describe('editDistance', () => {
  it.each([
    ['sysctl_overides', 'sysctl_overrides', 1],
    ['ntp_server', 'ntp_servers', 1],
    ['nic_mut', 'nic_mtu', 1], // a swapped pair is one edit
    ['storage_disk', 'storage_disks', 1],
    ['kitten', 'sitting', 3],
    ['', 'abc', 3],
    ['same', 'same', 0],
  ])('%s / %s: %i', (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
    expect(editDistance(b, a)).toBe(d);
  });
});

const host = (vars: Record<string, unknown>, file = 'group_vars/all.yml'): Host =>
  ({
    name: 'h1',
    vars,
    varSources: Object.fromEntries(Object.keys(vars).map((k, i) => [k, { file, line: i + 1, col: 1 }])),
  }) as unknown as Host;

describe('likelyTypos', () => {
  const declared = new Set(['sysctl_overrides', 'nofile', 'ntp_servers', 'jail_gpu', 'storage_disks']);
  it.each([
    [{ sysctl_overides: {} }, [['sysctl_overides', 'sysctl_overrides', 1]]],
    [{ ntp_server: ['a'] }, [['ntp_server', 'ntp_servers', 1]]],
    [{ nofle: 1 }, [['nofle', 'nofile', 1]]],
    // declared, far from any, connection and racksmith variables: quiet
    [{ sysctl_overrides: {}, rack: 'r1', ansible_usr: 'ops', racksmith_play_host: {} }, []],
    // under 6 characters only one edit: 'jail' is not 'jail_gpu', 'nofi' not 'nofile'
    [{ nofi: 1, jail: 'x' }, []],
  ])('%j', (vars, want) => {
    expect(likelyTypos([host(vars)], declared).map((t) => [t.variable, t.suggestion, t.pos?.line])).toEqual(want);
  });
  // An inventory brought from ais-k8s or Kubespray: their names are nowhere near racksmith's by
  // spelling, and their values would lose to racksmith's defaults without a word.
  it.each([
    [
      { ais_devices: ['sdb'], ais_fs_mount_options: 'noatime', mpath_prefix: '/ais' },
      ['storage_disks', 'storage_mount_options', 'storage_mount_prefix'],
    ],
    [{ kube_pods_subnet: '10.233.64.0/18', kube_network_plugin: 'calico' }, ['kube_pod_cidr', 'kube_cni']],
  ])('names the foreign variable racksmith calls otherwise: %j', (vars, want) => {
    const all = new Set([...declared, 'storage_mount_options', 'storage_mount_prefix', 'kube_pod_cidr', 'kube_cni']);
    const got = likelyTypos([host(vars)], all);
    expect(got.map((t) => t.suggestion)).toEqual(want);
    expect(typoWarning(got[0])).toBe(
      `group_vars/all.yml:1:1: ${Object.keys(vars)[0]} is read by no play: it is ${got[0].from}'s name; racksmith's is ${want[0]} (its value may take another shape: see the playbook's header)`,
    );
    // only when a play of the run reads racksmith's name (a storage run says nothing of Kubespray's)
    expect(
      likelyTypos([host(vars)], declared)
        .filter((t) => t.from)
        .map((t) => t.suggestion),
    ).toEqual(want.filter((w) => declared.has(w)));
  });

  it('reports a variable once per place it was set, whatever the number of hosts', () => {
    const a = host({ ntp_server: ['a'] });
    const b = { ...host({ ntp_server: ['a'] }), name: 'h2' } as Host;
    expect(likelyTypos([a, b], declared)).toHaveLength(1);
  });
});

/**
 * A local host whose inventory misspells sysctl_overrides (`hostVars`: more lines of the host,
 * each moving the typo a line down) and a playbook that reads the right name.
 */
function typoFixture(hostVars = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'rs-dym-'));
  writeFileSync(
    join(dir, 'hosts.yml'),
    `all:\n  hosts:\n    localhost:\n      ansible_connection: local\n${hostVars}  vars:\n    sysctl_overides: {}\n`,
  );
  writeFileSync(
    join(dir, 'pb.ts'),
    `import { playbook, file } from ${JSON.stringify(join(import.meta.dirname, '../../src/index.ts'))};
export default playbook({ name: 't', hosts: 'all', resources: (h) => [file({ path: ${JSON.stringify(join(dir, 'out'))}, content: JSON.stringify(h.var('sysctl_overrides', {})) })] });
`,
  );
  return dir;
}

describe('the warning in a run', () => {
  it('names the file:line and the suggestion, in the human view and --json', async () => {
    const dir = typoFixture();
    const r = await cli([join(dir, 'pb.ts'), '-i', join(dir, 'hosts.yml'), '--check', '--json', '--journal', join(dir, 'j.ndjson')]);
    const want = `${join(dir, 'hosts.yml')}:6:22: sysctl_overides is read by no play: did you mean sysctl_overrides?`;
    expect(r.stderr).toContain(`warning: ${want}`);
    expect(
      r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .filter((e) => e.type === 'warning'),
    ).toContainEqual(expect.objectContaining({ message: want, variable: 'sysctl_overides', suggestion: 'sysctl_overrides' }));
  });

  it.each(['--syntax-check', '--list-tasks', '--list-tags', '--list-hosts'])(
    '%s prints the warnings a run would (a typo, an ignored connection variable)',
    async (flag) => {
      const dir = typoFixture('      ansible_ssh_executable: /usr/bin/ssh\n');
      const r = await cli([join(dir, 'pb.ts'), '-i', join(dir, 'hosts.yml'), flag]);
      expect(r.code, r.stderr).toBe(0);
      // --list-hosts prepares nothing, so no play declares a variable there to compare with
      if (flag !== '--list-hosts')
        expect(r.stderr).toContain(`warning: ${join(dir, 'hosts.yml')}:7:22: sysctl_overides is read by no play`);
      expect(r.stderr).toContain(`warning: ${join(dir, 'hosts.yml')}:5:31: ansible_ssh_executable is not honoured`);
    },
  );
});
