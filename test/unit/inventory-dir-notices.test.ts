// A directory given with -i is read as ansible-core reads it: its .ini files are skipped (they
// are in Ansible's ignored extensions). An .ini there is most likely an inventory the operator
// meant, so the skip is said: a warning on stderr and in --json, and inside the error when the
// directory then holds no host.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.ts';
import { cli } from './run-cli.ts';

const root = mkdtempSync(join(tmpdir(), 'rs-invdir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A directory with these files (name → text). */
function dir(files: Record<string, string>): string {
  const d = mkdtempSync(join(root, 'inv-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(d, name, '..'), { recursive: true });
    writeFileSync(join(d, name), text);
  }
  return d;
}
const INI = '[web]\nweb1 ansible_host=127.0.0.1 ansible_port=1\n';
const YAML = 'all:\n  hosts:\n    db1: { ansible_host: 127.0.0.1, ansible_port: 1 }\n';
const skipped = (d: string, name: string) =>
  `${join(d, name)}: skipped: Ansible's directory sources ignore .ini files; give it with -i ${join(d, name)}`;

describe('-i DIR with an .ini file in it', () => {
  it('the .ini is skipped as Ansible skips it, and said; other ignored files (.cfg, .md) are not', () => {
    const d = dir({ 'hosts.ini': INI, 'hosts.yml': YAML, 'ansible.cfg': '[defaults]\n', 'README.md': '# inv\n' });
    const inv = loadInventory(d);
    expect(inv.hosts.map((h) => h.name)).toEqual(['db1']);
    expect(inv.warnings?.map((w) => w.message)).toEqual([skipped(d, 'hosts.ini')]);
  });

  it('no .ini: no notice; an .ini given as a file is read', () => {
    expect(loadInventory(dir({ 'hosts.yml': YAML })).warnings ?? []).toEqual([]);
    const d = dir({ 'hosts.ini': INI });
    expect(loadInventory(join(d, 'hosts.ini')).hosts.map((h) => h.name)).toEqual(['web1']);
  });

  it('provision inventory --list and --list-hosts warn on stderr', async () => {
    const d = dir({ 'hosts.ini': INI, 'hosts.yml': YAML });
    const list = await cli(['inventory', '-i', d, '--list']);
    expect(list.code).toBe(0);
    expect(list.stderr).toBe(`warning: ${skipped(d, 'hosts.ini')}\n`);
    const hosts = await cli(['test/fixtures/playbooks/foundation.ts', '-i', d, '--list-hosts']);
    expect(hosts.stdout).toContain('db1');
    expect(hosts.stderr).toBe(`warning: ${skipped(d, 'hosts.ini')}\n`);
  });

  it('a run warns on stderr and in --json', async () => {
    const d = dir({ 'hosts.ini': INI, 'hosts.yml': YAML });
    const r = await cli(['test/fixtures/playbooks/foundation.ts', '-i', d, '--json', '-T', '2']);
    expect(r.stderr).toContain(`warning: ${skipped(d, 'hosts.ini')}\n`);
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; message?: string });
    expect(events.filter((e) => e.type === 'warning')).toEqual([expect.objectContaining({ message: skipped(d, 'hosts.ini') })]);
  });

  it('a directory whose only inventory is the .ini: exit 3, the error says why no host matched', async () => {
    const d = dir({ 'hosts.ini': INI });
    const r = await cli(['test/fixtures/playbooks/foundation.ts', '-i', d]);
    expect(r.code).toBe(3);
    // every warning of the load says why: the skipped .ini, then the play it left without hosts
    expect(r.stderr).toMatch(
      new RegExp(
        `^error: no hosts matched: nothing to do\\n  ${skipped(d, 'hosts.ini').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n  .*play 'foundation fixture' \\(hosts: 'all'\\) matches no host`,
      ),
    );
  });
});

// Ansible's yaml plugin compares extensions as they are: `hosts.YML` is not YAML to it, its ini
// plugin reads it (a YAML text there fails, and a directory source skips it with a warning). A
// racksmith that took `.YML` as YAML reached hosts the operator's Ansible never reads.
describe('an inventory named .YML, .Yaml or .JSON', () => {
  it.each(['hosts.YML', 'hosts.Yaml', 'hosts.JSON'])('%s holding YAML is refused, saying why and what to rename it to', (name) => {
    const d = dir({ hosts: INI, [name]: YAML });
    const lower = name.slice(name.lastIndexOf('.')).toLowerCase();
    expect(() => loadInventory([d])).toThrow(
      new RegExp(
        `^${join(d, name).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1:1: .*\\(read as INI: Ansible's yaml plugin reads only \\.yml, \\.yaml, \\.json in lower case, not ${name.slice(name.lastIndexOf('.')).replace('.', '\\.')}.*rename it to \\${lower}\\)$`,
      ),
    );
  });
  it('holding INI text that racksmith refuses (a variable named my-var): that error alone, no advice to rename it', () => {
    const d = dir({ 'hosts.YML': '[web]\nweb1 my-var=1\n' });
    const f = join(d, 'hosts.YML');
    expect(() => loadInventory([f])).toThrow(/my-var/);
    expect(() => loadInventory([f])).not.toThrow(/rename it/);
  });
  it('holding INI text, it is read as INI, as Ansible reads it', () => {
    const d = dir({ 'hosts.YML': INI });
    expect(loadInventory([join(d, 'hosts.YML')]).hosts.map((h) => h.name)).toEqual(['web1']);
  });
});
