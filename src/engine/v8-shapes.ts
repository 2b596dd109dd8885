/**
 * The engine's hot path shaped for V8 (Node's JavaScript engine), all in one place. A plan of a
 * big fleet runs the same few functions millions of times; V8 optimises them for the shapes of
 * objects and the "elements kinds" of arrays it has seen, and throws that code away (and
 * compiles again) when a later play brings a new one. Each helper here removes one such switch.
 *
 * Why they are kept (README "Performance", bench/README.md "History"): at 84d0aab, making the
 * arrays the hot loops see keep one elements kind cut a 1,000-host plan's CPU by 10% (20
 * alternating pairs, 942 -> 860 ms, paired ratio 0.90, 95% 0.87-0.95; optimising compiles 89 ->
 * 82), and one object shape for every resource stopped the recompiles each new resource kind
 * caused (2026-11-28). Re-measured after the resource contract changed (2026-12-01, synthetic
 * bench, alternating, a machine at load 11-25 from other work): with and without them within the
 * noise of that machine (medians 0.82-1.11 s both ways), so no claim either way; they stay until
 * a quiet machine shows they no longer pay. Check with:
 *   npm run bench -- --hosts 3 --runs 1 --cases floor --tools racksmith --synthetic
 * against a copy of the tree where these helpers are plain (`[]`, `map`, the resource itself).
 */
import type { Resource } from '../contract/resource.ts';

/**
 * An empty array that has held an object once: its elements kind is that of every other list of
 * objects (a literal `[]` is another one, and the loops that meet both get a second array map).
 * Never push to it: it is shared.
 */
export function emptyObjectList<T extends object>(sample: T): T[] {
  const list = [sample];
  list.pop();
  return list;
}

/**
 * `items.map(fn)` built by push: an array that Array.prototype.map makes inside optimised code
 * has another elements kind (HOLEY) than one the builtin makes from the interpreter (PACKED), and
 * code optimised on the first is thrown away when it meets the second.
 */
export function mapByPush<T, U>(items: readonly T[], fn: (item: T, index: number) => U): U[] {
  const out: U[] = [];
  for (let i = 0; i < items.length; i++) out.push(fn(items[i], i));
  return out;
}

/**
 * The resource as an object of one shape for every kind: its contract's fields in one order
 * (absent ones undefined), then any others. The engine reads these fields for every resource of
 * every host; a dozen kinds of object literal made V8 recompile the run's code as plays brought
 * new kinds.
 */
export function uniformResource(r: Resource): Resource {
  const u: Resource = {
    id: r.id,
    kind: r.kind,
    tags: r.tags,
    dependsOn: r.dependsOn,
    after: r.after,
    notify: r.notify,
    handler: r.handler,
    verifiable: r.verifiable,
    files: r.files,
    claims: r.claims,
    declaredAt: r.declaredAt,
    fleet: r.fleet,
    useFleet: r.useFleet,
    probe: r.probe,
    parse: r.parse,
    diff: r.diff,
    apply: r.apply,
  };
  for (const k of Object.keys(r))
    if (!(k in u)) (u as unknown as Record<string, unknown>)[k] = (r as unknown as Record<string, unknown>)[k];
  return u;
}
