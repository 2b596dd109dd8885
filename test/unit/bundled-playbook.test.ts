// Without a playbook argument racksmith runs playbooks/site.ts, and when the working directory
// has none, the one it ships. That fallback is said: the operator may have meant a site.ts of
// their own (run from the wrong directory). The real CLI in another working directory.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { playbookMeant } from '../../src/cli/playbook.ts';

const BIN = resolve('bin/provision.js');
const BUNDLED = resolve('playbooks/site.ts');
const dir = mkdtempSync(join(tmpdir(), 'rs-bundled-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, 'hosts.yml'), 'all:\n  hosts:\n    h1: { ansible_host: 127.0.0.1, ansible_port: 1 }\n');

const provision = (cwd: string, args: string[]) => {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};
const said = `no playbooks/site.ts in ${dir}: running racksmith's bundled playbooks/site.ts (${BUNDLED})`;

describe('the bundled site.ts, run because the working directory has none', () => {
  it('--list-hosts says so on stderr', () => {
    const r = provision(dir, ['-i', 'hosts.yml', '--list-hosts']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('h1');
    expect(r.stderr).toContain(`warning: ${said}\n`);
  });

  it('a run says so in the human view and as a --json warning', () => {
    const r = provision(dir, ['-i', 'hosts.yml', '--json', '-T', '2']);
    expect(r.stderr).toContain(`warning: ${said}\n`);
    const warnings = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; message?: string })
      .filter((e) => e.type === 'warning');
    expect(warnings).toContainEqual(expect.objectContaining({ message: said }));
  });

  it("the directory's own playbooks/site.ts is run, and nothing is said", () => {
    const own = mkdtempSync(join(dir, 'own-'));
    mkdirSync(join(own, 'playbooks'));
    writeFileSync(join(own, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(
      join(own, 'playbooks/site.ts'),
      "export default { name: 'own', plays: [{ name: 'own play', hosts: 'all', resources: () => [] }] };\n",
    );
    const r = provision(own, ['-i', join(dir, 'hosts.yml'), '--list-tasks']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('own play');
  });
});

// A newcomer reads the playbook table (storage.ts, network.ts ...) and types the name without
// its directory: the error says which playbook was likely meant.
describe('a playbook named without its directory or extension', () => {
  it.each([
    ['storage.ts', "playbooks/storage.ts (racksmith's bundled one)"],
    ['storage', "playbooks/storage.ts (racksmith's bundled one)"],
    ['mine', 'mine.ts'],
    ['nothing-like-it.ts', undefined],
    ['/abs/storage.ts', undefined],
  ])('%s → %s', (p, want) => {
    writeFileSync(join(dir, 'mine.ts'), '');
    expect(playbookMeant(p, dir)).toBe(want);
  });

  it('the CLI says it with the error (exit 3)', () => {
    const r = provision(dir, ['storage.ts', '-i', 'hosts.yml', '--check']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("playbook not found: storage.ts (did you mean playbooks/storage.ts (racksmith's bundled one)?)");
  });
});
