import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ansibleSettings } from '../config/ansible-cfg.ts';
import type { Recap } from '../engine/events.ts';
import { checkConnectionFiles } from '../connection/connect.ts';
import { resolveBecome } from '../connection/become.ts';
import { commandLine } from '../exec/command-line.ts';
import { execEvent, type ExecEvent } from '../exec/events.ts';
import { boundedScript, newTrailerMark } from '../exec/output-bound.ts';
import { renderGroups, execSummary } from '../exec/report.ts';
import { groupResults, type ExecHostResult } from '../exec/result.ts';
import { startRecord, type RunStart } from '../history/recorder.ts';
import { runExec } from '../exec/run-exec.ts';
import { parseExtraVars } from '../inventory/extra-vars.ts';
import { selectHosts, selectLimit } from '../inventory/limit.ts';
import { loadInventory } from '../inventory/load.ts';
import type { Host, Inventory } from '../inventory/model.ts';
import { defaultJournalPath, journalSink, type JournalSink } from '../output/journal.ts';
import { jsonSink } from '../output/json.ts';
import { inventoryFingerprint } from '../plan/plan.ts';
import { InputError } from '../util/errors.ts';
import { printable, printableLines } from '../util/printable.ts';
import { EXIT, exitBadInput } from './exit.ts';
import { revealConnectionSecrets, withCliSshArgs } from './load.ts';
import { CLI_OPTIONS, EXEC_OPTIONS } from './options.ts';
import { interruptOnSignals } from './interrupt.ts';
import { parseCli, type CliOptions } from './parse.ts';
import { runArgv } from './plan-args.ts';
import { askedPasswords, keyring } from './passwords.ts';
import type { CliStreams } from './streams.ts';
import { USAGE } from './usage.ts';
import { HandshakeGate } from '../connection/handshake-gate.ts';

/** What exec loaded before any host: the options, the hosts (escalated as -b says), the command. */
interface ExecLoaded {
  opts: CliOptions;
  pattern: string;
  words: string[];
  hosts: Host[];
  script: string;
  mark: string;
  warnings: string[];
  /** What the run history records of this exec (argv with -e secrets masked, the hosts). */
  history: RunStart;
}

/**
 * `provision exec PATTERN -i INV [options] -- CMD [ARGS...]`: one command on the hosts the
 * pattern selects (within -l), reached as a run reaches them; the hosts whose output and exit
 * status are the same printed once (exec/report.ts). Exit 0 only when every host exited 0.
 * `args` is the command line after `exec`.
 */
export async function execCommand(args: string[], out: CliStreams): Promise<number> {
  let loaded: ExecLoaded | 'help';
  try {
    loaded = await loadExec(args);
  } catch (e) {
    return exitBadInput(out, e, printableLines);
  }
  if (loaded === 'help') {
    out.stdout.write(USAGE + '\n');
    return EXIT.OK;
  }
  return runLoadedExec(loaded, out);
}

async function loadExec(args: string[]): Promise<ExecLoaded | 'help'> {
  const dashes = args.indexOf('--');
  const before = dashes < 0 ? args : args.slice(0, dashes);
  const words = dashes < 0 ? [] : args.slice(dashes + 1);
  const pattern = execPattern(before);
  if (pattern === 'help') return 'help';
  const opts = parseCli(before, ansibleSettings());
  if (opts === 'help') return 'help';
  const script = commandLine(words);
  const mark = newTrailerMark();
  const vault = await keyring(opts.vault);
  const extra = parseExtraVars(opts.extraVars, vault);
  const inventory = loadInventory(opts.inventory, extra.vars, extra.sources, { vault });
  withCliSshArgs(inventory, opts);
  const hosts = selectedHosts(inventory, pattern, opts);
  checkConnectionFiles(hosts, { knownHostsFile: opts.knownHosts, privateKeyFile: opts.privateKey, sshConfigFile: opts.sshConfig });
  revealConnectionSecrets(hosts);
  // (the secrets just revealed are known to scrub now: the command is checked against them too)
  commandLine(words);
  return {
    opts,
    pattern,
    words,
    hosts,
    script: boundedScript(script, mark),
    mark,
    warnings: (inventory.warnings ?? []).map((w) => w.message),
    history: {
      argv: ['exec', ...runArgv(before, vault), '--', ...words],
      playbooks: [],
      inventoryFingerprint: inventoryFingerprint(inventory),
      labels: opts.labels,
      check: false,
      journal: resolve(opts.journal ?? defaultJournalPath()),
      hosts: hosts.map((h) => ({ name: h.name, groups: h.groups })),
    },
  };
}

/**
 * The pattern (the one positional before `--`), once every option is one exec takes: -C/--check
 * is refused with its reason, the playbook options with theirs.
 */
function execPattern(before: string[]): string | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: before, allowPositionals: true, options: CLI_OPTIONS, tokens: true });
  } catch (e) {
    throw new InputError(`exec: ${(e as Error).message}\n\n${USAGE}`);
  }
  if (parsed.values.help) return 'help';
  for (const t of parsed.tokens) {
    if (t.kind !== 'option' || t.name in EXEC_OPTIONS) continue;
    if (t.name === 'check')
      throw new InputError(
        `exec does not take ${t.rawName}: a command cannot be dry-run (exec runs what it is given; try it on one host with -l)`,
      );
    throw new InputError(`exec does not take ${t.rawName} (a playbook run's option)`);
  }
  const [pattern, ...more] = parsed.positionals;
  if (pattern === undefined) throw new InputError(`exec needs a host pattern: provision exec PATTERN -i INV -- CMD [ARGS...]\n\n${USAGE}`);
  if (more.length)
    throw new InputError(
      `exec takes one host pattern, got ${parsed.positionals.length} words before --: ${printable(more.join(' '))} (the command goes after --)`,
    );
  return pattern;
}

