/**
 * Whether a server-side apply changes anything of the applier's, read from one object's
 * `kubectl diff --show-managed-fields` with full context (the live object and the server's dry run
 * of the apply, both whole).
 *
 * kubectl reads the live object and then asks for the dry run: two moments. A controller that
 * writes its own fields in between (MetalLB's cert-rotator fills the webhook Secret and the
 * caBundles; the Tigera operator updates its CRDs) shows up in that diff although the apply changes
 * none of it. So the verdict compares only the fields the applier owns, before or after the apply
 * (its Apply entry in metadata.managedFields): another manager's fields never make a change, at
 * whatever moment they are written, and a field the applier owns that differs always does.
 */
import { yamlLib } from '../util/yaml-lib.ts';

export interface DiffLine {
  /** ' ' both sides, '-' the live object only, '+' the dry run only. */
  op: ' ' | '-' | '+';
  text: string;
}

/** The lines of a one-hunk unified diff (hunk header and "\ No newline" markers dropped). */
export function diffLines(body: string): DiffLine[] {
  const out: DiffLine[] = [];
  for (const l of body.split('\n')) {
    if (l.startsWith('@@ ') || l.startsWith('\\')) continue;
    const op = l[0];
    if (op === ' ' || op === '-' || op === '+') out.push({ op, text: l.slice(1) });
  }
  return out;
}

/** The live (`-`) or dry-run (`+`) side as text. */
export function side(lines: DiffLine[], which: '-' | '+'): string {
  return lines
    .filter((l) => l.op === ' ' || l.op === which)
    .map((l) => l.text + '\n')
    .join('');
}

/**
 * The lines without metadata.managedFields (kubectl prints it at two spaces under `metadata:`,
 * its list items at `  - ` and deeper): the diff shown is the one `kubectl diff` shows.
 */
export function withoutManagedFields(lines: DiffLine[]): DiffLine[] {
  const state = { '-': { top: '', inBlock: false }, '+': { top: '', inBlock: false } };
  return lines.filter((l) => {
    let drop = false;
    for (const s of l.op === ' ' ? (['-', '+'] as const) : [l.op]) {
      const st = state[s];
      if (/^\S/.test(l.text)) {
        st.top = l.text;
        st.inBlock = false;
      } else if (st.top === 'metadata:' && /^ {2}managedFields:/.test(l.text)) {
        st.inBlock = true;
      } else if (st.inBlock && !/^( {2}- | {4})/.test(l.text)) {
        st.inBlock = false;
      }
      drop ||= st.inBlock;
    }
    return !drop;
  });
}

/** A unified diff of `lines` with `context` lines around each change (GNU diff's hunks). */
export function unifiedHunks(lines: DiffLine[], context = 3): string {
  const changed = lines.flatMap((l, i) => (l.op === ' ' ? [] : [i]));
  if (!changed.length) return '';
  const ranges: Array<[number, number]> = [];
  for (const i of changed) {
    const from = Math.max(0, i - context);
    const to = Math.min(lines.length - 1, i + context);
    const last = ranges[ranges.length - 1];
    if (last && from <= last[1] + 1) last[1] = to;
    else ranges.push([from, to]);
  }
  // line numbers of each side before index i
  const oldBefore: number[] = [];
  const newBefore: number[] = [];
  let o = 0;
  let n = 0;
  for (const l of lines) {
    oldBefore.push(o);
    newBefore.push(n);
    if (l.op !== '+') o++;
    if (l.op !== '-') n++;
  }
  const out: string[] = [];
  for (const [from, to] of ranges) {
    const hunk = lines.slice(from, to + 1);
    const oc = hunk.filter((l) => l.op !== '+').length;
    const nc = hunk.filter((l) => l.op !== '-').length;
    out.push(`@@ -${oldBefore[from] + (oc ? 1 : 0)},${oc} +${newBefore[from] + (nc ? 1 : 0)},${nc} @@`);
    for (const l of hunk) out.push(l.op + l.text);
  }
  return out.join('\n');
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Fields = { [seg: string]: Fields };

const isMap = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON with sorted keys: equal values, equal text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isMap(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'undefined';
}

function mergeFields(a: Fields, b: Fields): Fields {
  const out: Fields = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = out[k] ? mergeFields(out[k], v) : v;
  return out;
}

/** The fields `manager` owns through server-side apply (its Apply entries, main resource). */
function appliedFields(obj: unknown, manager: string): Fields {
  const meta = isMap(obj) ? obj.metadata : undefined;
  const mf = isMap(meta) && Array.isArray(meta.managedFields) ? meta.managedFields : [];
  let fields: Fields = {};
  for (const e of mf) {
    if (!isMap(e) || e.manager !== manager || e.operation !== 'Apply' || e.subresource) continue;
    if (isMap(e.fieldsV1)) fields = mergeFields(fields, e.fieldsV1 as unknown as Fields);
  }
  return fields;
}

/** The child of `v` that a fieldsV1 segment names (`f:`, `k:`, `v:`, `i:`), or undefined. */
function child(v: unknown, seg: string): unknown {
  const tag = seg.slice(0, 2);
  const arg = seg.slice(2);
  if (tag === 'f:') return isMap(v) ? v[arg] : undefined;
  if (!Array.isArray(v)) return undefined;
  if (tag === 'i:') return v[Number(arg)];
  let key: unknown;
  try {
    key = JSON.parse(arg);
  } catch {
    return undefined;
  }
  if (tag === 'v:') return v.some((e) => canonical(e) === canonical(key)) ? key : undefined;
  if (tag === 'k:' && isMap(key))
    return v.find((e) => isMap(e) && Object.entries(key as Record<string, Json>).every(([k, x]) => canonical(e[k]) === canonical(x)));
  return undefined;
}

/**
 * The part of `v` that `fields` covers. A leaf (a field with no owned children) is compared whole:
 * a scalar, an atomic list or map; an owned empty map compared whole errs toward "differs".
 */
function project(v: unknown, fields: Fields): unknown {
  const segs = Object.keys(fields).filter((k) => k !== '.');
  if (!segs.length || v === undefined) return v;
  const out: Record<string, unknown> = {};
  for (const seg of segs) {
    const c = child(v, seg);
    if (c !== undefined) out[seg] = project(c, fields[seg]);
  }
  return out;
}

/** Whether the fields `manager` applies (now or before) differ between the two objects. */
export function appliedFieldsDiffer(live: unknown, merged: unknown, manager: string): boolean {
  const fields = mergeFields(appliedFields(live, manager), appliedFields(merged, manager));
  if (!Object.keys(fields).length) return false; // it applies no field (MetalLB's empty Secret): nothing of its own to change
  return canonical(project(live, fields)) !== canonical(project(merged, fields));
}

/**
 * One object's full-context diff: undefined when the apply changes none of `manager`'s fields,
 * else the diff to show (three lines of context, managedFields left out as `kubectl diff` does).
 * Text that does not parse is a change (the full diff shown): never a silent "same".
 */
export function appliedChange(body: string, manager: string): string | undefined {
  const lines = diffLines(body);
  const shown = unifiedHunks(withoutManagedFields(lines));
  let differ = true;
  try {
    differ = appliedFieldsDiffer(yamlLib().parse(side(lines, '-')), yamlLib().parse(side(lines, '+')), manager);
  } catch {
    // unparseable: shown as a change
  }
  return differ ? shown || unifiedHunks(lines) : undefined;
}
