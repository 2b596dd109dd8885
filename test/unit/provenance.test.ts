// A run record's playbook provenance (src/history/provenance.ts): the revision and dirtiness of the
// git work tree a playbook is in, from one `git status --porcelain=v2 --branch`, against real git
// work trees made here.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gitSource, playbookSources } from '../../src/history/provenance.ts';

const OID = 'd470dc49ff6b8cd34cd594a42e7893998d064d72';

describe('gitSource', () => {
  it.each<[string, string | undefined, ReturnType<typeof gitSource>]>([
    ['clean', `# branch.oid ${OID}\n# branch.head main\n`, { revision: OID, dirty: false }],
    [
      'a tracked file changed',
      `# branch.oid ${OID}\n# branch.head main\n1 .M N... 100644 100644 100644 a b site.ts\n`,
      { revision: OID, dirty: true },
    ],
    ['a detached HEAD', `# branch.oid ${OID}\n# branch.head (detached)\n`, { revision: OID, dirty: false }],
    ['a SHA-256 repository', `# branch.oid ${'a'.repeat(64)}\n`, { revision: 'a'.repeat(64), dirty: false }],
    ['no commit yet', '# branch.oid (initial)\n# branch.head main\n', undefined],
    ['no header (not what was asked)', '1 .M N... 100644 100644 100644 a b site.ts\n', undefined],
    ['git failed', undefined, undefined],
  ])('%s', (_, status, want) => {
    expect(gitSource(status)).toEqual(want);
  });
});

describe('playbookSources against real work trees', () => {
  const root = mkdtempSync(join(tmpdir(), 'rs-provenance-'));
  // (git looks no higher than root: a TMPDIR inside some work tree must not make "outside" inside one)
  const ceiling = process.env.GIT_CEILING_DIRECTORIES;
  process.env.GIT_CEILING_DIRECTORIES = root;
  afterAll(() => {
    if (ceiling === undefined) delete process.env.GIT_CEILING_DIRECTORIES;
    else process.env.GIT_CEILING_DIRECTORIES = ceiling;
    rmSync(root, { recursive: true, force: true });
  });
  const git = (dir: string, ...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], {
      encoding: 'utf8',
    }).trim();

  function repo(name: string): string {
    const dir = join(root, name);
    mkdirSync(join(dir, 'playbooks'), { recursive: true });
    git(dir, 'init', '-q');
    writeFileSync(join(dir, 'playbooks/site.ts'), 'export default 1;\n');
    return dir;
  }

  it('names HEAD, clean until a tracked file changes; an untracked file leaves it clean', () => {
    const dir = repo('tree');
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'one');
    const head = git(dir, 'rev-parse', 'HEAD');
    const pb = join(dir, 'playbooks/site.ts');
    expect(playbookSources([pb])).toEqual([{ path: pb, git: { revision: head, dirty: false } }]);
    writeFileSync(join(dir, 'playbooks/scratch.ts'), 'untracked\n');
    expect(playbookSources([pb])[0].git).toEqual({ revision: head, dirty: false });
    writeFileSync(pb, 'export default 2;\n');
    expect(playbookSources([pb])[0].git).toEqual({ revision: head, dirty: true });
  });

  it('no revision before the first commit, and none outside a work tree', () => {
    const pb = join(repo('empty'), 'playbooks/site.ts');
    expect(playbookSources([pb])).toEqual([{ path: pb }]);
    const outside = join(root, 'plain');
    mkdirSync(outside);
    writeFileSync(join(outside, 'site.ts'), '\n');
    expect(playbookSources([join(outside, 'site.ts')])).toEqual([{ path: join(outside, 'site.ts') }]);
  });
});
