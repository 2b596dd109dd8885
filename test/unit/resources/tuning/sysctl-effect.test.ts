// sysctlEffect: the boot-time loader's order, overrides of managed keys, take-over and retired
// files, as tables over recorded probe answers.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import network from '../../../../playbooks/network.ts';
import { prepare } from '../../../../src/engine/run.ts';
import { loadInventory } from '../../../../src/inventory/load.ts';
import {
  findOverrides,
  loaderOrder,
  normaliseKey,
  parseEffectProbe,
  sysctlEffect,
  type SysctlConfFile,
  type SysctlEffectFacts,
} from '../../../../src/resources/tuning/sysctl-effect.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { SYSCTL_CONF, SYSCTL_CONF_FILES, SYSCTL_DIRS, SYSCTL_LIVE } from '../../../../src/resources/tuning/sysctl.ts';

const f = (path: string, ...lines: Array<[string, string]>): SysctlConfFile => ({
  path,
  assignments: lines.map(([key, value], i) => ({ line: i + 1, key, value })),
});
const OURS = '/etc/sysctl.d/99-zz-racksmith-required.conf';

describe('normaliseKey', () => {
  it.each([
    ['net.core.somaxconn', 'net.core.somaxconn'],
    [' -net.core.somaxconn ', 'net.core.somaxconn'],
    ['net/core/somaxconn', 'net.core.somaxconn'],
    ['net/ipv4/conf/eth0.100/rp_filter', 'net.ipv4.conf.eth0/100.rp_filter'],
    ['net.ipv4.conf.eth0/100.rp_filter', 'net.ipv4.conf.eth0/100.rp_filter'],
  ])('%j → %j', (raw, key) => expect(normaliseKey(raw)).toBe(key));
});

