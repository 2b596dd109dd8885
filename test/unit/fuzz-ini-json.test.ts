// Fuzz, INI and JSON: a hundred generated broken inventories per format (each a valid inventory
// with one mistake put at a random line, among random valid lines), run through the CLI with the
// local connection. Each must be exit 3 naming file:line, with nothing run (the canary directory
// the playbook would create stays absent). The YAML fuzz is fuzz-inventories.test.ts.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { cli } from './run-cli.ts';
import { rng } from './rng.ts';

const ROOT = mkdtempSync(join(tmpdir(), 'rs-fuzz2-'));
const PB = 'test/fixtures/playbooks/foundation.ts';
const FX = join(ROOT, 'fx');
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));
beforeEach(() => rmSync(FX, { recursive: true, force: true }));

type R = () => number;
const pick = <T>(r: R, a: readonly T[]): T => a[Math.floor(r() * a.length)];

/** One INI mistake: the lines to insert and whether they must go in a hosts section. */
const INI_MISTAKES: Array<(r: R) => string[]> = [
  (r) => [`[web${pick(r, ['', ' x', ':kids', ':var', ' :vars'])}`],
  (r) => [`[${pick(r, ['a b', 'web:kids', 'db:vars2'])}]`],
  (r) => ['[web:vars]', pick(r, ['novalue', 'justtext here'])],
  (r) => [`h${Math.floor(r() * 9)} ${pick(r, ["'unterminated", 'x="open', 'y=\\'])}`],
  (r) => [`h${Math.floor(r() * 9)} ${pick(r, ['novalue', 'a=1 b'])}`],
  (r) => ['[parent:children]', `undefined_${Math.floor(r() * 99)}`],
  (r) => [pick(r, ['h;rm -rf /', '$(id)', '`id`', 'h|x', '-oProxyCommand=x', 'a..b', 'h1:'])],
  (r) => [`h${Math.floor(r() * 9)} ansible_port=${pick(r, ['99999', '0', 'ssh', '-1', "'22x'"])}`],
  (r) => [`h${Math.floor(r() * 9)} ansible_connection=${pick(r, ['telnet', 'winrm', "'ssh '"])}`],
  (r) => [`h${Math.floor(r() * 9)} ${pick(r, ['my-var=1', '1x=2', 'a.b=3'])}`],
  (r) => [pick(r, ['node[3:1]', 'node[01:3]', 'n[1:3:0]', 'x[a:09]', 'n[1:20000]'])],
  (r) => [`h${Math.floor(r() * 9)} ansible_host=${pick(r, ['"{{ x }}"', "'{% y %}'", '"10.0.0.1;id"'])}`],
  () => ['[a:children]', 'b', '[b:children]', 'a'],
  () => ['[web:children]', 'web'], // a group that is its own child (a host named like a group is only a warning, as in Ansible)
  (r) => [`h${Math.floor(r() * 9)} x="'\\N{EM DASH}'"`],
  (r) => [`[${pick(r, ['sec', 'z'])}:vars]`, 'a=1'],
];

function iniCase(r: R): string {
  const lines = [`loc ansible_connection=local fx_dir=${FX} fx_text=x`, '[parent]', 'loc'];
  for (let i = 0, n = Math.floor(r() * 8); i < n; i++)
    lines.push(pick(r, ['# a comment', '; another', '', `[g${i}]`, `n${i} ansible_connection=local a=${i}`, `[g${i}:vars]`, `v${i}=${i}`]));
  const at = 3 + Math.floor(r() * (lines.length - 2));
  const m = pick(r, INI_MISTAKES)(r);
  // a mistake that is a host line must be where hosts are: in a hosts section or before any
  const inHosts = !m[0].startsWith('[') && !/^(novalue|a=1)/.test(m[0]);
  lines.splice(at, 0, ...(inHosts ? [`[g${Math.floor(r() * 99)}]`, ...m] : m));
  return lines.join('\n') + '\n';
}

