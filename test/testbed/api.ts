// Test-bed API for tests and benchmarks: N fake hosts (tb1..tbN) on this machine, each with its own
// network/mount/pid/uts/ipc namespaces, overlay root over a cached Debian rootfs, loop disks and sshd.
// The work is done by the shell scripts in ./sh (root only); this module runs them and reads their
// state files in <repo>/.testbed/. See test/testbed/README.md.
//
// A second, independent bed (the benchmark's): set RS_TESTBED_STATE=<dir> before this module is
// first imported, together with the bed's own global names for the scripts (TB_BRIDGE, TB_NET,
// TB_NS_PREFIX, TB_VETH_PREFIX; see sh/lib/common.sh). Without it nothing changes: <repo>/.testbed.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shq } from '../../src/shell/quote.ts';

const here = dirname(fileURLToPath(import.meta.url));
const shDir = join(here, 'sh');

/** Repository root (the default bed's state lives in <repoRoot>/.testbed). */
export const repoRoot = resolve(here, '..', '..');
/** The bed's state directory: $RS_TESTBED_STATE, else <repoRoot>/.testbed. */
export const stateDir = process.env.RS_TESTBED_STATE ? resolve(process.env.RS_TESTBED_STATE) : join(repoRoot, '.testbed');
/** Environment for the scripts: the state dir when it is not the default one. */
const bedEnv: NodeJS.ProcessEnv = process.env.RS_TESTBED_STATE ? { TB_STATE: stateDir } : {};
/** Ansible YAML inventory of the bed (groups testbed, storage, jail, kube_control_plane). */
export const inventoryPath = join(stateDir, 'inventory.yaml');
/** Ansible INI inventory (for the ansible-core baseline). */
export const inventoryIniPath = join(stateDir, 'inventory.ini');
/** The same hosts reached as `ops` with `ansible_become: true`. */
export const inventoryOpsPath = join(stateDir, 'inventory-ops.yaml');
/** known_hosts with every host's ed25519 key, under its IP and its name. */
export const knownHostsPath = join(stateDir, 'known_hosts');
/** Private key accepted by root on every host. */
export const keyPath = join(stateDir, 'id_ed25519');
/** `ssh -F sshConfigPath tb1` works (key, known_hosts, curve25519 KEX). */
export const sshConfigPath = join(stateDir, 'ssh_config');
export const hostsJsonPath = join(stateDir, 'hosts.json');
/** Runner-side path of the shared directory that every host sees at `sharedMount`. */
export const sharedDir = join(stateDir, 'shared');
export const sharedMount = '/srv/shared';
/**
 * The runner's address in a bed network (TB_NET): the network's first address + 1. TB_NET is
 * `A.B.C` (a /24) or `A.B.C.D/P` (see sh/lib/common.sh, which checks it).
 */
export function runnerAddress(net: string): string {
  const addr = net.includes('/') ? net.slice(0, net.indexOf('/')) : `${net}.0`;
  const o = addr.split('.').map(Number);
  return `${o[0]}.${o[1]}.${o[2]}.${o[3] + 1}`;
}
/** Address of the runner on the bed's bridge (hosts reach test doubles listening here). */
export const runnerIp = runnerAddress(process.env.TB_NET ?? '10.77.0');

export interface TestbedDisk {
  /** Kernel device inside the host, e.g. /dev/loop3 (the host sees only its own disks). */
  dev: string;
  /** true: stands in for an HDD (disk 1, 3, ...); false: SSD/NVMe (disk 2, 4, ...). */
  rotational: boolean;
  /** Stable made-up serial such as RSTB1D2 (loop devices have none; recorded only). */
  serial: string;
  /** Runner-side path of the sparse image file. */
  image: string;
}

export interface TestbedHost {
  name: string; // tb1..tbN
  ip: string; // 10.77.0.(10+I)
  port: number;
  user: string;
  netns: string; // rs-tbI
  disks: TestbedDisk[];
  /** Runner-side overlay upper dir: every file the host wrote since up/reset is here. */
  upper: string;
  /** Runner-side per-host directory (disk images, console.log). */
  dir: string;
  /** PID (in the runner's pid namespace) of the host's PID 1 (tb-init). */
  initPid: number;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface UpOptions {
  hosts: number;
  disks?: number;
  /** Do not echo the scripts' progress lines to stderr. */
  quiet?: boolean;
  /** A Slurm cluster on all hosts, tb1 the controller (see `slurm`). */
  slurm?: boolean;
}

interface RunOptions {
  quiet?: boolean;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  input?: string;
}

function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<ExecResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, {
      env: opts.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    if (opts.timeoutMs) {
      timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    }
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      if (opts.quiet === false) process.stderr.write(d);
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
    child.on('error', (err) => {
      if (timer) clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolvePromise({ stdout, stderr, code: code ?? (signal === 'SIGKILL' ? 124 : 128) });
    });
  });
}

