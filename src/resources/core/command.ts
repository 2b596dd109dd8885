import { shJoin, shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { checkCommand, checkToken } from '../../util/input-value.ts';
import { checkAbsolutePath } from './file-common.ts';
import { common, type CommonOptions, type Resource } from '../../contract/resource.ts';

export interface CommandOptions extends CommonOptions {
  /** Unique name on the host (the resource id). */
  name: string;
  /** argv (each word quoted, passed literally) or a shell script written by the playbook author. */
  run: string[] | string;
  /** Skip when this path exists; after running it must exist. */
  creates?: string;
  /** Skip when this command succeeds (argv or script); after running it must succeed. */
  unless?: string[] | string;
  /**
   * Allow a command without a guard. It then runs on every converge and is reported as
   * "always runs", never as ok.
   */
  unguarded?: boolean;
}

interface CommandFacts {
  satisfied: boolean;
}

const toShell = (cmd: string[] | string) => (Array.isArray(cmd) ? shJoin(cmd) : cmd);

/** A command with a guard (`creates` / `unless`) so that converging is idempotent. */
export function command(o: CommandOptions): Resource<CommandFacts> {
  if (!o.name) throw new InputError('command: name is required');
  checkToken(o.name, 'command name');
  checkCommand(o.run, `command ${o.name}: run`);
  if (o.unless !== undefined) checkCommand(o.unless, `command ${o.name}: unless`);
  if (Array.isArray(o.run) ? o.run.length === 0 : !o.run) throw new InputError(`command ${o.name}: run is empty`);
  if (o.creates === undefined && o.unless === undefined && !o.unguarded) {
    throw new InputError(`command ${o.name}: needs a guard (creates or unless), or unguarded: true to run it every time`);
  }
  const creates = o.creates !== undefined ? checkAbsolutePath(o.creates, 'creates') : undefined;
  const guard = [
    creates !== undefined ? `[ -e ${shq(creates)} ]` : '',
    o.unless !== undefined ? `( ${toShell(o.unless)} ) >/dev/null 2>&1` : '',
  ]
    .filter(Boolean)
    .join(' || ');
  const guarded = guard !== '';
  return {
    ...common('command', `command:${o.name}`, o),
    verifiable: guarded,
    readsSharedState: true, // its guard may ask anything, anywhere
    probe: () => (guarded ? `if ${guard}; then echo satisfied; else echo pending; fi` : 'echo pending'),
    parse: (out) => ({ satisfied: out.stdout.trim() === 'satisfied' }),
    diff: (f) => (f.satisfied ? [] : [{ summary: guarded ? `run ${o.name}` : `run ${o.name} (unguarded: always runs)` }]),
    apply: () => [{ name: o.name, script: toShell(o.run) }],
  };
}
