import { optionTokens } from './options.ts';
import { unmaskExtraVars } from '../plan/extra-secrets.ts';
import { InputError } from '../util/errors.ts';
import { isRunId, readRecord } from '../history/record.ts';

/** What a resumed run does not take from the run it resumes: where that one wrote, what it resumed, what it saved. */
const NOT_RESUMED = new Set(['journal', 'resume', 'plan-out', 'help']);

/**
 * `--resume ID` (a run of the history): that run's arguments (playbooks, inventory, selection,
 * `-e`, every option but --journal, --resume and --plan-out), then this command line's own (a
 * single-valued option given here wins; -i and -e add), and `--resume` its journal: only the hosts
 * that failed, were unreachable or never finished there run. Its `-e` secrets are recorded as
 * masks: given again with -e here, or asked for. `--resume FILE` (a journal) is as before: argv
 * unchanged.
 */
export async function resumeArgv(argv: string[], ask: (what: string) => Promise<string>): Promise<string[]> {
  let tokens;
  try {
    tokens = optionTokens(argv);
  } catch {
    return argv; // loading the run says what is wrong with it, with the usage
  }
  const resume = tokens.find((t) => t.kind === 'option' && t.name === 'resume');
  if (!resume?.value || !isRunId(resume.value)) return argv;
  if (tokens.some((t) => t.kind === 'positional'))
    throw new InputError(`--resume ${resume.value} runs that run's playbooks: give no playbook here`);
  const record = readRecord(resume.value);
  if (record.argv[0] === 'exec')
    throw new InputError(`run ${record.id} was an exec: --resume takes a run of playbooks (run the command again with provision exec)`);
  if (record.argv[0] === 'apply')
    throw new InputError(
      `run ${record.id} applied a saved plan: --resume takes a run of playbooks (run \`provision apply\` with a new plan instead)`,
    );
  const kept: string[] = [];
  const extra: string[] = [];
  for (const t of tokens) {
    if (t.kind !== 'option' || t.name === 'resume') continue;
    if (t.name === 'extra-vars' && t.value !== undefined) extra.push(t.value);
    kept.push(`--${t.name}`, ...(t.value === undefined ? [] : [t.value]));
  }
  const recorded: string[] = [];
  const tokensOf = record.argv;
  for (let i = 0; i < tokensOf.length; i++) {
    const a = tokensOf[i];
    const name = a.startsWith('--') ? a.slice(2) : undefined;
    if (name !== undefined && NOT_RESUMED.has(name)) {
      // its value, if it takes one, is the next argument (recorded in the canonical `--name value` form)
      if (name !== 'help') i++;
      continue;
    }
    recorded.push(a);
  }
  const unmasked = await unmaskExtraVars(recorded, extra, ask, { noun: `run ${record.id}`, strict: false });
  return [...unmasked, ...kept, '--resume', record.journal];
}
