// Pull mode (`ansible_connection: local`, `-c local`): racksmith applies on the machine it runs
// on. What it changes here is one directory and file under this test's own temporary directory;
// as any apply as root, it takes the apply lock in /run/racksmith (apply-lock.ts).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { provision, recaps, repoRoot } from './helpers.ts';

function pullHost() {
  const dir = mkdtempSync(join(tmpdir(), 'rs-pull-'));
  const inv = join(dir, 'inventory.yaml');
  writeFileSync(inv, 'all:\n  hosts:\n    here:\n      ansible_connection: local\n');
  const pb = join(dir, 'pb.ts');
  writeFileSync(
    pb,
    `import { directory, file, playbook } from ${JSON.stringify(join(repoRoot, 'src/index.ts'))};
const dir = directory({ path: ${JSON.stringify(join(dir, 'out'))}, mode: '0750' });
export default playbook({ name: 'pull', hosts: 'all', resources: () => [dir, file({ path: ${JSON.stringify(join(dir, 'out', 'motd'))}, content: 'pulled\\n', after: [dir.id] })] });
`,
  );
  return { dir, inv, pb, target: join(dir, 'out', 'motd') };
}

describe('pull mode (the local connection)', () => {
  it('applies, ends with its recap and run record, and changes nothing the second time; a dry run changes nothing', async () => {
    const { dir, inv, pb, target } = pullHost();
    const journal = join(dir, 'j.ndjson');
    const dry = await provision([pb, '-i', inv, '--check', '--json', '--journal', join(dir, 'dry.ndjson')]);
    expect(dry.code, dry.stderr).toBe(2);
    expect(existsSync(join(dir, 'out'))).toBe(false);

    const first = await provision([pb, '-i', inv, '--json', '--journal', journal]);
    // Before the fix: exit 13 (Node's unsettled await) after the changes, with no recap
    expect(first.code, first.stderr).toBe(0);
    expect(recaps(first).here).toMatchObject({ changed: 2, failed: 0 });
    expect(first.stderr).toMatch(/^run: \S+ \(provision runs show /m);
    expect(readFileSync(target, 'utf8')).toBe('pulled\n');
    expect(readFileSync(journal, 'utf8')).toContain('"type":"recap"');

    const again = await provision([pb, '-i', inv, '--json', '--journal', join(dir, 'j2.ndjson')]);
    expect(again.code, again.stderr).toBe(0);
    expect(recaps(again).here).toMatchObject({ changed: 0, failed: 0 });
  });

  it('a saved plan applies there too', async () => {
    const { dir, inv, pb, target } = pullHost();
    const plan = join(dir, 'window.plan');
    const check = await provision([pb, '-i', inv, '--check', '--plan-out', plan, '--journal', join(dir, 'c.ndjson')]);
    expect(check.code, check.stderr).toBe(2);
    const applied = await provision(['apply', plan, '--json', '--journal', join(dir, 'a.ndjson')]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(recaps(applied).here).toMatchObject({ changed: 2, failed: 0 });
    expect(readFileSync(target, 'utf8')).toBe('pulled\n');
  });

  it("a plan applies from another directory: apply's own vault option wins, no output option of the review is forced on it, and its run record names the plan's playbook", async () => {
    const { dir, inv, pb, target } = pullHost();
    // a vaulted variable (password vaultpw123): the inventory loads only with the vault password
    writeFileSync(inv, readFileSync(inv, 'utf8') + `  vars:\n${VAULTED_S3}`);
    writeFileSync(join(dir, 'vpw.txt'), 'vaultpw123\n');
    const plan = join(dir, 'window.plan');
    const check = await provision(
      ['pb.ts', '-i', 'inventory.yaml', '--vault-password-file', 'vpw.txt', '--check', '--json', '-D', '--plan-out', plan],
      {
        cwd: dir,
      },
    );
    expect(check.code, check.stderr).toBe(2);
    const shown = await provision(['plan', 'show', plan]);
    expect(shown.stdout).toMatch(/argv: pb\.ts --inventory inventory\.yaml --vault-password-file vpw\.txt\n/);
    // elsewhere, with a password file of its own (once: 'vault password file vpw.txt: not found')
    const other = join(dir, 'elsewhere');
    mkdirSync(other);
    writeFileSync(join(other, 'pw'), 'vaultpw123\n');
    const applied = await provision(['apply', plan, '--vault-password-file', join(other, 'pw'), '--journal', join(dir, 'a.ndjson')], {
      cwd: other,
    });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toBe(''); // no NDJSON: apply was not given --json
    expect(readFileSync(target, 'utf8')).toBe('pulled\n');
    const id = /^run: (\S+)/m.exec(applied.stderr)?.[1];
    const record = await provision(['runs', 'show', id!]);
    expect(record.stdout).toContain(`playbooks: ${pb} `);
    expect(pb).toBe(join(dir, 'pb.ts'));
  });

  it('a plan whose check run failed: plan show lists the failure and exits 1, apply refuses it', async () => {
    const { dir, inv } = pullHost();
    const pb = join(dir, 'fail.ts');
    writeFileSync(
      pb,
      `import { line, playbook } from ${JSON.stringify(join(repoRoot, 'src/index.ts'))};
export default playbook({ name: 'fail', hosts: 'all', resources: () => [line({ path: ${JSON.stringify(join(dir, 'missing.conf'))}, line: 'a=1' })] });
`,
    );
    const plan = join(dir, 'failed.plan');
    const check = await provision([pb, '-i', inv, '--check', '--plan-out', plan, '--journal', join(dir, 'c.ndjson')]);
    expect(check.code, check.stderr).toBe(1);
    const shown = await provision(['plan', 'show', plan]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toMatch(/\(failed\) on 1 host\(s\): here\n +error: refused: .*missing\.conf does not exist/);
    expect(shown.stdout).toMatch(/here \(failed: 1 resource\(s\) failed\)/);
    const applied = await provision(['apply', plan, '--journal', join(dir, 'a.ndjson')]);
    expect(applied.code).toBe(3);
    expect(applied.stderr).toMatch(/plan's check run failed on 1 host\(s\) \(here\)/);
    expect(existsSync(join(dir, 'missing.conf'))).toBe(false);
  });
});

const VAULTED_S3 = `    s3: !vault |
              $ANSIBLE_VAULT;1.1;AES256
              61373762303036663162633838326132343438356237356234663961666662623535633939306664
              3564343838613938343932346134306336313261613035350a373863346535356436613931393764
              34333033333538366330383335373837373734313734663663623634316139616632653834383235
              6336663664303462390a323436653765316564343464393731353364303335666465323237376137
              33633663333762346463643961363365353564303232356231386361643238363638
`;
