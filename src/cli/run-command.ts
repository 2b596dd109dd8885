import { execute, type ExecuteOptions, type RunEvent, type RunOutcome } from '../engine/index.ts';
import { drainPlan } from './drain-plan.ts';
import { drainMark } from '../contract/drain.ts';
import type { DrainPlan } from '../engine/drain-session.ts';
import { drainClaims } from '../history/drain-claim.ts';
import { drainLedger } from '../history/drain-ledger.ts';
import { drainOwnerFromHistory } from '../history/drain-owner.ts';
import { runner } from '../history/provenance.ts';
import { ignoredConnectionVars } from '../inventory/ansible-connection-vars.ts';
import { likelyTypos, typoWarning } from '../inventory/did-you-mean.ts';
import { HumanReporter } from '../output/human.ts';
import { defaultJournalPath, journalSink, type JournalSink } from '../output/journal.ts';
import { jsonSink } from '../output/json.ts';
import { failedHostsText, makePlan, unreachedHostsText, writePlan, type PlanFile } from '../plan/plan.ts';
import { checkPlanDrains, planDrains, unplannedDrain } from '../plan/drains.ts';
import type { HostFacts } from '../facts/types.ts';
import { gatherForRun, type FactsStep } from './facts-step.ts';
import { formatPos, InputError } from '../util/errors.ts';
import { printable, printableLines } from '../util/printable.ts';
import type { Secret } from '../util/secret.ts';
import { EXIT, exitBadInput } from './exit.ts';
import { load, type Loaded } from './load.ts';
import type { CliOptions } from './parse.ts';
import { planArgv } from './plan-args.ts';
import { askedPasswords } from './passwords.ts';
import { resumeArgv } from './resume-args.ts';
import { promptPassword } from '../util/prompt.ts';
import { recordRun } from './run-history.ts';
import type { PlaybookImporter } from './playbook.ts';
import { interruptOnSignals } from './interrupt.ts';
import type { CliStreams } from './streams.ts';
import { USAGE } from './usage.ts';
import { HandshakeGate } from '../connection/handshake-gate.ts';

/** `provision [PLAYBOOK...] -i INVENTORY [options]`: load everything, then run it (or list it, or print the usage). */
export async function runCommand(argv: string[], out: CliStreams, importPlaybook: PlaybookImporter): Promise<number> {
  let loaded;
  try {
    argv = await resumeArgv(argv, async (what) => (await promptPassword(what)).toString('utf8'));
    loaded = await load(argv, importPlaybook);
    if (loaded === 'help') {
      out.stdout.write(USAGE + '\n');
      return EXIT.OK;
    }
    if (printListing(loaded, out)) return EXIT.OK;
  } catch (e) {
    return exitBadInput(out, e, printableLines);
  }
  return runLoaded(argv, loaded, undefined, out);
}

/** --list-hosts, --list-tasks, --list-tags, --syntax-check: what loading found, printed (true) instead of a run. */
export function printListing(loaded: Loaded, out: CliStreams): boolean {
  if (loaded.listingText === undefined && !loaded.listed) return false;
  // the warnings a run of the same selection would print (a listing is often the run's rehearsal)
  writeRunWarnings(loaded, loaded.listed ?? selectedHosts(loaded).map((h) => h.name), out, undefined);
  if (loaded.listingText !== undefined) out.stdout.write(loaded.listingText);
  else out.stdout.write(`  hosts (${loaded.listed!.length}):\n${loaded.listed!.map((h) => `    ${h}\n`).join('')}`);
  return true;
}

/**
 * The run of what was loaded: journal, passwords, reporters, the hosts' facts if a play asks,
 * warnings, the hosts, the plan to write. `reviewed`: in `apply`, the plan's facts and drains.
 */
