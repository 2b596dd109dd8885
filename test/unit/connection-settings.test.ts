// How a host is reached (issue #22): become resolution, the become wrapper, ssh args,
// ~/.ssh/config, connection variables, and the variables racksmith does not honour.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BecomeError, becomeCommand, becomeOutcome, execPlan, resolveBecome, type Become } from '../../src/connection/become.ts';
import { LocalConnection } from '../../src/connection/local.ts';
import { parseSshArgs, shellWords } from '../../src/connection/ssh-args.ts';
import { sshConfigFor } from '../../src/connection/ssh-config.ts';
import { killGroupsScript } from '../../src/connection/kill-groups.ts';
import { scriptAsStdin } from '../../src/connection/transport.ts';
import { checkConnectionFiles, sshOptionsFor } from '../../src/connection/connect.ts';
import { loadInventory } from '../../src/inventory/load.ts';
import { ignoredConnectionVars, treatmentOf } from '../../src/inventory/ansible-connection-vars.ts';
import { InputError } from '../../src/util/errors.ts';
import { Secret } from '../../src/util/secret.ts';
import { parseCli } from '../../src/cli.ts';

const tmp = mkdtempSync(join(tmpdir(), 'rs-conn-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
function file(text: string, name = 'hosts.yml'): string {
  const p = join(tmp, `${n++}-${name}`);
  writeFileSync(p, text);
  return p;
}
const connectOpts = { inventoryFile: 'x', acceptNewHostKeys: false, connectTimeoutMs: 10_000 };

describe('resolveBecome: host variables > play keywords > command line', () => {
  it.each([
    ['nothing: no escalation', undefined, {}, {}, undefined],
    ['-b alone: sudo to root', undefined, {}, { enabled: true }, { user: 'root', method: 'sudo' }],
    ['-b with --become-user', undefined, {}, { enabled: true, user: 'app' }, { user: 'app', method: 'sudo' }],
    ['play become: true', undefined, { enabled: true }, {}, { user: 'root', method: 'sudo' }],
    ['play become: false beats -b', undefined, { enabled: false }, { enabled: true }, undefined],
    ['ansible_become: false beats the play', { enabled: false }, { enabled: true }, { enabled: true }, undefined],
    ['ansible_become_user beats --become-user', { user: 'db' }, {}, { enabled: true, user: 'app' }, { user: 'db', method: 'sudo' }],
    ['ansible_become_method su', { enabled: true, method: 'su' as const }, {}, {}, { user: 'root', method: 'su' }],
  ])('%s', (_, host, play, cli, want) => {
    expect(resolveBecome(host, play, cli)).toEqual(want);
  });
});

/**
 * A `sudo` on PATH that behaves as sudo -S does: reads one line as the password when -S, validates
 * it. STANDIN_SUDO=refuse: with -n it fails as sudo does when a password is required;
 * STANDIN_SUDO=warn: it warns on stderr (as of an unresolvable host name) and runs the command.
 * Every call is counted in $STANDIN_SUDO_LOG when set.
 */
function standInSudo(): string {
  const bin = join(tmp, 'bin');
  spawnSync('mkdir', ['-p', bin]);
  writeFileSync(
    join(bin, 'sudo'),
    `#!/bin/sh
[ -n "$STANDIN_SUDO_LOG" ] && echo sudo >> "$STANDIN_SUDO_LOG"
s=; v=; n=; p=; while [ $# -gt 0 ]; do case "$1" in -S) s=1;; -v) v=1;; -n) n=1;; -H) ;; -p) p=$2; shift;; -u) shift;; --) shift; break;; *) break;; esac; shift; done
# retry: as sudo does, a prompt per try (passwd_tries=3); a try counts as failed once its answer was read
if [ "$STANDIN_SUDO" = retry ] && [ -n "$s" ]; then
  for t in 1 2 3; do printf '%s' "$p" >&2; IFS= read -r pw || { echo failed >> "$STANDIN_SUDO_LOG"; echo 'sudo: no password was provided' >&2; exit 1; }
    [ "$pw" = right ] && { [ -n "$v" ] && exit 0; exec "$@"; }; echo failed >> "$STANDIN_SUDO_LOG"; echo 'Sorry, try again.' >&2; done
  exit 1
fi
[ -n "$n" ] && [ "$STANDIN_SUDO" = refuse ] && { echo 'sudo: a password is required' >&2; exit 1; }
[ "$STANDIN_SUDO" = warn ] && echo 'sudo: unable to resolve host rack7: Name or service not known' >&2
if [ -n "$s" ]; then IFS= read -r pw; [ "$pw" = right ] || { echo 'Sorry, try again.' >&2; echo 'sudo: 1 incorrect password attempt' >&2; exit 1; }; fi
[ -n "$v" ] && exit 0
exec "$@"
`,
    { mode: 0o755 },
  );
  return bin;
}

describe('the become wrapper', () => {
  it('the password travels on stdin only: never in the command (argv on the host)', () => {
    const b = { method: 'sudo' as const, user: 'root', password: new Secret('s3cr3t pw') };
    const { command, stdinPrefix } = becomeCommand(b, 'rs-become-N');
    expect(command).not.toContain('s3cr3t');
    expect(stdinPrefix).toBe('s3cr3t pw\nrs-become-N\n');
    expect(command).toMatch(/sudo -S -p 'rs-become-N-ask\n' -v/);
  });
  it('without a password: one sudo -n per exec (never prompts)', () => {
    const { command, stdinPrefix } = becomeCommand({ method: 'sudo', user: 'app' }, 'N');
    expect(stdinPrefix).toBe('');
    expect(command).toMatch(/^exec sudo -n -H -u app -- /);
    expect(command.match(/\bsudo\b/g)).toHaveLength(1);
  });
  describe('without a password, through a stand-in sudo: what failed, escalation or the script', () => {
    const b: Become = { method: 'sudo', user: 'root' };
    const run = (script: string, stdin: string | undefined, mode: string) => {
      const bin = standInSudo();
      const log = join(tmp, `sudo-calls-${n++}`);
      const p = execPlan(b, 'rs-become-X', script, stdin, (s) => s);
      const r = spawnSync('/bin/sh', p.args, {
        input: p.stdin,
        encoding: 'utf8',
        env: { PATH: `${bin}:/usr/bin:/bin`, STANDIN_SUDO: mode, STANDIN_SUDO_LOG: log },
      });
      const calls = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0;
      return { ...r, calls, ...becomeOutcome(b, 'rs-become-X', r.status, r.stderr) };
    };
    it.each([
      ['script on stdin', undefined],
      ["caller's stdin", 'in\n'],
    ])('%s', (_, stdin) => {
      const script = `cat >/dev/null; echo out; echo 'the script failed' >&2; exit 3`;
      const plain = spawnSync('/bin/sh', execPlan(undefined, 'N', script, stdin, (s) => s).args, {
        input: stdin ?? scriptAsStdin(script),
        encoding: 'utf8',
      });
      // sudo refuses: its message, as a become failure, never the script's
      const refused = run(script, stdin, 'refuse');
      expect(refused.failure?.message).toBe('become (sudo to root) failed: sudo: a password is required');
      expect(refused.stdout).toBe('');
      // the script fails: its own exit and stderr, exactly as without become (sudo's warning dropped)
      for (const mode of ['', 'warn']) {
        const ran = run(script, stdin, mode);
        expect(ran.failure).toBeUndefined();
        expect([ran.status, ran.stdout, ran.stderr]).toEqual([plain.status, plain.stdout, plain.stderr]);
        expect([plain.status, plain.stderr]).toEqual([3, 'the script failed\n']);
        expect(ran.calls).toBe(1);
      }
    });
    it.each([
      ['a script killed (no exit status) is not a refusal', null, '', undefined],
      ['a zero exit without the started line is not a refusal', 0, 'x\n', undefined],
      ['a failure without a message says so', 1, '', 'become (sudo to root) failed: exit 1, no message'],
      [
        "the wrapper's own refusal: its message",
        125,
        'racksmith-become: no password on stdin\n',
        'become (sudo to root) failed: no password on stdin',
      ],
      ['after the started line nothing is a refusal', 125, 'rs-become-X-started\nracksmith-become: x\n', undefined],
      [
        "the login shell's own error, without its $0 (the exec's tag, different on every host)",
        127,
        'rs-exec-cad27d1aa9e0: 1: exec: sudo: not found\n',
        'become (sudo to root) failed: exec: sudo: not found',
      ],
    ])('%s', (_, code, stderr, want) => {
      expect(becomeOutcome(b, 'rs-become-X', code, stderr).failure?.message).toBe(want);
    });
  });
  it('a password with a line break is refused (it could not be fed as one line)', () => {
    expect(() => becomeCommand({ method: 'sudo', user: 'root', password: new Secret('a\nb') }, 'N')).toThrow(/line break/);
  });
  it('runs the script through a stand-in sudo that checks the password and skips to the nonce', () => {
    const bin = standInSudo();
    const run = (password: string) => {
      const b = { method: 'sudo' as const, user: 'root', password: new Secret(password) };
      const p = execPlan(b, 'rs-become-X', 'echo "ran: $RS_SESSION_PID"', undefined, (s) => s);
      const r = spawnSync('/bin/sh', p.args, { input: p.stdin, encoding: 'utf8', env: { PATH: `${bin}:/usr/bin:/bin` } });
      return { ...r, failure: becomeOutcome(b, 'rs-become-X', r.status, r.stderr).failure };
    };
    const ok = run('right');
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toBe(`ran: ${process.pid}\n`);
    const wrong = run('wrong');
    expect(wrong.status).toBe(125);
    expect(wrong.failure?.message).toBe('become (sudo to root) failed: Sorry, try again.; sudo: 1 incorrect password attempt');
  });
  it.each([
    ['a wrong password', 'wrong', 'become (sudo to root) failed: Sorry, try again.; sudo: the password was refused (not tried again)', 1],
    ['the right one', 'right', undefined, 0],
  ])(
    'sudo -v asking again after %s is stopped at its second prompt: one try failed, never the end of input',
    (_, password, want, failed) => {
      const bin = standInSudo();
      const log = join(tmp, `sudo-calls-${n++}`);
      writeFileSync(log, '');
      const b = { method: 'sudo' as const, user: 'root', password: new Secret(password) };
      const p = execPlan(b, 'rs-become-X', 'echo ran', undefined, (s) => s);
      const r = spawnSync('/bin/sh', p.args, {
        input: p.stdin,
        encoding: 'utf8',
        env: { PATH: `${bin}:/usr/bin:/bin`, STANDIN_SUDO: 'retry', STANDIN_SUDO_LOG: log },
        timeout: 20_000,
      });
      expect(becomeOutcome(b, 'rs-become-X', r.status, r.stderr).failure?.message).toBe(want);
      expect(
        readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => l === 'failed'),
      ).toHaveLength(failed);
      if (!want) expect(r.stdout).toBe('ran\n');
    },
  );
  it('a refusal is final for the connection: later execs fail with it and never ask sudo again', async () => {
    const bin = standInSudo();
    const log = join(tmp, `sudo-calls-${n++}`);
    const saved = { PATH: process.env.PATH, STANDIN_SUDO_LOG: process.env.STANDIN_SUDO_LOG };
    Object.assign(process.env, { PATH: `${bin}:/usr/bin:/bin`, STANDIN_SUDO_LOG: log });
    try {
      const conn = new LocalConnection('h', { method: 'sudo', user: 'root', password: new Secret('wrong') });
      const first = await conn.exec('echo ran').catch((e: Error) => e);
      expect(first).toBeInstanceOf(BecomeError);
      for (let i = 0; i < 3; i++) await expect(conn.exec('echo ran')).rejects.toBe(first);
      expect(readFileSync(log, 'utf8')).toBe('sudo\n');
      expect(conn.execCount).toBe(1);
      await conn.close();
    } finally {
      Object.assign(process.env, saved);
      if (saved.STANDIN_SUDO_LOG === undefined) delete process.env.STANDIN_SUDO_LOG;
    }
  });
  // abort() finds an exec's processes by the tag ending their argv; the script must not see a difference
  const becomes: Array<[string, Become]> = [
    ['sudo', { method: 'sudo', user: 'root' }],
    ['sudo with a password', { method: 'sudo', user: 'root', password: new Secret('right') }],
    ...(process.getuid?.() === 0 ? [['su (as root)', { method: 'su', user: 'root' }] as [string, Become]] : []),
  ];
  it.each(
    becomes.flatMap(([name, b]) => [[`${name}, script on stdin`, b, undefined] as const, [`${name}, caller's stdin`, b, 'in\n'] as const]),
  )("the tag ends the escalated shell's argv, its positional parameters as without become: %s", (_, b, stdin) => {
    const bin = standInSudo();
    const script = `printf '%s|' "$0" "$#" "$@"; tr '\\000' ' ' < /proc/$$/cmdline; echo; cat`;
    const run = (become: Become | undefined) => {
      const p = execPlan(become, 'rs-become-X', script, stdin, (s) => s, 'rs-exec-0123abcd');
      const r = spawnSync('/bin/sh', p.args, { input: p.stdin, encoding: 'utf8', env: { PATH: `${bin}:/usr/bin:/bin` } });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout;
    };
    const plain = run(undefined);
    expect(plain.split('\n')[0]).toMatch(/ rs-exec-0123abcd $/);
    expect(run(b)).toBe(plain);
  });
  it('su as a non-root login user: refused with the reason (su reads a terminal)', () => {
    const b = { method: 'su' as const, user: 'root' };
    const p = execPlan(b, 'N', 'echo hi', undefined, (s) => s);
    const r = spawnSync('/bin/sh', p.args, { input: p.stdin, encoding: 'utf8' });
    if (process.getuid?.() === 0) expect(r.stdout).toBe('hi\n');
    else expect(becomeOutcome(b, 'N', r.status, r.stderr).failure?.message).toMatch(/su asks for its password on a terminal/);
  });
});

describe("abort's kill script", () => {
  // the tagged shell as sshd leaves it (a session leader), and as sudo without a tty does (a
  // child in sudo's group); either way the tag's group dies, a `sleep` it started included
  it.each([
    ['the tagged shell leads its group', `exec /bin/sh -c 'sleep 300 & echo $!; wait' rs-exec-feed01`],
    ['the tagged shell is a child in its group', `/bin/sh -c 'sleep 300 & echo $!; wait' rs-exec-feed01; :`],
  ])('%s', async (_, leader) => {
    const group = spawn('/bin/sh', ['-c', leader], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const sleepPid = Number(await new Promise<string>((r) => group.stdout.once('data', (d: Buffer) => r(d.toString()))));
      const ended = new Promise((r) => group.once('exit', (_c, sig) => r(sig)));
      const k = spawnSync('/bin/sh', ['-s'], { input: scriptAsStdin(killGroupsScript(['rs-exec-nomatch', 'rs-exec-feed01'])) });
      expect(k.status).toBe(0);
      expect(await Promise.race([ended, new Promise((r) => setTimeout(() => r('still running'), 3000))])).toBe('SIGKILL');
      // killed: gone, or a zombie until its new parent reaps it
      const state = () => readFileSync(`/proc/${sleepPid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
      for (let i = 0; i < 50 && existsSync(`/proc/${sleepPid}`) && state() !== 'Z'; i++) await new Promise((r) => setTimeout(r, 20));
      expect(existsSync(`/proc/${sleepPid}`) ? state() : 'gone').toMatch(/gone|Z/);
    } finally {
      try {
        process.kill(-group.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
});

describe('ssh args (ansible_ssh_common_args, --ssh-common-args)', () => {
  it.each([
    ['-o ProxyJump=ops@bastion', { jump: { spec: 'ops@bastion' } }],
    ['-J ops@10.0.0.1:2222', { jump: { spec: 'ops@10.0.0.1:2222' } }],
    ["-o ProxyCommand='ssh -W %h:%p -q ops@bastion'", { jump: { spec: 'ops@bastion' } }],
    ['-o "ProxyCommand ssh -l ops -p 22 -W %h:%p bastion"', { jump: { spec: 'ops@bastion:22' } }],
    ['-o ProxyJump=none', { noJump: true }],
    [
      '-o UserKnownHostsFile=/k -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes',
      { knownHostsFile: '/k', acceptNewHostKeys: false, identitiesOnly: true },
    ],
    ['-oStrictHostKeyChecking=accept-new -o ConnectTimeout=7', { acceptNewHostKeys: true, connectTimeoutSeconds: 7 }],
    ['-i /key -p 2200 -l admin', { identityFile: '/key', port: 2200, user: 'admin' }],
    ['-p 2200 -o Port=2300', { port: 2200 }], // ssh: the first value wins
  ])('%s', (text, want: Record<string, unknown>) => {
    const pos = { file: 'inv.yml', line: 4 };
    const got = parseSshArgs(text, 'ansible_ssh_common_args', pos);
    expect(got).toEqual('jump' in want ? { ...want, jump: { ...(want.jump as object), pos } } : want);
  });
  it.each([
    ['-o ControlMaster=auto', /-o ControlMaster is not supported/],
    ['-C', /'-C' is not supported/],
    ['-o ProxyCommand="nc %h %p"', /only 'ssh .* -W %h:%p/],
    ['-o ProxyJump=a,b', /more than one jump host/],
    ['-o StrictHostKeyChecking=maybe', /expected yes, ask/],
    ['-p', /-p needs a value/],
    ["-o 'ProxyJump=x", /unterminated single quote/],
  ])('%s: exit 3 at the variable', (text, msg) => {
    let err: unknown;
    try {
      parseSshArgs(text, 'ansible_ssh_common_args', { file: 'inv.yml', line: 9 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/^inv\.yml:9(:\d+)?: ansible_ssh_common_args: /);
    expect((err as Error).message).toMatch(msg);
  });
  it('shellWords splits as sh does', () => {
    expect(shellWords(`-o "A B" 'c d'e f\\ g`)).toEqual(['-o', 'A B', 'c de', 'f g']);
  });
  it("the bed inventory's args (UserKnownHostsFile, StrictHostKeyChecking, IdentitiesOnly) load, and an unsupported one is exit 3 at its line", () => {
    const inv = loadInventory(
      file(
        `all:\n  vars:\n    ansible_ssh_common_args: "-o UserKnownHostsFile=/k -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"\n  hosts:\n    a: {}\n`,
      ),
    );
    expect(inv.hosts[0].connection).toMatchObject({ knownHostsFile: '/k', acceptNewHostKeys: false, identitiesOnly: true });
    const bad = file(`all:\n  hosts:\n    a:\n      ansible_ssh_extra_args: "-o ForwardAgent=yes"\n`);
    expect(() => loadInventory(bad)).toThrow(new RegExp(`${bad}:4:\\d+: ansible_ssh_extra_args: -o ForwardAgent is not supported`));
  });
  it('inventory variables win over the ssh args; ProxyJump gives the jump host', () => {
    const inv = loadInventory(
      file(
        `all:\n  vars:\n    ansible_ssh_common_args: "-o ProxyJump=ops@bastion:2222 -p 2200 -l admin"\n  hosts:\n    a: { ansible_port: 22 }\n    b: { ansible_user: ops }\n`,
      ),
    );
    expect(inv.hosts[0].connection).toMatchObject({ port: 22, user: 'admin', jump: { user: 'ops', address: 'bastion', port: 2222 } });
    expect(inv.hosts[1].connection).toMatchObject({ port: 2200, user: 'ops' });
  });
});

describe('connection variables', () => {
  it('ansible_become*, ansible_password (old names too): passwords are secrets even when plain', () => {
    const inv = loadInventory(
      file(
        `all:\n  hosts:\n    a: { ansible_become: "yes", ansible_become_user: app, ansible_become_method: su, ansible_become_pass: pw1, ansible_ssh_pass: pw2 }\n    b: { ansible_become_password: !secret pw3, ansible_password: pw4, ansible_ssh_host: 10.0.0.2, ansible_ssh_port: 2222, ansible_ssh_user: u }\n`,
      ),
    );
    const [a, b] = inv.hosts.map((h) => h.connection);
    expect(a.become).toMatchObject({ enabled: true, user: 'app', method: 'su' });
    expect(a.become?.password?.reveal()).toBe('pw1');
    expect(a.password?.reveal()).toBe('pw2');
    expect(String(a.password)).not.toContain('pw2');
    expect(b.become?.password?.reveal()).toBe('pw3');
    expect(b.password?.reveal()).toBe('pw4');
    expect(b).toMatchObject({ address: '10.0.0.2', port: 2222, user: 'u' });
  });
  it.each([
    ['ansible_become: maybe', /ansible_become must be true or false/],
    ['ansible_become_method: doas', /ansible_become_method must be sudo or su/],
  ])('%s: exit 3', (line, msg) => {
    expect(() => loadInventory(file(`all:\n  hosts:\n    a: { ${line} }\n`))).toThrow(msg);
  });
});

describe('~/.ssh/config (-F, racksmith_ssh_config)', () => {
  const cfg = file(
    [
      'Host bastion',
      '  HostName 10.0.0.1',
      '  User jump',
      'Host rack-*',
      '  HostName %h.example',
      '  ProxyJump bastion',
      '  Port 2200',
      'Host rack-7',
      '  Port 2207', // first match wins: rack-* gave 2200
      'Host *',
      '  User ops',
      '  IdentityFile /keys/id',
      '  UserKnownHostsFile /keys/known',
      '  StrictHostKeyChecking accept-new',
      '  ConnectTimeout 4',
      '',
    ].join('\n'),
    'ssh_config',
  );
  it('first match wins, per directive', () => {
    expect(sshConfigFor('rack-7', cfg)).toEqual({
      hostName: 'rack-7.example',
      user: 'ops',
      port: 2200,
      identityFile: '/keys/id',
      jump: { user: undefined, address: 'bastion', port: undefined },
      knownHostsFile: '/keys/known',
      acceptNewHostKeys: true,
      connectTimeoutSeconds: 4,
    });
  });
  it('inventory values win; the jump host gets its own entry', () => {
    const inv = loadInventory(file(`all:\n  hosts:\n    rack-7: { ansible_user: admin, ansible_port: 22 }\n`));
    const o = sshOptionsFor(inv.hosts[0], { ...connectOpts, sshConfigFile: cfg });
    expect(o).toMatchObject({
      address: 'rack-7.example',
      user: 'admin',
      port: 22,
      privateKeyFile: '/keys/id',
      acceptNewHostKeys: true,
      connectTimeoutMs: 4000,
    });
    expect(o.jump).toMatchObject({ address: '10.0.0.1', user: 'jump', port: 22 });
  });
  it('-u, --private-key: below the inventory, over the config (Ansible passes them as -o User=, -o IdentityFile=)', () => {
    const inv = loadInventory(
      file(`all:\n  hosts:\n    plain: {}\n    named: { ansible_user: x, ansible_ssh_private_key_file: /inv/key }\n`),
    );
    const none = file('', 'empty_config');
    const withCli = { ...connectOpts, user: 'cli', privateKeyFile: '/cli/key' };
    const [plain, named] = inv.hosts.map((h) => sshOptionsFor(h, { ...withCli, sshConfigFile: none }));
    expect(plain).toMatchObject({ user: 'cli', privateKeyFile: '/cli/key' });
    expect(named).toMatchObject({ user: 'x', privateKeyFile: '/inv/key' });
    // the config (User ops, IdentityFile /keys/id for every host) loses to the command line...
    const [plainCfg, namedCfg] = inv.hosts.map((h) => sshOptionsFor(h, { ...withCli, sshConfigFile: cfg }));
    expect(plainCfg).toMatchObject({ user: 'cli', privateKeyFile: '/cli/key' });
    expect(namedCfg).toMatchObject({ user: 'x', privateKeyFile: '/inv/key' });
    // ...and is what applies without it
    expect(sshOptionsFor(inv.hosts[0], { ...connectOpts, sshConfigFile: cfg })).toMatchObject({ user: 'ops', privateKeyFile: '/keys/id' });
  });
});

describe('the connection files checked before any host', () => {
  const key = file('not a real key, but a regular file\n', 'id_test');
  it.each([
    [
      'every host has its own key: a stale --private-key is not in the way',
      `all:\n  hosts:\n    a: { ansible_ssh_private_key_file: ${key} }\n`,
      undefined,
    ],
    [
      'a host without one: --private-key is its key, and must be there',
      'all:\n  hosts:\n    a: {}\n',
      /--private-key: private key file \/nonexistent-rs\/key: not found/,
    ],
    ['only local hosts: nothing to check', 'all:\n  hosts:\n    a: { ansible_connection: local }\n', undefined],
  ])('%s', (_, inv, err) => {
    const hosts = loadInventory(file(inv)).hosts;
    const check = () => checkConnectionFiles(hosts, { privateKeyFile: '/nonexistent-rs/key' });
    if (err) expect(check).toThrow(err);
    else expect(check).not.toThrow();
  });
});

describe('connection variables racksmith does not honour', () => {
  it.each([
    ['ansible_python_interpreter', 'irrelevant'],
    ['ansible_pipelining', 'irrelevant'],
    ['ansible_become', 'honoured'],
    ['ansible_ssh_common_args', 'honoured'],
    ['ansible_ssh_args', 'ignored'],
    ['ansible_become_flags', 'ignored'],
    ['ansible_winrm_transport', 'ignored'],
    ['ansible_distribution', 'none'],
  ])('%s: %s', (v, want) => {
    const t = treatmentOf(v);
    expect(t === undefined ? 'none' : t === 'honoured' ? t : t.kind).toBe(want);
  });
  it('reported once per variable, where the first host got it', () => {
    const p = file(
      `all:\n  vars:\n    ansible_become_flags: "-E"\n    ansible_python_interpreter: /usr/bin/python3\n  hosts:\n    a: { ansible_control_path: /x }\n    b: { ansible_control_path: /y }\n`,
    );
    const got = ignoredConnectionVars(loadInventory(p));
    expect(got.map((w) => [w.variable, w.pos?.line])).toEqual([
      ['ansible_become_flags', 3],
      ['ansible_control_path', 6],
    ]);
  });
});

describe('CLI flags', () => {
  it('become and connection flags parse', () => {
    const o = parseCli([
      '-i',
      'x',
      '-b',
      '--become-user',
      'app',
      '--become-method',
      'su',
      '-K',
      '-k',
      '-u',
      'ops',
      '--private-key',
      '/k',
      '-c',
      'local',
      '-T',
      '5',
      '--ssh-common-args=-o ProxyJump=b',
    ]);
    expect(o).toMatchObject({
      become: { enabled: true, user: 'app', method: 'su' },
      askBecomePass: true,
      askPass: true,
      user: 'ops',
      privateKey: '/k',
      connection: 'local',
      timeoutMs: 5000,
      sshCommonArgs: '-o ProxyJump=b',
    });
  });
  it.each([
    [['--become-method', 'doas'], /--become-method must be sudo or su/],
    [['-c', 'winrm'], /-c\/--connection must be ssh or local/],
    [['-F', '/no/such/ssh_config'], /no such file/],
  ])('%j: exit 3', (args, msg) => {
    expect(() => parseCli(['-i', 'x', ...args])).toThrow(msg);
  });
});
