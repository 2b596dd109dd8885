import { HostContext } from '../../src/contract/playbook.ts';
import type { Host } from '../../src/inventory/model.ts';

/** A storage host's context for playbook-variable tests: each variable on its own line of inv.yaml. */
export function storageHostCtx(vars: Record<string, unknown>): HostContext {
  const varSources = Object.fromEntries(Object.keys(vars).map((k, i) => [k, { file: 'inv.yaml', line: 10 + i, col: 5 }]));
  const host: Host = {
    name: 'h1',
    vars,
    varSources,
    templated: {},
    groups: ['all', 'storage'],
    connection: { kind: 'ssh', address: 'h1' },
    pos: { file: 'inv.yaml', line: 1 },
  };
  return new HostContext(host);
}