const JSON_MISTAKES: Array<(r: R) => string> = [
  (r) => `{"all": {"hosts": {"loc": ${pick(r, ['5', '"x"', '[1]', 'true'])}}}}`,
  () => `{"all": {"hosts": {"loc": {"a": 1, "a": 2}}}}`,
  (r) => `{"_meta": {"hostvars": ${pick(r, ['[]', '"x"', '1'])}}, "web": {"hosts": ["loc"]}}`,
  (r) => `{"web": {"hosts": [${pick(r, ['1', 'null', '["x"]', '{"a": 1}'])}]}}`,
  (r) => `{"web": {"hosts": [${pick(r, ['"h;rm"', '"$(id)"', '"-oX"', '""', '"a b"'])}]}}`,
  (r) => `{"all": {"vars": {"ansible_port": ${pick(r, ['"x"', '0', '70000', 'true', 'NaN'])}}, "hosts": {"loc": {}}}}`,
  (r) => `{"all": {"${pick(r, ['childen', 'host', 'Hosts', 'var'])}": {}}}`,
  (r) => `{"all": {"hosts": {"loc": {"${pick(r, ['my-var', 'a b', '1x'])}": 1}}}}`,
  (r) => `{"all": {"hosts": {"loc": null}}, "web": ${pick(r, ['5', '"x"', 'true'])}}`,
  (r) => `{"all": {"children": {"web": {"hosts": {"node[${pick(r, ['3:1', '01:3', 'a:09', '1:3:0'])}]": null}}}}}`,
  (r) => `{"all": {"vars": {"x": ${'['.repeat(150 + Math.floor(r() * 5000))}${']'.repeat(150)}`,
  (r) => `{"all": {"hosts": {"loc": {"ansible_host": "${pick(r, ['{{ x }}', '10.0.0.1;id', '$(id)'])}"}}}}`,
  () => `{"web": {"children": ["db"]}, "db": {"children": ["web"]}}`,
  () => `{"all": {"hosts": {"loc": {}}}, "loc": {"hosts": ["x"]}}`,
  (r) => `{"_meta": ${pick(r, ['[]', '1', '"m"'])}}`,
];

function jsonCase(r: R): string {
  const text = pick(r, JSON_MISTAKES)(r);
  // spread over lines at random, so the line of the mistake varies
  return r() < 0.5 ? text : text.replace(/, /g, () => (r() < 0.5 ? ',\n  ' : ', '));
}

interface Case {
  name: string;
  file: string;
  text: string;
}

function cases(): Case[] {
  const r = rng(20261202);
  const out: Case[] = [];
  for (let i = 0; i < 100; i++) out.push({ name: `ini #${i}`, file: join(ROOT, `inv-${i}.ini`), text: iniCase(r) });
  for (let i = 0; i < 100; i++) out.push({ name: `json #${i}`, file: join(ROOT, `inv-${i}.json`), text: jsonCase(r) });
  return out;
}

const CASES = cases();
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('fuzzed INI and JSON inventories: exit 3 at file:line, nothing run', () => {
  it('generates a hundred cases per format', () => {
    expect(CASES.filter((c) => c.name.startsWith('ini')).length).toBe(100);
    expect(CASES.filter((c) => c.name.startsWith('json')).length).toBe(100);
  });

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_, c) => {
    writeFileSync(c.file, c.text);
    const res = await cli([PB, '-i', c.file, '--json', '--journal', join(ROOT, 'j.ndjson')]);
    expect(res.code, `${res.stderr}\n---\n${c.text}`).toBe(3);
    expect(res.stderr, c.text).toMatch(new RegExp(`${esc(c.file)}:\\d+:\\d+: `));
    expect(res.stderr).not.toContain('internal error');
    expect(res.stdout).toBe('');
    expect(existsSync(FX)).toBe(false);
  });
});
