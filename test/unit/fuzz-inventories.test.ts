// Fuzz: generated broken or hostile inventories. Each case must end in exit 3 with a file:line
// position, or (values that are legal but hostile) be converged with the values written
// literally. A canary file proves that no value was ever run as shell: every hostile value
// tries to create it. Runs the CLI in-process against the local connection (no SSH needed).
import { existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { cli } from './run-cli.ts';
import { rng } from './rng.ts';

const ROOT = mkdtempSync(join(tmpdir(), 'rs-fuzz-'));
const CANARY = join(ROOT, 'CANARY');
const PB = 'test/fixtures/playbooks/foundation.ts';

const SHELLY = [
  `$(touch ${CANARY})`,
  `\`touch ${CANARY}\``,
  `; touch ${CANARY}`,
  `| touch ${CANARY}`,
  `&& touch ${CANARY}`,
  `'; touch ${CANARY}; '`,
  `"; touch ${CANARY}; "`,
  `\n touch ${CANARY}`,
  `$IFS`,
  '*',
  '~root',
  '-rf',
  '--',
  '${PATH}',
  '\\',
  '%s%n',
  'ünïcødé ✓',
];
const WRONG = [[], {}, true, -1, 0, 70000, 1.5, null, 'x'.repeat(300), { a: [1, 2] }, '22 ; id', ''];
const KEYS = ['ansible_port', 'ansible_host', 'ansible_user', 'ansible_connection', 'ansible_ssh_private_key_file', 'ansible_ssh_timeout'];

interface Case {
  name: string;
  /** inventory text, or files to write (inventory at hosts.yml) */
  text: string;
  /** 'input': must be exit 3 with file:line; 'literal': must converge with fx_text written as is */
  expect: 'input' | 'literal' | 'input-or-literal';
  /** Grow the file to this size (sparse) after writing the text. */
  sparseSize?: number;
  fxText?: string;
}

function cases(): Case[] {
  const r = rng(20261129);
  const pick = <T>(a: T[]) => a[Math.floor(r() * a.length)];
  const out: Case[] = [];
  const base = (hostVars: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    stringify({ all: { hosts: { h1: { ansible_connection: 'local', ...hostVars } }, ...extra } });

  // 1. wrong types for connection variables (70)
  for (let i = 0; i < 70; i++) {
    const key = pick(KEYS);
    let v = pick(WRONG);
    // keep only values that really are wrong for this key
    if (key === 'ansible_ssh_private_key_file' && typeof v === 'string' && v !== '') v = 42;
    if (key === 'ansible_ssh_timeout' && typeof v === 'number' && Number.isInteger(v) && v >= 1) v = -5;
    out.push({ name: `wrong type ${key}=${JSON.stringify(v).slice(0, 30)}`, text: base({ [key]: v }), expect: 'input' });
  }
  // 2. shell metacharacters in host names, group names and variable names (45)
  const METACHAR = SHELLY.filter((s) => !/^[A-Za-z0-9_.-]*$/.test(s));
  for (let i = 0; i < 15; i++) {
    const s = pick(METACHAR);
    out.push({
      name: `host name ${JSON.stringify(s)}`,
      text: stringify({ all: { hosts: { [`h${s}`]: { ansible_connection: 'local' } } } }),
      expect: 'input',
    });
    out.push({
      name: `group name ${JSON.stringify(s)}`,
      text: stringify({ all: { children: { [`g${s}`]: { hosts: { h1: { ansible_connection: 'local' } } } } } }),
      expect: 'input',
    });
    out.push({ name: `var name ${JSON.stringify(s)}`, text: base({ [`v${s}`]: 1 }), expect: 'input' });
  }
  // 3. unknown keys and structural mistakes (30)
  const structural = ['host', 'childen', 'var', 'Hosts', 'groups', 'include'];
  for (let i = 0; i < 30; i++) {
    const k = pick(structural);
    out.push({
      name: `unknown group key ${k} #${i}`,
      text: stringify({ all: { [k]: { h1: null }, hosts: { h1: { ansible_connection: 'local' } } } }),
      expect: 'input',
    });
  }
  // 4. YAML bombs, alias loops, garbage, truncation (25)
  for (let depth = 4; depth < 9; depth++) {
    let y = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
    for (let d = 1; d <= depth; d++)
      y += `a${d}: &a${d} [${Array(10)
        .fill(`*a${d - 1}`)
        .join(', ')}]\n`;
    out.push({
      name: `alias bomb depth ${depth}`,
      text: `all:\n  vars:\n    ${y.split('\n').join('\n    ')}\n  hosts:\n    h1: {ansible_connection: local}\n`,
      expect: 'input',
    });
  }
  for (let i = 0; i < 5; i++) out.push({ name: `alias loop ${i}`, text: `all: &A\n  children:\n    g${i}: *A\n`, expect: 'input' });
  for (let i = 0; i < 10; i++) {
    const bytes = Array.from({ length: 40 + Math.floor(r() * 200) }, () => String.fromCharCode(32 + Math.floor(r() * 95))).join('');
    out.push({ name: `garbage ${i}`, text: `all:\n  hosts:\n    h1: {ansible_connection: local}\n  vars: {${bytes}`, expect: 'input' });
  }
  const good = base({});
  for (let i = 0; i < 5; i++)
    out.push({ name: `truncated ${i}`, text: good.slice(0, Math.floor((good.length * (i + 1)) / 7)) + '\n  hosts: [', expect: 'input' });
  // 5. huge files (2): over the 64 MiB input limit, written sparse
  out.push({ name: 'huge inventory', text: good, sparseSize: 64 * 1024 * 1024 + 1, expect: 'input' });
  out.push({ name: 'huge vars', text: base({ big: 'y' }), sparseSize: 65 * 1024 * 1024, expect: 'input' });
  // 6. hostile but legal values: must arrive literally, never run (40)
  for (let i = 0; i < 40; i++) {
    const v = [pick(SHELLY), pick(SHELLY), pick(SHELLY)].join(r() < 0.5 ? ' ' : '');
    const fxDir = join(ROOT, `case${out.length}`);
    out.push({
      name: `hostile value ${JSON.stringify(v).slice(0, 40)}`,
      text: base({ fx_text: v, fx_dir: fxDir }),
      // a newline is refused by `line` (single line): exit 3; anything else converges
      expect: v.includes('\n') ? 'input' : 'literal',
      fxText: v,
    });
  }
  return out;
}

const ALL_CASES = cases();

afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

describe('fuzzed inventories', () => {
  it('generates at least 200 cases', () => expect(ALL_CASES.length).toBeGreaterThanOrEqual(200));

  it.each(ALL_CASES.map((c, i) => [i, c.name, c] as const))('#%i %s', async (i, _name, c) => {
    const file = join(ROOT, `inv-${i}.yml`);
    writeFileSync(file, c.text);
    if (c.sparseSize) truncateSync(file, c.sparseSize);
    const res = await cli([PB, '-i', file, '--json', '--journal', join(ROOT, `j-${i}.ndjson`)]);
    if (c.expect === 'input') {
      expect(res.code, res.stderr).toBe(3);
      expect(res.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(:\\d+:\\d+)?: `));
      expect(res.stdout).toBe('');
    } else {
      expect(res.code, res.stderr).toBe(0);
      const dir = (c.text.match(/fx_dir: (.*)/) ?? [])[1]!.replace(/^"|"$/g, '');
      expect(readFileSync(join(dir, 'app.conf'), 'utf8')).toBe(`value = ${c.fxText}\n`);
    }
    expect(existsSync(CANARY)).toBe(false);
  });
});
