// Pull mode (`ansible_connection: local`, `-c local`): racksmith applies on the machine it runs
// on. What it changes here is one directory and file under this test's own temporary directory;
// as any apply as root, it takes the apply lock in /run/racksmith (apply-lock.ts).
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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
});
