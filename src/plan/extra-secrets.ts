/**
 * `-e` secrets in saved plans: a plan records an `-e` mapping with each secret replaced by a
 * placeholder holding its mask, never the secret; apply asks for each again (its own `-e`, or
 * the terminal) and checks it against the mask. `-e @file` is recorded as the path: apply reads
 * the file again, as it reads the inventory again.
 */
import { parseExtraVars } from '../inventory/extra-vars.ts';
import type { Vars } from '../inventory/model.ts';
import type { VaultKeyring } from '../inventory/vault.ts';
import { InputError } from '../util/errors.ts';
import { isSecret, maskSecret, Secret } from '../util/secret.ts';

/** The key of a placeholder: `{"racksmith_secret_mask": "<secret hmac:…>"}` stands where a secret was. */
export const SECRET_MASK_KEY = 'racksmith_secret_mask';

type Path = Array<string | number>;

function hasSecret(v: unknown): boolean {
  if (isSecret(v)) return true;
  return v !== null && typeof v === 'object' && Object.values(v).some(hasSecret);
}

function mapValue(v: unknown, path: Path, leaf: (v: unknown, path: Path) => unknown): unknown {
  const own = leaf(v, path);
  if (own !== undefined) return own;
  if (v === null || typeof v !== 'object' || isSecret(v)) return v;
  if (Array.isArray(v)) return v.map((x, i) => mapValue(x, [...path, i], leaf));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapValue(x, [...path, k], leaf)]));
}

function toJson(v: unknown): string {
  return JSON.stringify(v, (_, x) => {
    if (typeof x === 'bigint')
      throw new InputError('-e: a mapping with a secret and an integer beyond 2^53 cannot be saved in a plan; use -e @file');
    return x;
  });
}

/** An `-e` value as a plan records it: as given, or (when it holds secrets) JSON with placeholders. */
export function maskExtraVars(value: string, vault: VaultKeyring | undefined): string {
  if (!value.trim().startsWith('{') || value.includes(SECRET_MASK_KEY)) {
    if (value.includes(SECRET_MASK_KEY))
      throw new InputError(`-e: ${SECRET_MASK_KEY} is racksmith's placeholder for a saved plan's secret`);
    return value;
  }
  const { vars } = parseExtraVars([value], vault);
  if (!hasSecret(vars)) return value;
  return toJson(mapValue(vars, [], (v) => (isSecret(v) ? { [SECRET_MASK_KEY]: v.masked } : undefined)));
}

const isPlaceholder = (v: unknown): v is Record<string, string> =>
  v !== null &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  Object.keys(v).length === 1 &&
  typeof (v as Record<string, unknown>)[SECRET_MASK_KEY] === 'string';

const label = (path: Path) => path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i ? `.${p}` : p)).join('');

/** The secret leaves of apply's own `-e` values, by path. */
function secretLeaves(vars: Vars, strict: boolean): Map<string, Secret> {
  const out = new Map<string, Secret>();
  mapValue(vars, [], (v, path) => {
    if (isSecret(v)) {
      out.set(label(path), v);
      return v;
    }
    if (strict && (v === null || typeof v !== 'object'))
      throw new InputError(
        `apply -e: ${label(path)} is a plain value: apply's -e gives again only the plan's -e secrets, as secrets${path.length === 1 ? ` (-e '{"${label(path)}": {"secret": "..."}}')` : ''}; every other variable is as the plan recorded it`,
      );
    return undefined;
  });
  return out;
}

/**
 * A plan's argv with each placeholder replaced by its secret: from apply's `-e` (each of them
 * must fill a placeholder), else asked with `ask`; each must match its mask (else exit 3).
 */
export async function unmaskExtraVars(
  planArgv: string[],
  applyExtra: string[],
  ask: (what: string) => Promise<string>,
  /** `--resume ID`: the recorded run's secrets; its own -e may set other variables and secrets too. */
  of: { noun: string; strict: boolean } = { noun: 'the plan', strict: true },
): Promise<string[]> {
  const given = secretLeaves(parseExtraVars(applyExtra).vars, of.strict);
  const used = new Set<string>();
  const out: string[] = [];
  for (let i = 0; i < planArgv.length; i++) {
    const a = planArgv[i];
    out.push(a);
    if (a !== '--extra-vars' || !planArgv[i + 1]?.includes(SECRET_MASK_KEY)) continue;
    const holders: Array<{ path: Path; mask: string }> = [];
    const parsed = JSON.parse(planArgv[++i]) as unknown;
    mapValue(parsed, [], (v, path) => {
      if (!isPlaceholder(v)) return undefined;
      holders.push({ path, mask: v[SECRET_MASK_KEY] });
      return v;
    });
    const values = new Map<string, string>();
    for (const h of holders) {
      const name = label(h.path);
      // asked: known to scrub() from here on, as every secret of the run
      const value = given.get(name)?.reveal() ?? new Secret(await ask(`secret for -e ${name} (${h.mask}) of ${of.noun}: `)).reveal();
      used.add(name);
      if (maskSecret(value) !== h.mask)
        throw new InputError(`-e ${name}: the secret given is not the one ${of.noun} was made with (${h.mask})`);
      values.set(name, value);
    }
    out.push(toJson(mapValue(parsed, [], (v, path) => (isPlaceholder(v) ? { secret: values.get(label(path)) } : undefined))));
  }
  const stray = [...given.keys()].filter((k) => !used.has(k));
  if (of.strict && stray.length) throw new InputError(`apply -e: ${stray.join(', ')}: the plan has no -e secret of that name`);
  return out;
}
