import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseCli } from '../../src/cli.ts';
import { cli } from './run-cli.ts';
import { InputError } from '../../src/util/errors.ts';

/**
 * Bad command-line input: exit code 3, a message naming the problem, nothing run on any host.
 * The inventory has a local host and `far`, an SSH host on a port where nothing listens: had the
 * CLI gone ahead, the demo playbook would have probed `loc` and failed to reach `far` (exit 1).
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const FIX = join(HERE, 'fixtures', 'cli');
const INV = join(FIX, 'hosts.yml');
const PLAYBOOK = 'test/fixtures/playbooks/demo.ts';
const DEMO_DIR = '/tmp/rsdemo';
const fix = (name: string) => relative(process.cwd(), join(FIX, name));
const temps: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'rs-cli-input-'));
  temps.push(d);
  return d;
};
const fifo = () => {
  const f = join(tempDir(), 'journal.fifo');
  execFileSync('mkfifo', [f]);
  return f;
};
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

let PORT = 0;
beforeAll(async () => {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  PORT = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
});
beforeEach(() => rmSync(DEMO_DIR, { recursive: true, force: true }));

/** argv for the demo playbook against the fixture inventory, plus `extra`. */
const argv = (...extra: string[]) => [PLAYBOOK, '-i', INV, '--check', '-e', `ansible_port=${PORT}`, ...extra];

