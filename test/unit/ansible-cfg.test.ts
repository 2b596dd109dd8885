// ansible.cfg (issue #36): the INI reader against Python's configparser (what Ansible reads it
// with), the lookup order of ansible-core's find_ini_config_file, the typed settings, and how the
// command line wins over them.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ansibleSettings, findAnsibleConfig, ignoredKeysWarning, type Lookup } from '../../src/config/ansible-cfg.ts';
import { parseIni } from '../../src/config/ini.ts';
import { sshArgsOfConfig } from '../../src/config/ssh-args-of-config.ts';
import { parseCli } from '../../src/cli.ts';

const INI_CASES: Record<string, string> = {
  plain: '[defaults]\ninventory = hosts.yml\nforks=20\n',
  colon: '[defaults]\nremote_user: ops\n',
  'comments and inline': '# top\n; also\n[defaults]\nforks = 5 ; five\nremote_user = a;b\n  # indented comment\n',
  'keys lower-cased': '[defaults]\nRemote_User = ops\n',
  continuation: '[defaults]\nvault_identity_list = a@x,\n   b@y\n\n   c@z\n\n[x]\nk = v\n',
  'default section': '[DEFAULT]\ntimeout = 30\n[defaults]\nforks = 2\n',
  'empty value': '[defaults]\nremote_user =\n',
  'spaces around': '  [defaults]  \n   forks    =    9   \n',
  crlf: '[defaults]\r\nforks = 3\r\n',
};
const INI_ERRORS: Record<string, string> = {
  'no section': 'forks = 3\n',
  'duplicate section': '[a]\nx=1\n[a]\ny=2\n',
  'duplicate key': '[a]\nx=1\nX=2\n',
  'no value': '[a]\njustakey\n',
};

/**
 * What configparser.ConfigParser(inline_comment_prefixes=(';',)) reads of each text, raw, as
 * JSON (null on an error): one python3 process for all of them.
 */
function configparser(texts: string[]): unknown[] {
  const py = `
import configparser, json, sys
out = []
for text in json.load(sys.stdin):
    p = configparser.ConfigParser(inline_comment_prefixes=(';',))
    try:
        p.read_string(text)
    except configparser.Error:
        out.append(None); continue
    d = {'DEFAULT': dict(p.defaults())}
    for s in p.sections():
        d[s] = {k: p.get(s, k, raw=True) for k in p.options(s)}
    out.append(d)
print(json.dumps(out))`;
  return JSON.parse(execFileSync('python3', ['-c', py], { input: JSON.stringify(texts), encoding: 'utf8' }));
}
const PYTHON = configparser([...Object.values(INI_CASES), ...Object.values(INI_ERRORS)]);
const python = (text: string) => PYTHON[[...Object.values(INI_CASES), ...Object.values(INI_ERRORS)].indexOf(text)];

/** Ours in configparser's shape: every section's keys with DEFAULT's inherited. */
function ours(text: string): unknown {
  const ini = parseIni(text, 'ansible.cfg');
  const defaults = Object.fromEntries([...(ini.get('DEFAULT') ?? new Map())].map(([k, e]) => [k, e.value]));
  const out: Record<string, Record<string, string>> = { DEFAULT: defaults };
  for (const [name, keys] of ini) {
    if (name === 'DEFAULT') continue;
    out[name] = { ...defaults, ...Object.fromEntries([...keys].map(([k, e]) => [k, e.value])) };
  }
  return out;
}

describe('parseIni reads ansible.cfg as configparser does', () => {
  it.each(Object.entries(INI_CASES))('%s', (_, text) => {
    expect(ours(text)).toEqual(python(text));
  });
  it.each(Object.entries(INI_ERRORS))('%s is an error in both, with the line', (_, text) => {
    expect(python(text)).toBeNull();
    expect(() => parseIni(text, '/x/ansible.cfg')).toThrow(/^\/x\/ansible\.cfg:\d+:1: /);
  });
});

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rs-cfg-'));
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(dir, p, '..'), { recursive: true });
    writeFileSync(join(dir, p), text);
  }
  return dir;
}

