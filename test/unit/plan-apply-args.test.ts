// What `apply` runs of a plan's recorded argv: its own vault options win over the plan's (a
// relative password file of the review once failed `apply` from another directory, even with
// `apply --vault-password-file /abs`), and the recorded paths resolve where the plan was made.
import { describe, expect, it } from 'vitest';
import { checkPlanArgv, planArgv, planArgvForApply } from '../../src/cli/plan-args.ts';
import type { CliOptions } from '../../src/cli/parse.ts';
import { InputError } from '../../src/util/errors.ts';

const recorded = [
  'site.ts',
  '--inventory',
  'inv.yaml',
  '--vault-password-file',
  'vpw.txt',
  '--vault-id',
  'dev@dev.txt',
  '--extra-vars',
  '@vars.yaml',
];

describe('planArgvForApply', () => {
  it("apply's own vault options replace the plan's", () => {
    expect(planArgvForApply(recorded, '/srv/pb', ['--vault-password-file', '/abs/vpw.txt'])).toEqual([
      'site.ts',
      '--inventory',
      'inv.yaml',
      '--extra-vars',
      '@/srv/pb/vars.yaml',
    ]);
    expect(planArgvForApply(recorded, '/srv/pb', ['--ask-vault-pass', '--json'])).not.toContain('--vault-id');
    expect(planArgvForApply(recorded, '/srv/pb', ['--vault-id=prod@/k'])).not.toContain('--vault-password-file');
  });

  it("without any, the plan's password files and -e @file resolve against its directory of origin", () => {
    expect(planArgvForApply(recorded, '/srv/pb', ['--forks', '5'])).toEqual([
      'site.ts',
      '--inventory',
      'inv.yaml',
      '--vault-password-file',
      '/srv/pb/vpw.txt',
      '--vault-id',
      'dev@/srv/pb/dev.txt',
      '--extra-vars',
      '@/srv/pb/vars.yaml',
    ]);
  });

  it('a prompt is no path; other values are as recorded', () => {
    const argv = [
      '--vault-id',
      'prompt',
      '--vault-id',
      'dev@prompt',
      '--vault-password-file',
      '/abs/p',
      '--extra-vars',
      '{"a": 1}',
      '--ask-vault-pass',
    ];
    expect(planArgvForApply(argv, '/srv/pb', [])).toEqual(argv);
  });
});

describe('planArgv', () => {
  const opts = { inventory: ['inv.yaml'] } as CliOptions;

  it('records no output option: apply takes --json, -D and -v from its own command line', () => {
    expect(planArgv(['site.ts', '-i', 'inv.yaml', '--check', '--json', '-D', '-vv', '--diff', '-l', 'n1'], undefined, opts)).toEqual([
      'site.ts',
      '--inventory',
      'inv.yaml',
      '--limit',
      'n1',
    ]);
  });

  it('records no run label: it describes the check run, apply labels its own run with its own --label', () => {
    expect(planArgv(['site.ts', '--label', 'change=CHG-1', '--check', '--label=team=storage', '-l', 'n1'], undefined, opts)).toEqual([
      'site.ts',
      '--limit',
      'n1',
    ]);
  });

  it('a plan whose argv holds one is refused', () => {
    expect(() => checkPlanArgv(['site.ts', '--json'], 'p.plan')).toThrow(/holds --json: apply takes it from its own command line only/);
    expect(() => checkPlanArgv(['site.ts', '--label', 'change=CHG-1'], 'p.plan')).toThrow(
      /holds --label: apply takes it from its own command line only/,
    );
    expect(() => checkPlanArgv(['site.ts', '--diff'], 'p.plan')).toThrow(InputError);
  });
});