describe('run(): bad input is exit 3, before anything runs', () => {
  it.each<[string, () => string[], string[]]>([
    // name, argv, texts stderr must contain
    [
      '-e with a bad variable name',
      () => argv('-e', 'my-var=1'),
      [`error: -e #2: 'my-var' is not a variable name (letters, digits and _, not starting with a digit)`],
    ],
    ['-e without =', () => argv('-e', 'debug'), [`got 'debug'`]],
    ['-e with an unterminated quote', () => argv('-e', "motd='hello"), ['unterminated quote']],
    [
      '-e mapping with a bad port',
      () => argv('-e', '{ansible_port: 0}'),
      ['error: -e #2:1:16: ansible_port must be a port number from 1 to 65535, got 0'],
    ],
    [
      '-e mapping with a bad connection',
      () => argv('-e', '{ansible_connection: telnet}'),
      ['error: -e #2:1:22: ansible_connection must be one of'],
    ],
    [
      '-e @file with a bad name',
      () => argv('-e', `@${fix('bad-extra.yml')}`),
      [`error: ${fix('bad-extra.yml')}:2:1: invalid name 'bad-name' in document`],
    ],
    ['-e @missing file', () => argv('-e', `@${fix('missing.yml')}`), [`error: ${fix('missing.yml')}: extra-vars file: not found`]],
    ['--limit matching nothing', () => argv('--limit', 'nosuch'), [`error: host --limit 'nosuch' matches no host in ${INV}`]],
    // each unknown term is a warning (as in Ansible); the limit selecting nothing is the error
    ['--limit group matching nothing', () => argv('-l', 'nosuch:web'), [`host --limit 'nosuch:web' matches no host`]],
    ['--limit with a bare exclusion', () => argv('-l', 'far,!'), [`host --limit 'far,!' has nothing after '!'`]],
    ['--limit with a bad regex', () => argv('-l', '~('), ['invalid regular expression']],
    ['--limit excluding every host', () => argv('-l', '!loc:!far'), [`host --limit '!loc:!far' matches no host`]],
    ['--limit empty', () => argv('--limit', ''), ['--limit']],
    ['--forks abc', () => argv('--forks', 'abc'), [`error: --forks must be a whole number from 1 to 10000, got 'abc'`]],
    ['--forks 0', () => argv('-f', '0'), [`--forks must be a whole number from 1 to 10000, got '0'`]],
    ['--forks 1.5', () => argv('--forks=1.5'), [`got '1.5'`]],
    ['--timeout 0', () => argv('--timeout', '0'), [`--timeout must be a whole number of seconds from 1 to 2147483, got '0'`]],
    ['--timeout 10s', () => argv('--timeout', '10s'), [`got '10s'`]],
    ['--max-fail-percent 101', () => argv('--max-fail-percent', '101'), [`--max-fail-percent must be a number from 0 to 100, got '101'`]],
    ['--max-fail-percent -1', () => argv('--max-fail-percent=-1'), [`got '-1'`]],
    ['--serial abc', () => argv('--serial', 'abc'), ['serial']],
    ['--serial 0', () => argv('--serial', '0'), ['serial']],
    ['an unknown option', () => argv('--bogus'), ['--bogus', 'usage: provision']],
    ['a missing option value', () => [PLAYBOOK, '--check', '-i'], ['-i']],
    ['no inventory', () => [PLAYBOOK, '--check'], ['-i/--inventory is required', 'usage: provision']],
    ['an empty -t (an unset variable)', () => argv('-t', ''), ["-t/--tags '' names no tag"]],
    ['an empty --resume (an unset variable)', () => argv('--resume', ''), ["--resume '' names no journal and no run"]],
    ...['--known-hosts', '--private-key', '--become-user', '--journal', '--vault-password-file', '-F', '--plan-key', '-u'].map(
      (flag): [string, () => string[], string[]] => [
        `an empty ${flag} (an unset variable)`,
        () => argv(flag, ''),
        [`'' names nothing (an unset variable?)`],
      ],
    ),
    ['-u that is no user name', () => argv('-u', 'a b;c'), ["-u/--user must be a user name (letters, digits, _ . -), got 'a b;c'"]],
    [
      '--plan-out in a directory that does not exist (said before the run)',
      () => argv('--plan-out', '/nonexistent-rs/x.plan'),
      ['--plan-out /nonexistent-rs/x.plan: its directory does not exist'],
    ],
    ['--plan-out onto a directory', () => argv('--plan-out', '/tmp'), ['--plan-out /tmp is a directory, not a regular file']],
    [
      '-F a FIFO (never read: it would hang)',
      () => argv('-F', fifo()),
      ['-F/--ssh-config: ssh config file', 'is a FIFO, not a regular file'],
    ],
    ['-F a directory', () => argv('-F', tempDir()), ['-F/--ssh-config: ssh config file', 'is a directory, not a regular file']],
    ['-F /dev/zero', () => argv('-F', '/dev/zero'), ['-F/--ssh-config: ssh config file /dev/zero is a character device']],
    [
      '--private-key that does not exist (before any host)',
      () => argv('--private-key', '/nonexistent-rs/key'),
      ['--private-key: private key file /nonexistent-rs/key: not found'],
    ],
    [
      '--syntax-check with --drain slurm and no controller (as the run would refuse it)',
      () => argv('--syntax-check', '--drain', 'slurm'),
      ['--drain slurm for', 'no Slurm controller'],
    ],
    [
      '--syntax-check with a racksmith_drain typo, at the variable',
      () => argv('--syntax-check', '-e', 'racksmith_drain=kubernets'),
      ['racksmith_drain of', "must be kubernetes, slurm or none, got 'kubernets'"],
    ],
    [
      '--syntax-check with a key that does not exist (as the run would refuse it)',
      () => argv('--syntax-check', '--private-key', '/nonexistent-rs/key'),
      ['--private-key: private key file /nonexistent-rs/key: not found'],
    ],
    ['-t of commas only', () => argv('-t', ' , '), ["-t/--tags ' , ' names no tag"]],
    ['an empty --skip-tags', () => argv('--skip-tags', 'net', '--skip-tags', ''), ["--skip-tags '' names no tag"]],
    [
      'an Ansible host list as -i',
      () => [PLAYBOOK, '-i', 'web1,web2,', '--check'],
      ['web1,web2,: inventory not found (a host list such as -i "web1,web2," is not supported'],
    ],
    [
      'a missing inventory file',
      () => [PLAYBOOK, '-i', 'no/such/inventory.yml', '--check'],
      ['error: no/such/inventory.yml: inventory not found'],
    ],
    ['a missing playbook', () => [fix('no-such-playbook.ts'), '-i', INV, '--check'], [`playbook not found: ${fix('no-such-playbook.ts')}`]],
    [
      'a .cts playbook (compiled to require(), which cannot load racksmith on Node 20)',
      () => [fix('commonjs.cts'), '-i', INV, '--check'],
      [`${fix('commonjs.cts')}: a .cts playbook (CommonJS TypeScript) cannot load racksmith on Node 20: name it .ts`],
    ],
    [
      'a module that is not a playbook',
      () => [fix('not-a-playbook.ts'), '-i', INV, '--check'],
      ['playbook must `export default playbook({...})`'],
    ],
    [
      'a playbook with an invalid resource',
      () => [fix('bad-resource.ts'), '-i', INV, '--check', '-e', `ansible_port=${PORT}`],
      [`error: ${fix('bad-resource.ts')}:8:21: host loc, play 'bad resource', file(): path must be an absolute path`],
    ],
    [
      'a bad resource option from a variable names where the variable was set, and the call',
      () => [fix('var-resource.ts'), '-i', INV, '--check', '-e', `ansible_port=${PORT}`, '-e', 'demo_path=rel/x'],
      [
        `error: -e #2: host loc, play 'var resource', file() at ${fix('var-resource.ts')}:8:25: path must be an absolute path, got 'rel/x' (from variable demo_path)`,
      ],
    ],
    [
      "a refusal quoting an example ('0644') is not blamed on a variable holding it",
      () => [fix('bad-mode.ts'), '-i', INV, '--check', '-e', `ansible_port=${PORT}`, '-e', 'file_mode=0644'],
      [`error: ${fix('bad-mode.ts')}:9:21: host loc, play 'bad mode', file(): mode must be octal like '0644', got "0x644"\n`],
    ],
    [
      'a playbook whose resources() returns false (cond && r) names the element, and how to write it',
      () => [fix('not-a-resource.ts'), '-i', INV, '--check', '-e', `ansible_port=${PORT}`],
      [
        `error: ${fix('not-a-resource.ts')}: play 'not a resource', host loc: resources() returned false at index 1, not a resource`,
        '...(cond ? [r] : [])',
      ],
    ],
    [
      'a playbook whose resources() returns undefined, under --syntax-check too',
      () => [fix('undefined-resource.ts'), '-i', INV, '--syntax-check'],
      [`error: ${fix('undefined-resource.ts')}: play 'undefined resource', host loc: resources() returned undefined at index 1`],
    ],
    [
      'a playbook declaring a resource twice',
      () => [fix('duplicate-ids.ts'), '-i', INV, '--check', '-e', `ansible_port=${PORT}`],
      [
        `error: ${fix('duplicate-ids.ts')}:8:57: play 'duplicate ids' declares directory:/tmp/rsdemo twice for host loc: at ${fix('duplicate-ids.ts')}:8:21 and at ${fix('duplicate-ids.ts')}:8:57`,
      ],
    ],
    [
      'a playbook whose after: names a resource declared later: the line of the one that names it',
      () => [fix('after-later.ts'), '-i', INV, '--check', '-e', `ansible_port=${PORT}`],
      [
        `error: ${fix('after-later.ts')}:10:5: file:/tmp/rsdemo/motd must come after directory:/tmp/rsdemo, which play 'after later' does not declare before it for host loc (it is declared later: move it up)`,
      ],
    ],
    [
      'a playbook that throws at top level: its line',
      () => [fix('top-throws.ts'), '-i', INV, '--syntax-check'],
      [`error: ${fix('top-throws.ts')}:5:31: cannot load playbook: no racks configured`],
    ],
    [
      'a playbook building a bad resource at top level: its line',
      () => [fix('top-bad-resource.ts'), '-i', INV, '--syntax-check'],
      [`error: ${fix('top-bad-resource.ts')}:5:14: file(): path must be an absolute path, got 'not/absolute'`],
    ],
    [
      'a playbook that throws while building names the playbook, the play, the host and the line',
      () => [fix('throws.ts'), '-i', INV, '--check', '-e', `ansible_port=${PORT}`],
      [
        `error: ${fix('throws.ts')}:11:`,
        `playbook ${fix('throws.ts')}, play 'throws', host loc: building its resources threw TypeError: Cannot read properties of undefined`,
      ],
    ],
    [
      '--forks beyond a safe integer',
      () => argv('-f', '99999999999999999999'),
      [`--forks must be a whole number from 1 to 10000, got '99999999999999999999'`],
    ],
    ['--forks 10001', () => argv('--forks', '10001'), ['--forks must be a whole number from 1 to 10000']],
    [
      '--timeout beyond the timer range',
      () => argv('--timeout', '2147484'),
      [`--timeout must be a whole number of seconds from 1 to 2147483, got '2147484'`],
    ],
    [
      '--host-timeout beyond the timer range',
      () => argv('--host-timeout', '99999999999'),
      ['--host-timeout must be a whole number of seconds from 1 to 2147483'],
    ],
    ['--host-timeout 0', () => argv('--host-timeout', '0'), ['--host-timeout must be a whole number of seconds from 1']],
    [
      '--lock-timeout beyond a day',
      () => argv('--lock-timeout', '99999999999999999999'),
      ['--lock-timeout must be a whole number of seconds from 0 to 86400'],
    ],
    ['--serial 0%', () => argv('--serial', '0%'), [`serial: '0%' is not a percentage from 1 to 100`]],
    ['--serial 150%', () => argv('--serial', '1,150%'), [`serial: '150%' is not a percentage from 1 to 100`]],
    ['--serial 1,,2', () => argv('--serial', '1,,2'), [`--serial has an empty entry: '1,,2'`]],
    ["--serial ''", () => argv('--serial', ''), [`--serial has an empty entry: ''`]],
    [
      '--serial beyond a safe integer',
      () => argv('--serial', '99999999999999999999'),
      ['serial: 100000000000000000000 is not a positive whole number'],
    ],
    [
      '--max-fail-percent with a long fraction',
      () => argv('--max-fail-percent', `1.${'0'.repeat(50)}`),
      ['--max-fail-percent must be a number from 0 to 100'],
    ],
    ['--max-plan-age 0s', () => argv('--max-plan-age', '0s'), [`--max-plan-age must be from 1s to 366d, got '0s'`]],
    ['--max-plan-age beyond a year', () => argv('--max-plan-age', '99999999999999999999d'), ['--max-plan-age must be from 1s to 366d']],
    ['--journal naming a directory', () => argv('--journal', tempDir()), ['cannot write the journal', 'it is a directory']],
    ['--journal under a regular file', () => argv('--journal', `${INV}/run.ndjson`), ['cannot write the journal', 'ENOTDIR']],
    ['--journal that is a FIFO (would wait for a reader)', () => argv('--journal', fifo()), ['cannot write the journal', 'FIFO']],
    ['--journal where nothing can be created', () => argv('--journal', '/proc/racksmith-journal/run.ndjson'), ['cannot write the journal']],
    ['--journal on /dev/full (its first line fails)', () => argv('--journal', '/dev/full'), ['cannot write the journal /dev/full: ENOSPC']],
    [
      'a playbook refusing a host variable points at the inventory line',
      () => [fix('bad-var.ts'), '-i', INV, '--check', '-e', `ansible_port=${PORT}`],
      [`error: ${INV}:6:18: loc: demo_mode must be an octal string`],
    ],
  ])(
    '%s',
    async (_, args, says) => {
      const r = await cli(args());
      expect(r.code, r.stderr).toBe(3);
      for (const s of says) expect(r.stderr).toContain(s);
      expect(r.stdout).toBe('');
      expect(existsSync(DEMO_DIR)).toBe(false);
    },
    30_000,
  );

  it('control: the same argv without the mistake reaches the hosts (exit 1: far is unreachable)', async () => {
    const r = await cli(argv());
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('far: UNREACHABLE');
    expect(existsSync(DEMO_DIR)).toBe(false);
  }, 60_000);

  it('control: --limit loc runs the check locally (exit 2: changes pending)', async () => {
    const r = await cli(argv('--limit', 'loc'));
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).not.toContain('far');
  }, 60_000);

  it('--help prints the usage on stdout and exits 0', async () => {
    for (const h of ['--help', '-h']) {
      const r = await cli([h]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^usage: provision /);
      expect(r.stderr).toBe('');
    }
  });

  it.each([
    ['apply', '--help'],
    ['apply', 'plan.json', '-h'],
    ['inventory', '--help'],
    ['plan', '--help'],
    ['plan', 'show', '-h'],
    ['runs', '--help'],
    ['exec', 'all', '--help'],
  ])('%s %s: the usage on stdout, exit 0', async (...args) => {
    const r = await cli(args);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^usage: provision /);
    expect(r.stderr).toBe('');
  });
});

