// Pure parts of the node families as tables: packages (probe answers → missing → one
// transaction), NIC probe parsing and queue diffs (veth: rx/tx channels, no rings), MTU stack
// detection, the ifupdown stanza edit, networkd's file choice and the unknown-stack refusal.
import { execFileSync, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { NotApplicable, Refusal } from '../../../../src/contract/resource.ts';
import type { FileFacts } from '../../../../src/resources/core/file-common.ts';
import { aptInstall, dpkgProbe, packages, parsePackages } from '../../../../src/resources/core/packages.ts';
import { nicQueues, parseEthtoolCounts, parseNics, type NicFacts, type NicQueuesFacts } from '../../../../src/resources/tuning/nic.ts';
import {
  detectStack,
  editInterfaces,
  mtu,
  networkdFileFor,
  parseStack,
  renderNetplan,
  type MtuFacts,
  type NetworkdFile,
} from '../../../../src/resources/tuning/mtu.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { cpuGovernor, cpuList, parseGovernors } from '../../../../src/resources/tuning/cpu-governor.ts';
import { chronySources, renderSources } from '../../../../src/resources/tuning/chrony.ts';
import { limits, renderContainerdDropin, renderLimitsFile, renderSystemdManager } from '../../../../src/resources/tuning/limits.ts';

// (dpkg itself: the probe is run on this machine where it has one)
const hasDpkg = spawnSync('dpkg', ['--print-architecture']).status === 0;

describe('packages', () => {
  const r = packages({
    name: 'storage',
    packages: ['xfsprogs', 'attr', { apt: 'nfs-common', dnf: 'nfs-utils' }],
    mirror: { apt: 'deb [trusted=yes] file:/srv/repo ./' },
  });
  it.each<[string, string, string[]]>([
    ['all installed', 'pm=apt\nxfsprogs install ok installed\nattr install ok installed\nnfs-common install ok installed\n', []],
    [
      'two missing (one removed, config left)',
      'pm=apt\nxfsprogs deinstall ok config-files\nnfs-common install ok installed\n',
      ['install xfsprogs, attr (apt from deb [trusted=yes] file:/srv/repo ./)'],
    ],
    [
      'held (apt-mark hold) or marked for removal: still installed',
      'pm=apt\nxfsprogs hold ok installed\nattr deinstall ok installed\nnfs-common install ok installed\n',
      [],
    ],
    [
      'half-installed, unpacked, half-configured, or installed needing reinstall: not installed',
      'pm=apt\nxfsprogs install reinstreq installed\nattr install ok half-configured\nnfs-common install ok unpacked\n',
      ['install xfsprogs, attr, nfs-common (apt from deb [trusted=yes] file:/srv/repo ./)'],
    ],
    [
      'a trigger pending or awaited (apt asks nothing more of it): installed',
      'pm=apt\nxfsprogs install ok triggers-pending\nattr install ok triggers-awaited\nnfs-common install ok installed\n',
      [],
    ],
    [
      "a multi-arch package installed for the host's architecture and another",
      'pm=apt\ndpkg:amd64 install ok installed\nxfsprogs:amd64 install ok installed\nattr:amd64 install ok installed\nattr:i386 install ok installed\nnfs-common:all install ok installed\n',
      [],
    ],
    [
      "installed for another architecture only: to install, as apt and Ansible's apt module take the name",
      'pm=apt\ndpkg:amd64 install ok installed\nxfsprogs:amd64 install ok installed\nattr:amd64 purge ok not-installed\nattr:arm64 install ok installed\nnfs-common:all install ok installed\n',
      ['install attr:amd64 (apt from deb [trusted=yes] file:/srv/repo ./; attr:arm64 installed, replaced unless Multi-Arch: same)'],
    ],
    [
      "dpkg's own architecture unknown (it is being upgraded): any architecture counts",
      'pm=apt\ndpkg:amd64 install ok unpacked\nxfsprogs:amd64 install ok installed\nattr:arm64 install ok installed\nnfs-common:all install ok installed\n',
      [],
    ],
    ['dnf names', 'pm=dnf\nxfsprogs install ok installed\nattr install ok installed\n', ['install nfs-utils (dnf)']],
  ])('%s', (_, out, want) => {
    expect(r.diff(parsePackages(out)).map((c) => c.summary)).toEqual(want);
  });
  it('no package manager: refused', () => expect(() => r.diff(parsePackages('pm=none\n'))).toThrow(Refusal));
  it("one installed for another architecture only is asked for as the host's (apt would take a bare name as installed)", () => {
    const f = parsePackages(
      'pm=apt\ndpkg:amd64 install ok installed\nxfsprogs:amd64 install ok installed\nattr:arm64 install ok installed\nnfs-common:i386 install ok installed\n',
    );
    expect(r.apply(f, r.diff(f))[0].script).toMatch(/ attr:amd64 nfs-common:amd64$/);
  });
  // The probe's own lines, from this machine's dpkg database (CI's machine is a Debian one).
  it.runIf(hasDpkg)("the probe on this machine: dpkg's architecture, an installed package, not one that is not", () => {
    const out = execFileSync('sh', ['-c', dpkgProbe(['coreutils', 'racksmith-no-such-package'])], { encoding: 'utf8' });
    const arch = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
    expect(out.split('\n')).toContain(`dpkg:${arch} install ok installed`);
    const f = parsePackages(`pm=apt\n${out}`);
    expect([...f.installed].sort()).toEqual(['coreutils', 'dpkg']);
    expect(f.foreign).toBeUndefined();
  });
  it('one apt transaction, the mirror as the only source (a list file of its own)', () => {
    const f = parsePackages('pm=apt\n');
    const steps = r.apply(f, r.diff(f));
    expect(steps).toHaveLength(1);
    expect(steps[0].script).toContain("printf '%s\\n' 'deb [trusted=yes] file:/srv/repo ./' > \"$rs_src\"");
    expect(steps[0].script).toMatch(
      /apt-get install -y -q --no-install-recommends -o Dir::Etc::SourceList="\$rs_src" -o Dir::Etc::SourceParts=- .* xfsprogs attr nfs-common$/,
    );
    expect(aptInstall(['x'])).toBe(
      'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold x',
    );
  });
  it.each([[{ packages: ['Bad Name'] }], [{ packages: [] }], [{ packages: ['x'], mirror: { apt: 'http://x' } }]])('refuses %j', (o) => {
    expect(() => packages({ name: 'n', ...o })).toThrow(InputError);
  });
});

const VETH_L = `Channel parameters for eth0:
Pre-set maximums:
RX:\t\t2
TX:\t\t2
Other:\t\tn/a
Combined:\tn/a
Current hardware settings:
RX:\t\t1
TX:\t\t1
Other:\t\tn/a
Combined:\tn/a
`;
const MLX_G = `Ring parameters for ens1:
Pre-set maximums:
RX:\t\t8192
TX:\t\t8192
Current hardware settings:
RX:\t\t1024
TX:\t\t1024
`;
const probeOut = `ethtool=yes
@nic eth0 02:7b:15:00:00:04 1500
driver: veth
@channels
${VETH_L}@rings
unsupported
@nic ens1 aa:bb:cc:dd:ee:ff 9000
driver: mlx5_core
@channels
Channel parameters for ens1:
Pre-set maximums:
RX:\t\tn/a
TX:\t\tn/a
Other:\t\t1
Combined:\t63
Current hardware settings:
RX:\t\tn/a
TX:\t\tn/a
Other:\t\t1
Combined:\t8
@rings
${MLX_G}@core 0:0
@core 0:0
@core 0:1
`;

describe('NIC probe', () => {
  it('parses interfaces, channels, rings and physical cores (hyperthreads counted once)', () => {
    const f = parseNics(probeOut);
    expect(f.cores).toBe(2);
    expect(f.nics.map((n) => [n.name, n.driver, n.mtu, n.mac])).toEqual([
      ['eth0', 'veth', 1500, '02:7b:15:00:00:04'],
      ['ens1', 'mlx5_core', 9000, 'aa:bb:cc:dd:ee:ff'],
    ]);
    expect(f.nics[0].channels).toEqual({ max: { rx: 2, tx: 2 }, current: { rx: 1, tx: 1 } });
    expect(f.nics[0].rings).toBeNull();
    expect(f.nics[1].channels).toEqual({ max: { other: 1, combined: 63 }, current: { other: 1, combined: 8 } });
    expect(parseEthtoolCounts(MLX_G)).toEqual({ max: { rx: 8192, tx: 8192 }, current: { rx: 1024, tx: 1024 } });
  });
});

describe('nicQueues diff', () => {
  const ABSENT: FileFacts = { type: 'absent' };
  const facts = (over: Partial<NicQueuesFacts> = {}): NicQueuesFacts => ({ ...parseNics(probeOut), rules: ABSENT, ...over });
  const summaries = (r: ReturnType<typeof nicQueues>, f = facts()) => r.diff(f).map((c) => c.summary);
  it.each<[string, Parameters<typeof nicQueues>[0], string[]]>([
    [
      'veth: rx/tx channels, clamped to its max',
      { select: { name: 'eth0' }, channels: 8 },
      ['create /etc/udev/rules.d/60-racksmith-nic-channels-eth0.rules', 'eth0 channels: rx 1 → 2, tx 1 → 2'],
    ],
    [
      'mlx5 by driver: combined = physical cores',
      { select: { driver: 'mlx5_core' }, channels: 'cores' },
      ['create /etc/udev/rules.d/60-racksmith-nic-channels-driver_mlx5_core.rules', 'ens1 channels: combined 8 → 2'],
    ],
    [
      'mlx5 rings rx 8192 (ais-k8s)',
      { select: { mac: 'aa:bb:cc:dd:ee:ff' }, rings: { rx: 8192 } },
      ['create /etc/udev/rules.d/60-racksmith-nic-rings-aa_bb_cc_dd_ee_ff.rules', 'ens1 rings: rx 1024 → 8192'],
    ],
  ])('%s', (_, o, want) => expect(summaries(nicQueues(o))).toEqual(want));

  it('marks the live queue change disruptive, not the udev rule that persists it', () => {
    const marks = nicQueues({ select: { name: 'eth0' }, channels: 8 })
      .diff(facts())
      .map((c) => [c.summary.split(':')[0], c.disruptive !== undefined]);
    expect(marks).toEqual([
      ['create /etc/udev/rules.d/60-racksmith-nic-channels-eth0.rules', false],
      ['eth0 channels', true],
    ]);
  });

  it('rings on veth: not applicable, said per NIC', () => {
    const r = nicQueues({ select: { name: 'eth0' }, rings: { rx: 256 } });
    expect(() => r.diff(facts())).toThrow(NotApplicable);
    expect(() => r.diff(facts())).toThrow('rings: not supported by driver veth (eth0)');
  });
  it('no matching interface: not applicable; no ethtool: refused', () => {
    expect(() => nicQueues({ select: { name: 'eth9' }, channels: 2 }).diff(facts())).toThrow(/no interface matches eth9/);
    expect(() => nicQueues({ select: { name: 'eth0' }, channels: 2 }).diff(facts({ ethtool: false }))).toThrow(/ethtool is not installed/);
  });
  it('converged: the rule written and the counts set', () => {
    const r = nicQueues({ select: { name: 'eth0' }, channels: 2 });
    const rule =
      '# Managed by racksmith: NIC channels at boot.\nACTION=="add", SUBSYSTEM=="net", KERNEL=="eth0", RUN+="/usr/sbin/ethtool -L $name rx 2 tx 2"\n';
    const f = facts();
    const nics = f.nics.map((n) => (n.name === 'eth0' ? { ...n, channels: { ...n.channels!, current: { rx: 2, tx: 2 } } } : n));
    const content = Buffer.from(rule);
    expect(r.diff({ ...f, nics, rules: { type: 'file', mode: '644', content, size: content.length } })).toEqual([]);
    expect(r.apply(f, r.diff(f)).map((s) => s.name)).toEqual([
      'write /etc/udev/rules.d/60-racksmith-nic-channels-eth0.rules',
      'ethtool -L eth0 rx 2 tx 2',
    ]);
  });
  it.each([
    [{ select: { name: 'eth0' } }],
    [{ select: { name: 'eth0', mac: 'aa:bb:cc:dd:ee:ff' }, channels: 1 }],
    [{ select: { name: 'eth0' }, channels: 0 }],
  ])('refuses %j', (o) => expect(() => nicQueues(o as Parameters<typeof nicQueues>[0])).toThrow(InputError));
});

describe('MTU', () => {
  const nic: NicFacts = { name: 'eth0', mac: '02:00:00:00:00:01', mtu: 1500, driver: 'veth', channels: null, rings: null };
  const text = (s: string): FileFacts => ({ type: 'file', mode: '644', content: Buffer.from(s), size: s.length });
  const base = (over: Partial<MtuFacts> = {}): MtuFacts => ({
    nics: [nic],
    cores: 1,
    ethtool: false,
    netplan: [],
    nm: null,
    networkd: [],
    interfaces: { type: 'absent' },
    netplanFile: { type: 'absent' },
    ...over,
  });

  it.each<[string, Partial<MtuFacts>, string | undefined]>([
    ['netplan files present', { netplan: ['/etc/netplan/01-netcfg.yaml'] }, 'netplan'],
    ['NetworkManager running with a connection on it', { nm: { eth0: 'Wired 1' } }, 'networkmanager'],
    ['NetworkManager running, not on this device', { nm: { eth1: 'x' } }, undefined],
    ['a .network file matches it', { networkd: [{ path: '/etc/systemd/network/10-e.network', match: { Name: ['e*'] } }] }, 'networkd'],
    ['an ifupdown stanza', { interfaces: text('auto eth0\niface eth0 inet dhcp\n') }, 'ifupdown'],
    ['interfaces without its stanza', { interfaces: text('iface eth1 inet dhcp\n') }, undefined],
    ['nothing', {}, undefined],
  ])('detects: %s', (_, over, want) => expect(detectStack(base(over), nic)).toBe(want));

  it('networkd: the first file by name, /etc hiding /usr/lib, [Match] by name, MAC, driver; negation', () => {
    const files: NetworkdFile[] = [
      { path: '/usr/lib/systemd/network/10-a.network', match: { Name: ['eth0'] } },
      { path: '/etc/systemd/network/10-a.network', match: { Name: ['eth9'] } },
      { path: '/etc/systemd/network/20-mac.network', match: { MACAddress: ['02:00:00:00:00:01'] } },
      { path: '/run/systemd/network/05-not.network', match: { Name: ['!eth*'] } },
    ];
    expect(networkdFileFor(files, nic)?.path).toBe('/etc/systemd/network/20-mac.network');
  });

  it('parses the stack probe', () => {
    const out = `@netplan /etc/netplan/01.yaml
@nm
eth0:Wired connection 1
@networkd /etc/systemd/network/10-eth0.network
@dropin
[Link]
MTUBytes=1500
@end
@networkd /usr/lib/systemd/network/80-container-host0.network
@match
/etc/systemd/network/10-eth0.network:[Match]
/etc/systemd/network/10-eth0.network:Name=eth0 eth1
/etc/systemd/network/10-eth0.network:[Network]
/usr/lib/systemd/network/80-container-host0.network:[Match]
/usr/lib/systemd/network/80-container-host0.network:Virtualization=container
/usr/lib/systemd/network/80-container-host0.network:Name=host0
`;
    expect(parseStack(out)).toEqual({
      netplan: ['/etc/netplan/01.yaml'],
      nm: { eth0: 'Wired connection 1' },
      networkd: [
        { path: '/etc/systemd/network/10-eth0.network', match: { Name: ['eth0', 'eth1'] }, dropin: '[Link]\nMTUBytes=1500\n' },
        { path: '/usr/lib/systemd/network/80-container-host0.network', match: { Name: ['host0'] } },
      ],
    });
  });

  it.each<[string, string, string | undefined]>([
    [
      'adds the line under the inet stanza',
      'auto eth0\niface eth0 inet static\n    address 10.0.0.2/24\n\nauto eth1\n',
      'auto eth0\niface eth0 inet static\n    post-up ip link set dev eth0 mtu 9000 # racksmith\n    address 10.0.0.2/24\n\nauto eth1\n',
    ],
    [
      'replaces its own line',
      'iface eth0 inet dhcp\n    post-up ip link set dev eth0 mtu 1500 # racksmith\n',
      'iface eth0 inet dhcp\n    post-up ip link set dev eth0 mtu 9000 # racksmith\n',
    ],
    ['no stanza', 'iface eth1 inet dhcp\n', undefined],
  ])('ifupdown: %s', (_, before, after) => expect(editInterfaces(before, 'eth0', 9000)?.text).toBe(after));

  it('netplan file: the same id as the interface (merges with its definition), or a match', () => {
    expect(renderNetplan({ name: 'eth0' }, 9000)).toBe(
      '# Managed by racksmith: MTU of eth0.\nnetwork:\n  version: 2\n  ethernets:\n    eth0:\n      mtu: 9000\n',
    );
    expect(renderNetplan({ driver: 'mlx5_core' }, 9000)).toContain(
      '    racksmith-driver-mlx5-core:\n      match:\n        driver: "mlx5_core"\n      mtu: 9000\n',
    );
  });

  it('diff: live and persisted; unknown stack refused; converged', () => {
    const r = mtu({ select: { name: 'eth0' }, mtu: 9000 });
    expect(r.diff(base({ interfaces: text('iface eth0 inet manual\n') })).map((c) => c.summary)).toEqual([
      'eth0 mtu: 1500 → 9000',
      'persist mtu 9000 for eth0 in /etc/network/interfaces (ifupdown)',
    ]);
    expect(() => r.diff(base())).toThrow(/cannot persist mtu 9000 for eth0: no network stack racksmith knows configures it/);
    const done = base({
      nics: [{ ...nic, mtu: 9000 }],
      interfaces: text('iface eth0 inet manual\n    post-up ip link set dev eth0 mtu 9000 # racksmith\n'),
    });
    expect(r.diff(done)).toEqual([]);
    expect(() => mtu({ select: { name: 'eth0' }, mtu: 100 })).toThrow(InputError);
  });

  it('the live change is disruptive, the persisted file is not', () => {
    const r = mtu({ select: { name: 'eth0' }, mtu: 9000 });
    const changes = r.diff(base({ interfaces: text('iface eth0 inet manual\n') }));
    expect(changes.map((c) => c.disruptive)).toEqual(['the link resets: open connections stall or drop', undefined]);
  });
});

describe('cpuGovernor', () => {
  const r = cpuGovernor({ governor: 'performance' });
  const cpus = parseGovernors(
    'cpu0 powersave|performance powersave\ncpu1 powersave|performance powersave\ncpu2 performance|performance powersave\ncpu3 powersave|performance powersave\n',
  );
  it('summarises the CPUs that differ as ranges', () => {
    expect(cpuList(['cpu0', 'cpu1', 'cpu3', 'cpu4', 'cpu7'])).toBe('cpu0-1,3-4,7');
    expect(r.diff({ cpus, rules: { type: 'absent' } }).map((c) => c.summary)).toEqual([
      'create /etc/udev/rules.d/60-racksmith-cpufreq.rules',
      'cpu0-1,3 scaling_governor: powersave → performance',
    ]);
  });
  it('no cpufreq: not supported on this host; a governor not offered: refused', () => {
    expect(() => r.diff({ cpus: [], rules: { type: 'absent' } })).toThrow(NotApplicable);
    expect(() => r.diff({ cpus: [], rules: { type: 'absent' } })).toThrow(/^cpufreq: not supported on this host/);
    expect(() => cpuGovernor({ governor: 'ondemand' }).diff({ cpus, rules: { type: 'absent' } })).toThrow(
      /ondemand is not offered by cpu0-3/,
    );
  });
});

describe('chronySources', () => {
  const r = chronySources({ servers: ['10.0.0.1', 'ntp.example'] });
  const conf = (t: string): FileFacts => ({ type: 'file', content: Buffer.from(t), size: t.length, mode: '644' });
  it.each<[string, FileFacts, string[] | RegExp]>([
    [
      'Debian conf reading sources.d',
      conf('pool 2.debian.pool.ntp.org iburst\nsourcedir /etc/chrony/sources.d\n'),
      ['create /etc/chrony/sources.d/racksmith.sources'],
    ],
    ['a conf that does not read it', conf('pool x iburst\n'), /does not read \/etc\/chrony\/sources.d/],
    ['no chrony', { type: 'absent' }, /is chrony installed/],
  ])('%s', (_, c, want) => {
    if (Array.isArray(want)) expect(r.diff({ conf: c, sources: { type: 'absent' } }).map((x) => x.summary)).toEqual(want);
    else expect(() => r.diff({ conf: c, sources: { type: 'absent' } })).toThrow(want);
  });
  it.each([[['bad server']], [[]]])('refuses %j', (servers) => expect(() => chronySources({ servers })).toThrow(InputError));
  it.each<[string, string[], string[], string]>([
    [
      'servers only (the file of before ntp_pools)',
      ['10.0.0.1'],
      [],
      '# Managed by racksmith: NTP servers (ntp_servers).\nserver 10.0.0.1 iburst\n',
    ],
    ['pools only', [], ['pool.ntp.org'], '# Managed by racksmith: NTP pools (ntp_pools).\npool pool.ntp.org iburst\n'],
    [
      'both: servers, then pools',
      ['ntp1.example'],
      ['0.debian.pool.ntp.org', '1.debian.pool.ntp.org'],
      '# Managed by racksmith: NTP servers (ntp_servers) and pools (ntp_pools).\nserver ntp1.example iburst\npool 0.debian.pool.ntp.org iburst\npool 1.debian.pool.ntp.org iburst\n',
    ],
  ])('renders %s', (_, servers, pools, want) => expect(renderSources(servers, pools)).toBe(want));
  it('a pool alone is enough; a bad pool name or neither list is refused', () => {
    expect(() => chronySources({ pools: ['pool.ntp.org'] })).not.toThrow();
    expect(() => chronySources({ pools: ['bad pool'] })).toThrow(/invalid pool "bad pool"/);
    expect(() => chronySources({ servers: [], pools: [] })).toThrow(/no servers or pools/);
  });
});

describe('limits for jobs', () => {
  const n = { soft: 1024, hard: 2048 };
  const jobs = { memlock: 'unlimited' as const, nproc: 4096 };
  it('PAM, systemd and containerd lines; without jobs the files are as before', () => {
    expect(renderLimitsFile(n, ['*'], jobs)).toBe(
      '# Managed by racksmith. Applies to new login sessions (pam_limits).\n* soft nofile 1024\n* hard nofile 2048\n* soft memlock unlimited\n* hard memlock unlimited\n* soft nproc 4096\n* hard nproc 4096\n',
    );
    expect(renderSystemdManager(n, jobs)).toMatch(/DefaultLimitNOFILE=1024:2048\nDefaultLimitMEMLOCK=infinity\nDefaultLimitNPROC=4096\n$/);
    expect(renderContainerdDropin(n, jobs)).toMatch(/LimitNOFILE=2048\nLimitMEMLOCK=infinity\nLimitNPROC=4096\n$/);
    expect(renderContainerdDropin(n)).toBe(
      '# Managed by racksmith: the open-file limit that containers (and pods) inherit.\n[Service]\nLimitNOFILE=2048\n',
    );
  });
  it('containerd drop-in notifies its restart handler', () => {
    expect(limits({ nofile: 65536, containerdNotify: ['restart:containerd'] }).map((r) => r.notify)).toEqual([
      undefined,
      undefined,
      ['restart:containerd'],
    ]);
    expect(() => limits({ nofile: 65536, jobs: { stack: 0 } })).toThrow(InputError);
  });
});