export async function runLoaded(
  argv: string[],
  loaded: Loaded,
  planned: ExecuteOptions['planned'],
  out: CliStreams,
  reviewed?: Pick<PlanFile, 'facts' | 'drains'> & { file: string },
): Promise<number> {
  const { opts, prepared } = loaded;
  const journalFile = opts.journal ?? defaultJournalPath();
  const hostNames = [...new Set(prepared.flatMap((p) => p.hosts.map((h) => h.host.name)))];
  const runStart: RunEvent = { type: 'run_start', playbooks: opts.playbooks, hosts: hostNames, check: opts.check };
  let drain: ReturnType<typeof drainPlan>;
  try {
    drain = drainPlan(loaded.inventory, selectedHosts(loaded), opts.drain, opts.drainTimeoutSec);
    if (reviewed) checkPlanDrains(reviewed.drains, drain.plan, reviewed.file);
  } catch (e) {
    return exitBadInput(out, e);
  }
  let journal: JournalSink;
  try {
    journal = openJournal(journalFile, runStart, out);
  } catch (e) {
    return exitBadInput(out, e);
  }
  let asked;
  try {
    asked = await askedPasswords(opts);
  } catch (e) {
    return exitBadInput(out, e);
  }
  const history = recordRun(argv, loaded, journalFile, hostNames, (m) =>
    out.stderr.write(`warning: ${m}
`),
  );
  const human = new HumanReporter({ diff: opts.diff, verbose: opts.verbose, recap: opts.recap, out: out.stderr });
  const json = opts.json ? jsonSink(out.stdout) : undefined;
  // the check run's drains, for --plan-out
  const drains: Array<Extract<RunEvent, { type: 'drain' }>> = [];
  const emit = (e: RunEvent) => {
    human.onEvent(e);
    json?.(e);
    journal(e);
    // (the engine's warnings, a drain waiting for another run's claim: said as they come)
    if (e.type === 'warning') out.stderr.write(`warning: ${printable(e.message)}\n`);
    if (e.type !== 'drain') return;
    drains.push(e);
    // apply: a drain its plan did not show the reviewers is said at once (and in the journal)
    const unplanned = reviewed && unplannedDrain(reviewed.drains, e);
    if (unplanned) {
      out.stderr.write(`warning: ${printable(unplanned)}\n`);
      json?.({ type: 'warning', message: unplanned });
      journal({ type: 'warning', message: unplanned });
    }
  };
  human.onEvent(runStart);
  json?.(runStart);
  for (const message of drain.notices) {
    out.stderr.write(`warning: ${printable(message)}\n`);
    json?.({ type: 'warning', message });
  }
  const interrupt = interruptOnSignals(journal, out, 'stopping the steps in flight, then writing the recap');
  let facts: FactsStep | undefined;
  try {
    const o = executeOptions(opts, asked, planned, interrupt.signal);
    try {
      facts = await gatherForRun(loaded, o, planned && (reviewed?.facts ?? {}));
    } catch (e) {
      const code = exitBadInput(out, e, printableLines);
      history.finish({ hosts: [], exitCode: code, check: opts.check, elapsedMs: 0 });
      return code;
    }
    const run = facts ? { ...loaded, prepared: facts.prepared } : loaded;
    writeRunWarnings(run, hostNames, out, json);
    const drainPlan = drainOfRun(drain.plan, history.id, (m) => out.stderr.write(`warning: ${printable(m)}\n`));
    const outcome = await execute(
      run.prepared,
      { ...(facts ? { ...o, connector: facts.connector, refused: facts.refused } : o), drain: drainPlan },
      emit,
    );
    await human.finish(outcome);
    if (opts.planOut) writePlanOut(opts.planOut, argv, loaded, outcome, out, facts?.facts, planDrains(drain.plan, drains));
    const journalFailure = journal.failure as Error | undefined; // set by a write during the run
    // Interrupted runs report hosts that were not run as failed, so the recap's code stands.
    const exitCode = journalFailure ? EXIT.FAILED : outcome.exitCode;
    history.finish({ ...outcome, exitCode });
    // (the claims of nodes whose resume failed, once the record says this run has ended: a run
    // waiting for one then takes it over, instead of meeting a live run's mark)
    drainPlan?.claims?.releaseAll();
    // (a record that could not be written was a warning: no id to look up)
    if (history.written) out.stderr.write(`run: ${history.id} (provision runs show ${history.id})\n`);
    out.stderr.write(`journal: ${journalFile}${journalFailure ? ` (incomplete: ${journalFailure.message})` : ''}\n`);
    return exitCode;
  } finally {
    await facts?.close();
    interrupt.dispose();
    journal.close();
  }
}

/**
 * The journal, opened and its first line written before any host is contacted: a journal that
 * cannot be written is bad input (exit 3); one that fails later (disk full) is a warning and the
 * run goes on, its recap on the terminal (exit 1: the record of the run is incomplete).
 */
function openJournal(file: string, runStart: RunEvent, out: CliStreams): JournalSink {
  let started = false;
  const journal = journalSink(file, (err) => {
    if (started) out.stderr.write(`\nwarning: journal ${printable(file)}: ${err.message}: the journal ends here; the run goes on\n`);
  });
  journal(runStart);
  started = true;
  if (journal.failure) {
    journal.close();
    throw new InputError(
      `cannot write the journal ${printable(file)}: ${journal.failure.message} (give another place with --journal FILE)`,
    );
  }
  return journal;
}

/** The ansible.cfg read (with -v) and what it says that racksmith does not do: before a run or a listing. */
function writeConfigNotes(opts: Loaded['opts'], out: CliStreams, json: ((e: RunEvent) => void) | undefined): void {
  if (opts.config?.file && opts.verbose > 0) out.stderr.write(`using ${printable(opts.config.file)}\n`);
  for (const message of opts.config?.warnings ?? []) {
    out.stderr.write(`warning: ${printable(message)}\n`);
    json?.({ type: 'warning', message });
  }
}

