// The command line's entry (bin/provision.js imports main from here, built as dist/src/cli.js):
// the commands themselves are in cli/, one module per command over the option table of cli/options.ts.
export { run, main, EXIT_GRACE_MS } from './cli/main.ts';
export { EXIT } from './cli/exit.ts';
export { parseCli, MAX_FORKS, MAX_TIMER_SEC, type CliOptions } from './cli/parse.ts';
export { loadPlaybook, type PlaybookImporter } from './cli/playbook.ts';
