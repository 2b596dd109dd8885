import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './run-cli.ts';

/**
 * ansible-playbook's listing flags: everything loaded, built and checked, nothing connected. The
 * inventory's hosts point at a port where nothing listens (as in cli-input.test.ts): a run that
 * connected would report them unreachable (exit 1); the demo playbook would create /tmp/rsdemo.
 */
const FIX = join(import.meta.dirname, 'fixtures', 'cli');
const PLAYBOOK = 'test/fixtures/playbooks/demo.ts';
const dir = mkdtempSync(join(tmpdir(), 'rs-listing-'));
let inv: string;

beforeAll(async () => {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  inv = join(dir, 'hosts.yml');
  writeFileSync(
    inv,
    `all:
  vars: { ansible_host: 127.0.0.1, ansible_port: ${port} }
  children:
    ais: { hosts: { w1: {}, w2: {}, w3: {} } }
    gpu-nodes: { hosts: { w2: {} } }
    controller: { hosts: { w3: {} } }
`,
  );
  rmSync('/tmp/rsdemo', { recursive: true, force: true });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// (an empty known_hosts: --syntax-check checks that it is a readable regular file)
const FIX_KNOWN_HOSTS = join(dir, 'known_hosts');
writeFileSync(FIX_KNOWN_HOSTS, '');
const jailPlay = relative(process.cwd(), join(FIX, 'jail-like.ts'));
const throws = relative(process.cwd(), join(FIX, 'throws.ts'));

describe('listing flags connect to nothing', { timeout: 60_000 }, () => {
  it('--list-tasks and --list-tags: a facts: true play depends on facts (not gathered: nothing connects)', async () => {
    const facts = 'test/fixtures/playbooks/host-facts.ts';
    const tasks = await cli([facts, '-i', inv, '-l', 'w1,w2', '--list-tasks']);
    expect(tasks.code, tasks.stderr).toBe(0);
    expect(tasks.stdout).toContain(
      ['  play #1 (all): facts file\tTAGS: []', '    hosts (2): w1, w2', '      (depends on facts)', ''].join('\n'),
    );
    expect(tasks.stdout).toContain(
      ['  play #3 (all): plain file\tTAGS: []', '    hosts (2): w1, w2', '      file:/etc/rs-facts-plain.txt\tTAGS: []'].join('\n'),
    );
    const tags = await cli([facts, '-i', inv, '--list-tags']);
    expect(tags.code, tags.stderr).toBe(0);
    expect(tags.stdout).toContain('  play #2 (all): os file\tTAGS: []\n      TASK TAGS: [] (depends on facts)\n');
  });

  it("--list-tasks: each host's resources, hosts with the same list once", async () => {
    const r = await cli([PLAYBOOK, '-i', inv, '--list-tasks']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      [
        `playbook: ${PLAYBOOK}`,
        '',
        '  play #1 (all): demo\tTAGS: []',
        '    hosts (3): w1, w2, w3',
        '      directory:/tmp/rsdemo\tTAGS: []',
        '      file:/tmp/rsdemo/a.conf\tTAGS: []',
        '      line:/tmp/rsdemo/b.conf:foo=1\tTAGS: []',
        '      line:/tmp/rsdemo/b.conf:^bar=\tTAGS: []',
        '      block:/tmp/rsdemo/b.conf:# {mark} RACKSMITH MANAGED BLOCK\tTAGS: []',
        '      command:stamp\tTAGS: []',
        '',
      ].join('\n'),
    );
    expect(existsSync('/tmp/rsdemo')).toBe(false);
  });

  it('--list-tasks honours racksmith_play_hosts, --limit and --tags', async () => {
    const e = ['-e', `{racksmith_play_hosts: {jail: 'ais:&controller'}}`];
    const r = await cli([jailPlay, '-i', inv, '--list-tasks', ...e]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      '  play #1 (jail): jail-like\tTAGS: [jail]\n    hosts (1): w3\n      directory:/tmp/rsdemo\tTAGS: [dirs, jail]\n',
    );
    expect(r.stdout).not.toContain('w2');
    const gpu = await cli([jailPlay, '-i', inv, '--list-tasks', '-e', `{racksmith_play_hosts: {jail: ais}}`, '-t', 'gpu', '-l', 'w1:w2']);
    expect(gpu.stdout).toContain(
      '    hosts (1): w1\n      (no resources)\n    hosts (1): w2\n      file:/tmp/rsdemo/gpu\tTAGS: [gpu, jail]\n',
    );
  });

  it('--list-hosts honours racksmith_play_hosts', async () => {
    const r = await cli([jailPlay, '-i', inv, '--list-hosts', '-e', `{racksmith_play_hosts: {jail: 'gpu-nodes'}}`]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('  hosts (1):\n    w2\n');
  });

  it('--list-hosts with --resume: the hosts a resumed run reaches (those the journal left failed or unreached)', async () => {
    const journal = join(dir, 'resume.ndjson');
    const run = await cli([PLAYBOOK, '-i', inv, '-l', 'w2', '--check', '--journal', journal]);
    expect(run.code, run.stderr).toBe(1); // w2: nothing listens at its port
    const r = await cli([PLAYBOOK, '-i', inv, '--list-hosts', '--resume', journal]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('  hosts (1):\n    w2\n');
  });

  it.each<[string, string[], string | undefined]>([
    [
      'run options',
      ['--list-hosts', '-f', '5', '--check', '-D', '--json'],
      '--list-hosts runs nothing on any host: -f, --check, -D, --json have no effect',
    ],
    ['a second listing', ['--list-tasks', '--list-hosts'], '--list-hosts runs nothing on any host: --list-tasks has no effect'],
    [
      'a drain and a key under --list-tasks',
      ['--list-tasks', '--drain', 'none', '--private-key', 'k'],
      '--list-tasks runs nothing on any host: --drain, --private-key have no effect',
    ],
    ['what a listing reads', ['--list-tasks', '-l', 'w1', '-e', 'a=1', '-b', '-v'], undefined],
    [
      'the drain and the known_hosts --syntax-check reads',
      ['--syntax-check', '--drain', 'none', '--known-hosts', FIX_KNOWN_HOSTS],
      undefined,
    ],
  ])('a listing says which options given to it have no effect: %s', async (_, flags, says) => {
    const r = await cli([PLAYBOOK, '-i', inv, ...flags]);
    expect(r.code, r.stderr).toBe(0);
    if (says) expect(r.stderr).toContain(`warning: ${says}\n`);
    else expect(r.stderr).not.toContain('no effect');
  });

  it.each<[string, string[], string[]]>([
    [
      '--max-plan-age outside apply',
      ['-C', '--max-plan-age', '1h'],
      ['--max-plan-age has no effect here: it is the age limit of a plan that `provision apply` applies'],
    ],
    [
      '--yes and --lock-timeout in a dry run',
      ['--check', '--yes', '--lock-timeout=5'],
      ['--check changes nothing: --yes, --lock-timeout have no effect'],
    ],
    ['none when a plan is made (it records them for its apply)', ['--check', '--yes', '--max-plan-age', '1h', '--plan-out', 'PLAN'], []],
  ])('a run says which apply options have no effect in it: %s', async (_, flags, says) => {
    const args = flags.map((f) => (f === 'PLAN' ? join(dir, 'no-effect.plan') : f));
    const r = await cli([PLAYBOOK, '-i', inv, '-l', 'w1', ...args]); // (w1: nothing listens, the run ends unreachable)
    for (const s of says) expect(r.stderr).toContain(`warning: ${s}\n`);
    if (!says.length) expect(r.stderr).not.toContain('no effect');
  });

  it('--list-tags: every tag of each play', async () => {
    const r = await cli([jailPlay, '-i', inv, '--list-tags', '-e', `{racksmith_play_hosts: {jail: ais}}`]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`playbook: ${jailPlay}\n\n  play #1 (jail): jail-like\tTAGS: [jail]\n      TASK TAGS: [dirs, gpu, jail]\n`);
  });

  it('--syntax-check: exit 0 when everything loads and checks', async () => {
    const r = await cli([PLAYBOOK, jailPlay, '-i', inv, '--syntax-check', '-e', `{racksmith_play_hosts: {jail: ais}}`]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`playbook: ${PLAYBOOK}\nplaybook: ${jailPlay}\n`);
    expect(existsSync('/tmp/rsdemo')).toBe(false);
  });

  it.each<[string, string[], string]>([
    ['a playbook that throws', [throws], `playbook ${throws}, play 'throws', host w1: building its resources threw TypeError`],
    [
      'an unknown racksmith_play_hosts key',
      [jailPlay, '-e', '{racksmith_play_hosts: {jails: ais}}'],
      "racksmith_play_hosts: 'jails' is no group the plays target",
    ],
    ['a bad variable', [PLAYBOOK, '-e', '{ansible_port: 0}'], 'ansible_port must be a port number from 1 to 65535, got 0'],
  ])('%s is exit 3 under --syntax-check, --list-tasks and --list-tags', async (_, args, says) => {
    for (const flag of ['--syntax-check', '--list-tasks', '--list-tags']) {
      const r = await cli([...args, '-i', inv, flag]);
      expect(r.code, `${flag}: ${r.stderr}`).toBe(3);
      expect(r.stderr).toContain(says);
      expect(r.stdout).toBe('');
    }
  });
});