async function script(name: string, args: string[], opts: RunOptions = {}): Promise<ExecResult> {
  if (process.getuid?.() !== 0) throw new Error(`testbed: ${name} needs root (namespaces, loop devices, mounts)`);
  const res = await run('bash', [join(shDir, name), ...args], { ...opts, env: { ...process.env, ...bedEnv, ...opts.env } });
  if (res.code !== 0) {
    throw new Error(`testbed: ${name} ${args.join(' ')} failed (exit ${res.code})\n${res.stdout}${res.stderr}`);
  }
  return res;
}

function names(list: string | string[]): string[] {
  const arr = Array.isArray(list) ? list : [list];
  if (arr.length === 0) throw new Error('testbed: no host names given');
  return arr;
}

/**
 * Bring up a fresh bed of `hosts` hosts with `disks` loop disks each (default 1). Any previous
 * bed (or crash leftovers) is torn down first. Debootstraps the rootfs once (~60 s), then ~1 s for
 * 3 hosts. Returns the hosts.
 */
export async function up(opts: UpOptions): Promise<TestbedHost[]> {
  const args = ['--hosts', String(opts.hosts), '--disks', String(opts.disks ?? 1), ...(opts.slurm ? ['--slurm'] : [])];
  await script('up.sh', args, { quiet: opts.quiet ?? false });
  return hosts();
}

/** Remove every namespace, mount, loop device, process and file of the bed. Safe to run twice. */
export async function down(opts: { purge?: boolean; quiet?: boolean } = {}): Promise<void> {
  await script('down.sh', opts.purge ? ['--purge'] : [], { quiet: opts.quiet ?? false });
}

/**
 * Make hosts fresh as after `up`: stop them, wipe their upper dirs, zero their disks (same loop
 * devices), start them again and wait for sshd. IPs, disk names and host keys do not change.
 */
export async function reset(list: string | string[], opts: { quiet?: boolean } = {}): Promise<TestbedHost[]> {
  await script('reset.sh', names(list), { quiet: opts.quiet ?? true });
  return hosts();
}

/**
 * "Reboot" hosts: processes, mounts and per-netns sysctls are gone, the upper dir and disk
 * contents persist; boot emulation re-applies modules-load.d, sysctl.d, fstab and udev rules.
 */
export async function reboot(list: string | string[], opts: { quiet?: boolean } = {}): Promise<TestbedHost[]> {
  await script('reboot.sh', names(list), { quiet: opts.quiet ?? true });
  return hosts();
}

/** In a host: the marker that turns its fake kernel-wide sysfs knobs on (sh/lib/host-init.sh). */
export const FAKE_SYSFS_MARKER = '/var/lib/tb/fake-sysfs';

/**
 * Give hosts a writable fake of the kernel-wide sysfs knobs (transparent hugepages, KSM, cpufreq;
 * sh/lib/fake-sysfs.py): a marker in the host, then a reboot that mounts it. It stays on through
 * later reboots (each starts from the kernel's values again) until a reset.
 */
export async function fakeSysfs(list: string | string[]): Promise<TestbedHost[]> {
  for (const n of names(list)) {
    const r = await hostExec(n, `mkdir -p ${posix.dirname(FAKE_SYSFS_MARKER)} && : > ${FAKE_SYSFS_MARKER}`);
    if (r.code !== 0) throw new Error(`testbed: ${n}: cannot mark the fake sysfs: ${r.stderr}`);
  }
  return reboot(list);
}

/** Whether this bed can run Slurm (the runner had munge and Slurm's packages when the bed came up). */
export function slurmAvailable(): boolean {
  const env = join(stateDir, 'config.env');
  const layer = existsSync(env) ? /^TB_SLURM_LAYER=(.+)$/m.exec(readFileSync(env, 'utf8'))?.[1] : undefined;
  return !!layer && existsSync(join(layer, '.tb-slurm-ready'));
}

