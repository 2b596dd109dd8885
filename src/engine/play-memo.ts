import type { Resource } from '../contract/resource.ts';
import { UNSET, type HostContext, type HostRead } from '../contract/playbook.ts';

/** Distinct builds kept per play (hosts that read differently, e.g. a play using the host name). */
const MAX_ENTRIES = 8;

/**
 * A fleet's hosts mostly share their variables, and a play builds the same resources for them.
 * A play's resources are a function of what it reads from its HostContext (Play.resources), so
 * the reads of a build are recorded, and a later host that answers every one of them the same,
 * in the same order, gets that build's resources (immutable values) instead of a rebuild.
 * Variable checks (`validate`) are run again for every host, so bad input is found as before.
 */
export class PlayMemo {
  private entries: Array<{ reads: HostRead[]; resources: Resource[] }> = [];

  resources(ctx: HostContext, build: (ctx: HostContext) => Resource[]): Resource[] {
    for (const e of this.entries) if (answersSame(e.reads, ctx)) return e.resources;
    const reads: HostRead[] = [];
    ctx.reads = reads;
    let resources: Resource[];
    try {
      resources = build(ctx);
    } finally {
      ctx.reads = undefined;
    }
    this.entries.unshift({ reads, resources });
    if (this.entries.length > MAX_ENTRIES) this.entries.pop();
    for (const name of variablesOf(reads)) this.variables.add(name);
    return resources;
  }

  /** Every variable the play's builds read or validated (its declared variables, for "did you mean"). */
  readonly variables = new Set<string>();
}

function* variablesOf(reads: HostRead[]): Iterable<string> {
  for (const r of reads) {
    if (r.kind === 'var' || r.kind === 'varPos' || r.kind === 'error') yield r.arg;
    else if (r.kind === 'validate') yield* Object.keys((r.validate.schema as { properties?: object } | undefined)?.properties ?? {});
  }
}

/** Whether `ctx` answers each recorded read as the recorded host did (validations are rerun and may throw). */
function answersSame(reads: HostRead[], ctx: HostContext): boolean {
  for (const r of reads) {
    switch (r.kind) {
      case 'name':
        if (ctx.name !== r.value) return false;
        break;
      case 'vars':
        if (!same(ctx.vars, r.value)) return false;
        break;
      case 'groups':
        if (!same(ctx.groups, r.value)) return false;
        break;
      case 'inventoryHosts':
        if (ctx.inventoryHosts !== r.value) return false;
        break;
      case 'facts':
        if (!same(ctx.facts, r.value)) return false;
        break;
      case 'inGroup':
        if (ctx.inGroup(r.arg) !== r.value) return false;
        break;
      case 'var':
        if (!same(ctx.var(r.arg, UNSET), r.value)) return false;
        break;
      case 'varPos':
        if (!same(ctx.varPos(r.arg), r.value)) return false;
        break;
      case 'error': {
        const e = ctx.error(r.arg, r.message);
        if (e.message !== r.value.message || !same(e.pos, r.value.pos)) return false;
        break;
      }
      case 'validate':
        ctx.validate(r.validate); // throws for this host exactly as its own build would
        break;
    }
  }
  return true;
}

/**
 * Structural equality of inventory values: plain objects (same keys in the same order: plays
 * may iterate them), arrays and primitives. Anything else (a Secret...) only equals itself.
 */
export function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!same(a[i], b[i])) return false;
    return true;
  }
  if (!isPlain(a) || !isPlain(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i] || !same((a as Record<string, unknown>)[ka[i]], (b as Record<string, unknown>)[ka[i]])) return false;
  }
  return true;
}

function isPlain(o: object): boolean {
  const p = Object.getPrototypeOf(o);
  return p === Object.prototype || p === null;
}
