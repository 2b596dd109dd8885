// The checks over a whole run before any host is contacted (engine/run-checks.ts, claims.ts):
// two resources that claim one thing (a sysctl key, a file, a mountpoint, a limits item), and a
// -t/--skip-tags selection that selects nothing.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { playbook, type Play } from '../../src/contract/playbook.ts';
import type { Resource } from '../../src/contract/resource.ts';
import { conflicts } from '../../src/engine/claims.ts';
import { prepare } from '../../src/engine/run.ts';
import { refuseEmptySelection } from '../../src/engine/run-checks.ts';
import { callSite, throwSite } from '../../src/engine/throw-site.ts';
import { loadInventory } from '../../src/inventory/load.ts';
import type { Inventory } from '../../src/inventory/model.ts';
import { file } from '../../src/resources/core/file.ts';
import { limits } from '../../src/resources/tuning/limits.ts';
import { mount } from '../../src/resources/core/mount.ts';
import { sysctl } from '../../src/resources/tuning/sysctl.ts';
import { block, line } from '../../src/resources/core/text-edit.ts';
import { ioUdevRules } from '../../src/resources/storage/udev.ts';
import { directory } from '../../src/resources/core/directory.ts';
import { chronySources } from '../../src/resources/tuning/chrony.ts';
import { nmUnmanaged } from '../../src/resources/kube/cni.ts';
import { mtu } from '../../src/resources/tuning/mtu.ts';
import { InputError } from '../../src/util/errors.ts';
import site from '../../playbooks/site.ts';
import network from '../../playbooks/network.ts';

function inventory(yaml: string): Inventory {
  const dir = mkdtempSync(join(tmpdir(), 'rs-checks-'));
  const path = join(dir, 'hosts.yaml');
  writeFileSync(path, yaml);
  return loadInventory(path);
}

const inv = inventory('all:\n  hosts:\n    h1: { ansible_host: 10.0.0.1 }\n    h2: { ansible_host: 10.0.0.2 }\n');
const play = (name: string, resources: () => Resource[], tags?: string[]): Play => ({ name, hosts: 'all', tags, resources });
const somaxconn = (f: string, v: number) => sysctl({ file: f, values: { 'net.core.somaxconn': v } });
const udev = (path: string) => ioUdevRules({ path, disks: [{ name: 'd1', spec: { device: '/dev/loop3' }, match: { KERNEL: 'loop3' } }] });

describe('conflicts: one thing claimed by two resources', () => {
  it.each<[string, () => Resource[], string | undefined]>([
    [
      'a sysctl key in two files',
      () => [somaxconn('/etc/sysctl.d/95-a.conf', 4096), somaxconn('/etc/sysctl.d/99-b.conf', 65535)],
      'sysctl:net.core.somaxconn',
    ],
    [
      'a sysctl key set to the same value twice',
      () => [somaxconn('/etc/sysctl.d/95-a.conf', 1), somaxconn('/etc/sysctl.d/99-b.conf', 1)],
      'sysctl:net.core.somaxconn',
    ],
    [
      'two sysctl keys in two files',
      () => [somaxconn('/etc/sysctl.d/95-a.conf', 1), sysctl({ file: '/etc/sysctl.d/99-b.conf', values: { 'vm.swappiness': 1 } })],
      undefined,
    ],
    [
      'a file written whole twice',
      () => [file({ path: '/etc/x', content: 'a' }), sysctl({ file: '/etc/x', values: { 'vm.swappiness': 1 } })],
      'file:/etc/x',
    ],
    [
      'stacked line and block edits of one file',
      () => [line({ path: '/etc/x', line: 'a' }), line({ path: '/etc/x', line: 'b' }), block({ path: '/etc/x', block: 'c' })],
      undefined,
    ],
    [
      'a whole-file write, then an edit',
      () => [file({ path: '/etc/x', content: 'a' }), line({ path: '/etc/x', line: 'b' })],
      'file:/etc/x',
    ],
    [
      'an edit, then a whole-file write',
      () => [line({ path: '/etc/x', line: 'b' }), line({ path: '/etc/x', line: 'c' }), file({ path: '/etc/x', content: 'a' })],
      'file:/etc/x',
    ],
    [
      'one mountpoint',
      () => [mount({ path: '/ais/d1', fstype: 'tmpfs', source: 'tmpfs' }), mount({ path: '/ais/d1', fstype: 'xfs', device: '/dev/sdb' })],
      'mountpoint:/ais/d1',
    ],
    [
      'a limits item in two drop-ins',
      () => [...limits({ nofile: 4096 }), ...limits({ nofile: 8192, file: '/etc/security/limits.d/95-x.conf' }).slice(0, 1)],
      'limits:*:soft:nofile',
    ],
    [
      'limits of other domains',
      () => [
        ...limits({ nofile: 4096 }),
        ...limits({ nofile: 8192, domains: ['ais'], file: '/etc/security/limits.d/95-x.conf' }).slice(0, 1),
      ],
      undefined,
    ],
    [
      'one udev rule file',
      () => [udev('/etc/udev/rules.d/60-a.rules'), file({ path: '/etc/udev/rules.d/60-a.rules', content: '' })],
      'file:/etc/udev/rules.d/60-a.rules',
    ],
    [
      "chrony's sources file",
      () => [chronySources({ pools: ['pool.example'] }), file({ path: '/etc/chrony/sources.d/racksmith.sources', content: '' })],
      'file:/etc/chrony/sources.d/racksmith.sources',
    ],
    [
      "NetworkManager's drop-in",
      () => [nmUnmanaged(), file({ path: '/etc/NetworkManager/conf.d/calico.conf', content: '' })],
      'file:/etc/NetworkManager/conf.d/calico.conf',
    ],
    [
      "mtu's netplan file",
      () => [mtu({ select: { name: 'eth0' }, mtu: 9000 }), file({ path: '/etc/netplan/90-racksmith-mtu-eth0.yaml', content: '' })],
      'file:/etc/netplan/90-racksmith-mtu-eth0.yaml',
    ],
    ['resources that claim nothing', () => [directory({ path: '/etc/x' }), directory({ path: '/etc/y' })], undefined],
  ])('%s', (_, build, claim) => {
    const found = conflicts([build()]);
    expect(found.map((c) => c.claims[0])).toEqual(claim ? [claim] : []);
  });

  it('a pair that claims several things is one conflict naming them all', () => {
    const found = conflicts([
      [...limits({ nofile: 4096 }), ...limits({ nofile: 8192, file: '/etc/security/limits.d/95-x.conf' }).slice(0, 1)],
    ]);
    expect(found).toHaveLength(1);
    expect(found[0].claims).toEqual(['limits:*:soft:nofile', 'limits:*:hard:nofile', 'limits:root:soft:nofile', 'limits:root:hard:nofile']);
  });

  it('across plays: the pair in declaration order, each with the line that declared it', () => {
    const [c] = conflicts([[somaxconn('/etc/sysctl.d/99-b.conf', 65535)], [somaxconn('/etc/sysctl.d/95-a.conf', 4096)]]);
    expect([c.first.id, c.second.id]).toEqual(['sysctl:/etc/sysctl.d/99-b.conf', 'sysctl:/etc/sysctl.d/95-a.conf']);
  });
});

