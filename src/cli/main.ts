import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InputError } from '../util/errors.ts';
import { printableLines } from '../util/printable.ts';
import { useTeamKey } from '../util/state-dir.ts';
import { scrub } from '../util/secret.ts';
import { EXIT, exitBadInput } from './exit.ts';
import { importSource, PACKAGE_ROOT, type PlaybookImporter } from './playbook.ts';
import { runCommand } from './run-command.ts';
import { scrubbing, type CliStreams } from './streams.ts';
import { USAGE } from './usage.ts';

/** The command its first word names (`apply`, `inventory`; anything else is a run). Returns the exit code; never calls process.exit itself. */
export async function run(argv: string[], out: CliStreams = process, importPlaybook: PlaybookImporter = importSource): Promise<number> {
  out = scrubbing(out);
  // (before the plan key: a version asked for a bug report does not depend on RACKSMITH_PLAN_KEY)
  if (argv[0] === '--version') {
    out.stdout.write(versionText());
    return EXIT.OK;
  }
  try {
    const teamKey = planKeyFile(argv);
    if (teamKey !== undefined) useTeamKey(resolve(teamKey));
  } catch (e) {
    return exitBadInput(out, e, printableLines);
  }
  const sub = Object.hasOwn(SUBCOMMANDS, argv[0] ?? '') ? SUBCOMMANDS[argv[0] as keyof typeof SUBCOMMANDS] : undefined;
  if (!sub) return runCommand(argv, out, importPlaybook);
  // `provision apply --help` and the like: the usage, as for a run (before `--`: exec's command may take -h)
  if (asksHelp(argv)) {
    out.stdout.write(USAGE + '\n');
    return EXIT.OK;
  }
  return sub(argv, out, importPlaybook);
}

/**
 * The commands named by the first word; anything else is a run. Their modules load only when
 * named: a run (the common case) starts without them. The listing commands' bad input is exit 3
 * here; apply and exec report their own (they may have started a run).
 */
const SUBCOMMANDS = {
  apply: async (argv: string[], out: CliStreams, importPlaybook: PlaybookImporter) =>
    (await import('./apply-command.ts')).applyCommand(argv, out, importPlaybook),
  exec: async (argv: string[], out: CliStreams) => (await import('./exec-command.ts')).execCommand(argv.slice(1), out),
  inventory: listing(async (args, out) => (await import('./inventory-command.ts')).inventoryCommand(args, out)),
  plan: listing(async (args, out) => (await import('./plan-show-command.ts')).planShowCommand(args, out)),
  runs: listing(async (args, out) => (await import('./runs-command.ts')).runsCommand(args, out)),
} as const;

function listing(command: (args: string[], out: CliStreams) => Promise<number>) {
  return async (argv: string[], out: CliStreams): Promise<number> => {
    try {
      return await command(argv.slice(1), out);
    } catch (e) {
      return exitBadInput(out, e, printableLines);
    }
  };
}

/** `provision --version`: as ansible-playbook's, what runs and from where (for a bug report or an audit). */
function versionText(): string {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
  return `provision (racksmith) ${pkg.version}\n  installed at ${PACKAGE_ROOT}\n  node ${process.version}\n`;
}

/** -h or --help among a subcommand's own arguments (those before `--`). */
function asksHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/**
 * --plan-key FILE (else $RACKSMITH_PLAN_KEY): read before anything else, since every secret's mask
 * and every plan signature of the run is made under it.
 */
function planKeyFile(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length && argv[i] !== '--'; i++) {
    let file: string | undefined;
    if (argv[i] === '--plan-key') {
      if (i + 1 >= argv.length) throw new InputError('--plan-key needs a key file');
      file = argv[i + 1];
    } else if (argv[i].startsWith('--plan-key=')) file = argv[i].slice('--plan-key='.length);
    if (file === undefined) continue;
    if (file.trim() === '') throw new InputError("--plan-key '' names nothing (an unset variable?)");
    return file;
  }
  return process.env.RACKSMITH_PLAN_KEY || undefined;
}

/**
 * A reader that went away (`provision runs --json | head -1`) is no reason to stop: a run goes on
 * to its end with its journal, and what it would print is dropped. Any other error of the two
 * streams stays what it was, an uncaught error.
 */
function ignoreClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') throw e;
    });
}

/** How long the process may stay after the run has ended before it is ended (see main). */
export const EXIT_GRACE_MS = 3000;

export async function main(argv: string[], importPlaybook?: PlaybookImporter): Promise<void> {
  ignoreClosedOutput();
  try {
    process.exitCode = await run(argv, process, importPlaybook);
  } catch (e) {
    process.stderr.write(scrub(`internal error: ${printableLines(String((e as Error).stack ?? e))}\n`));
    process.exitCode = EXIT.FAILED;
  }
  // The run is over, recap and journal written. Nothing should be left open, and normally the
  // process ends before this timer (unref'd: it keeps nothing alive) fires; a handle a failure
  // left open (a socket, a timer) must not keep it alive for ever: a CI job would hang.
  setTimeout(() => {
    process.stderr.write(`warning: still open after the run (${process.getActiveResourcesInfo().join(', ')}): exiting\n`);
    process.exit();
  }, EXIT_GRACE_MS).unref();
}