/**
 * A real Slurm cluster on these hosts: the first runs slurmctld, every one slurmd (node names =
 * host names, one munge key, partition `all`); resolves once `sinfo` shows them all idle. The
 * daemons restart at every reboot of a host; `reset` removes the set-up. Calling it again
 * re-configures (another host list, fresh daemons).
 */
export async function slurm(list: string | string[], opts: { quiet?: boolean } = {}): Promise<void> {
  await script('slurm.sh', names(list), { quiet: opts.quiet ?? true });
}

/** The running bed's hosts (parsed .testbed/hosts.json); throws when no bed is up. */
export function hosts(): TestbedHost[] {
  if (!existsSync(hostsJsonPath)) throw new Error(`testbed: no bed is up (${hostsJsonPath} missing)`);
  return JSON.parse(readFileSync(hostsJsonPath, 'utf8')) as TestbedHost[];
}

export function host(name: string): TestbedHost {
  const h = hosts().find((x) => x.name === name);
  if (!h) throw new Error(`testbed: no host ${name}`);
  return h;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** true when the host's PID 1 is running. */
export function isRunning(name: string): boolean {
  const h = hosts().find((x) => x.name === name);
  return !!h && h.initPid > 0 && cmdline(h.initPid).includes('tb-init');
}

const hostEnv = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/root',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
};

/**
 * Run `sh -c shellCmd` INSIDE a host without SSH (nsenter into all of its namespaces and root),
 * as root. Never throws for a non-zero exit; check `code`.
 */
export async function hostExec(name: string, shellCmd: string, opts: { input?: string; timeoutMs?: number } = {}): Promise<ExecResult> {
  const h = host(name);
  // the PID must still be this host's init: never nsenter into whatever reused the number
  if (!cmdline(h.initPid).includes('tb-init')) throw new Error(`testbed: host ${name} is not running`);
  return run('nsenter', ['-t', String(h.initPid), '-a', '-r', '-w', 'sh', '-c', shellCmd], {
    env: hostEnv,
    input: opts.input,
    timeoutMs: opts.timeoutMs ?? 120_000,
  });
}

/**
 * Shell that exits 0 once process `pid` has `path` open, read from /proc/PID/fd: it opens nothing
 * itself (an exclusive open of ours to check would make a holder's own exclusive open fail).
 */
export function holdsOpenScript(pid: string | number, path: string): string {
  return `for f in /proc/${Number(pid)}/fd/*; do [ "$(readlink "$f")" = ${shq(path)} ] && exit 0; done; exit 1`;
}

/** Run a command on a host through the system ssh client (key + known_hosts, curve25519 KEX). */
export async function sshExec(name: string, shellCmd: string, opts: { input?: string; timeoutMs?: number } = {}): Promise<ExecResult> {
  const h = host(name);
  return run('ssh', [...sshArgs(), '-p', String(h.port), `${h.user}@${h.ip}`, shellCmd], {
    input: opts.input,
    timeoutMs: opts.timeoutMs ?? 120_000,
  });
}

/** Options for the system `ssh` client to reach bed hosts with strict host key checking. */
export function sshArgs(): string[] {
  return [
    '-i',
    keyPath,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${knownHostsPath}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'KexAlgorithms=curve25519-sha256',
    '-o',
    'BatchMode=yes',
    '-o',
    'ConnectTimeout=5',
    '-o',
    'LogLevel=ERROR',
  ];
}

