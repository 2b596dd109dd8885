// Fuzz: several hundred generated bad values across inventory variables (host and group vars),
// -e, connection variables and command-line flags, each run through the CLI against an inventory
// of real bed hosts. Each must be exit 3 with a message, never "internal error" or a hang; the
// process running them all stays under 200 MB; no bed host's sshd sees a connection.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import * as tb from '../testbed/api.ts';
import { rng } from '../unit/rng.ts';
import { repoRoot } from './helpers.ts';

const PB = 'test/fixtures/playbooks/foundation.ts';
const HOSTS = ['tb1', 'tb2'];
const MB = 'x'.repeat(1 << 20);
const BAD_CHARS = ['\0', '\x01', '\x07', '\x1b[2J', '\n', '\r', '\x7f', '\u0085', '\x1f'];

/** Strings with what a path must not hold, by field kind. */
function badPaths(rand: () => number): string[] {
  const out = [
    ...BAD_CHARS.map((c) => `/srv/a${c}b`),
    `/srv/${MB}`,
    `/srv/${'n'.repeat(256)}`,
    'srv/rel',
    '/srv/../etc',
    '/srv//x',
    '/srv/x/',
  ];
  for (let i = 0; i < 60; i++) {
    const c = BAD_CHARS[Math.floor(rand() * BAD_CHARS.length)];
    const at = 1 + Math.floor(rand() * 20);
    const base = `/srv/${'p'.repeat(at)}/q`;
    out.push(base.slice(0, at) + c + base.slice(at));
  }
  return out;
}
const BAD_FILE_NAMES = [...BAD_CHARS.map((c) => `f${c}g`), 'n'.repeat(300), MB];
const BAD_TEXTS = ['a\0b', 'a\x01b', 'a\x1bb', 'a\x7fb', MB];
const BAD_CONNECTION: Record<string, unknown[]> = {
  ansible_port: [0, 65536, -1, 'x', '22a', 1e30, '', true, [22], { a: 1 }],
  ansible_host: ['a b', 'a\0b', 'h'.repeat(300), '', '-oProxyCommand=x', 'a;b', 'a\x1bb'],
  ansible_user: ['a b', '-x', 'a\0', 'u'.repeat(100), '', 'a:b'],
  ansible_ssh_private_key_file: ['/nonexistent/key', '/dev/zero', '/tmp', '/k\x01', `/${'k'.repeat(5000)}`, ''],
  racksmith_ssh_jump: ['a b', '-x', 'u@h:0', 'u@h:70000', 'a\0', 'j'.repeat(400), '@h', 'h:', 'a\nb'],
  ansible_ssh_timeout: [0, -1, 'x', 100000, 1.5],
  racksmith_known_hosts: ['/k\x01', '', `/${'k'.repeat(5000)}`],
  ansible_connection: ['telnet', 1],
};
const BAD_FLAGS: string[][] = [
  ...['0', '-1', 'x', '1.5', ''].map((v) => ['-f', v]),
  ...['0', 'x', '-5', '1e3'].map((v) => ['--timeout', v]),
  ...['0', 'x', '-1'].map((v) => ['--host-timeout', v]),
  ...['-1', 'x', '86401'].map((v) => ['--lock-timeout', v]),
  ...['101', '-1', 'x', '1e2x'].map((v) => ['--max-fail-percent', v]),
  ...['-1', 'x', '3601', '1.5'].map((v) => ['--ssh-keepalive', v]),
  ...['~(', 'nosuchhost', '~(a)\\1', '~a(?=b)'].map((v) => ['--limit', v]),
  ...['x', '-1', '1,x'].map((v) => ['--serial', v]),
  ...['@/dev/zero', '@/tmp', '@/nonexistent', '{bad json', 'a', '=1', '{"a":'].map((v) => ['-e', v]),
  ['--plan-out', 'p.plan'],
  ['--nope'],
  ['-C', '--resume', '/nonexistent.ndjson'],
];

/** The bed's sshd logs, by host: their sizes tell whether anything connected. */
const sshdLogs = () => HOSTS.map((h) => statSync(join(tb.host(h).upper, 'var/log/sshd.log'), { throwIfNoEntry: false })?.size ?? 0);

