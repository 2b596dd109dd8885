// Whether the CLI may run dist/ (bin/prebuilt.mjs): only while dist/ was built from exactly the
// sources in the tree. The build's stamp (inode, size, change time of every source) answers
// without reading a file while none was written since; otherwise the digest of their contents
// decides. Real files in a temporary tree; a change time moves by writing, as an editor does
// (each change below is written until the file's change time shows it: a kernel whose file times
// are coarse stamps writes within one clock tick alike).
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manifestOf, manifestPath, prebuiltIsCurrent, sourceDigest, sourceStamp } from '../../bin/prebuilt.mjs';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'rs-prebuilt-'));
  for (const d of ['src/engine', 'playbooks', 'dist']) mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(root, 'src/engine/run.ts'), 'export const a = 1;\n');
  writeFileSync(join(root, 'playbooks/site.ts'), 'export default 1;\n');
  writeFileSync(join(root, 'tsconfig.json'), '{}\n');
  writeFileSync(join(root, 'tsconfig.build.json'), '{}\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** What the build writes: the manifest of the sources as they are now (or an older build's, digest only). */
const build = (manifest: object = manifestOf(root)) => writeFileSync(manifestPath(root), JSON.stringify(manifest) + '\n');

describe('dist/ runs only when built from exactly these sources', () => {
  it('just built: current; the stamp alone tells (no source is read)', () => {
    build();
    expect(prebuiltIsCurrent(root)).toBe(true);
    const m = JSON.parse(readFileSync(manifestPath(root), 'utf8')) as { stamp: string };
    expect(m.stamp).toBe(sourceStamp(root));
    // a digest that matches nothing: only the stamp can say current
    build({ digest: 'not the digest', stamp: sourceStamp(root) });
    expect(prebuiltIsCurrent(root)).toBe(true);
  });

  it.each([
    [
      'a source edited to another text of the same size',
      false,
      () => touched('src/engine/run.ts', (f) => writeFileSync(f, 'export const b = 2;\n')),
    ],
    ['a source replaced by a rename (another inode), same text', true, () => replace('playbooks/site.ts', 'export default 1;\n')],
    [
      'a source saved again unchanged (its change time moves)',
      true,
      () => touched('src/engine/run.ts', (f) => writeFileSync(f, 'export const a = 1;\n')),
    ],
    [
      'a source whose times are set back by hand (the change time still moves)',
      true,
      () => touched('playbooks/site.ts', (f) => utimesSync(f, 0, 0)),
    ],
    ['a new source', false, () => writeFileSync(join(root, 'src/engine/new.ts'), '\n')],
    ['the build configuration edited', false, () => writeFileSync(join(root, 'tsconfig.build.json'), '{ }\n')],
  ])('%s: current %s', (_what, current, change) => {
    build();
    const before = sourceStamp(root);
    change();
    expect(sourceStamp(root)).not.toBe(before); // the stamp saw the write: the digest decided
    expect(prebuiltIsCurrent(root)).toBe(current);
  });

  it('a build from before the stamp (digest only) is still recognised by its digest', () => {
    build({ digest: sourceDigest(root) });
    expect(prebuiltIsCurrent(root)).toBe(true);
    writeFileSync(join(root, 'src/engine/run.ts'), 'export const z = 9;\n');
    expect(prebuiltIsCurrent(root)).toBe(false);
  });

  it('no manifest, or an unreadable one: not current', () => {
    expect(prebuiltIsCurrent(root)).toBe(false);
    writeFileSync(manifestPath(root), '{ not json');
    expect(prebuiltIsCurrent(root)).toBe(false);
  });
});

/** `change` of the file `rel`, again until its change time differs from before (the clock ticked). */
function touched(rel: string, change: (file: string) => void): void {
  const file = join(root, rel);
  const before = statSync(file, { bigint: true }).ctimeNs;
  for (let i = 0; i < 1_000_000; i++) {
    change(file);
    if (statSync(file, { bigint: true }).ctimeNs !== before) return;
  }
  throw new Error(`${rel}: its change time never moved`);
}

/** Replace a file the way many editors save: write a new file, rename it over the old. */
function replace(rel: string, text: string): void {
  writeFileSync(join(root, `${rel}.tmp`), text);
  renameSync(join(root, `${rel}.tmp`), join(root, rel));
}
