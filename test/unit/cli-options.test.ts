// The option table of src/cli/options.ts: what `provision apply` accepts and what a plan never
// records are derived from it. These tests hold the derivation to the lists kept by hand before
// the table (issue #35), spelling by spelling.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  APPLY_ARG,
  APPLY_ARG_TAKES_VALUE,
  APPLY_OPTION_NAMES,
  CLI_OPTIONS,
  NOT_RECORDED,
  SECURITY_OPTIONS,
} from '../../src/cli/options.ts';
import { USAGE } from '../../src/cli/usage.ts';
import { cli } from './run-cli.ts';

// parseApply's two regexes and the plan's two sets, as they were written by hand (plus --plan-key,
// added since: a security option apply takes; --recap, an output option no plan records; and
// --label, a run's history labels, which apply takes for its own run; and --ssh-handshakes and
// --ssh-handshakes-per-sshd, how many hosts connect at once, options of how a run goes like --forks; less --drain and --drain-timeout,
// which a plan's reviewers approve since plan version 7)
const HAND_ALLOWED =
  /^(--json|-v+|--verbose|-f|--forks|--journal|--max-plan-age|--known-hosts|--ssh-accept-new|--timeout|-T|--host-timeout|--ssh-keepalive|--ssh-handshakes|--ssh-handshakes-per-sshd|--lock-timeout|-D|--diff|--vault-password-file|--vault-id|--ask-vault-pass|-e|--extra-vars|-b|--become|--become-user|--become-method|-K|--ask-become-pass|-k|--ask-pass|-u|--user|--private-key|--key-file|-c|--connection|--ssh-common-args|--ssh-extra-args|-F|--ssh-config|--plan-key|--recap|--label)(=.*)?$/;
const HAND_TAKES_VALUE =
  /^(-f|--forks|--journal|--max-plan-age|--known-hosts|--timeout|-T|--host-timeout|--ssh-keepalive|--ssh-handshakes|--ssh-handshakes-per-sshd|--lock-timeout|--vault-password-file|--vault-id|-e|--extra-vars|--become-user|--become-method|-u|--user|--private-key|--key-file|-c|--connection|--ssh-common-args|--ssh-extra-args|-F|--ssh-config|--plan-key|--recap|--label)$/;
const HAND_SECURITY = new Set([
  'known-hosts',
  'ssh-accept-new',
  'ask-pass',
  'user',
  'private-key',
  'key-file',
  'connection',
  'ssh-common-args',
  'ssh-extra-args',
  'ssh-config',
  'plan-key',
]);
const handIsSecurity = (name: string) => HAND_SECURITY.has(name) || /become/.test(name);
// (and the output options: a plan made with --json or -D once forced them on apply; and --label: a
// plan made with one once labelled apply's run with it)
const HAND_NOT_RECORDED = new Set(['check', 'plan-out', 'journal', 'resume', 'help', 'recap', 'json', 'diff', 'verbose', 'label']);

const names = Object.keys(CLI_OPTIONS);
const shorts = Object.values(CLI_OPTIONS).flatMap((o) => ('short' in o ? [o.short] : []));
/** Every spelling of every option, with and without `=value`, grouped and repeated shorts, and some that are no option. */
const spellings = [
  ...names.map((n) => `--${n}`),
  ...shorts.map((s) => `-${s}`),
  ...shorts.map((s) => `-${s}${s}`),
  ...['-vvv', '-bK', '-Cv', '-x', '--nope', '--forksx', '--', '-', 'plan.json', '--verbose-x', '--ssh', '--become-userx'],
];
const args = spellings.flatMap((a) => [a, `${a}=x`, `${a}=`]);

describe('the option table', () => {
  it('apply accepts exactly the arguments the hand-kept list accepted', () => {
    const differ = args.filter((a) => APPLY_ARG.test(a) !== HAND_ALLOWED.test(a));
    expect(differ).toEqual([]);
    expect(args.filter((a) => APPLY_ARG.test(a)).length).toBeGreaterThan(50);
  });

  it("apply's refusal lists every option it takes, and no other", () => {
    const listed = new Set(APPLY_OPTION_NAMES.flatMap((n) => n.split('/')));
    const taken = args.filter((a) => /^--?[a-z-]+$/i.test(a) && !/^-[a-z]{2,}$/i.test(a) && APPLY_ARG.test(a));
    expect([...listed].sort()).toEqual([...new Set(taken)].sort());
  });

  it('apply reads the next argument as the value of exactly the options it did', () => {
    const differ = args.filter((a) => APPLY_ARG_TAKES_VALUE.test(a) !== HAND_TAKES_VALUE.test(a));
    expect(differ).toEqual([]);
  });

  it.each([
    ['--json', true, false],
    ['-v', true, false],
    ['-vvv', true, false],
    ['-f', true, true],
    ['--forks=5', true, false],
    ['-e', true, true],
    ['--extra-vars', true, true],
    ['-b', true, false],
    ['-K', true, false],
    ['-F', true, true],
    ['--key-file', true, true],
    ['--journal', true, true],
    ['--max-plan-age', true, true],
    ['-C', false, false],
    ['--check', false, false],
    ['--plan-out', false, false],
    ['-l', false, false],
    ['--limit', false, false],
    ['-t', false, false],
    ['--yes', false, false],
    ['--resume', false, false],
    ['-i', false, false],
    ['--list-hosts', false, false],
    ['-bK', false, false],
    ['-ff', false, false],
  ])('apply %s: accepted %s, value in the next argument %s', (arg, accepted, takesValue) => {
    expect(APPLY_ARG.test(arg)).toBe(accepted);
    expect(APPLY_ARG_TAKES_VALUE.test(arg)).toBe(takesValue);
  });

  it('a plan leaves out the options it left out before: the security options (every become one), the dry-run switches and output', () => {
    expect(names.filter((n) => SECURITY_OPTIONS.has(n) !== handIsSecurity(n))).toEqual([]);
    expect(names.filter((n) => NOT_RECORDED.has(n) !== HAND_NOT_RECORDED.has(n))).toEqual([]);
    expect(names.filter((n) => /become/.test(n)).every((n) => SECURITY_OPTIONS.has(n))).toBe(true);
  });

  it('every security option is one apply takes (else a plan could never be applied with it)', () => {
    expect([...SECURITY_OPTIONS].filter((n) => !APPLY_ARG.test(`--${n}`))).toEqual([]);
  });

  it('the usage names every option', () => {
    expect(names.filter((n) => !USAGE.includes(`--${n}`))).toEqual([]);
  });
});

describe('--version', () => {
  it("prints the package's version, where it is installed and Node's version; exit 0", async () => {
    const version = (JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }).version;
    const r = await cli(['--version']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      `provision (racksmith) ${version}\n  installed at ${resolve(import.meta.dirname, '../..')}\n  node ${process.version}\n`,
    );
  });

  it('does not depend on the plan key (RACKSMITH_PLAN_KEY naming a missing file)', async () => {
    const before = process.env.RACKSMITH_PLAN_KEY;
    process.env.RACKSMITH_PLAN_KEY = '/nonexistent/rs-plan-key';
    try {
      const r = await cli(['--version']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^provision \(racksmith\) /);
    } finally {
      if (before === undefined) delete process.env.RACKSMITH_PLAN_KEY;
      else process.env.RACKSMITH_PLAN_KEY = before;
    }
  });
});
