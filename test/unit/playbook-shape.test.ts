// A playbook's shape is checked where it is declared: a JavaScript playbook (or TypeScript run
// without tsc) with a misspelt or missing play key is bad input naming the play, never an
// internal error halfway through preparing the run, and never a key silently ignored.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { playbookProblems } from '../../src/contract/playbook.ts';

const resources = () => [];
const ok = { name: 'p', hosts: 'all', resources };

describe('playbookProblems', () => {
  it.each<[string, unknown, string[]]>([
    [
      'a play with every key',
      {
        ...ok,
        tags: ['t'],
        serial: [1, '10%'],
        maxFailPercent: 5,
        anyErrorsFatal: false,
        become: true,
        becomeUser: 'root',
        becomeMethod: 'su',
        facts: true,
      },
      [],
    ],
    ['serial as one size', { ...ok, serial: 5 }, []],
    [
      'a misspelt key',
      { ...ok, tag: ['t'] },
      [
        "unknown key 'tag' in plays[0] (allowed: name, hosts, tags, serial, maxFailPercent, anyErrorsFatal, become, becomeUser, becomeMethod, facts, resources) (play 'p')",
      ],
    ],
    ['no hosts', { name: 'p', resources }, ["plays[0] must have required property 'hosts' (play 'p')"]],
    ['an empty hosts pattern', { ...ok, hosts: '' }, ["plays[0].hosts must NOT have fewer than 1 characters (play 'p')"]],
    ['hosts as a list', { ...ok, hosts: ['a', 'b'] }, ["plays[0].hosts must be string (play 'p')"]],
    ['become as a string', { ...ok, become: 'yes' }, ["plays[0].become must be boolean (play 'p')"]],
    ['resources as a list', { ...ok, resources: [] }, ["plays[0].resources must be a function of the host, (host) => [ ... ] (play 'p')"]],
    ['no name', { hosts: 'all', resources }, ["plays[0] must have required property 'name'"]],
    ['a play that is no mapping', 'all', ['plays[0] must be a play: { name, hosts, resources }']],
  ])('%s', (_, play, problems) => {
    expect(playbookProblems({ name: 'pb', plays: [play] })).toEqual(problems);
  });

  it('the playbook itself', () => {
    expect(playbookProblems({ plays: [ok] })).toEqual(["the playbook's name must be a string"]);
    expect(playbookProblems({ name: 'pb', plays: ok })).toEqual(["the playbook's plays must be a list of plays"]);
    expect(playbookProblems({ name: 'pb', plays: [ok, { ...ok, hosts: true }] })).toEqual(["plays[1].hosts must be string (play 'p')"]);
  });
});

const dir = mkdtempSync(join(tmpdir(), 'rs-pb-shape-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function syntaxCheck(name: string, text: string) {
  const pb = join(dir, name);
  writeFileSync(pb, text);
  return spawnSync(process.execPath, [resolve('bin/provision.js'), pb, '-i', resolve('inventories/local.yaml'), '--syntax-check'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('the CLI refuses a playbook of the wrong shape (exit 3), before any host', { timeout: 60_000 }, () => {
  it('playbook() with a misspelt key: at the line that called it', () => {
    const r = syntaxCheck(
      'typo.mjs',
      "import { playbook } from 'racksmith';\n\nexport default playbook({ name: 'p', host: 'all', resources: () => [] });\n",
    );
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toContain(`${join(dir, 'typo.mjs')}:3:16: playbook(): plays[0] must have required property 'hosts' (play 'p')`);
    expect(r.stderr).toContain("unknown key 'host' in plays[0]");
    expect(r.stderr).not.toContain('internal error');
  }, 60_000);

  it('playbook() given a list of plays', () => {
    const r = syntaxCheck(
      'list.mjs',
      "import { playbook } from 'racksmith';\nexport default playbook([{ name: 'p', hosts: 'all', resources: () => [] }]);\n",
    );
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toContain('playbook(): takes one play, or { name, plays: [ ... ] } for several, not a list');
  }, 60_000);

  it('a plain object exported as the playbook: at its file', () => {
    const r = syntaxCheck(
      'plain.mjs',
      "export default { name: 'x', plays: [{ name: 'p', hosts: 'all', become: 'yes', resources: () => [] }] };\n",
    );
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toContain(`${join(dir, 'plain.mjs')}: plays[0].become must be boolean (play 'p')`);
  }, 60_000);
});
