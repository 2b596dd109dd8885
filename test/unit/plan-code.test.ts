// A saved plan is for exactly the code it was made with: every module the playbooks load
// (transitively, through relative imports) and racksmith's own sources (src/plan/code.ts).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { changedCode, codeDigest, codeHashes } from '../../src/plan/code.ts';

/** A fake racksmith root and a playbook directory that imports through two levels. */
function layout() {
  const root = mkdtempSync(join(tmpdir(), 'rs-code-root-'));
  mkdirSync(join(root, 'src', 'engine'), { recursive: true });
  mkdirSync(join(root, 'playbooks'));
  writeFileSync(join(root, 'package.json'), '{"version":"1.0.0"}\n');
  writeFileSync(join(root, 'src', 'index.ts'), "export * from './engine/run.ts';\n");
  writeFileSync(join(root, 'src', 'engine', 'run.ts'), 'export const x = 1;\n');
  writeFileSync(join(root, 'playbooks', 'site.ts'), "import './network.ts';\n");
  writeFileSync(join(root, 'playbooks', 'network.ts'), 'export default 1;\n');
  const mine = mkdtempSync(join(tmpdir(), 'rs-code-pb-'));
  mkdirSync(join(mine, 'lib'));
  writeFileSync(
    join(mine, 'site.ts'),
    [
      "import { playbook } from 'racksmith';",
      "import { disks } from './lib/disks.ts';",
      "export { tuned } from './lib/tuning';",
      "const later = () => import('./lib/late.ts');",
      'export default playbook({ name: "x", hosts: "all", resources: () => [...disks(), later] });',
    ].join('\n'),
  );
  writeFileSync(join(mine, 'lib', 'disks.ts'), "import { shared } from '../shared.ts';\nexport const disks = () => shared;\n");
  writeFileSync(join(mine, 'lib', 'tuning.ts'), 'export const tuned = 1;\n');
  writeFileSync(join(mine, 'lib', 'late.ts'), 'export const late = 1;\n');
  writeFileSync(join(mine, 'shared.ts'), 'export const shared = [];\n');
  writeFileSync(join(mine, 'unrelated.ts'), 'export const not = 1;\n');
  return { root, mine };
}

describe('code hashes of a saved plan', () => {
  it("cover the playbook's modules transitively (static, extensionless and dynamic imports) and racksmith's sources", () => {
    const { root, mine } = layout();
    const h = codeHashes([join(mine, 'site.ts')], root);
    expect(Object.keys(h).sort()).toEqual(
      [
        ...['site.ts', 'lib/disks.ts', 'lib/tuning.ts', 'lib/late.ts', 'shared.ts'].map((f) => join(mine, f)),
        'racksmith/package.json',
        'racksmith/playbooks/network.ts',
        'racksmith/playbooks/site.ts',
        'racksmith/src/engine/run.ts',
        'racksmith/src/index.ts',
      ].sort(),
    );
  });

  it.each([
    ['a module two imports deep', (m: string) => join(m, 'shared.ts'), (m: string) => [join(m, 'shared.ts')]],
    ["one of racksmith's sources", (_: string, r: string) => join(r, 'src', 'engine', 'run.ts'), () => ['racksmith/src/engine/run.ts']],
    ["racksmith's version", (_: string, r: string) => join(r, 'package.json'), () => ['racksmith/package.json']],
  ])('an edit of %s is named', (_, edited, want) => {
    const { root, mine } = layout();
    const before = codeHashes([join(mine, 'site.ts')], root);
    writeFileSync(edited(mine, root), '// edited\n');
    const after = codeHashes([join(mine, 'site.ts')], root);
    expect(changedCode(before, after)).toEqual(want(mine));
    expect(codeDigest(after)).not.toBe(codeDigest(before));
  });

  it('an edit of a file the playbooks do not load changes nothing; a new import is an added file', () => {
    const { root, mine } = layout();
    const before = codeHashes([join(mine, 'site.ts')], root);
    writeFileSync(join(mine, 'unrelated.ts'), '// edited\n');
    expect(changedCode(before, codeHashes([join(mine, 'site.ts')], root))).toEqual([]);
    writeFileSync(join(mine, 'lib', 'late.ts'), "import '../unrelated.ts';\n");
    expect(changedCode(before, codeHashes([join(mine, 'site.ts')], root))).toEqual([
      join(mine, 'lib/late.ts'),
      `${join(mine, 'unrelated.ts')} (added)`,
    ]);
  });
});
