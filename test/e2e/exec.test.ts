// `provision exec` (issue #37): one command on the bed's hosts over real sshd. Identical output is
// folded into one group (dshbak -c), a failing host's exit status is reported and the exit code
// is 1, unreachable hosts count as failures, output is cut at the limit with a note, -b runs the
// command as root for a login user that is not, --check is refused before any host is reached,
// and every exec is journaled as a run is.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldHostNames } from '../../src/output/host-ranges.ts';
import { EXEC_OUTPUT_LIMIT } from '../../src/exec/output-bound.ts';
import * as tb from '../testbed/api.ts';
import { provision, writeInventory } from './helpers.ts';

let names: string[];
let inventory: string;
let work: string;
/** Each test's own journal: what it asserts on is its own exec's record. */
const journalOf = (test: string) => join(work, `${test}.ndjson`);
const journalEvents = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, any>);

beforeAll(async () => {
  names = tb.hosts().map((h) => h.name);
  // The bed as it comes up (root logs in with the key): a file before may have left hosts
  // otherwise (become.test.ts turns root login off). exec itself changes nothing on the hosts.
  await tb.reset(names);
  inventory = writeInventory({ hosts: names, groups: { rack: { hosts: names } } });
  work = mkdtempSync(join(tmpdir(), 'rs-exec-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('provision exec', () => {
  it('over every host of the bed: identical output is one group with the hosts folded, exit 0, journaled', async () => {
    const journal = journalOf('same');
    const r = await provision(['exec', 'rack', '-i', inventory, '--journal', journal, '--', 'uname', '-s']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`==== ${foldHostNames(names)}${names.length > 1 ? ` (${names.length} hosts)` : ''}: exit 0\nLinux\n`);
    expect(r.stderr).toContain(`exec: ${names.length} hosts: ${names.length} exit 0, 0 failed, 0 unreachable`);
    const events = journalEvents(journal);
    expect(events[0]).toMatchObject({ type: 'run_start', kind: 'exec', command: ['uname', '-s'], pattern: 'rack', hosts: names });
    expect(
      events
        .filter((e) => e.type === 'exec')
        .map((e) => e.host)
        .sort(),
    ).toEqual([...names].sort());
    expect(events.at(-1)).toMatchObject({ type: 'recap', kind: 'exec', exitCode: 0 });
  });

  it("a failing host's exit status is its own group and the exit code is 1; --json has one event per host", async () => {
    const failing = names.at(-1)!;
    const line = `[ "$(hostname)" = ${failing} ] && { echo broken >&2; exit 3; }; echo fine`;
    const r = await provision(['exec', 'rack', '-i', inventory, '--journal', journalOf('failing'), '--json', '--', line]);
    expect(r.code, r.stderr).toBe(1);
    const perHost = r.events.filter((e) => e.type === 'exec');
    expect(perHost).toHaveLength(names.length);
    expect(perHost.find((e) => e.host === failing)).toMatchObject({ status: 'failed', exitCode: 3, stdout: '', stderr: 'broken\n' });
    expect(perHost.filter((e) => e.host !== failing).every((e) => e.exitCode === 0 && e.stdout === 'fine\n')).toBe(true);
    // with --json the folded view is on stderr
    const others = names.filter((n) => n !== failing);
    if (others.length)
      expect(r.stderr).toContain(`==== ${foldHostNames(others)}${others.length > 1 ? ` (${others.length} hosts)` : ''}: exit 0\nfine\n`);
    expect(r.stderr).toContain(`==== ${failing}: exit 3\n-- stderr\nbroken\n`);
    expect(r.stderr).toContain(`1 failed (${failing})`);
  });

  it('an unreachable host is a failure of its own, the others still run', async () => {
    const down = names[0];
    await tb.stopSshd(down);
    try {
      const r = await provision(['exec', 'rack', '-i', inventory, '--journal', journalOf('down'), '-T', '3', '--', 'true']);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stdout).toMatch(new RegExp(`^==== ${down}: UNREACHABLE: `, 'm'));
      expect(r.stderr).toContain(`${names.length - 1} exit 0, 0 failed, 1 unreachable (${down})`);
    } finally {
      await tb.startSshd(down);
    }
  });

  it('each stream is cut at the limit on the host, with a note saying how much was cut', async () => {
    const host = names[0];
    const bytes = EXEC_OUTPUT_LIMIT + 5000;
    const r = await provision([
      'exec',
      host,
      '-i',
      inventory,
      '--journal',
      journalOf('cut'),
      '--json',
      '--',
      `head -c ${bytes} /dev/zero | tr '\\0' x`,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const e = r.events.find((x) => x.type === 'exec')!;
    expect(e.stdout).toBe('x'.repeat(EXEC_OUTPUT_LIMIT));
    expect(e.stdoutCut).toBe(5000);
    expect(r.stderr).toContain(`[… 5000 more bytes cut: each stream is kept to its first ${EXEC_OUTPUT_LIMIT} bytes]`);
  });

  it('-b runs the command as root for hosts reached as ops; without it, as ops', async () => {
    const ops = writeInventory({ hosts: names.slice(0, 2), vars: { ansible_user: 'ops' } });
    const asOps = await provision(['exec', 'all', '-i', ops, '--journal', journalOf('ops'), '--', 'id', '-un']);
    expect(asOps.code, asOps.stderr).toBe(0);
    expect(asOps.stdout).toMatch(/: exit 0\nops\n$/);
    const asRoot = await provision(['exec', 'all', '-i', ops, '-b', '--journal', journalOf('root'), '--', 'id', '-un']);
    expect(asRoot.code, asRoot.stderr).toBe(0);
    expect(asRoot.stdout).toMatch(/: exit 0\nroot\n$/);
  });

  it("-u wins over ~/.ssh/config's User (Ansible passes it as -o User=); without -u the config's User applies", async () => {
    // a host known only by its alias in the config, which names root as its user
    const h = tb.hosts()[0];
    const cfg = join(work, 'ssh_config-user');
    writeFileSync(
      cfg,
      [
        'Host rack-alias',
        `  HostName ${h.ip}`,
        `  Port ${h.port}`,
        '  User root',
        `  IdentityFile ${tb.keyPath}`,
        `  UserKnownHostsFile ${tb.knownHostsPath}`,
        '',
      ].join('\n'),
    );
    const inv = join(work, 'alias-inventory.yaml');
    writeFileSync(inv, 'all:\n  hosts:\n    rack-alias:\n');
    const who = (...flags: string[]) =>
      provision(['exec', 'rack-alias', '-i', inv, '-F', cfg, ...flags, '--journal', journalOf(`user${flags.length}`), '--', 'id', '-un']);
    const asConfig = await who();
    expect(asConfig.code, asConfig.stderr).toBe(0);
    expect(asConfig.stdout).toMatch(/: exit 0\nroot\n$/);
    const asCli = await who('-u', 'ops');
    expect(asCli.code, asCli.stderr).toBe(0);
    expect(asCli.stdout).toMatch(/: exit 0\nops\n$/);
  });

  it('-l narrows the pattern to its hosts; a pattern that matches nothing is exit 3 before any host', async () => {
    const [one, two] = names;
    const r = await provision([
      'exec',
      'rack',
      '-i',
      inventory,
      '-l',
      `${one},${two}`,
      '--journal',
      journalOf('limit'),
      '--json',
      '--',
      'hostname',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(
      r.events
        .filter((e) => e.type === 'exec')
        .map((e) => `${e.host}=${e.stdout.trim()}`)
        .sort(),
    ).toEqual([`${one}=${one}`, `${two}=${two}`]);
    const none = await provision(['exec', 'nosuchgroup', '-i', inventory, '--journal', journalOf('none'), '--', 'true']);
    expect(none.code).toBe(3);
    expect(none.stderr).toMatch(/no hosts matched 'nosuchgroup': nothing to do/);
    expect(() => readFileSync(journalOf('none'))).toThrow(/ENOENT/);
  });

  it.each([
    [['-C'], /exec does not take -C: a command cannot be dry-run/],
    [['--check'], /exec does not take --check/],
    [['--tags', 'x'], /exec does not take --tags/],
    [[], /exec needs a command after --/],
  ])('%j is bad input: exit 3, no host contacted, no journal', async (extra, message) => {
    const journal = journalOf(`bad-${extra.join('')}`);
    const r = await provision(['exec', 'rack', '-i', inventory, '--journal', journal, ...extra, ...(extra.length ? ['--', 'true'] : [])]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(message);
    expect(() => readFileSync(journal)).toThrow(/ENOENT/);
  });

  it('a secret of -e in the command is refused before any host', async () => {
    const r = await provision([
      'exec',
      'rack',
      '-i',
      inventory,
      '--journal',
      journalOf('secret'),
      '-e',
      '{"db_pw": {"secret": "Exec-S3cret-42"}}',
      '--',
      'mysql',
      '-pExec-S3cret-42',
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/word 2 of the command holds a secret/);
    expect(r.stderr).not.toContain('Exec-S3cret-42');
  });
});
