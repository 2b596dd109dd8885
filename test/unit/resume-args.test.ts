// Issue #37, `--resume ID`: a run of the history again, as its recorded argv (playbooks, options,
// -e with its secrets given again or asked for) then this command line's own, on the hosts its
// journal says did not end well; what is not a run id is left as it was (`--resume JOURNAL`).
import { describe, expect, it } from 'vitest';
import { resumeArgv } from '../../src/cli/resume-args.ts';
import { maskExtraVars } from '../../src/plan/extra-secrets.ts';
import { newRunId, writeRecord, type RunRecord } from '../../src/history/record.ts';
import { Secret } from '../../src/util/secret.ts';
import { scratchStateDir } from './facts.ts';

scratchStateDir();

function recorded(argv: string[]): RunRecord {
  const r: RunRecord = {
    id: newRunId(),
    start: new Date().toISOString(),
    end: new Date().toISOString(),
    user: 'ops',
    controller: 'ctl',
    argv,
    cwd: '/srv',
    playbooks: [],
    inventoryFingerprint: 'f',
    labels: {},
    check: false,
    journal: '/var/j/run.ndjson',
    exitCode: 1,
    hosts: {},
  };
  writeRecord(r);
  return r;
}

const never = async (): Promise<string> => {
  throw new Error('asked');
};

describe('resumeArgv', () => {
  it('a journal path, or no --resume: argv as it was', async () => {
    expect(await resumeArgv(['site.ts', '--resume', 'old.ndjson'], never)).toEqual(['site.ts', '--resume', 'old.ndjson']);
    expect(await resumeArgv(['site.ts', '-i', 'inv'], never)).toEqual(['site.ts', '-i', 'inv']);
  });

  it("the run's argv but its journal, resume and plan-out; then this command line's; then --resume its journal", async () => {
    const r = recorded([
      'site.ts',
      '--inventory',
      'inv.yaml',
      '--limit',
      'rack1',
      '--journal',
      '/x',
      '--resume',
      '/y',
      '--check',
      '--plan-out',
      'p',
      '--label',
      'change=C1',
    ]);
    expect(await resumeArgv(['--resume', r.id, '-f', '5', '--label', 'change=C2'], never)).toEqual([
      'site.ts',
      '--inventory',
      'inv.yaml',
      '--limit',
      'rack1',
      '--check',
      '--label',
      'change=C1',
      '--forks',
      '5',
      '--label',
      'change=C2',
      '--resume',
      '/var/j/run.ndjson',
    ]);
  });

  it('an -e secret recorded as its mask: given again with -e, or asked for; a wrong one refused', async () => {
    const secret = new Secret('s3cret-value');
    const r = recorded(['site.ts', '--extra-vars', maskExtraVars(JSON.stringify({ token: { secret: secret.reveal() } }), undefined)]);
    const given = JSON.stringify({ token: { secret: 's3cret-value' } });
    // with another -e, plain, that is no secret of the run's: taken as any option given here
    const out = await resumeArgv(['--resume', r.id, '-e', given, '-e', 'mode=on'], never);
    expect(JSON.parse(out[2])).toEqual({ token: { secret: 's3cret-value' } });
    expect(out.slice(3)).toEqual(['--extra-vars', given, '--extra-vars', 'mode=on', '--resume', '/var/j/run.ndjson']);
    const asked = await resumeArgv(['--resume', r.id], async () => 's3cret-value');
    expect(JSON.parse(asked[2])).toEqual({ token: { secret: 's3cret-value' } });
    await expect(resumeArgv(['--resume', r.id], async () => 'wrong')).rejects.toThrow(/not the one run \S+ was made with/);
  });

  it.each<[string, (id: string) => string[], RegExp]>([
    ['a playbook given too', (id) => ['site.ts', '--resume', id], /give no playbook here/],
    ['a run not recorded', () => ['--resume', '20200101T000000Z-000000'], /no run 20200101T000000Z-000000 in /],
  ])('%s: bad input', async (_, argv, error) => {
    const r = recorded(['site.ts']);
    await expect(resumeArgv(argv(r.id), never)).rejects.toThrow(error);
  });

  it('a run of apply is not resumed', async () => {
    const r = recorded(['apply', 'w.plan']);
    await expect(resumeArgv(['--resume', r.id], never)).rejects.toThrow(/applied a saved plan/);
  });
});
