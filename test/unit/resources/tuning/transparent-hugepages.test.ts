// transparentHugepages: the kernel's bracket format, the diff over facts (live modes and the
// tmpfiles.d drop-in), its steps, and the node playbook's variable.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import node from '../../../../playbooks/node.ts';
import { NotApplicable, Refusal } from '../../../../src/contract/resource.ts';
import { prepare } from '../../../../src/engine/run.ts';
import { loadInventory } from '../../../../src/inventory/load.ts';
import {
  parseThpMode,
  parseThpProbe,
  renderThpTmpfiles,
  transparentHugepages,
  type TransparentHugepagesFacts,
} from '../../../../src/resources/tuning/transparent-hugepages.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { absent, fileWith } from '../../facts.ts';

const ENABLED = (sel: string) => ({ selected: sel, offered: ['always', 'madvise', 'never'] });
const DEFRAG = (sel: string) => ({ selected: sel, offered: ['always', 'defer', 'defer+madvise', 'madvise', 'never'] });

describe('parseThpMode', () => {
  it.each<[string, ReturnType<typeof parseThpMode>]>([
    ['always [madvise] never', ENABLED('madvise')],
    ['always madvise [never]\n', ENABLED('never')],
    ['always defer [defer+madvise] madvise never', DEFRAG('defer+madvise')],
    ['never', null], // no bracket: not the kernel's format
    ['[always] [never]', null],
    ['', null],
  ])('%j', (text, mode) => expect(parseThpMode(text)).toEqual(mode));

  it('the probe lines, "-" for a missing file', () => {
    expect(parseThpProbe('enabled always [madvise] never\ndefrag -\n')).toEqual({ enabled: ENABLED('madvise'), defrag: null });
  });
});

describe('transparentHugepages diff', () => {
  const FILE = '/etc/tmpfiles.d/racksmith-thp.conf';
  const r = transparentHugepages({ enabled: 'never', defrag: 'defer+madvise' });
  const content = renderThpTmpfiles({ enabled: 'never', defrag: 'defer+madvise' });
  const facts = (enabled: string | null, defrag: string | null, file = fileWith(content)): TransparentHugepagesFacts => ({
    knobs: { enabled: enabled === null ? null : ENABLED(enabled), defrag: defrag === null ? null : DEFRAG(defrag) },
    file,
  });

  it('the drop-in: one w line per knob', () => {
    expect(content).toBe(
      '# Managed by racksmith: transparent hugepages at boot (systemd-tmpfiles-setup writes these).\n' +
        'w /sys/kernel/mm/transparent_hugepage/enabled - - - - never\n' +
        'w /sys/kernel/mm/transparent_hugepage/defrag - - - - defer+madvise\n',
    );
  });

  it.each<[string, TransparentHugepagesFacts, string[]]>([
    ['converged', facts('never', 'defer+madvise'), []],
    [
      'fresh host: the drop-in and both modes',
      facts('madvise', 'madvise', absent),
      [`create ${FILE}`, 'transparent_hugepage/enabled: madvise → never', 'transparent_hugepage/defrag: madvise → defer+madvise'],
    ],
    [
      'after a reboot without the drop-in read: the live mode only',
      facts('madvise', 'defer+madvise'),
      ['transparent_hugepage/enabled: madvise → never'],
    ],
    [
      'the drop-in edited by hand: rewritten',
      facts('never', 'defer+madvise', fileWith('w /sys/kernel/mm/transparent_hugepage/enabled - - - - always\n')),
      [`update ${FILE}`],
    ],
  ])('%s', (_, f, summaries) => expect(r.diff(f).map((c) => c.summary)).toEqual(summaries));

  it('a kernel without THP: not applicable, saying why', () => {
    expect(() => r.diff(facts(null, null))).toThrow(NotApplicable);
    expect(() => r.diff(facts(null, null))).toThrow('not supported on this host (no /sys/kernel/mm/transparent_hugepage/enabled, ');
  });

  it('a mode the kernel does not offer is refused (an older kernel without defer+madvise)', () => {
    const f = facts('never', 'madvise');
    f.knobs.defrag = { selected: 'madvise', offered: ['always', 'madvise', 'never'] };
    expect(() => r.diff(f)).toThrow(Refusal);
    expect(() => r.diff(f)).toThrow('defrag defer+madvise is not offered by this kernel (offered: always, madvise, never)');
  });

  it('only the knobs given are read, written and claimed', () => {
    const one = transparentHugepages({ enabled: 'never' });
    expect(one.claims).toEqual([`file:${FILE}`, 'sysfs:/sys/kernel/mm/transparent_hugepage/enabled']);
    expect(one.diff(facts('never', null, fileWith(renderThpTmpfiles({ enabled: 'never' }))))).toEqual([]);
  });

  it('steps: the atomic write of the drop-in, then each mode through sysfs', () => {
    const f = facts('madvise', 'madvise', absent);
    const steps = r.apply(f, r.diff(f));
    expect(steps.map((s) => s.name)).toEqual([`write ${FILE}`, 'set transparent_hugepage/enabled', 'set transparent_hugepage/defrag']);
    expect(steps[1].script).toBe('echo never > /sys/kernel/mm/transparent_hugepage/enabled');
    expect(steps[2].script).toBe('echo defer+madvise > /sys/kernel/mm/transparent_hugepage/defrag');
  });

  it.each([
    [{ enabled: 'sometimes' }, /enabled "sometimes" is not one of always, madvise, never/],
    [{ defrag: 'never; reboot' }, /defrag/],
    [{}, /neither enabled nor defrag given/],
    [{ enabled: 'never', file: 'relative.conf' }, /absolute/],
  ])('bad options %j: InputError', (o, msg) => {
    expect(() => transparentHugepages(o)).toThrow(InputError);
    expect(() => transparentHugepages(o)).toThrow(msg);
  });
});

describe('transparent_hugepages in the node playbook', () => {
  function build(vars: string) {
    const dir = mkdtempSync(join(tmpdir(), 'rs-thp-'));
    const file = join(dir, 'hosts.yaml');
    writeFileSync(file, `all:\n  hosts:\n    n1: {}\n  vars:\n    install_packages: false\n${vars}`);
    return () => prepare(loadInventory(file), [node], {})[0].hosts[0].resources;
  }
  it('unset: no resource (the kernel keeps its own)', () => {
    expect(build('')().filter((r) => r.kind === 'transparent-hugepages')).toEqual([]);
  });
  it('set: one resource with the thp tag', () => {
    const [thp] = build('    transparent_hugepages: { enabled: never }\n')().filter((r) => r.kind === 'transparent-hugepages');
    expect(thp.tags).toContain('thp');
  });
  it.each([
    ['an unknown mode', '    transparent_hugepages: { enabled: sometimes }\n'],
    ['an unknown knob', '    transparent_hugepages: { shmem_enabled: never }\n'],
    ['empty', '    transparent_hugepages: {}\n'],
  ])('%s: exit 3 at the variable', (_, vars) => {
    expect(build(vars)).toThrow(InputError);
    expect(build(vars)).toThrow(/transparent_hugepages/);
  });
});
