// A file, directory or line whose wanted owner or group does not exist on the host fails in the
// check run and in its saved plan, before anything runs, as Ansible's file module fails in check
// mode ("chown failed: failed to look up user X"): a reviewer sees it at review time, not as a
// chown that fails the apply. The host's other resources are unaffected; an existing owner is a
// pending change, converges, and a converged host pays no process for looking names up.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, repoRoot, writeInventory, type CliRun } from './helpers.ts';
import { probeScript, processesOf } from './probe-processes.ts';

const H = 'tb1';
const dir = mkdtempSync(join(tmpdir(), 'rs-file-owners-'));
let inv: string;

const NO_USER = /^refused: cannot chown (\S+): no user 'nosuchuser' on this host \(getent passwd finds none\)/;
const NO_GROUP = /^refused: cannot chown (\S+): no group 'nosuchgroup' on this host \(getent group finds none\)/;

/** The wanted owners of the resources that can be given theirs: `ops` (uid 1000 on the bed), ids without a name. */
const GOOD = (ops: string, opsGroup: string) => `
    file({ path: '/etc/rs-owner-ops', content: 'x\\n', owner: ${ops}, group: ${opsGroup} }),
    directory({ path: '/srv/rs-dir-ops', owner: ${ops} }),
    line({ path: '/etc/rs-line-ops', line: 'a=1', create: true, owner: ${ops} }),
    file({ path: '/etc/rs-owner-ids', content: 'x\\n', owner: 4242, group: '4343' }),
    file({ path: '/etc/rs-plain', content: 'plain\\n' }),`;
/** Resources whose owner or group the host does not know. */
const BAD = `
    file({ path: '/etc/rs-owner-bad', content: 'x\\n', owner: 'nosuchuser' }),
    file({ path: '/etc/rs-group-bad', content: 'x\\n', owner: 'ops', group: 'nosuchgroup' }),
    directory({ path: '/srv/rs-dir-bad', owner: 'nosuchuser' }),
    line({ path: '/etc/rs-line-ops', line: 'b=2', owner: 'nosuchuser' }),`;

function playbook(name: string, resources: string): string {
  const path = join(dir, `${name}.mts`);
  writeFileSync(
    path,
    `import { directory, file, line, playbook } from ${JSON.stringify(join(repoRoot, 'src/index.ts'))};
export default playbook({ name: '${name}', hosts: 'all', resources: () => [${resources}
  ] });
`,
  );
  return path;
}

const run = (pb: string, ...args: string[]) => provision(['-i', inv, pb, '--json', ...args]);
const resource = (r: CliRun, id: string) => r.events.find((e) => e.type === 'resource' && e.id === id)!;
const stat = async (paths: string[]) => (await tb.hostExec(H, `stat -c '%n %U:%G' ${paths.join(' ')} 2>&1`)).stdout.trim().split('\n');

beforeAll(async () => {
  await tb.reset([H]);
  inv = writeInventory({ hosts: [H] });
  // root's file already there: `ops` is a pending owner change, not only a new file
  await tb.hostExec(H, "printf 'x\\n' > /etc/rs-owner-ops");
});