/** The pattern's hosts within -l, in the pattern's order, each escalated as -b and its variables say. */
function selectedHosts(inv: Inventory, pattern: string, opts: CliOptions): Host[] {
  const within = opts.limit !== undefined ? new Set(selectLimit(inv, opts.limit)) : undefined;
  const names = selectHosts(inv, pattern, 'pattern', true, { warn: (m) => (inv.warnings ??= []).push({ message: m }) }).filter(
    (n) => !within || within.has(n),
  );
  if (names.length === 0)
    throw new InputError(
      [
        `no hosts matched '${printable(pattern)}'${opts.limit !== undefined ? ` within -l '${printable(opts.limit)}'` : ''}: nothing to do`,
        ...(inv.warnings ?? []).map((w) => w.message),
      ].join('\n  '),
    );
  const byName = new Map(inv.hosts.map((h) => [h.name, h]));
  return names.map((n) => {
    const h = byName.get(n)!;
    const escalate = resolveBecome(h.connection.become, {}, opts.become);
    return escalate ? { ...h, connection: { ...h.connection, escalate } } : h;
  });
}

async function runLoadedExec(loaded: ExecLoaded, out: CliStreams): Promise<number> {
  const { opts, hosts } = loaded;
  const t0 = Date.now();
  const journalFile = opts.journal ?? defaultJournalPath();
  const start: ExecEvent = {
    type: 'run_start',
    kind: 'exec',
    command: loaded.words,
    pattern: loaded.pattern,
    hosts: hosts.map((h) => h.name),
    check: false,
    playbooks: [],
  };
  let journal: JournalSink;
  let asked;
  try {
    journal = journalSink(journalFile);
    journal(start);
    if (journal.failure)
      throw new InputError(
        `cannot write the journal ${printable(journalFile)}: ${journal.failure.message} (give another place with --journal FILE)`,
      );
    asked = await askedPasswords(opts);
  } catch (e) {
    return exitBadInput(out, e);
  }
  const json = opts.json ? jsonSink(out.stdout) : undefined;
  // the folded output is what exec is for: on stdout, unless stdout carries --json's events
  const view = opts.json ? out.stderr : out.stdout;
  for (const w of loaded.warnings) out.stderr.write(`warning: ${printableLines(w)}\n`);
  const emit = (e: ExecEvent) => {
    json?.(e);
    journal(e);
  };
  json?.(start);
  const history = startRecord(loaded.history, (m) => out.stderr.write(`warning: ${printableLines(m)}\n`));
  if (history.written) out.stderr.write(`run: ${history.id}\n`);
  const interrupt = interruptOnSignals(journal, out, 'stopping the commands in flight');
  try {
    const results = await runExec(
      hosts,
      loaded.script,
      loaded.mark,
      {
        inventoryFile: opts.inventory[0],
        knownHostsFile: opts.knownHosts,
        acceptNewHostKeys: opts.acceptNew,
        connectTimeoutMs: opts.timeoutMs,
        keepaliveMs: opts.keepaliveMs,
        handshakes: new HandshakeGate(opts.sshHandshakes, opts.sshHandshakesPerSshd),
        user: opts.user,
        privateKeyFile: opts.privateKey,
        connection: opts.connection,
        sshConfigFile: opts.sshConfig,
        ...asked,
        forks: opts.forks,
        connectAttempts: 3,
        hostTimeoutMs: opts.hostTimeoutMs,
        signal: interrupt.signal,
      },
      (r) => emit(execEvent(r)),
    );
    const exitCode = results.every((r) => r.status === 'ok') ? EXIT.OK : EXIT.FAILED;
    emit(recapEvent(results, exitCode, Date.now() - t0));
    history.finish(historyRecap(results, exitCode, Date.now() - t0));
    view.write(renderGroups(groupResults(results)));
    out.stderr.write(`${execSummary(results)}\n`);
    const journalFailure = journal.failure as Error | undefined; // set by a write during the exec
    if (journalFailure) {
      out.stderr.write(`journal: ${journalFile} (incomplete: ${journalFailure.message})\n`);
      return EXIT.FAILED;
    }
    out.stderr.write(`journal: ${journalFile}\n`);
    return exitCode;
  } finally {
    interrupt.dispose();
    journal.close();
  }
}

/** The exec's results as the run history counts hosts: one ok or failed "resource" per host. */
function historyRecap(results: readonly ExecHostResult[], exitCode: number, elapsedMs: number): Recap {
  return {
    exitCode,
    check: false,
    elapsedMs,
    hosts: results.map((r) => ({
      host: r.host,
      ok: r.status === 'ok' ? 1 : 0,
      changed: 0,
      failed: r.status === 'failed' ? 1 : 0,
      skipped: 0,
      unreachable: r.status === 'unreachable',
      execs: r.status === 'unreachable' ? 0 : 1,
      ...(r.error !== undefined ? { error: r.error } : r.status === 'failed' ? { error: `exit ${r.exitCode}` } : {}),
    })),
  };
}

function recapEvent(results: readonly ExecHostResult[], exitCode: number, elapsedMs: number): ExecEvent {
  return {
    type: 'recap',
    kind: 'exec',
    exitCode,
    check: false,
    elapsedMs,
    hosts: results.map((r) => ({ host: r.host, status: r.status, exitCode: r.exitCode })),
  };
}