describe('findAnsibleConfig: the first that exists of ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg, /etc/ansible/ansible.cfg', () => {
  const etc = '/etc/ansible/ansible.cfg';
  const readable = (present: Set<string>) => (p: string) => present.has(p);
  const cases: Array<[string, Record<string, string>, (d: string) => Partial<Lookup['env']>, string[], (d: string) => string | undefined]> =
    [
      [
        'env file wins',
        { 'env.cfg': '', 'cwd/ansible.cfg': '' },
        (d) => ({ ANSIBLE_CONFIG: join(d, 'env.cfg') }),
        ['env.cfg', 'cwd/ansible.cfg'],
        (d) => join(d, 'env.cfg'),
      ],
      [
        'env directory means its ansible.cfg',
        { 'e/ansible.cfg': '' },
        (d) => ({ ANSIBLE_CONFIG: join(d, 'e') }),
        ['e/ansible.cfg'],
        (d) => join(d, 'e/ansible.cfg'),
      ],
      [
        'env names a missing file: the next',
        { 'cwd/ansible.cfg': '' },
        (d) => ({ ANSIBLE_CONFIG: join(d, 'nope.cfg') }),
        ['cwd/ansible.cfg'],
        (d) => join(d, 'cwd/ansible.cfg'),
      ],
      [
        'cwd before home',
        { 'cwd/ansible.cfg': '', 'home/.ansible.cfg': '' },
        () => ({}),
        ['cwd/ansible.cfg', 'home/.ansible.cfg'],
        (d) => join(d, 'cwd/ansible.cfg'),
      ],
      ['home before /etc', { 'home/.ansible.cfg': '' }, () => ({}), ['home/.ansible.cfg', etc], (d) => join(d, 'home/.ansible.cfg')],
      ['/etc last', {}, () => ({}), [etc], () => etc],
      ['none', {}, () => ({}), [], () => undefined],
    ];
  it.each(cases)('%s', (_, files, env, present, want) => {
    const d = tree({ 'cwd/.keep': '', 'home/.keep': '', ...files });
    const abs = new Set(present.map((p) => (p.startsWith('/etc') ? p : join(d, p))));
    const got = findAnsibleConfig({ env: env(d), cwd: join(d, 'cwd'), home: join(d, 'home') }, readable(abs));
    expect(got.file).toBe(want(d));
  });
  it('skips ./ansible.cfg in a world-writable working directory, and says so', () => {
    const d = tree({ 'cwd/ansible.cfg': '', 'home/.ansible.cfg': '' });
    chmodSync(join(d, 'cwd'), 0o777);
    const got = findAnsibleConfig({ env: {}, cwd: join(d, 'cwd'), home: join(d, 'home') });
    expect(got).toEqual({ file: join(d, 'home/.ansible.cfg'), worldWritableCwd: join(d, 'cwd') });
  });
  // Ansible (config/manager.py) warns unless the file it uses is ANSIBLE_CONFIG's
  it.each([
    ['no other config anywhere: still said', {}, [], undefined, true],
    ['ANSIBLE_CONFIG used: not said', { ANSIBLE_CONFIG: 'e.cfg' }, ['e.cfg'], 'e.cfg', false],
    [
      'ANSIBLE_CONFIG names a missing file, home used: said',
      { ANSIBLE_CONFIG: 'nope.cfg' },
      ['home/.ansible.cfg'],
      'home/.ansible.cfg',
      true,
    ],
  ])('world-writable working directory, %s', (_, env: Record<string, string>, present: string[], want: string | undefined, said) => {
    const d = tree({ 'cwd/ansible.cfg': '', 'home/.keep': '', 'e.cfg': '' });
    chmodSync(join(d, 'cwd'), 0o777);
    const abs = (p: string) => join(d, p);
    const envAbs = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, abs(v)]));
    const got = findAnsibleConfig({ env: envAbs, cwd: abs('cwd'), home: abs('home') }, readable(new Set(present.map(abs))));
    expect(got).toEqual({ file: want && abs(want), worldWritableCwd: said ? abs('cwd') : undefined });
  });
});

