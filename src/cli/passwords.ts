import { vaultPasswords, VaultKeyring, type VaultOptions } from '../inventory/vault.ts';
import { promptPassword } from '../util/prompt.ts';
import { Secret } from '../util/secret.ts';
import type { CliOptions } from './parse.ts';

/** The vault passwords the options give, asked for on the terminal when they say so. */
export async function keyring(o: VaultOptions): Promise<VaultKeyring | undefined> {
  const passwords = await vaultPasswords(o, promptPassword);
  return passwords.length ? new VaultKeyring(passwords) : undefined;
}

/** The passwords the options ask for, once per run (before any host is reached). */
export async function askedPasswords(opts: CliOptions): Promise<{ password?: Secret; becomePassword?: Secret }> {
  const ask = async (prompt: string) => new Secret((await promptPassword(prompt)).toString('utf8'));
  const password = opts.askPass ? await ask('SSH password: ') : undefined;
  const becomePassword = opts.askBecomePass ? await ask('BECOME password: ') : undefined;
  return { password, becomePassword };
}
