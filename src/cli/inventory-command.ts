import { parseArgs } from 'node:util';
import { ansibleSettings } from '../config/ansible-cfg.ts';
import { parseExtraVars } from '../inventory/extra-vars.ts';
import { selectHosts } from '../inventory/limit.ts';
import { hostVarsOf, inventoryList, pythonJson } from '../inventory/list-json.ts';
import { loadInventory } from '../inventory/load.ts';
import { InputError } from '../util/errors.ts';
import { printableLines } from '../util/printable.ts';
import { EXIT } from './exit.ts';
import { pickOptions } from './options.ts';
import { configVault, inventoryRequired } from './parse.ts';
import { keyring } from './passwords.ts';
import { type CliStreams } from './streams.ts';
import { USAGE } from './usage.ts';

/** The options of `provision inventory`: the run's inventory, -e and vault options, and what to print. */
const INVENTORY_OPTIONS = {
  ...pickOptions('inventory', 'extra-vars', 'vault-password-file', 'vault-id', 'ask-vault-pass'),
  list: { type: 'boolean' },
  host: { type: 'string' },
} as const;

/**
 * `provision inventory -i INV --list | --host H`: what racksmith resolved, in ansible-inventory's
 * JSON, so the two tools can be compared (secrets masked, vaulted values as their ciphertext).
 */
export async function inventoryCommand(args: string[], out: CliStreams): Promise<number> {
  const { values } = (() => {
    try {
      return parseArgs({ args, options: INVENTORY_OPTIONS });
    } catch (e) {
      throw new InputError(`inventory: ${(e as Error).message}\n\n${USAGE}`);
    }
  })();
  const cfg = ansibleSettings();
  const inventory = values.inventory?.length ? values.inventory : cfg.inventory?.value;
  if (!inventory?.length) throw new InputError(`inventory: ${inventoryRequired(cfg)}\n\n${USAGE}`);
  if (!!values.list === (values.host !== undefined)) throw new InputError('inventory: give exactly one of --list or --host HOST');
  const vault = await keyring(
    configVault(
      {
        vaultIds: values['vault-id'] ?? [],
        passwordFiles: values['vault-password-file'] ?? [],
        askVaultPass: !!values['ask-vault-pass'],
      },
      cfg,
    ),
  );
  const extra = parseExtraVars(values['extra-vars'] ?? [], vault);
  const inv = loadInventory(inventory, extra.vars, extra.sources, { vault });
  for (const w of inv.warnings ?? []) out.stderr.write(`warning: ${printableLines(w.message)}\n`);
  if (values.list) {
    out.stdout.write(pythonJson(inventoryList(inv)) + '\n');
    return EXIT.OK;
  }
  const names = selectHosts(inv, values.host!, '--host');
  if (names.length !== 1)
    throw new InputError(`inventory --host: '${values.host}' must name exactly one host (it matches ${names.length})`);
  out.stdout.write(pythonJson(hostVarsOf(inv.hosts.find((h) => h.name === names[0])!)) + '\n');
  return EXIT.OK;
}
