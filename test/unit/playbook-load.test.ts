// A playbook that does not load: the error names where (esbuild's file:line:col through tsx),
// not only "Transform failed with 1 error:". Run as the CLI runs a playbook of the operator's.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadFailure } from '../../src/cli/playbook.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-pb-load-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a playbook that does not load', { timeout: 60_000 }, () => {
  it.each([
    [
      'a compile error',
      'Transform failed with 1 error:\n/p/site.ts:2:70: ERROR: Unexpected "}"\n',
      '/p/site.ts:2:70: ERROR: Unexpected "}"',
    ],
    [
      'two of them',
      'Transform failed with 2 errors:\n/p/a.ts:1:1: ERROR: one\n/p/a.ts:2:2: ERROR: two\n',
      '/p/a.ts:1:1: ERROR: one; /p/a.ts:2:2: ERROR: two',
    ],
    ['any other error: its first line', 'Cannot find module x\nRequire stack:\n- y', 'Cannot find module x'],
  ])('%s', (_, message, said) => {
    expect(loadFailure(message)).toBe(said);
  });

  it('the CLI says the line and column of a syntax error', () => {
    const pb = join(dir, 'bad.ts');
    writeFileSync(pb, 'import { playbook } from "racksmith";\nexport default playbook({ name: "x", hosts: "all", resources: () => [ });\n');
    const r = spawnSync(process.execPath, [resolve('bin/provision.js'), pb, '-i', resolve('inventories/local.yaml'), '--syntax-check'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`cannot load playbook: ${pb.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2:\\d+: ERROR: `));
  }, 60_000);

  it('a .js playbook named by its path is that file, also beside a .ts of the same name (from the sources, through tsx)', () => {
    const d = mkdtempSync(join(dir, 'pair-'));
    const pb = (what: string) =>
      `import { file, playbook } from 'racksmith';\nexport default playbook({ name: '${what}', hosts: 'all', resources: () => [file({ path: '/tmp/rs-pair-${what}', content: 'x' })] });\n`;
    writeFileSync(join(d, 'site.js'), pb('js'));
    writeFileSync(join(d, 'site.ts'), pb('ts'));
    // tsx takes site.js to mean site.ts when a TypeScript module imports it, as the sources' loader is
    const r = spawnSync(
      process.execPath,
      [resolve('test/support/from-sources.mjs'), join(d, 'site.js'), '-i', resolve('inventories/local.yaml'), '--list-tasks'],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('file:/tmp/rs-pair-js');
    expect(r.stdout).not.toContain('rs-pair-ts');
  }, 60_000);
});