describe('parseEffectProbe', () => {
  it("the config files' answer holds the lines grep -Hn -v of blanks and comments prints", () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-sysctl-lines-'));
    const files = ['a.conf', 'empty.conf', 'b.conf', 'x:y.conf', 'x.conf'].map((n) => join(dir, n));
    writeFileSync(files[0], '# c\n  ; x\n\t\n \r\nnet.core.x = 1\n  vm.y=2 # t\n\\back\\slash = 3\n\t#\n-kernel.z=4');
    writeFileSync(files[1], '');
    writeFileSync(files[2], 'a=1\n\n;b=2\n#c=3\n');
    writeFileSync(files[3], 'p=1\n');
    writeFileSync(files[4], 'q=1\n');
    // and this machine's own files
    for (const d of SYSCTL_DIRS) {
      const ls = spawnSync('sh', ['-c', `ls ${d}/*.conf 2>/dev/null`], { encoding: 'utf8' });
      files.push(...ls.stdout.split('\n').filter(Boolean));
    }
    if (existsSync(SYSCTL_CONF)) files.push(SYSCTL_CONF);
    // the batch's output for these files: the listing, then the one grep's lines
    const read = spawnSync('grep', ['-aHn', '', '--', ...files], { encoding: 'utf8' });
    const stdout = `${files.map((p) => `@f ${p}\n`).join('')}@lines\n${read.stdout}`;
    const [answer] = SYSCTL_LIVE.split(stdout, [SYSCTL_CONF_FILES]);
    const grep = spawnSync('grep', ['-Hn', '-v', '-E', '^[[:space:]]*([#;].*)?$', '--', ...files], {
      encoding: 'utf8',
      env: { LC_ALL: 'C' },
    });
    const lines = answer!.slice(answer!.indexOf('@lines\n') + 7);
    expect(lines).toContain(`${files[0]}:7:\\back\\slash = 3\n`);
    expect(lines).toContain(`${files[0]}:9:-kernel.z=4\n`); // a last line without its newline
    expect(lines).toBe(grep.stdout);
    expect(parseEffectProbe(answer!).map((c) => c.path)).toEqual(files);
  });

  it("the batch run by this machine's shell lists its config files and reads them with the one grep", () => {
    const script = SYSCTL_LIVE.script(['kernel.ostype', SYSCTL_CONF_FILES]);
    expect(script.match(/grep/g)).toHaveLength(1);
    const out = spawnSync('sh', ['-c', script], { encoding: 'utf8' }).stdout;
    const [ostype, conf] = SYSCTL_LIVE.split(out, ['kernel.ostype', SYSCTL_CONF_FILES]);
    expect(ostype).toBe('Linux');
    const here = SYSCTL_DIRS.flatMap((d) =>
      spawnSync('sh', ['-c', `for f in ${d}/*.conf; do [ -e "$f" ] && echo "$f"; done`], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter(Boolean),
    );
    if (existsSync(SYSCTL_CONF)) here.push(SYSCTL_CONF);
    expect(parseEffectProbe(conf!).map((c) => c.path)).toEqual(here);
    // the script died before its grep: an incomplete answer, never an empty listing
    expect(() => parseEffectProbe(SYSCTL_LIVE.split('@f /etc/sysctl.conf\n', [SYSCTL_CONF_FILES])[0]!)).toThrow(/incomplete/);
  });

  it('files (empty ones too) and their assignments; comments were left out by grep', () => {
    const out = `@f /etc/sysctl.d/99-zzz.conf
@f /etc/sysctl.d/empty.conf
@f /usr/lib/sysctl.d/50-default.conf
@f /etc/sysctl.conf
@lines
/etc/sysctl.d/99-zzz.conf:3:net.core.somaxconn=1024
/usr/lib/sysctl.d/50-default.conf:1:kernel.sysrq = 0x01b6
/usr/lib/sysctl.d/50-default.conf:2:-net.ipv4.conf.default.rp_filter = 2
/etc/sysctl.conf:60:net.ipv4.tcp_rmem = 4096\t87380   6291456
/etc/sysctl.conf:61:not an assignment
`;
    expect(parseEffectProbe(out)).toEqual(
      [
        f('/etc/sysctl.d/99-zzz.conf'),
        f('/etc/sysctl.d/empty.conf'),
        {
          path: '/usr/lib/sysctl.d/50-default.conf',
          assignments: [
            { line: 1, key: 'kernel.sysrq', value: '0x01b6' },
            { line: 2, key: 'net.ipv4.conf.default.rp_filter', value: '2' },
          ],
        },
        { path: '/etc/sysctl.conf', assignments: [{ line: 60, key: 'net.ipv4.tcp_rmem', value: '4096 87380 6291456' }] },
      ].map((x, i) => (i === 0 ? { ...x, assignments: [{ line: 3, key: 'net.core.somaxconn', value: '1024' }] } : x)),
    );
  });

  it('an answer cut short is a probe error', () => {
    expect(() => parseEffectProbe('@f /etc/sysctl.conf\n')).toThrow(/incomplete/);
  });
});

describe('loaderOrder', () => {
  it('by name over all directories, /etc hides /run hides /usr/lib; /etc/sysctl.conf last', () => {
    const order = loaderOrder([
      f('/etc/sysctl.conf'),
      f('/usr/lib/sysctl.d/99-protect-links.conf'),
      f('/lib/sysctl.d/99-protect-links.conf'),
      f('/etc/sysctl.d/99-sysctl.conf'),
      f('/run/sysctl.d/10-x.conf'),
      f('/usr/lib/sysctl.d/10-x.conf'),
      f(OURS),
      f('/etc/sysctl.d/99-ais-network.conf'),
      f('/etc/sysctl.d/90-racksmith-network.conf'),
      f('/srv/elsewhere/00.conf'),
    ]);
    expect(order.map((x) => x.path)).toEqual([
      '/run/sysctl.d/10-x.conf',
      '/etc/sysctl.d/90-racksmith-network.conf',
      '/etc/sysctl.d/99-ais-network.conf',
      '/usr/lib/sysctl.d/99-protect-links.conf',
      '/etc/sysctl.d/99-sysctl.conf',
      OURS,
      '/etc/sysctl.conf',
    ]);
  });
});