describe('prepare refuses a conflict before any host is contacted', () => {
  it('one sysctl key in two plays: exit 3 naming both resources and the playbook lines that declared them', () => {
    const pb = playbook({
      name: 'two',
      plays: [
        play('a', () => [somaxconn('/etc/sysctl.d/99-zz-racksmith-required.conf', 65535)]),
        play('b', () => [somaxconn('/etc/sysctl.d/95-rack.conf', 4096)]),
      ],
    });
    let err: unknown;
    try {
      prepare(inv, [pb], {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    const msg = (err as Error).message;
    expect(msg).toContain('host h1: sysctl:/etc/sysctl.d/99-zz-racksmith-required.conf (test/unit/run-checks.test.ts:');
    expect(msg).toContain('and sysctl:/etc/sysctl.d/95-rack.conf (test/unit/run-checks.test.ts:');
    expect(msg).toContain('both claim sysctl:net.core.somaxconn');
    expect(msg).not.toContain('h2'); // h2's builds are h1's: checked once
  });

  it('an operator file beside the bundled network play is refused; a key outside its profiles is not', () => {
    const own = (values: Record<string, number>) => playbook(play('rack', () => [sysctl({ file: '/etc/sysctl.d/95-rack.conf', values })]));
    expect(() => prepare(inv, [network, own({ 'net.core.somaxconn': 4096 })], {})).toThrow(/both claim sysctl:net\.core\.somaxconn/);
    expect(() => prepare(inv, [network, own({ 'net.ipv4.tcp_keepalive_time': 600 })], {})).not.toThrow();
  });

  it.each(['inventories/local.yaml', 'inventories/example-prod/hosts.yaml'])(
    'the bundled playbooks do not conflict with themselves (%s)',
    (path) => {
      expect(() => prepare(loadInventory(path), [site], {})).not.toThrow();
    },
  );
});

describe('a tag selection that selects nothing', () => {
  const tagged = playbook({
    name: 'tagged',
    plays: [play('p', () => [directory({ path: '/a', tags: ['disk'] }), directory({ path: '/b', tags: ['net'] })], ['base'])],
  });
  const known = 'tags in this run: base, disk, net';
  it.each<[string, { tags?: string[]; skipTags?: string[] }, string | undefined]>([
    ['a tag nothing carries', { tags: ['nosuch'] }, `-t/--tags: no resource carries tag(s) nosuch; ${known}`],
    ['one known tag, one unknown', { tags: ['disk', 'dsk'] }, `-t/--tags: no resource carries tag(s) dsk; ${known}`],
    ['a known tag', { tags: ['disk'] }, undefined],
    ['a play tag', { tags: ['base'] }, undefined],
    ['all', { tags: ['all'] }, undefined],
    ['--skip-tags that skips everything', { skipTags: ['base'] }, `--skip-tags base selects no resource of this run; ${known}`],
    [
      '-t and --skip-tags that cancel out',
      { tags: ['disk'], skipTags: ['disk'] },
      `-t disk --skip-tags disk selects no resource of this run; ${known}`,
    ],
    ['--skip-tags of a tag nothing carries', { skipTags: ['nosuch'] }, undefined],
    [
      '--skip-tags all (Ansible: every resource but those tagged always)',
      { skipTags: ['all'] },
      `--skip-tags all selects no resource of this run; ${known}`,
    ],
  ])('%s', (_, sel, error) => {
    const run = () => prepare(inv, [tagged], sel);
    if (error) expect(run).toThrow(error);
    else expect(run).not.toThrow();
  });

  it.each<[string, { tags?: string[]; skipTags?: string[] }, string[]]>([
    ['--skip-tags all keeps what is tagged always', { skipTags: ['all'] }, ['directory:/always']],
    ['--skip-tags all,always keeps nothing', { skipTags: ['all', 'always'] }, []],
    ['-t disk takes what is tagged always too', { tags: ['disk'] }, ['directory:/always', 'directory:/a']],
  ])('%s', (_, sel, ids) => {
    const pb = playbook({
      name: 'always',
      plays: [play('p', () => [directory({ path: '/always', tags: ['always'] }), directory({ path: '/a', tags: ['disk'] })])],
    });
    const kept = () => prepare(inv, [pb], sel)[0].hosts[0].resources.map((r) => r.id);
    if (ids.length) expect(kept()).toEqual(ids);
    else expect(kept).toThrow(/selects no resource/);
  });

  it('no resource in the run at all: nothing to say about tags', () => {
    expect(() => refuseEmptySelection({ tags: ['x'] }, new Set(), 0, 0)).not.toThrow();
  });
});

describe('the playbook line of a stack', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-site-'));
  mkdirSync(join(dir, 'dist/playbooks'), { recursive: true });
  // generated line 2, column 1 comes from line 5, column 1 of ../../playbooks/a.ts
  const map = { version: 3, file: 'a.js', sources: ['../../playbooks/a.ts'], names: [], mappings: ';AAIA' };
  writeFileSync(join(dir, 'dist/playbooks/a.js.map'), JSON.stringify(map));
  // racksmith's own root: its src/ and dist/src/ frames are skipped
  const ROOT = resolve(import.meta.dirname, '..', '..');
  const stack = (...frames: string[]) => ({ stack: ['Error', ...frames.map((f) => `    at f (${f})`)].join('\n') });

  it.each<[string, { stack: string }, { file: string; line: number; col: number } | undefined]>([
    [
      "the first frame outside racksmith's modules",
      stack(`${ROOT}/src/resources/x.ts:1:1`, '/r/playbooks/p.ts:7:5'),
      { file: relative(process.cwd(), '/r/playbooks/p.ts'), line: 7, col: 5 },
    ],
    [
      'a prebuilt playbook, through its source map',
      stack(`${ROOT}/dist/src/x.js:1:1`, `file://${dir}/dist/playbooks/a.js:2:1`),
      { file: relative(process.cwd(), join(dir, 'playbooks/a.ts')), line: 5, col: 1 },
    ],
    [
      'a prebuilt file without a map: its own line',
      stack(`${dir}/dist/playbooks/b.js:3:2`),
      { file: relative(process.cwd(), join(dir, 'dist/playbooks/b.js')), line: 3, col: 2 },
    ],
    [
      "an operator's playbook in a src/ folder of its own",
      stack(`${ROOT}/src/x.ts:1:1`, '/home/op/infra/src/site.ts:4:2'),
      { file: relative(process.cwd(), '/home/op/infra/src/site.ts'), line: 4, col: 2 },
    ],
    ['none outside racksmith', stack(`${ROOT}/src/x.ts:1:1`, '/r/node_modules/y/z.js:1:1'), undefined],
    [
      "Node's own frames are no file",
      stack('node:internal/modules/esm/resolve:283:11', '/r/p.ts:2:3'),
      { file: relative(process.cwd(), '/r/p.ts'), line: 2, col: 3 },
    ],
  ])('%s', (_, err, want) => expect(throwSite(err)).toEqual(want));

  it('callSite: the racksmith function the playbook called there (a resource refusing its options)', () => {
    const err = {
      stack: [
        'InputError: path must be an absolute path',
        `    at checkAbsolutePath (${ROOT}/src/resources/core/file-common.ts:32:11)`,
        `    at Object.file [as f] (${ROOT}/src/resources/core/file.ts:31:16)`,
        '    at resources (/r/playbooks/p.ts:7:5)',
      ].join('\n'),
    };
    expect(callSite(err)).toEqual({ pos: { file: relative(process.cwd(), '/r/playbooks/p.ts'), line: 7, col: 5 }, callee: 'file' });
  });
});
