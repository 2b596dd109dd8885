import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { standaloneProbe } from '../../../../src/engine/probe-set.ts';
import { absent, fileWith } from '../../facts.ts';
import { minFreeKbytes, tcpMem } from '../../../../src/profiles/sysctl-profiles.ts';
import {
  liveWritesScript,
  normaliseSysctl,
  renderSysctlFile,
  sysctl,
  sysctlPath,
  SYSCTL_LIVE,
} from '../../../../src/resources/tuning/sysctl.ts';
import { kmod, LOADED_EVIDENCE } from '../../../../src/resources/tuning/kmod.ts';
import { Refusal } from '../../../../src/contract/resource.ts';
import { limits } from '../../../../src/resources/tuning/limits.ts';

const GiB = 1024 * 1024; // in KiB

describe('sysctl value normalisation', () => {
  it.each([
    ['2048\t65535', '2048 65535'],
    ['  4096   16384\t134217728\n', '4096 16384 134217728'],
    [65535, '65535'],
    ['1', '1'],
    ['reno cubic', 'reno cubic'],
  ])('%j → %j', (input, want) => expect(normaliseSysctl(input as string)).toBe(want));

  it('maps keys to /proc/sys paths', () => {
    expect(sysctlPath('net.ipv4.ip_local_port_range')).toBe('/proc/sys/net/ipv4/ip_local_port_range');
  });
});

describe('RAM-scaled values', () => {
  it.each([
    // RAM KiB, page size, tcp_mem (min pressure max) in pages
    [16 * GiB, 4096, '196608 262144 393216'],
    [1536 * GiB, 4096, '18874368 25165824 37748736'],
    [64 * GiB, 65536, '49152 65536 98304'],
  ])('tcp_mem for %i KiB with %i-byte pages', (kb, ps, want) => expect(tcpMem({ memTotalKb: kb, pageSize: ps })).toBe(want));

  it.each([
    [2 * GiB, 65536], // floor of 64 MiB
    [24 * GiB, Math.floor((24 * GiB) / 100)],
    [1536 * GiB, Math.floor((1536 * GiB) / 100)],
    [1 * GiB, Math.floor(GiB / 20)], // never more than 5 %
  ])('min_free_kbytes for %i KiB', (kb, want) => expect(minFreeKbytes({ memTotalKb: kb, pageSize: 4096 })).toBe(want));
});