describe('parseCli', () => {
  it('defaults', () => {
    expect(parseCli(['-i', 'inv.yml'])).toEqual({
      inventory: ['inv.yml'],
      vault: { vaultIds: [], passwordFiles: [], askVaultPass: false },
      listHosts: false,
      listing: undefined,
      playbooks: ['playbooks/site.ts'],
      check: false,
      diff: false,
      limit: undefined,
      tags: undefined,
      skipTags: undefined,
      forks: 50,
      extraVars: [],
      serial: undefined,
      maxFailPercent: undefined,
      knownHosts: undefined,
      acceptNew: false,
      become: { enabled: undefined, user: undefined, method: undefined },
      askBecomePass: false,
      askPass: false,
      user: undefined,
      privateKey: undefined,
      connection: undefined,
      sshCommonArgs: undefined,
      sshExtraArgs: undefined,
      sshConfig: undefined,
      timeoutMs: 10_000,
      hostTimeoutMs: undefined,
      keepaliveMs: 10_000,
      sshHandshakes: 100,
      sshHandshakesPerSshd: 8,
      lockTimeoutSec: 300,
      drain: undefined,
      drainTimeoutSec: 600,
      planOut: undefined,
      yes: false,
      maxPlanAgeMs: 24 * 3600_000,
      journal: undefined,
      resume: undefined,
      labels: {},
      json: false,
      verbose: 0,
      recap: 'summary',
    });
  });

  it('every option', () => {
    const o = parseCli([
      'a.ts',
      'b.ts',
      '-i',
      'inv.yml',
      '-C',
      '-D',
      '-l',
      'web:!db',
      '-t',
      'net, disk,,',
      '-t',
      'boot',
      '--skip-tags',
      'slow',
      '--skip-tags',
      'slower',
      '-f',
      '5',
      '-e',
      'a=1',
      '-e',
      '@vars.yml',
      '--serial',
      '1, 10%,25%',
      '--max-fail-percent',
      '12.5',
      '--known-hosts',
      'kh',
      '--ssh-accept-new',
      '--timeout',
      '3',
      '--json',
      '-v',
      '-v',
      '--host-timeout',
      '60',
      '--ssh-keepalive',
      '0',
      '--ssh-handshakes',
      '7',
      '--ssh-handshakes-per-sshd',
      '40',
      '--lock-timeout',
      '0',
      '--drain',
      'slurm',
      '--drain-timeout',
      '30',
      '--plan-out',
      'w.plan',
      '--yes',
      '--max-plan-age',
      '90m',
      '--journal',
      'j.ndjson',
      '--resume',
      'old.ndjson',
      '--label',
      'change=CHG-1',
      '--label',
      'team=storage',
      '-b',
      '--become-user',
      'app',
      '--become-method',
      'sudo',
      '-K',
      '-k',
      '-u',
      'ops',
      '--private-key',
      'id_key',
      '-c',
      'ssh',
      '--ssh-common-args=-o ProxyJump=bastion',
      '--ssh-extra-args=-p 2222',
      '-F',
      'package.json',
      '--recap',
      'full',
    ]);
    expect(o).toEqual({
      inventory: ['inv.yml'],
      vault: { vaultIds: [], passwordFiles: [], askVaultPass: false },
      listHosts: false,
      listing: undefined,
      playbooks: ['a.ts', 'b.ts'],
      check: true,
      diff: true,
      limit: 'web:!db',
      tags: ['net', 'disk', 'boot'],
      skipTags: ['slow', 'slower'],
      forks: 5,
      extraVars: ['a=1', '@vars.yml'],
      serial: [1, '10%', '25%'],
      maxFailPercent: 12.5,
      knownHosts: 'kh',
      acceptNew: true,
      become: { enabled: true, user: 'app', method: 'sudo' },
      askBecomePass: true,
      askPass: true,
      user: 'ops',
      privateKey: 'id_key',
      connection: 'ssh',
      sshCommonArgs: '-o ProxyJump=bastion',
      sshExtraArgs: '-p 2222',
      sshConfig: 'package.json',
      timeoutMs: 3000,
      hostTimeoutMs: 60_000,
      keepaliveMs: 0,
      sshHandshakes: 7,
      sshHandshakesPerSshd: 40,
      lockTimeoutSec: 0,
      drain: 'slurm',
      drainTimeoutSec: 30,
      planOut: 'w.plan',
      yes: true,
      maxPlanAgeMs: 90 * 60_000,
      journal: 'j.ndjson',
      resume: 'old.ndjson',
      labels: { change: 'CHG-1', team: 'storage' },
      json: true,
      verbose: 2,
      recap: 'full',
    });
  });

  it('--recap other than summary or full is bad input', () => {
    expect(() => parseCli(['-i', 'i', '--recap', 'all'])).toThrow(/--recap must be summary or full, got 'all'/);
  });

  it('long forms', () => {
    const o = parseCli(['--inventory=i', '--check', '--diff', '--limit=x', '--tags=t', '--forks=1', '--extra-vars=k=v', '--verbose']);
    expect(o).toMatchObject({
      inventory: ['i'],
      check: true,
      diff: true,
      limit: 'x',
      tags: ['t'],
      forks: 1,
      extraVars: ['k=v'],
      verbose: 1,
    });
  });

  it('--help wins', () => {
    expect(parseCli(['--help'])).toBe('help');
    expect(parseCli(['-i', 'x', '-h'])).toBe('help');
  });

  it.each<[string[]]>([
    [[]],
    [['-i', 'x', '--forks', 'abc']],
    [['-i', 'x', '--forks', '0']],
    [['-i', 'x', '--forks', '']],
    [['-i', 'x', '--timeout', '-5']],
    [['-i', 'x', '--lock-timeout', '-1']],
    [['-i', 'x', '--lock-timeout', '86401']],
    [['-i', 'x', '--drain', 'k8s']],
    [['-i', 'x', '--drain-timeout', '0']],
    [['-i', 'x', '--ssh-handshakes', '0']],
    [['-i', 'x', '--ssh-handshakes', '1.5']],
    [['-i', 'x', '--ssh-handshakes-per-sshd', '1']],
    [['-i', 'x', '--ssh-handshakes-per-sshd', '10001']],
    [['-i', 'x', '--max-fail-percent', '100.5']],
    [['-i', 'x', '--max-fail-percent', 'ten']],
    [['-i', 'x', '--nope']],
    [['-i', 'x', '--check=yes']],
    [['-i']],
  ])('%j is an InputError', (args) => {
    expect(() => parseCli(args)).toThrow(InputError);
  });
});
