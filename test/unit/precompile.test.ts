// The build precompiles every declared schema (dist/schemas.cjs); the CLI then validates with
// that code instead of compiling with ajv at start-up. It must judge every input exactly as the
// compiled schema does, with the same errors (messages are built from them).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { afterAll, describe, expect, it } from 'vitest';
import '../../playbooks/site.ts';
import '../../src/plan/plan.ts';
import '../../src/inventory/schema.ts';
import { precompiledModule } from '../../src/util/precompile.ts';
import { AJV_OPTIONS, declaredSchemas } from '../../src/util/validate.ts';

// inside the repository: the generated code requires ajv's runtime helpers from node_modules
const cache = join(import.meta.dirname, '..', '..', 'node_modules', '.cache');
mkdirSync(cache, { recursive: true });
const dir = mkdtempSync(join(cache, 'rs-precompile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('precompiled validators (dist/schemas.cjs)', () => {
  const file = join(dir, 'schemas.cjs');
  writeFileSync(file, precompiledModule(declaredSchemas.values()));
  const pre = createRequire(import.meta.url)(file) as Record<string, ValidateFunction>;

  it("covers the inventory, the plan and every built-in playbook's variables", () => {
    expect(declaredSchemas.size).toBeGreaterThanOrEqual(6);
    expect(Object.keys(pre).sort()).toEqual([...declaredSchemas.keys()].sort());
  });

  // Inputs that exercise types, unknown keys, patterns, nesting and $refs.
  const samples: unknown[] = [
    {},
    null,
    'text',
    [],
    { bogus: 1 },
    { all: { hosts: { h1: { ansible_port: 'x' } }, childs: {} } },
    { all: { hosts: { 'bad name!': null }, vars: { ansible_user: 7 } } },
    { storage_disks: [{ device: '/dev/x', serial: 'y', bogus: 1 }], io_profiles: { hdd: { nr_requests: 'x' } } },
    { net_sysctl_overrides: { 'net.core.somaxconn': 'lots' }, nofile_limit: -1 },
    { jail_submounts: [{ path: 1 }], gpu_search_dirs: 'x' },
    { kube_cni: 'weave', kube_pod_cidr: 42, metallb_pools: [{}] },
    { version: 1, createdAt: 5, hosts: { h: { p: { r: { factHash: 1 } } } } },
  ];

  it.each([...declaredSchemas.entries()].map(([k, d]) => [k.slice(0, 12), d] as const))(
    'schema %s: same verdict and errors as ajv.compile',
    (key, d) => {
      const ajv = new Ajv(AJV_OPTIONS);
      for (const r of d.refs) ajv.addSchema(r);
      const compiled = ajv.compile(d.schema);
      const fn = pre[[...declaredSchemas.keys()].find((k) => k.startsWith(key))!];
      for (const s of samples) {
        expect(fn(s), JSON.stringify(s)).toBe(compiled(s));
        expect(JSON.stringify(fn.errors ?? null)).toBe(JSON.stringify(compiled.errors ?? null));
      }
    },
  );
});