describe('findOverrides', () => {
  const managed = [{ file: OURS, values: { 'net.core.somaxconn': '65535', 'net.ipv4.tcp_tw_reuse': '1' } }];
  it.each<[string, SysctlConfFile[], string[]]>([
    ['nothing else sets the keys', [f('/etc/sysctl.d/50-x.conf', ['kernel.sysrq', '1'])], []],
    ['an earlier file with another value: ours wins', [f('/etc/sysctl.d/99-ais-required.conf', ['net.core.somaxconn', '1024'])], []],
    ['a later file with the same value', [f('/etc/sysctl.d/99-zzz.conf', ['net.core.somaxconn', '65535'])], []],
    [
      'a later file with another value',
      [f('/etc/sysctl.d/99-zzz.conf', ['vm.x', '1'], ['net.core.somaxconn', '1024'])],
      ['net.core.somaxconn /etc/sysctl.d/99-zzz.conf:2 1024'],
    ],
    [
      '/etc/sysctl.conf is read last',
      [f('/etc/sysctl.conf', ['net.ipv4.tcp_tw_reuse', '0'])],
      ['net.ipv4.tcp_tw_reuse /etc/sysctl.conf:1 0'],
    ],
    ['a glob key', [f('/run/sysctl.d/zz.conf', ['net.ipv4.tcp_*', '2'])], ['net.ipv4.tcp_tw_reuse /run/sysctl.d/zz.conf:1 2']],
    [
      'a later file hidden by an /etc name does not count',
      [f('/usr/lib/sysctl.d/99-zzz.conf', ['net.core.somaxconn', '1']), f('/etc/sysctl.d/99-zzz.conf')],
      [],
    ],
    ["our own file's current content does not count (it is rewritten)", [f(OURS, ['net.core.somaxconn', '1'])], []],
  ])('%s', (_, files, want) => {
    expect(findOverrides(files, managed).map((o) => `${o.key} ${o.by}:${o.line} ${o.value}`)).toEqual(want);
  });
});

describe('sysctlEffect diff', () => {
  const memory = { memTotalKb: 1 << 20, pageSize: 4096 };
  const r = sysctlEffect({
    name: 'network',
    managed: [{ file: OURS, values: { 'net.core.somaxconn': 65535, 'vm.x': (m) => m.memTotalKb / 1024 } }],
    takeOver: ['/etc/sysctl.d/99-ais-*.conf'],
    retire: ['/etc/sysctl.d/90-racksmith-required.conf'],
  });
  const facts = (...files: SysctlConfFile[]): SysctlEffectFacts => ({ files, memory, live: {} });

  it('converged: no change', () => expect(r.diff(facts(f('/etc/sysctl.d/10-a.conf', ['kernel.sysrq', '1'])))).toEqual([]));

  it('an override is refused, naming file:line and both values (a computed value too)', () => {
    expect(() => r.diff(facts(f('/etc/sysctl.conf', ['vm.x', '5'])))).toThrow(
      'vm.x = 1024 (/etc/sysctl.d/99-zz-racksmith-required.conf) is overridden at boot by /etc/sysctl.conf:1 (vm.x = 5)',
    );
  });

  it('a taken-over file is moved aside, and its values no longer count', () => {
    const changes = r.diff(facts(f('/etc/sysctl.d/99-ais-required.conf', ['net.core.somaxconn', '1024'])));
    expect(changes.map((c) => c.summary)).toEqual([
      'take over /etc/sysctl.d/99-ais-required.conf: moved to 99-ais-required.conf.racksmith-taken-over (racksmith sets its 1 keys)',
    ]);
    expect(r.apply(facts(), changes)[0].script).toMatch(
      /\nmv -f -- \/etc\/sysctl.d\/99-ais-required.conf \/etc\/sysctl.d\/99-ais-required.conf.racksmith-taken-over$/,
    );
  });

  it('a file to take over with keys racksmith does not set is refused (they would be lost at boot)', () => {
    expect(() => r.diff(facts(f('/etc/sysctl.d/99-ais-vm.conf', ['vm.swappiness', '10'])))).toThrow(
      /cannot take over \/etc\/sysctl.d\/99-ais-vm.conf: racksmith does not manage vm.swappiness/,
    );
  });

  it("racksmith's earlier file name is removed", () => {
    const changes = r.diff(facts(f('/etc/sysctl.d/90-racksmith-required.conf', ['net.core.somaxconn', '65535'])));
    expect(changes.map((c) => c.summary)).toEqual([
      "remove /etc/sysctl.d/90-racksmith-required.conf (racksmith's earlier name for its drop-in)",
    ]);
  });

  it.each([['/etc/sysctl.conf'], ['/etc/sysctl.d/../x.conf'], ['/tmp/x.conf']])('refuses to take over %j', (p) => {
    expect(() => sysctlEffect({ name: 'n', managed: [], takeOver: [p] })).toThrow(InputError);
  });
});

