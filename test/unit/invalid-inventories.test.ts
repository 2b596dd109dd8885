import { existsSync, mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cli } from './run-cli.ts';

/**
 * Every inventory below is wrong in one way. The CLI must refuse it with exit code 3 and a
 * `file:line:col:` naming the mistake, before anything runs on any host. Proof that nothing ran:
 * the demo playbook manages /tmp/rsdemo (it must not appear), and the inventories point host
 * `far` at an SSH port where nothing listens: trying to reach it would end with exit code 1.
 */

const PLAYBOOK = 'test/fixtures/playbooks/demo.ts';
const DEMO_DIR = '/tmp/rsdemo';

/** A TCP port on 127.0.0.1 where nothing listens. */
async function unusedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

const tmp = mkdtempSync(join(tmpdir(), 'rs-badinv-'));
let PORT = 0;
beforeAll(async () => {
  PORT = await unusedPort();
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
beforeEach(() => rmSync(DEMO_DIR, { recursive: true, force: true }));

let n = 0;
function writeCase(files: Record<string, string>): string {
  const dir = join(tmp, `case${n++}`);
  for (const [rel, text] of Object.entries(files)) {
    const p = join(dir, rel);
    mkdirSync(dirname(p), { recursive: true });
    if (text.startsWith('SPARSE:')) {
      writeFileSync(p, HEAD.replaceAll('PORT', String(PORT)));
      truncateSync(p, Number(text.slice(7)));
    } else writeFileSync(p, text.replaceAll('PORT', String(PORT)));
  }
  return join(dir, 'hosts.yml');
}

// Lines 1-7 of most inventories below: a local host and an SSH host that nothing answers.
const HEAD = `all:
  hosts:
    loc:
      ansible_connection: local
    far:
      ansible_host: 127.0.0.1
      ansible_port: PORT
`;

// Billion laughs: 9^7 strings from a few lines.
const BOMB =
  HEAD +
  `  vars:
    a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
`;

/** Over the 64 MiB input limit: written sparse (truncate), so the test writes almost nothing. */
const HUGE = 'SPARSE:' + String(64 * 1024 * 1024 + 1);

interface Case {
  name: string;
  /** Files of the case; `hosts.yml` is the inventory. */
  files: Record<string, string>;
  /** File (relative to the case directory) and line:col the error must name; col null: the file only. */
  at: [file: string, line: number | null, col: number | null];
  /** Text the message must contain: the offending key, value or reason. */
  says: string[];
}

const CASES: Case[] = [
  {
    name: 'unknown group key (childen: for children:)',
    files: { 'hosts.yml': HEAD + '  childen:\n    web:\n      hosts:\n        far:\n' },
    at: ['hosts.yml', 8, 3],
    says: ["unknown key 'childen' in all", 'allowed: hosts, vars, children'],
  },
  {
    name: 'unknown key in a nested group (host: for hosts:)',
    files: { 'hosts.yml': HEAD + '  children:\n    web:\n      host:\n        far:\n' },
    at: ['hosts.yml', 10, 7],
    says: ["unknown key 'host' in all.children.web"],
  },
  {
    name: 'ansible_port of the wrong type',
    files: { 'hosts.yml': HEAD + '  vars:\n    ansible_port: true\n' },
    at: ['hosts.yml', 9, 19],
    says: ['all.vars.ansible_port must be a port number from 1 to 65535, got true'],
  },
  {
    name: 'ansible_port that is a word',
    files: { 'hosts.yml': HEAD + '    bad:\n      ansible_port: ssh\n' },
    at: ['hosts.yml', 9, 21],
    says: ['all.hosts.bad.ansible_port must be a port number from 1 to 65535, got a string'],
  },
  {
    name: 'ansible_port out of range',
    files: { 'hosts.yml': HEAD + '    bad:\n      ansible_host: 127.0.0.1\n      ansible_port: 70000\n' },
    at: ['hosts.yml', 10, 21],
    says: ['all.hosts.bad.ansible_port must be a port number from 1 to 65535, got 70000'],
  },
  {
    name: 'ansible_port 0',
    files: { 'hosts.yml': HEAD + '  children:\n    web:\n      vars:\n        ansible_port: 0\n' },
    at: ['hosts.yml', 11, 23],
    says: ['all.children.web.vars.ansible_port must be a port number from 1 to 65535, got 0'],
  },
  {
    name: 'ansible_port out of range, written as a string',
    files: { 'hosts.yml': HEAD + '    bad:\n      ansible_host: 127.0.0.1\n      ansible_port: "70000"\n' },
    at: ['hosts.yml', 10, 21],
    says: ['ansible_port'],
  },
  {
    name: 'bad ansible_connection',
    files: { 'hosts.yml': HEAD + '    bad:\n      ansible_connection: winrm\n' },
    at: ['hosts.yml', 9, 27],
    says: ['all.hosts.bad.ansible_connection must be one of: ssh, smart, local, paramiko'],
  },
  {
    name: 'ansible_host with shell metacharacters',
    files: { 'hosts.yml': HEAD + '    bad:\n      ansible_host: "10.0.0.1; touch /tmp/rsdemo"\n' },
    at: ['hosts.yml', 9, 21],
    says: ['all.hosts.bad.ansible_host'],
  },
  {
    name: 'hosts as a list instead of a mapping',
    files: { 'hosts.yml': HEAD + '  children:\n    web:\n      hosts:\n        - far\n        - loc\n' },
    at: ['hosts.yml', 11, 9],
    says: ['all.children.web.hosts must be a mapping, got a list'],
  },
  {
    // the --list shape of a dynamic inventory (hosts lists), read only from JSON text: in a YAML
    // file Ansible's yaml plugin refuses it ("Invalid hosts entry ... requires a dictionary")
    name: "the top group's hosts as a list (its items would have become hosts)",
    files: { 'hosts.yml': 'all:\n  hosts:\n    - far\n    - loc\n' },
    at: ['hosts.yml', 3, 5],
    says: ['all.hosts must be a mapping, got a list'],
  },
  {
    name: "a group's hosts as a flow list, the group at the top",
    files: { 'hosts.yml': 'web: {hosts: [far, loc]}\n' },
    at: ['hosts.yml', 1, 14],
    says: ['web.hosts must be a mapping, got a list'],
  },
  {
    name: 'vars as a string',
    files: { 'hosts.yml': HEAD + '  vars: ansible_port=22\n' },
    at: ['hosts.yml', 8, 9],
    says: ['all.vars must be a mapping, got string'],
  },
  {
    name: 'a group that is a number',
    files: { 'hosts.yml': HEAD + '  children:\n    web: 5\n' },
    at: ['hosts.yml', 9, 10],
    says: ['group all.children.web must be a mapping'],
  },
  {
    name: 'bad variable name (my-var)',
    files: { 'hosts.yml': HEAD + '  vars:\n    ok_var: 1\n    my-var: 2\n' },
    at: ['hosts.yml', 10, 5],
    says: ["invalid name 'my-var' in all.vars"],
  },
  {
    name: 'bad variable name in host vars',
    files: { 'hosts.yml': HEAD + '      "ansible port": 22\n' },
    at: ['hosts.yml', 8, 7],
    says: ["invalid name 'ansible port' in all.hosts.far"],
  },
  {
    name: 'host name with shell metacharacters',
    files: { 'hosts.yml': HEAD + '    "h;rm -rf /":\n' },
    at: ['hosts.yml', 8, 5],
    says: ["invalid host name 'h;rm -rf /'"],
  },
  {
    name: 'host name starting with a dash',
    files: { 'hosts.yml': HEAD + '    -oProxyCommand=x:\n' },
    at: ['hosts.yml', 8, 5],
    says: ['-oProxyCommand=x'],
  },
  {
    name: 'group name with a space',
    files: { 'hosts.yml': HEAD + '"web servers":\n  hosts:\n    far:\n' },
    at: ['hosts.yml', 8, 1],
    says: ["invalid group name 'web servers'"],
  },
  {
    name: 'host range that ends before it starts',
    files: { 'hosts.yml': HEAD + '    node[03:01]:\n' },
    at: ['hosts.yml', 8, 5],
    says: ["host range 'node[03:01]' ends before it starts"],
  },
  {
    name: 'host range mixing letters and digits',
    files: { 'hosts.yml': HEAD + '  children:\n    web:\n      hosts:\n        web[a:09]:\n' },
    at: ['hosts.yml', 11, 9],
    says: ["invalid number 'a' in host range 'web[a:09]'"],
  },
  {
    name: 'children loop (a child of b child of a)',
    files: { 'hosts.yml': HEAD + '  children:\n    a:\n      children:\n        b:\n          children:\n            a:\n' },
    at: ['hosts.yml', 11, 9],
    says: ["group 'b' is its own ancestor (children loop through 'a')"],
  },
  {
    name: 'recursive YAML alias (a group inside itself)',
    files: { 'hosts.yml': HEAD + '  children:\n    a: &A\n      children:\n        b:\n          children:\n            a: *A\n' },
    at: ['hosts.yml', null, null],
    says: [],
  },
  {
    name: 'YAML syntax error (tab indentation)',
    files: { 'hosts.yml': HEAD + '  vars:\n\tntp: pool.ntp.org\n' },
    at: ['hosts.yml', 9, 1],
    says: ['YAML: Tabs are not allowed as indentation'],
  },
  {
    name: 'YAML syntax error (unclosed flow sequence)',
    files: { 'hosts.yml': HEAD + '  vars:\n    dns: [10.0.0.53, 10.0.0.54\n    ntp: pool\n' },
    at: ['hosts.yml', 10, 5],
    says: ['YAML: Flow sequence'],
  },
  {
    name: 'two YAML documents in one file',
    files: { 'hosts.yml': HEAD + '---\nall:\n  hosts:\n    other:\n' },
    at: ['hosts.yml', 8, 1],
    says: ['YAML: a second document starts here (---): the file must be one YAML document, as Ansible reads it'],
  },
  {
    name: 'duplicate key after an empty value: at the key',
    files: { 'hosts.yml': HEAD + '    empty:\n    loc:\n' },
    at: ['hosts.yml', 9, 5],
    says: ['Map keys must be unique'],
  },
  {
    name: 'duplicate key',
    files: { 'hosts.yml': HEAD + '    loc:\n      ansible_connection: ssh\n' },
    at: ['hosts.yml', 8, 5],
    says: ['Map keys must be unique'],
  },
  {
    name: 'YAML alias bomb (billion laughs)',
    files: { 'hosts.yml': BOMB },
    at: ['hosts.yml', 1, 1],
    says: ['alias'],
  },
  {
    name: 'file bigger than 64 MiB (a sparse file)',
    files: { 'hosts.yml': HUGE },
    at: ['hosts.yml', null, null],
    says: ['over the limit of 67108864'],
  },
  {
    name: 'empty file',
    files: { 'hosts.yml': '' },
    at: ['hosts.yml', 1, 1],
    says: ['an inventory must be a mapping of groups'],
  },
  {
    name: 'only comments',
    files: { 'hosts.yml': '# all:\n#   hosts:\n' },
    at: ['hosts.yml', 1, 1],
    says: ['an inventory must be a mapping of groups'],
  },
  {
    name: 'top-level list',
    files: { 'hosts.yml': '- all\n- web\n' },
    at: ['hosts.yml', 1, 1],
    says: ['an inventory must be a mapping of groups'],
  },
  {
    name: 'top-level scalar',
    files: { 'hosts.yml': 'all\n' },
    at: ['hosts.yml', 1, 1],
    says: ['an inventory must be a mapping of groups'],
  },
  // YAML 1.1 types these keys; Ansible's yaml plugin refuses a name that is no string
  {
    name: "group named yes: (a boolean to YAML 1.1, not the group 'true')",
    files: { 'hosts.yml': HEAD + '  children:\n    yes:\n      hosts:\n        far:\n' },
    at: ['hosts.yml', 9, 5],
    says: ["group name yes is a boolean to YAML 1.1 (read as 'true')", 'quote it'],
  },
  {
    name: 'host named 123 in a flow mapping (a number)',
    files: { 'hosts.yml': HEAD + '  children:\n    web:\n      hosts: {far: , 123: }\n' },
    at: ['hosts.yml', 10, 22],
    says: ['host name 123 is a number to YAML 1.1'],
  },
  {
    name: 'host named 2001-01-01 (a date, in a file the fast reader would take)',
    files: { 'hosts.yml': HEAD + '    2001-01-01:\n' },
    at: ['hosts.yml', 8, 5],
    says: ['host name 2001-01-01 is a date to YAML 1.1'],
  },
  {
    name: 'type error inside group_vars/web.yml points into that file',
    files: {
      'hosts.yml': HEAD + '  children:\n    web:\n      hosts:\n        far:\n',
      'group_vars/web.yml': '# web servers\nhttp_port: 8080\nansible_port: ssh\n',
    },
    at: ['group_vars/web.yml', 3, 15],
    says: ['ansible_port must be a port number from 1 to 65535, got a string'],
  },
  {
    name: 'bad name inside group_vars/all/ directory file',
    files: {
      'hosts.yml': HEAD,
      'group_vars/all/00-ok.yml': 'ntp: pool.ntp.org\n',
      'group_vars/all/10-net.yaml': 'mtu: 9000\nnet-mask: 24\n',
    },
    at: ['group_vars/all/10-net.yaml', 2, 1],
    says: ["invalid name 'net-mask'"],
  },
  {
    name: 'bad ansible_connection inside host_vars/far.yml',
    files: { 'hosts.yml': HEAD, 'host_vars/far.yml': 'ansible_connection: telnet\n' },
    at: ['host_vars/far.yml', 1, 21],
    says: ['ansible_connection must be one of'],
  },
  {
    name: 'YAML syntax error inside group_vars',
    files: { 'hosts.yml': HEAD, 'group_vars/all.yml': 'a: 1\nb: [1, 2\nc: 3\n' },
    at: ['group_vars/all.yml', 3, 1],
    says: ['YAML:'],
  },
  {
    name: "two '<<' merge keys in one mapping (Ansible: the later wins, with a warning)",
    files: { 'hosts.yml': HEAD, 'group_vars/all.yml': '_a: &a {mtu: 1500}\n_b: &b {mtu: 9000}\nnic:\n  <<: *a\n  <<: *b\n' },
    at: ['group_vars/all.yml', 5, 3],
    says: ["a second '<<' merge key in this mapping", '`<<: [*later, *earlier]`'],
  },
  {
    name: 'group_vars file that is a list',
    files: { 'hosts.yml': HEAD, 'group_vars/all.yml': '- a\n- b\n' },
    at: ['group_vars/all.yml', 1, 1],
    says: ['a vars file must hold a mapping'],
  },
];

describe('invalid inventories: exit 3 with file:line:col, nothing run', () => {
  it('has at least 15 cases', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(15);
  });

  it.each(CASES.map((c) => [c.name, c] as const))(
    '%s',
    async (_, c) => {
      const inv = writeCase(c.files);
      const dir = dirname(inv);
      const r = await cli([PLAYBOOK, '-i', inv, '--check']);
      expect(r.code, r.stderr).toBe(3);
      const [file, line, col] = c.at;
      const where = join(dir, file);
      if (line !== null) expect(r.stderr).toContain(`error: ${where}:${line}:${col}: `);
      else expect(r.stderr).toMatch(new RegExp(`error: ${where.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(:\\d+:\\d+)?: `));
      for (const s of c.says) expect(r.stderr).toContain(s);
      expect(r.stdout).toBe('');
      expect(existsSync(DEMO_DIR)).toBe(false);
    },
    30_000,
  );
});

describe('the proof is able to fail', () => {
  it('the same hosts in a valid inventory are contacted: exit 1 (far is unreachable), not 3', async () => {
    const inv = writeCase({ 'hosts.yml': HEAD });
    const r = await cli([PLAYBOOK, '-i', inv, '--check']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/UNREACHABLE|unreachable/i);
  }, 60_000);

  it('a valid local-only inventory runs the playbook in check mode: exit 2 (changes pending)', async () => {
    const inv = writeCase({ 'hosts.yml': 'all:\n  hosts:\n    loc:\n      ansible_connection: local\n' });
    const r = await cli([PLAYBOOK, '-i', inv, '--check']);
    expect(r.code, r.stderr).toBe(2);
    expect(existsSync(DEMO_DIR)).toBe(false); // check mode changes nothing
  }, 60_000);
});
