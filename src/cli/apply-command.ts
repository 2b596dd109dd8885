import { unmaskExtraVars } from '../plan/extra-secrets.ts';
import { checkPlan, plannedFrom, readPlan, type PlanFile } from '../plan/plan.ts';
import { InputError } from '../util/errors.ts';
import { printableLines } from '../util/printable.ts';
import { promptPassword } from '../util/prompt.ts';
import { EXIT, exitBadInput } from './exit.ts';
import { load } from './load.ts';
import { APPLY_ARG, APPLY_ARG_TAKES_VALUE, APPLY_OPTION_NAMES } from './options.ts';
import { checkPlanArgv, planArgvForApply } from './plan-args.ts';
import type { PlaybookImporter } from './playbook.ts';
import { printListing, runLoaded } from './run-command.ts';
import type { CliStreams } from './streams.ts';
import { USAGE } from './usage.ts';

/**
 * `provision apply PLAN [options]`: the reviewed run again, on the plan's hosts, with the plan's
 * arguments; every host whose facts or changes differ from the plan's is refused.
 * `argv` is the whole command line (`apply` first).
 */
export async function applyCommand(argv: string[], out: CliStreams, importPlaybook: PlaybookImporter): Promise<number> {
  let loaded;
  let planned;
  let reviewed;
  try {
    const { plan, file, rest, extra } = parseApply(argv.slice(1));
    checkPlanArgv(plan.argv, file);
    const recorded = planArgvForApply(plan.argv, plan.cwd, rest);
    const planArgs = await unmaskExtraVars(recorded, extra, async (what) => (await promptPassword(what)).toString('utf8'));
    loaded = await load([...planArgs, ...rest], importPlaybook, Object.keys(plan.hosts), plan.cwd, true);
    if (loaded === 'help') throw new InputError('apply takes a plan file, not --help');
    checkPlan(plan, file, {
      inventory: loaded.inventory,
      code: loaded.code!,
      maxAgeMs: loaded.opts.maxPlanAgeMs,
      selection: loaded.selection!,
    });
    planned = plannedFrom(plan);
    reviewed = { facts: plan.facts ?? {}, drains: plan.drains, file };
    if (printListing(loaded, out)) return EXIT.OK;
  } catch (e) {
    return exitBadInput(out, e, printableLines);
  }
  return runLoaded(argv, loaded, planned, out, reviewed);
}

/**
 * `apply PLAN [options]`: the plan file, plus options allowed to differ from the reviewed run
 * (output, forks, timeouts, journal), the security options (host keys: never from the plan) and
 * `-e` giving the plan's `-e` secrets again (`extra`).
 */
function parseApply(args: string[]): { plan: PlanFile; file: string; rest: string[]; extra: string[] } {
  const file = args[0];
  if (!file || file.startsWith('-')) throw new InputError(`apply needs a plan file\n\n${USAGE}`);
  const rest: string[] = [];
  const extra: string[] = [];
  const args1 = args.slice(1);
  for (let i = 0; i < args1.length; i++) {
    const a = args1[i];
    if (!APPLY_ARG.test(a))
      throw new InputError(
        `apply: ${a} cannot change a reviewed plan: apply takes only how the plan runs (${APPLY_OPTION_NAMES.join(', ')}; -e gives the plan's -e secrets again)`,
      );
    const takesValue = APPLY_ARG_TAKES_VALUE.test(a);
    if (/^(-e|--extra-vars)(=|$)/.test(a)) {
      const v = takesValue ? args1[++i] : a.slice(a.indexOf('=') + 1);
      if (v === undefined) throw new InputError('apply: -e needs a value');
      extra.push(v);
      continue;
    }
    rest.push(a);
    if (takesValue && i + 1 < args1.length) rest.push(args1[++i]);
  }
  return { plan: readPlan(file), file, rest, extra };
}
