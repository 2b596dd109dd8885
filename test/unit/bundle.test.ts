// dist/ as the build leaves it (scripts/bundle.mjs): the code of every module once, in
// dist/racksmith.js, and each dist/ module a facade re-exporting its names from there. Whichever
// module a caller imports (the CLI's dist/src/cli.js, a playbook's `racksmith`, a checkout's
// playbook importing ../src/x.ts), it reaches that one copy: the engine's `instanceof Refusal`
// holds for a Refusal a playbook threw. Read from the dist/ of this tree, which `npm ci` builds.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { prebuiltIsCurrent } from '../../bin/prebuilt.mjs';

const root = resolve(import.meta.dirname, '../..');
const dist = join(root, 'dist');
const current = prebuiltIsCurrent(root);
const built = (rel: string) => import(pathToFileURL(join(dist, rel)).href) as Promise<Record<string, unknown>>;

function jsFiles(rel: string): string[] {
  return readdirSync(join(dist, rel), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? jsFiles(`${rel}/${e.name}`) : e.name.endsWith('.js') ? [`${rel}/${e.name}`] : [],
  );
}

describe('the prebuilt dist/: one bundle, every module a facade of it', () => {
  beforeEach((ctx) => {
    if (!current) ctx.skip('dist/ is not built from these sources (npm run build)');
  });

  it('every module of dist/src and dist/playbooks re-exports from dist/racksmith.js and holds no code of its own', () => {
    const files = [...jsFiles('src'), ...jsFiles('playbooks')];
    expect(files.length).toBeGreaterThan(100);
    for (const f of files) {
      const text = readFileSync(join(dist, f), 'utf8');
      const bundle = relative(join(dist, f, '..'), join(dist, 'racksmith.js'));
      expect(text, f).toMatch(new RegExp(`^(export \\{[^}]*\\} from|import) '${bundle.replace(/\./g, '\\.')}';\\n$`));
    }
  });

  it('one copy of a class and a function, however the module is named', async () => {
    const index = await built('src/index.js');
    const resource = await built('src/contract/resource.js');
    const playbookModule = await built('src/contract/playbook.js');
    expect(resource.Refusal).toBe(index.Refusal);
    expect(resource.NotApplicable).toBe(index.NotApplicable);
    expect(playbookModule.playbook).toBe(index.playbook);
    const { Refusal } = resource as { Refusal: new (m: string) => Error };
    expect(new Refusal('x')).toBeInstanceOf(index.Refusal as typeof Error);
    // (an error says its own name, whatever the bundle called its class)
    expect(new Refusal('x').name).toBe('Refusal');
  });

  it.each(['src/index.ts', 'src/cli.ts', 'src/contract/playbook.ts', 'src/util/validate.ts', 'playbooks/site.ts'])(
    '%s: the facade exports exactly the names the module exports',
    async (source) => {
      const own = await import(pathToFileURL(join(root, source)).href);
      const facade = await built(source.replace(/\.ts$/, '.js'));
      expect(Object.keys(facade).sort()).toEqual(Object.keys(own).sort());
    },
  );
});
