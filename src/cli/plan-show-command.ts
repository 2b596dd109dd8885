import { parseArgs } from 'node:util';
import { planReport } from '../plan/show.ts';
import { readPlanUnverified, signatureVerifies } from '../plan/plan.ts';
import { writeReport } from '../report/write.ts';
import { InputError } from '../util/errors.ts';
import { printable } from '../util/printable.ts';
import { EXIT } from './exit.ts';
import { pickOptions } from './options.ts';
import type { CliStreams } from './streams.ts';
import { USAGE } from './usage.ts';

/** The options of `provision plan show`: the output form, and the key the plan was signed under. */
const PLAN_SHOW_OPTIONS = {
  ...pickOptions('json', 'plan-key', 'help'),
  html: { type: 'string' },
} as const;

/**
 * `provision plan show FILE [--json] [--html OUT]`: a saved plan for its reviewers, each distinct
 * change once with its hosts, then per host. A plan whose signature does not verify is still
 * shown (a reviewer may need to see what was forged), with a warning in every view, and exit 1;
 * so is a plan whose check run failed on some host or did not reach one (those hosts listed, with why).
 */
export function planShowCommand(args: string[], out: CliStreams): number {
  if (args[0] !== 'show') throw new InputError(`plan: the only subcommand is 'show' (provision plan show FILE [--json] [--html OUT])`);
  let parsed;
  try {
    parsed = parseArgs({ args: args.slice(1), options: PLAN_SHOW_OPTIONS, allowPositionals: true });
  } catch (e) {
    throw new InputError(`plan show: ${(e as Error).message}\n\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    out.stdout.write(USAGE + '\n');
    return EXIT.OK;
  }
  if (positionals.length !== 1) throw new InputError('plan show takes one plan file');
  const file = positionals[0];
  const plan = readPlanUnverified(file);
  const verified = signatureVerifies(plan);
  const report = planReport(plan, file, verified);
  for (const w of report.warnings) out.stderr.write(`WARNING: ${printable(w)}\n`);
  writeReport(report, { json: !!values.json, html: values.html }, out);
  // a plan that does not verify, or whose check run failed somewhere or did not reach a host, is no plan to apply
  return verified && !Object.keys(plan.failed ?? {}).length && !Object.keys(plan.unreached ?? {}).length ? EXIT.OK : EXIT.FAILED;
}