describe('fuzz: bad values in every field and flag', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-fuzz-'));
  let n = 0;
  const inventory = (hostVars: Record<string, unknown>, groupVars: Record<string, unknown> = {}) => {
    const hosts = Object.fromEntries(
      HOSTS.map((h, i) => [h, { ansible_host: tb.host(h).ip, ansible_port: tb.host(h).port, ...(i === 0 ? hostVars : {}) }]),
    );
    const file = join(dir, `inv${n++}.yaml`);
    writeFileSync(
      file,
      stringify({
        all: {
          vars: { ansible_user: 'root', ansible_ssh_private_key_file: tb.keyPath, racksmith_known_hosts: tb.knownHostsPath, ...groupVars },
          hosts,
        },
      }),
    );
    return file;
  };
  const cases: Array<{ what: string; argv: string[] }> = [];
  beforeAll(() => {
    const good = inventory({});
    const rand = rng(19);
    const fields: Array<[string, unknown[]]> = [
      ['fx_dir', badPaths(rand)],
      ['fx_file', BAD_FILE_NAMES],
      ['fx_text', BAD_TEXTS],
    ];
    for (const [name, values] of fields)
      for (const v of values) {
        cases.push({ what: `host var ${name}=${JSON.stringify(v).slice(0, 40)}`, argv: [PB, '-i', inventory({ [name]: v })] });
        cases.push({ what: `group var ${name}=${JSON.stringify(v).slice(0, 40)}`, argv: [PB, '-i', inventory({}, { [name]: v })] });
        cases.push({ what: `-e ${name}=${JSON.stringify(v).slice(0, 40)}`, argv: [PB, '-i', good, '-e', JSON.stringify({ [name]: v })] });
      }
    for (const [name, values] of Object.entries(BAD_CONNECTION))
      for (const v of values) {
        cases.push({ what: `host var ${name}=${JSON.stringify(v).slice(0, 40)}`, argv: [PB, '-i', inventory({ [name]: v })] });
        cases.push({ what: `-e ${name}=${JSON.stringify(v).slice(0, 40)}`, argv: [PB, '-i', good, '-e', JSON.stringify({ [name]: v })] });
      }
    for (const f of BAD_FLAGS) cases.push({ what: `flag ${f.join(' ')}`, argv: [PB, '-i', good, ...f] });
    for (const inv of ['/dev/zero', '/tmp', '/nonexistent-inventory.yaml', '/dev/null'])
      cases.push({ what: `-i ${inv}`, argv: [PB, '-i', inv] });
  });

  it('at least 300 cases: each exit 3 with a message, no internal error, no hang, under 200 MB, no host contacted', () => {
    expect(cases.length).toBeGreaterThanOrEqual(300);
    const list = join(dir, 'cases.json');
    writeFileSync(list, JSON.stringify(cases.map((c) => c.argv)));
    const before = sshdLogs();
    const r = spawnSync('/usr/bin/time', ['-f', 'maxrss_kb=%M', process.execPath, join(repoRoot, 'test/e2e/fuzz-driver.mjs'), list], {
      cwd: repoRoot,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    const results = r.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { i: number; code?: number | string; ms?: number; stderr?: string; hang?: boolean });
    expect(results.find((x) => x.hang)).toBeUndefined();
    expect(r.status, r.stderr.slice(-2000)).toBe(0);
    expect(results).toHaveLength(cases.length);
    const wrong = results
      .filter((x) => x.code !== 3 || /internal error/.test(x.stderr ?? '') || !/^error: /.test(x.stderr ?? ''))
      .map((x) => `${cases[x.i].what}: exit ${x.code}: ${x.stderr}`);
    expect(wrong).toEqual([]);
    const rss = Number(/maxrss_kb=(\d+)/.exec(r.stderr)?.[1]);
    expect(rss).toBeGreaterThan(0);
    expect(rss).toBeLessThan(200 * 1024);
    expect(sshdLogs()).toEqual(before);
    const ms = results.map((x) => x.ms!).sort((a, b) => a - b);
    console.log(`fuzz: ${cases.length} cases, peak RSS ${Math.round(rss / 1024)} MB, ms median ${ms[ms.length >> 1]}, max ${ms.at(-1)}`);
  });
});
