import { resolve } from 'node:path';
import type { VaultKeyring } from '../inventory/vault.ts';
import { maskExtraVars } from '../plan/extra-secrets.ts';
import { InputError } from '../util/errors.ts';
import { NOT_RECORDED, optionTokens, SECURITY_OPTIONS } from './options.ts';
import type { CliOptions } from './parse.ts';

/** What a plan never records: the dry run's own switches, output options, run labels and the security options. */
const notInPlans = (name: string) => NOT_RECORDED.has(name) || SECURITY_OPTIONS.has(name);

/**
 * The arguments a plan records, in one canonical form (`--name value`): the same selection,
 * minus the dry-run switches, output options, run labels and the security options, `-e` secrets as
 * placeholders with their masks.
 */
export function planArgv(argv: string[], vault: VaultKeyring | undefined, opts: CliOptions): string[] {
  // an inventory named by ansible.cfg is recorded as -i: the plan applies to the inventory reviewed
  const out: string[] = opts.inventoryFromConfig ? opts.inventory.flatMap((i) => ['--inventory', resolve(i)]) : [];
  for (const t of optionTokens(argv)) {
    if (t.kind === 'positional') {
      if (t.value.startsWith('-'))
        throw new InputError(`a plan cannot record the playbook '${t.value}' (it starts with '-'): give it as ./${t.value}`);
      out.push(t.value);
    } else if (t.kind === 'option' && !notInPlans(t.name)) {
      if (t.value === undefined) out.push(`--${t.name}`);
      else out.push(`--${t.name}`, t.name === 'extra-vars' ? maskExtraVars(t.value, vault) : t.value);
    }
  }
  return out;
}

/**
 * The arguments a run's history records (`provision runs`, `--resume ID`): all of them, in the
 * canonical form, `-e` secrets as placeholders with their masks (never their values).
 */
export function runArgv(argv: string[], vault: VaultKeyring | undefined): string[] {
  const out: string[] = [];
  for (const t of optionTokens(argv)) {
    if (t.kind === 'positional') out.push(t.value);
    else if (t.kind === 'option')
      out.push(`--${t.name}`, ...(t.value === undefined ? [] : [t.name === 'extra-vars' ? maskExtraVars(t.value, vault) : t.value]));
  }
  return out;
}

/** A plan's argv holds only what planArgv records (it is signed; this is the second lock). */
export function checkPlanArgv(argv: string[], file: string): void {
  let tokens;
  try {
    tokens = optionTokens(argv);
  } catch (e) {
    throw new InputError(`plan's argv: ${(e as Error).message}`, { file });
  }
  for (const t of tokens)
    if (t.kind === 'option' && notInPlans(t.name))
      throw new InputError(`plan's argv holds ${t.rawName}: apply takes it from its own command line only`, { file });
}

const VAULT_OPTIONS = new Set(['vault-password-file', 'vault-id', 'ask-vault-pass']);

/**
 * A plan's argv (canonical) as `apply` runs it: any vault option of apply's own command line
 * (`applyArgs`) replaces the plan's (a password file is where apply runs, not where the plan was
 * made); the recorded password files and `-e @file` resolved against the plan's directory of
 * origin, as its inventory and playbooks are.
 */
export function planArgvForApply(argv: string[], origin: string, applyArgs: string[]): string[] {
  const ownVault = optionTokens(applyArgs).some((t) => t.kind === 'option' && VAULT_OPTIONS.has(t.name));
  const out: string[] = [];
  for (const t of optionTokens(argv)) {
    if (t.kind === 'positional') out.push(t.value);
    else if (t.kind === 'option') {
      if (ownVault && VAULT_OPTIONS.has(t.name)) continue;
      out.push(`--${t.name}`, ...(t.value === undefined ? [] : [fromOrigin(t.name, t.value, origin)]));
    }
  }
  return out;
}

/** An option's value with its file path resolved against `origin` (`prompt`, or nothing, is no path). */
function fromOrigin(name: string, value: string, origin: string): string {
  if (name === 'vault-password-file') return resolve(origin, value);
  if (name === 'vault-id') {
    const at = value.indexOf('@');
    const [label, source] = at < 0 ? ['', value] : [value.slice(0, at + 1), value.slice(at + 1)];
    return source === 'prompt' || source === '' ? value : label + resolve(origin, source);
  }
  if (name === 'extra-vars' && value.startsWith('@')) return '@' + resolve(origin, value.slice(1));
  return value;
}