describe('a superseded file goes only once its replacement is written', () => {
  /** The step of one retired file, run by sh in a scratch dir: racksmith's drop-ins there or not. */
  function retireIn(dropins: Record<string, string | undefined>) {
    const dir = mkdtempSync(join(tmpdir(), 'rs-retire-'));
    const old = join(dir, '90-racksmith-required.conf');
    writeFileSync(old, 'net.core.somaxconn = 65535\n');
    const managed = Object.keys(dropins).map((name) => ({ file: join(dir, name), values: { 'net.core.somaxconn': 65535 } }));
    for (const [name, content] of Object.entries(dropins)) if (content !== undefined) writeFileSync(join(dir, name), content);
    const r = sysctlEffect({ name: 'n', managed, retire: [old] });
    const changes = r.diff({ files: [f(old, ['net.core.somaxconn', '65535'])], memory: { memTotalKb: 1 << 20, pageSize: 4096 }, live: {} });
    const run = spawnSync('sh', ['-c', r.apply({ files: [], memory: { memTotalKb: 0, pageSize: 0 }, live: {} }, changes)[0].script], {
      encoding: 'utf8',
    });
    return { code: run.status, stderr: run.stderr, kept: existsSync(old), dir };
  }

  it.each<[string, Record<string, string | undefined>, boolean]>([
    ['every drop-in written: the old file is removed', { 'a.conf': 'x = 1\n', 'b.conf': 'y = 2\n' }, false],
    ['a drop-in missing (its write failed): the old file stays, the step fails', { 'a.conf': 'x = 1\n', 'b.conf': undefined }, true],
    ['a drop-in empty (a write cut short): the old file stays', { 'a.conf': '' }, true],
  ])('%s', (_, dropins, kept) => {
    const r = retireIn(dropins);
    expect(r.kept).toBe(kept);
    expect(r.code).toBe(kept ? 1 : 0);
    if (kept)
      expect(r.stderr).toMatch(/^not removing .*90-racksmith-required.conf: racksmith's drop-in .* that replaces it is not written$/m);
  });

  it('the network playbook orders the check after every sysctl drop-in (skipped when one of them failed)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-netpb-'));
    const file = join(dir, 'hosts.yaml');
    writeFileSync(file, 'all:\n  hosts:\n    n1: {}\n  vars:\n    sysctl_extra: { kernel.pid_max: 4194304 }\n');
    const [p] = prepare(loadInventory(file), [network], {});
    const resources = p.hosts[0].resources;
    const effect = resources.find((r) => r.id === 'sysctl-effect:network')!;
    const dropins = resources.filter((r) => r.kind === 'sysctl').map((r) => r.id);
    expect(dropins).toContain('sysctl:/etc/sysctl.d/99-zz-racksmith-extra.conf');
    expect(dropins.length).toBeGreaterThan(1);
    expect(effect.after).toEqual(dropins);
    expect(resources.indexOf(effect)).toBeGreaterThan(Math.max(...dropins.map((id) => resources.findIndex((r) => r.id === id))));
  });
});
