// No import cycles in src/: none between its folders (connection/ may import inventory/ or the
// other way round, never both) and none between the files of a folder, type-only imports included
// (a type cycle is still two modules that cannot be read one without the other).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The src files a file imports or re-exports from (`import`, `import type`, `export ... from`, `import()`: src names them with .ts). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s*'(\.[^']+\.ts)'|\bimport\(\s*'(\.[^']+\.ts)'\s*\)/g)) {
    const spec = m[1] ?? m[2];
    out.push(resolve(dirname(file), spec));
  }
  return out;
}

/** The cycles of a graph: its strongly connected components of more than one node (Tarjan). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || graph.get(v)?.has(v)) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const files = sources(SRC);
const rel = (f: string) => relative(SRC, f);
const folderOf = (f: string) => dirname(rel(f));
const edges = files.flatMap((f) => importsOf(f).map((to) => [f, to] as const));

describe('src/ imports', () => {
  it('reads the imports of every file (the parser finds what it should)', () => {
    expect(files.length).toBeGreaterThan(100);
    const missing = edges.filter(([, to]) => !files.includes(to)).map(([f, to]) => `${rel(f)} -> ${relative(SRC, to)}`);
    expect(missing).toEqual([]);
    expect(edges.length).toBeGreaterThan(files.length);
  });

  it('no cycle between folders', () => {
    const graph = new Map<string, Set<string>>();
    for (const [from, to] of edges) {
      const a = folderOf(from);
      const b = folderOf(to);
      if (a === b) continue;
      if (!graph.has(a)) graph.set(a, new Set());
      graph.get(a)!.add(b);
    }
    const why = (scc: string[]) =>
      edges
        .filter(([f, t]) => scc.includes(folderOf(f)) && scc.includes(folderOf(t)) && folderOf(f) !== folderOf(t))
        .map(([f, t]) => `${rel(f)} -> ${rel(t)}`);
    expect(cycles(graph).map((scc) => ({ folders: scc, imports: why(scc) }))).toEqual([]);
  });

  it('no cycle between the files of a folder', () => {
    const graph = new Map<string, Set<string>>();
    for (const [from, to] of edges) {
      if (folderOf(from) !== folderOf(to)) continue;
      if (!graph.has(rel(from))) graph.set(rel(from), new Set());
      graph.get(rel(from))!.add(rel(to));
    }
    expect(cycles(graph)).toEqual([]);
  });

  // `import ... from 'racksmith'` in src/ or playbooks/ is src/index.ts, which re-exports every
  // family and the engine's helpers: a family importing it imports itself, and dist/ cannot be
  // built (the build imports dist/ under npm's racksmith-source condition, which names
  // src/index.ts). The cycle checks above only follow relative imports, so this one is its own
  // (docs/resources.md "Imports").
  it("no file of src/ or playbooks/ imports the package itself ('racksmith'): they import the module that has the name", () => {
    const selfImport = /(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s*'racksmith(?:\/[^']*)?'|\bimport\(\s*'racksmith(?:\/[^']*)?'\s*\)/;
    // the bundled playbooks are built into dist/ with src/ (tsconfig.build.json): the same holds for them
    const built = [...files, ...sources(resolve(SRC, '../playbooks'))];
    expect(built.length).toBeGreaterThan(files.length);
    expect(built.filter((f) => selfImport.test(readFileSync(f, 'utf8'))).map((f) => relative(resolve(SRC, '..'), f))).toEqual([]);
    // what it looks for, and the messages that only name the package
    expect(selfImport.test("import { common, type Change } from 'racksmith';\n")).toBe(true);
    expect(selfImport.test("\nimport type {\n  Resource,\n} from 'racksmith';")).toBe(true);
    expect(selfImport.test("const m = 'compose it as secretText`x` (from 'racksmith') and give that';")).toBe(false);
  });

  // docs/resources.md: a family imports the contract, the shell quoting, util/, the building
  // blocks of resources/core/ and its own domain's siblings (and kube's its cluster-object helpers
  // in kube/), never the engine: the engine runs any object that keeps the contract.
  it('a resource family imports only what the guide lets it', () => {
    const allowed = (from: string, to: string) => {
      const domain = folderOf(from).split('/')[1];
      const t = folderOf(to);
      return ['contract', 'shell', 'util', 'resources/core', `resources/${domain}`].includes(t) || (domain === 'kube' && t === 'kube');
    };
    const wrong = edges
      .filter(([f, t]) => folderOf(f).startsWith('resources/') && !allowed(f, t))
      .map(([f, t]) => `${rel(f)} -> ${rel(t)}`);
    expect(edges.filter(([f]) => folderOf(f).startsWith('resources/')).length).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const g = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
      ['d', new Set(['a'])],
    ]);
    expect(cycles(g)).toEqual([['a', 'b', 'c']]);
  });
});