describe('ansibleSettings', () => {
  const settings = (text: string, env: NodeJS.ProcessEnv = {}) => {
    const d = tree({ 'proj/ansible.cfg': text });
    const file = join(d, 'proj/ansible.cfg');
    return { d, s: ansibleSettings({ env, cwd: join(d, 'elsewhere'), home: join(d, 'home') }, { file }) };
  };
  it('types every honoured key; paths relative to the file, ~ and $VAR expanded', () => {
    const { d, s } = settings(
      [
        '[defaults]',
        'inventory = inv/hosts.yml, /abs/other.ini',
        'forks = 1_0',
        "remote_user = 'ops'",
        'private_key_file = ~/.ssh/id_rack',
        'timeout = 30',
        'host_key_checking = False',
        'vault_password_file = $VAULTDIR/pw',
        'vault_identity_list = prod@a, dev@b',
        '[privilege_escalation]',
        'become = yes',
        'become_user = admin',
        'become_method = sudo',
        'become_ask_pass = on',
        '[ssh_connection]',
        'ssh_args = -C -o ControlMaster=auto -o ControlPersist=60s -o ConnectTimeout=5',
      ].join('\n'),
      { VAULTDIR: '/v' },
    );
    const file = join(d, 'proj/ansible.cfg');
    expect(s.inventory).toEqual({ value: [join(d, 'proj/inv/hosts.yml'), '/abs/other.ini'], origin: { file, line: 2 } });
    expect(s.forks?.value).toBe(10);
    expect(s.remoteUser?.value).toBe('ops');
    expect(s.privateKeyFile?.value).toBe(join(d, 'home/.ssh/id_rack'));
    expect(s.timeout?.value).toBe(30);
    expect(s.hostKeyChecking?.value).toBe(false);
    expect(s.vaultPasswordFile?.value).toBe('/v/pw');
    expect(s.vaultIdentityList?.value).toEqual(['prod@a', 'dev@b']);
    expect([s.become?.value, s.becomeUser?.value, s.becomeMethod?.value, s.becomeAskPass?.value]).toEqual([true, 'admin', 'sudo', true]);
    expect(sshArgsOfConfig(s.sshArgs!.value, s.sshArgs!.origin)).toBe('-o ConnectTimeout=5');
    expect(s.ignored).toEqual([]);
  });
  it('ANSIBLE_* variables win over the file; their paths are relative to the working directory', () => {
    const { d, s } = settings('[defaults]\nforks = 5\ninventory = a.yml\n', { ANSIBLE_FORKS: '7', ANSIBLE_INVENTORY: 'b.yml' });
    expect(s.forks).toEqual({ value: 7, origin: { file: '$ANSIBLE_FORKS' } });
    expect(s.inventory?.value).toEqual([join(d, 'elsewhere/b.yml')]);
  });
  it.each([
    ['forks = many', /ansible\.cfg:2:1: forks must be a whole number, got 'many'/],
    ['host_key_checking = maybe', /ansible\.cfg:2:1: host_key_checking must be a boolean/],
  ])('bad value %s is exit 3 at its line', (line, msg) => {
    expect(() => settings(`[defaults]\n${line}\n`)).toThrow(msg);
  });
  it('keys it does not honour are listed once, with their lines; what racksmith does anyway is not', () => {
    const { d, s } = settings(
      '[defaults]\nstdout_callback = yaml\nforks = 3\nroles_path = r\npipelining = True\n[connection]\npipelining = True\n[ssh_connection]\npipelining = True\n',
    );
    expect(ignoredKeysWarning(s)).toBe(
      `${join(d, 'proj/ansible.cfg')}: not honoured by racksmith: [defaults] stdout_callback (line 2), [defaults] roles_path (line 4)`,
    );
  });
});

describe('parseCli with ansible.cfg: the command line wins', () => {
  const cfg = () => {
    const d = tree({
      'ansible.cfg':
        '[defaults]\ninventory = hosts.yml\nforks = 7\nremote_user = ops\ntimeout = 20\n[privilege_escalation]\nbecome = true\nbecome_user = admin\n',
    });
    return { d, s: ansibleSettings({ env: {}, cwd: d, home: d }, { file: join(d, 'ansible.cfg') }) };
  };
  it('fills what the command line does not give', () => {
    const { d, s } = cfg();
    const o = parseCli([], s);
    if (o === 'help') throw new Error('help');
    expect(o.inventory).toEqual([join(d, 'hosts.yml')]);
    expect(o.inventoryFromConfig).toEqual({ file: join(d, 'ansible.cfg'), line: 2 });
    expect([o.forks, o.user, o.timeoutMs, o.become]).toEqual([7, 'ops', 20_000, { enabled: true, user: 'admin', method: undefined }]);
  });
  it('takes the command line over it', () => {
    const { s } = cfg();
    const o = parseCli(['-i', 'x.yml', '-f', '3', '-u', 'root', '-T', '5', '--become-user', 'bob'], s);
    if (o === 'help') throw new Error('help');
    expect([o.inventory, o.inventoryFromConfig, o.forks, o.user, o.timeoutMs, o.become.user]).toEqual([
      ['x.yml'],
      undefined,
      3,
      'root',
      5000,
      'bob',
    ]);
  });
  it('a value out of an option range names the file line', () => {
    const d = tree({ 'ansible.cfg': '[defaults]\ninventory = h\nforks = 0\n' });
    const s = ansibleSettings({ env: {}, cwd: d, home: d }, { file: join(d, 'ansible.cfg') });
    expect(() => parseCli([], s)).toThrow(`${join(d, 'ansible.cfg')}:3:1: forks must be from 1 to 10000, got 0`);
  });
  it('without -i and without an inventory setting, the error says both', () => {
    expect(() => parseCli([], { ignored: [] })).toThrow(/-i\/--inventory is required \(or 'inventory' in ansible\.cfg's \[defaults\]\)$/m);
  });
  it('without -i, an ansible.cfg skipped in a world-writable directory is named in the error', () => {
    expect(() => parseCli([], { ignored: [], worldWritableCwd: '/srv/ops' })).toThrow(
      "-i/--inventory is required (or 'inventory' in ansible.cfg's [defaults]); /srv/ops is world writable: its ansible.cfg is ignored (as Ansible does)",
    );
  });
});