describe('sysctl diff compares the file AND the live kernel value', () => {
  const r = sysctl({
    file: '/etc/sysctl.d/90-t.conf',
    profile: 't',
    values: { 'net.core.somaxconn': 65535, 'net.ipv4.ip_local_port_range': '2048 65535', 'vm.min_free_kbytes': minFreeKbytes },
  });
  const mem = { memTotalKb: 24 * GiB, pageSize: 4096 };
  const good = {
    'net.core.somaxconn': '65535',
    'net.ipv4.ip_local_port_range': '2048 65535',
    'vm.min_free_kbytes': String(minFreeKbytes(mem)),
  };
  const content = renderSysctlFile('t', good);
  it.each([
    ['converged', fileWith(content), good, []],
    ['file matches, kernel differs', fileWith(content), { ...good, 'net.core.somaxconn': '4096' }, ['net.core.somaxconn: 4096 → 65535']],
    ['kernel matches, file missing', absent, good, ['create /etc/sysctl.d/90-t.conf']],
    ['file edited by hand', fileWith(content.replace('65535\n', '1\n')), good, ['update /etc/sysctl.d/90-t.conf']],
  ])('%s', (_, file, live, want) => {
    expect(r.diff({ file, live, memory: mem }).map((c) => c.summary)).toEqual(want);
  });

  // Check mode refuses what apply would fail at (a reviewed plan must not fail later); a key a
  // module brings is optional, or waits for its kmod (dependsOn: "pending", never diffed before).
  it.each([
    ['a key missing, the file converged', fileWith(content), { ...good, 'net.core.somaxconn': null }],
    ['a key missing, the file absent', absent, { ...good, 'net.ipv4.ip_local_port_range': null }],
    [
      'a key absent from the facts',
      fileWith(content),
      { 'net.ipv4.ip_local_port_range': '2048 65535', 'vm.min_free_kbytes': good['vm.min_free_kbytes'] },
    ],
  ])('refused: %s', (_, file, live) => {
    const missing = Object.keys(good).find((k) => !(live as Record<string, string | null>)[k])!;
    expect(() => r.diff({ file, live: live as Record<string, string | null>, memory: mem })).toThrow(
      new Refusal(
        `the host has no sysctl ${missing}: ${sysctlPath(missing)} does not exist (a module not loaded, or not in this kernel or namespace)`,
      ),
    );
  });

  it('an optional key missing is no change (written with `-`: the loader skips it)', () => {
    const opt = sysctl({
      file: '/etc/sysctl.d/90-t.conf',
      profile: 't',
      values: { 'net.core.somaxconn': 65535, 'net.netfilter.x': 1 },
      optional: ['net.netfilter.x'],
    });
    const text = renderSysctlFile('t', { 'net.core.somaxconn': '65535', 'net.netfilter.x': '1' }, ['net.netfilter.x']);
    expect(opt.diff({ file: fileWith(text), live: { 'net.core.somaxconn': '65535', 'net.netfilter.x': null }, memory: mem })).toEqual([]);
  });

  it('reads live values as the kernel prints them (tabs) and missing keys', () => {
    const keys = ['net.core.somaxconn', 'net.ipv4.ip_local_port_range', 'vm.min_free_kbytes', 'net.core.rmem_max'];
    const grep = `missing=vm.min_free_kbytes\n@lines\n/proc/sys/net/core/somaxconn:1:4096 \n/proc/sys/net/ipv4/ip_local_port_range:1:32768\t60999\n/proc/sys/net/ipv4/ip_local_port_range:2:x\n`;
    // (a key neither read nor missing: its file could not be read)
    expect(SYSCTL_LIVE.split(grep, keys)).toEqual(['4096', '32768 60999', null, '']);
    // on this machine, through its shell and grep: the values /proc/sys gives
    const here = ['kernel.ostype', 'no.such.key'];
    const out = spawnSync('sh', ['-c', SYSCTL_LIVE.script(here)], { encoding: 'utf8' }).stdout;
    expect(SYSCTL_LIVE.split(out, here)).toEqual([readFileSync('/proc/sys/kernel/ostype', 'utf8').trim(), null]);
    const f = r.parse({
      parts: [`mem=${24 * GiB} 4096\n`, '4096', '32768 60999', null, { type: 'absent' }],
      stdout: '',
      code: 0,
      stderr: '',
    });
    expect(f.live).toEqual({ 'net.core.somaxconn': '4096', 'net.ipv4.ip_local_port_range': '32768 60999', 'vm.min_free_kbytes': null });
    expect(f.memory).toEqual({ memTotalKb: 24 * GiB, pageSize: 4096 });
    expect(f.file).toEqual({ type: 'absent' });
  });

  it("the real probe reads this kernel's values whole (/proc/sys answers a byte at a time to the shell's read)", () => {
    const real = sysctl({
      file: '/nonexistent/racksmith-t.conf',
      values: { 'net.ipv4.tcp_rmem': '1 2 3', 'kernel.pid_max': 1, 'net.no.such_key': 1 },
    });
    const sp = standaloneProbe(real.probe());
    const f = real.parse(sp.output(execFileSync('sh', ['-c', sp.script], { encoding: 'utf8' })));
    expect(f.live['kernel.pid_max']).toBe(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim());
    expect(f.live['net.ipv4.tcp_rmem']).toBe(readFileSync('/proc/sys/net/ipv4/tcp_rmem', 'utf8').trim().split(/\s+/).join(' '));
    expect(f.live['net.no.such_key']).toBeNull();
    expect(f.memory.memTotalKb).toBe(Number(/^MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))![1]));
    // read from the shell's own smaps, as getconf says it
    expect(f.memory.pageSize).toBe(Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).trim()));
    expect(f.file.type).toBe('absent');
  });

  it('apply sets only the live values that differ, in the file’s order, each written to its /proc/sys file', () => {
    const live = { ...good, 'net.core.somaxconn': '4096', 'vm.min_free_kbytes': '1' };
    const f = { file: fileWith(content), live, memory: mem };
    const steps = r.apply(f, r.diff(f));
    expect(steps.map((s) => s.name)).toEqual(['apply /etc/sysctl.d/90-t.conf']);
    expect(steps[0].script).toBe(
      `printf '%s\\n' 65535 > /proc/sys/net/core/somaxconn || :\nprintf '%s\\n' ${good['vm.min_free_kbytes']} > /proc/sys/vm/min_free_kbytes || :`,
    );
  });

  it('a live value the kernel refuses is said and does not fail the step (the verify probe judges), the others are set', () => {
    const d = mkdtempSync(join(tmpdir(), 'rs-live-'));
    try {
      const script = liveWritesScript([
        ['net.core.somaxconn', '65535'],
        ['net.ipv4.ip_local_port_range', '2048 65535'],
      ]).replaceAll('/proc/sys/', `${d}/`);
      // (never this machine's kernel: the script must name the temp directory only)
      expect(script).not.toContain('/proc/sys');
      // (somaxconn's "file" is a directory here: its write fails as a refused one does)
      mkdirSync(join(d, 'net/core/somaxconn'), { recursive: true });
      mkdirSync(join(d, 'net/ipv4'), { recursive: true });
      const res = spawnSync('/bin/sh', ['-c', `set -e\n${script}`], { encoding: 'utf8' });
      expect(res.status).toBe(0);
      expect(res.stderr).toMatch(/somaxconn/);
      expect(readFileSync(join(d, 'net/ipv4/ip_local_port_range'), 'utf8')).toBe('2048 65535\n');
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it.each([[{ 'net core': 1 }], [{ 'net.core.somaxconn': '1; reboot' }], [{}]])('refuses bad input %j', (values) => {
    expect(() => sysctl({ file: '/etc/sysctl.d/x.conf', values })).toThrow();
  });
});

// The kmod probe run by the local sh on this machine: what its kernel has is read first.
describe('kmod probe on this machine', () => {
  const probeHere = (modules: string[]) => {
    const bin = mkdtempSync(join(tmpdir(), 'rs-kmod-'));
    try {
      // grep on PATH, logging its runs (modules.builtin is read by one)
      const grep = execFileSync('sh', ['-c', 'command -v grep'], { encoding: 'utf8' }).trim();
      writeFileSync(join(bin, 'grep'), `#!/bin/sh\necho run >> '${bin}/log'\nexec '${grep}' "$@"\n`, { mode: 0o755 });
      writeFileSync(join(bin, 'log'), '');
      const r = kmod({ modules, file: join(bin, 'modules.conf') });
      const sp = standaloneProbe(r.probe());
      const out = execFileSync('sh', ['-c', sp.script], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
      return { facts: r.parse(sp.output(out)), greps: readFileSync(join(bin, 'log'), 'utf8').split('\n').filter(Boolean).length };
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  };

  it('br_netfilter that shows itself by its sysctls counts as loaded without a look into modules.builtin', (ctx) => {
    const listed = existsSync('/sys/module/br_netfilter');
    const shows = existsSync(LOADED_EVIDENCE.br_netfilter);
    if (!listed && !shows) return ctx.skip('br_netfilter is neither loaded nor built in here');
    const { facts, greps } = probeHere(['br_netfilter']);
    expect(facts.loaded).toEqual({ br_netfilter: true });
    expect(greps).toBe(0);
  });

  it('a module in neither place is looked up in modules.builtin, once for all of them', () => {
    const { facts, greps } = probeHere(['racksmith_no_such_module', 'racksmith-none-either']);
    expect(facts.loaded).toEqual({ racksmith_no_such_module: false, 'racksmith-none-either': false });
    // (no modules.builtin here at all: the grep still runs, and finds nothing)
    expect(greps).toBe(1);
  });
});

describe('kmod and limits', () => {
  it('kmod: file and load state are separate changes', () => {
    const r = kmod({ modules: ['overlay', 'br_netfilter'] });
    const content = '# Managed by racksmith. Loaded at boot by systemd-modules-load.\noverlay\nbr_netfilter\n';
    expect(r.diff({ file: fileWith(content), loaded: { overlay: true, br_netfilter: true } })).toEqual([]);
    expect(r.diff({ file: fileWith(content), loaded: { overlay: true, br_netfilter: false } }).map((c) => c.summary)).toEqual([
      'load module br_netfilter',
    ]);
    expect(r.diff({ file: absent, loaded: { overlay: true, br_netfilter: true } }).map((c) => c.summary)).toEqual([
      'create /etc/modules-load.d/racksmith.conf',
    ]);
    expect(() => kmod({ modules: ['x; rm -rf /'] })).toThrow(/invalid module name/);
  });

  it('limits: containerd drop-in only where containerd is installed; bad values refused', () => {
    const [pam, systemd, containerd] = limits({ nofile: { soft: 65536, hard: 1048576 } });
    expect(pam.id).toBe('limits:/etc/security/limits.d/90-racksmith.conf');
    expect(systemd.id).toBe('limits:/etc/systemd/system.conf.d/90-racksmith-nofile.conf');
    expect(containerd.diff({ file: absent, applicable: false })).toEqual([]);
    expect(containerd.diff({ file: absent, applicable: true }).map((c) => c.summary)).toEqual([
      'create /etc/systemd/system/containerd.service.d/90-racksmith-nofile.conf',
    ]);
    expect(() => limits({ nofile: { soft: 2_000_000, hard: 1_000_000 } })).toThrow(/exceeds hard/);
    expect(() => limits({ nofile: 100 })).toThrow(/from 1024/);
  });
});
