// The run record of `apply` names the playbooks the plan was made with, resolved where it was made
// (its cwd), as loading found them: it once named them resolved against apply's working directory
// (`/elsewhere/site.ts (not in a git work tree)`), losing the git revision.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { load } from '../../src/cli/load.ts';
import { importSource } from '../../src/cli/playbook.ts';
import { recordRun } from '../../src/cli/run-history.ts';
import { readRecord } from '../../src/history/record.ts';
import { scratchStateDir } from './facts.ts';

const repoRoot = join(import.meta.dirname, '../..');

describe('the run record of a run loaded from a plan', () => {
  scratchStateDir();

  it('names the playbook in the plan’s directory, not in the working directory', async () => {
    const origin = mkdtempSync(join(tmpdir(), 'rs-origin-'));
    writeFileSync(join(origin, 'inv.yaml'), 'all:\n  hosts:\n    here:\n      ansible_connection: local\n');
    writeFileSync(
      join(origin, 'pb.ts'),
      `import { file, playbook } from ${JSON.stringify(join(repoRoot, 'src/index.ts'))};
export default playbook({ name: 'p', hosts: 'all', resources: () => [file({ path: ${JSON.stringify(join(origin, 'out'))}, content: 'x' })] });
`,
    );
    expect(process.cwd()).not.toBe(origin);
    const loaded = await load(['pb.ts', '--inventory', 'inv.yaml'], importSource, ['here'], origin, true);
    if (loaded === 'help') throw new Error('help');
    const recorder = recordRun(['apply', 'p.plan'], loaded, join(origin, 'j.ndjson'), ['here'], () => {});
    expect(readRecord(recorder.id).playbooks.map((p) => p.path)).toEqual([join(origin, 'pb.ts')]);
  });
});