describe('a wanted owner or group the host does not know', () => {
  it('fails its resource in --check and in the saved plan (exit 1), the others still pending: an existing owner as a change', async () => {
    const pb = playbook('owners', GOOD("'ops'", "'ops'") + BAD);
    const plan = join(dir, 'owners.plan');
    const check = await run(pb, '--check', '--plan-out', plan);
    expect(check.code, check.stderr).toBe(1);
    for (const [id, why] of [
      ['file:/etc/rs-owner-bad', NO_USER],
      ['file:/etc/rs-group-bad', NO_GROUP],
      ['directory:/srv/rs-dir-bad', NO_USER],
      ['line:/etc/rs-line-ops:b=2', NO_USER],
    ] as const) {
      const e = resource(check, id);
      expect(e.status, id).toBe('failed');
      expect(e.error, id).toMatch(why);
      expect(e.error.match(why)![1], id).toBe(id.split(':')[1]);
    }
    const summaries = (id: string) => resource(check, id).changes.map((c: { summary: string }) => c.summary);
    expect(resource(check, 'file:/etc/rs-owner-ops').status).toBe('changed');
    expect(summaries('file:/etc/rs-owner-ops')).toEqual(['/etc/rs-owner-ops: owner root → ops', '/etc/rs-owner-ops: group root → ops']);
    expect(summaries('directory:/srv/rs-dir-ops')).toEqual(['create directory /srv/rs-dir-ops']);
    expect(summaries('line:/etc/rs-line-ops:a=1')).toEqual(['create /etc/rs-line-ops with line "a=1"']);
    expect(summaries('file:/etc/rs-owner-ids')).toEqual(['create /etc/rs-owner-ids (2 bytes)']);
    expect(summaries('file:/etc/rs-plain')).toEqual(['create /etc/rs-plain (6 bytes)']);
    expect(recaps(check)[H]).toMatchObject({ failed: 4, changed: 5 });

    // the plan shows the failures to its reviewer, and apply refuses it
    const show = await provision(['plan', 'show', plan]);
    expect(show.stdout).toMatch(
      /file:\/etc\/rs-owner-bad \(failed\)[^\n]*\n\s+error: refused: cannot chown \/etc\/rs-owner-bad: no user 'nosuchuser' on this host/,
    );
    const apply = await provision(['apply', plan]);
    expect(apply.code).toBe(3);
    expect(apply.stderr).toMatch(/check run failed on 1 host\(s\) \(tb1\)/);
    expect(await stat(['/etc/rs-owner-ops', '/etc/rs-plain'])).toEqual([
      '/etc/rs-owner-ops root:root',
      "stat: cannot statx '/etc/rs-plain': No such file or directory",
    ]);
  });

  it('fails them in apply too, before any step; the others converge and re-run with no change, no process spent on names', async () => {
    const pb = playbook('owners', GOOD("'ops'", "'ops'") + BAD);
    const first = await run(pb);
    expect(first.code, first.stderr).toBe(1);
    for (const id of ['file:/etc/rs-owner-bad', 'file:/etc/rs-group-bad', 'directory:/srv/rs-dir-bad']) {
      expect(resource(first, id).status, id).toBe('failed');
      expect(resource(first, id).error, id).toMatch(/^refused: cannot chown /);
    }
    expect(await stat(['/etc/rs-owner-bad', '/etc/rs-group-bad', '/srv/rs-dir-bad'])).toEqual([
      "stat: cannot statx '/etc/rs-owner-bad': No such file or directory",
      "stat: cannot statx '/etc/rs-group-bad': No such file or directory",
      "stat: cannot statx '/srv/rs-dir-bad': No such file or directory",
    ]);
    expect(await stat(['/etc/rs-owner-ops', '/srv/rs-dir-ops', '/etc/rs-line-ops', '/etc/rs-owner-ids', '/etc/rs-plain'])).toEqual([
      '/etc/rs-owner-ops ops:ops',
      '/srv/rs-dir-ops ops:root',
      '/etc/rs-line-ops ops:root',
      '/etc/rs-owner-ids UNKNOWN:UNKNOWN',
      '/etc/rs-plain root:root',
    ]);

    const good = playbook('good', GOOD("'ops'", "'ops'"));
    const again = await run(good);
    expect(again.code, again.stderr).toBe(0);
    expect(recaps(again)[H]).toMatchObject({ ok: 5, changed: 0, failed: 0 });
    const check = await run(good, '--check');
    expect(check.code).toBe(0);

    // converged, names cost what ids cost: the lookup runs only for a name no probed file is owned by
    expect(await processesOf(H, await probeScript(inv, good, H))).toBe(
      await processesOf(H, await probeScript(inv, playbook('ids', GOOD('1000', '1000')), H)),
    );
  });
});