/** What the operator should hear before the run, on stderr and as `warning` events of --json. */
function writeRunWarnings(loaded: Loaded, hostNames: string[], out: CliStreams, json: ((e: RunEvent) => void) | undefined): void {
  const { opts, prepared } = loaded;
  writeConfigNotes(opts, out, json);
  const declared = new Set(prepared.flatMap((p) => [...(p.variables ?? [])]));
  for (const t of likelyTypos(selectedHosts(loaded), declared)) {
    const message = typoWarning(t);
    out.stderr.write(`warning: ${printable(message)}\n`);
    json?.({ type: 'warning', message, variable: t.variable, suggestion: t.suggestion, at: t.pos ? formatPos(t.pos) : undefined });
  }
  // what Ansible warns about too: a host named like a group, a pattern term that matches nothing
  for (const w of loaded.inventory.warnings ?? []) {
    out.stderr.write(`warning: ${printableLines(w.message)}\n`);
    json?.({ type: 'warning', message: w.message, at: w.at ? formatPos(w.at) : undefined });
  }
  for (const message of loaded.notices) {
    out.stderr.write(`warning: ${printable(message)}\n`);
    json?.({ type: 'warning', message });
  }
  for (const w of ignoredConnectionVars(loaded.inventory, new Set(hostNames))) {
    const at = w.pos ? formatPos(w.pos) : undefined;
    const message = `${at ? `${at}: ` : ''}${w.variable} is not honoured: ${w.why}`;
    out.stderr.write(`warning: ${message}\n`);
    json?.({ type: 'warning', message, variable: w.variable, at });
  }
}

/**
 * The run's drains, marked with its history id and controller: a later run of this controller
 * finds the run in its history and, should it have died with nodes drained, takes them over (one
 * run each: the one that claims the node, drain-claim.ts).
 */
function drainOfRun(plan: DrainPlan | undefined, runId: string, warn: (message: string) => void): DrainPlan | undefined {
  return (
    plan && {
      ...plan,
      mark: drainMark(runId, runner().controller),
      ownerOf: drainOwnerFromHistory(),
      claims: drainClaims(runId),
      ledger: drainLedger(runId, warn),
    }
  );
}

/** Each host the prepared plays reach, once. */
function selectedHosts(loaded: Loaded): Loaded['inventory']['hosts'] {
  return [...new Map(loaded.prepared.flatMap((p) => p.hosts.map((h) => [h.host.name, h.host] as const))).values()];
}

/** The engine's options of this run. */
function executeOptions(
  opts: CliOptions,
  asked: { password?: Secret; becomePassword?: Secret },
  planned: ExecuteOptions['planned'],
  signal: AbortSignal,
): ExecuteOptions {
  return {
    inventoryFile: opts.inventory[0],
    knownHostsFile: opts.knownHosts,
    acceptNewHostKeys: opts.acceptNew,
    connectTimeoutMs: opts.timeoutMs,
    user: opts.user,
    privateKeyFile: opts.privateKey,
    connection: opts.connection,
    sshConfigFile: opts.sshConfig,
    ...asked,
    hostTimeoutMs: opts.hostTimeoutMs,
    keepaliveMs: opts.keepaliveMs,
    handshakes: new HandshakeGate(opts.sshHandshakes, opts.sshHandshakesPerSshd),
    lockTimeoutSec: opts.lockTimeoutSec,
    check: opts.check,
    yes: opts.yes,
    forks: opts.forks,
    serial: opts.serial,
    maxFailPercent: opts.maxFailPercent,
    connectAttempts: 3,
    planned,
    // fingerprints of the facts only where a saved plan is written or checked
    hashFacts: planned !== undefined || opts.planOut !== undefined,
    signal,
  };
}

/** --plan-out: the reviewed changes saved for `provision apply FILE`. */
function writePlanOut(
  file: string,
  argv: string[],
  loaded: Loaded,
  outcome: RunOutcome,
  out: CliStreams,
  facts: Map<string, HostFacts> | undefined,
  drains: PlanFile['drains'],
): void {
  const plan = makePlan({
    argv: planArgv(argv, loaded.vault, loaded.opts),
    cwd: process.cwd(),
    selection: loaded.selection!,
    inventory: loaded.inventory,
    code: loaded.code!,
    outcome,
    facts,
    drains,
  });
  writePlan(file, plan);
  // a plan apply will refuse is said to be one now, not after the review
  const failed = failedHostsText(plan);
  const unreached = unreachedHostsText(plan);
  const why = [...(failed ? [`failed on ${failed}`] : []), ...(unreached ? [`did not reach ${unreached}`] : [])];
  out.stderr.write(
    why.length
      ? `plan written to ${file}, but its check run ${why.join(' and ')}: \`provision apply\` refuses it (\`provision plan show ${file}\` says why); make a new one\n`
      : `plan written to ${file}: review it, then \`provision apply ${file}\`\n`,
  );
}