/** Resolves true if a TCP connection to ip:port succeeds within timeoutMs. */
export function portOpen(ip: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((res) => {
    const sock = connect({ host: ip, port });
    const done = (ok: boolean) => {
      sock.destroy();
      res(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

async function waitPort(h: TestbedHost, open: boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if ((await portOpen(h.ip, h.port, 300)) === open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`testbed: ${h.name} port ${h.port} did not become ${open ? 'open' : 'closed'}`);
}

/**
 * Simulate an unreachable host: kill its sshd (the listener and, unless keepSessions, every open
 * session). The host keeps running (PID 1 stays); new connections are refused.
 */
export async function stopSshd(name: string, opts: { keepSessions?: boolean } = {}): Promise<void> {
  // runs inside the host's pid namespace: only that host's sshd processes are visible
  const cmd = opts.keepSessions
    ? 'p=$(cat /run/sshd.pid 2>/dev/null) && kill "$p"; rm -f /run/sshd.pid'
    : 'pkill -KILL -x sshd; rm -f /run/sshd.pid; true';
  const r = await hostExec(name, cmd);
  if (r.code !== 0) throw new Error(`testbed: stopSshd ${name}: ${r.stderr}`);
  await waitPort(host(name), false);
}

/** Start sshd again on a host after stopSshd (waits until it accepts connections). */
export async function startSshd(name: string): Promise<void> {
  const r = await hostExec(
    name,
    '[ -s /run/sshd.pid ] && kill -0 "$(cat /run/sshd.pid)" 2>/dev/null || /usr/sbin/sshd -E /var/log/sshd.log',
  );
  if (r.code !== 0) throw new Error(`testbed: startSshd ${name}: ${r.stderr}`);
  await waitPort(host(name), true);
}

/**
 * Does a running bed match `hosts` x `disks`? (hosts.json present, every host's PID 1 alive and
 * its sshd port open.)
 */
export async function matches(want: { hosts: number; disks: number }): Promise<boolean> {
  let hs: TestbedHost[];
  try {
    hs = hosts();
  } catch {
    return false;
  }
  if (hs.length !== want.hosts || hs.some((h) => h.disks.length !== want.disks)) return false;
  if (!hs.every((h) => cmdline(h.initPid).includes('tb-init'))) return false;
  // 64 at a time (as `up` checks them): a thousand connects at once on a busy runner time out
  // by the dozen, and the bed would be rebuilt for nothing; a port that does not answer is asked twice.
  const isOpen = async (h: TestbedHost) => (await portOpen(h.ip, h.port, 2000)) || portOpen(h.ip, h.port, 5000);
  for (let i = 0; i < hs.length; i += 64) {
    const open = await Promise.all(hs.slice(i, i + 64).map(isOpen));
    if (!open.every(Boolean)) return false;
  }
  return true;
}

/** How a host lets the operator account `ops` in and escalate (see README: "Reached as ops"). */
export interface OpsAccess {
  /** nopasswd (the bed's default), password (sudo asks for ops' password), requiretty, none (not in sudoers). */
  sudo: 'nopasswd' | 'password' | 'requiretty' | 'none';
  /** ops' login/sudo password (fed to chpasswd on stdin). */
  password?: string;
  /** false: PermitRootLogin no (the default bed lets root in with the key). */
  rootLogin?: boolean;
  /** Let ops log in with its password (PasswordAuthentication yes). */
  passwordLogin?: boolean;
  /** Refuse every SSH login from the runner: the host is reachable only through another bed host (a bastion). */
  onlyViaBastion?: boolean;
  /**
   * Count sudo's failed authentications, as pam_faillock's authfail does: /etc/pam.d/sudo's auth
   * stack is Debian's common-auth with pam_exec between a failed pam_unix and pam_deny, appending
   * a line to SUDO_AUTH_LOG.
   */
  countSudoAuth?: boolean;
}

/** Where a host with `countSudoAuth` logs each failed sudo authentication (a line each). */
export const SUDO_AUTH_LOG = '/var/log/rs-sudo-auth';

/** Give a host an ops access profile (a reset host is back to: root and ops by key, ops NOPASSWD sudo). */
export async function setOpsAccess(name: string, a: OpsAccess): Promise<void> {
  const sudoers = {
    nopasswd: 'ops ALL=(ALL:ALL) NOPASSWD: ALL',
    password: 'ops ALL=(ALL:ALL) ALL',
    requiretty: 'Defaults:ops requiretty\nops ALL=(ALL:ALL) NOPASSWD: ALL',
    none: '',
  }[a.sudo];
  const sshd = [
    ...(a.rootLogin === false ? ['PermitRootLogin no'] : []),
    ...(a.passwordLogin ? ['PasswordAuthentication yes'] : []),
    ...(a.onlyViaBastion ? [`Match Address ${runnerIp}`, '  DenyUsers *'] : []),
  ];
  const script = [
    'set -e',
    sudoers
      ? `printf '%s\\n' '${sudoers.replace(/\n/g, "' '")}' > /etc/sudoers.d/10-ops; chmod 440 /etc/sudoers.d/10-ops`
      : 'rm -f /etc/sudoers.d/10-ops',
    'visudo -c >/dev/null',
    // before 10-testbed.conf: sshd keeps the first value it reads
    sshd.length
      ? `printf '%s\\n' ${sshd.map((l) => `'${l}'`).join(' ')} > /etc/ssh/sshd_config.d/05-ops.conf`
      : 'rm -f /etc/ssh/sshd_config.d/05-ops.conf',
    '/usr/sbin/sshd -t',
    a.password !== undefined ? 'chpasswd' : 'usermod -p "*" ops',
    ...(a.countSudoAuth
      ? [
          `printf '#!/bin/sh\\necho "$PAM_SERVICE $PAM_USER" >> ${SUDO_AUTH_LOG}\\n' > /usr/local/sbin/rs-count-auth`,
          'chmod 755 /usr/local/sbin/rs-count-auth',
          `: > ${SUDO_AUTH_LOG}`,
          // seteuid: the script runs as root (sudo's real uid is still ops while it authenticates)
          `sed -i 's|^@include common-auth$|auth [success=2 default=ignore] pam_unix.so nullok\\nauth optional pam_exec.so quiet seteuid /usr/local/sbin/rs-count-auth\\nauth requisite pam_deny.so\\nauth required pam_permit.so|' /etc/pam.d/sudo`,
          'grep -q rs-count-auth /etc/pam.d/sudo',
        ]
      : []),
  ].join('\n');
  const r = await hostExec(name, script, { input: a.password !== undefined ? `ops:${a.password}\n` : undefined });
  if (r.code !== 0) throw new Error(`testbed: setOpsAccess ${name}: ${r.stderr}`);
  await stopSshd(name);
  await startSshd(name);
}

/**
 * OpenSSH's own defaults for the limits the bed raises (10-testbed.conf: MaxStartups 200:30:400,
 * MaxSessions 100), as operators' bastions and controllers run them: beyond 10 unauthenticated
 * connections at once sshd drops new ones at random (30%, rising to 100% at 100); 10 sessions
 * per connection (forwarded channels are not sessions).
 */
export const OPENSSH_DEFAULT_LIMITS = { maxStartups: '10:30:100', maxSessions: 10 } as const;

/** What sshd logged about connections it dropped past MaxStartups (hosts given setSshdDefaults log them). */
export const DROPPED_PAST_MAX_STARTUPS = /drop connection #\d+ from \[[^\]]+\]:\d+ on \[[^\]]+\]:\d+ past MaxStartups/g;

/**
 * Run a host's sshd with OpenSSH's default MaxStartups and MaxSessions (OPENSSH_DEFAULT_LIMITS;
 * `o.maxSessions` for one set tighter still) and LogLevel VERBOSE (each connection dropped past
 * MaxStartups is a line in /var/log/sshd.log, which starts empty), then restart it. `tb.reset`
 * brings the bed's limits back.
 */
export async function setSshdDefaults(name: string, o: { maxSessions?: number } = {}): Promise<void> {
  const { maxStartups } = OPENSSH_DEFAULT_LIMITS;
  const maxSessions = o.maxSessions ?? OPENSSH_DEFAULT_LIMITS.maxSessions;
  // in 10-testbed.conf itself: sshd keeps the first MaxSessions it reads but the last MaxStartups
  const conf = '/etc/ssh/sshd_config.d/10-testbed.conf';
  const script = [
    'set -e',
    `sed -i -e 's/^MaxStartups .*/MaxStartups ${maxStartups}/' -e 's/^MaxSessions .*/MaxSessions ${maxSessions}/' ${conf}`,
    `grep -q '^LogLevel VERBOSE' ${conf} || echo 'LogLevel VERBOSE' >> ${conf}`,
    '/usr/sbin/sshd -t',
  ].join('\n');
  const r = await hostExec(name, script);
  if (r.code !== 0) throw new Error(`testbed: setSshdDefaults ${name}: ${r.stderr}`);
  await stopSshd(name);
  await hostExec(name, ': > /var/log/sshd.log');
  await startSshd(name);
  // what the running sshd's configuration says, not what the file was meant to
  const t = await hostExec(name, '/usr/sbin/sshd -T -C user=root,host=x,addr=127.0.0.1');
  const got = t.stdout
    .match(/^(maxstartups|maxsessions|loglevel) .*$/gm)
    ?.sort()
    .join(', ');
  if (got !== `loglevel VERBOSE, maxsessions ${maxSessions}, maxstartups ${maxStartups}`)
    throw new Error(`testbed: setSshdDefaults ${name}: sshd -T shows ${got}`);
}

/** The connections a host's sshd dropped past MaxStartups since setSshdDefaults (its log's lines). */
export async function droppedPastMaxStartups(name: string): Promise<string[]> {
  return (await hostExec(name, 'cat /var/log/sshd.log')).stdout.match(DROPPED_PAST_MAX_STARTUPS) ?? [];
}
