import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { selectHosts, selectLimit } from '../../src/inventory/limit.ts';
import { loadInventory } from '../../src/inventory/load.ts';
import { InputError } from '../../src/util/errors.ts';

const FILE = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'limit', 'hosts.yml');
const inv = loadInventory(FILE);
const writeTmp = (text: string) => {
  const f = join(mkdtempSync(join(tmpdir(), 'rs-limit-')), 'hosts.yml');
  writeFileSync(f, text);
  return f;
};
const ALL = ['tb1', 'tb2', 'web01', 'web02', 'web03', 'db1', 'db2', 'ctl'];

describe('selectHosts', () => {
  it('the fixture has the expected hosts in inventory order', () => {
    expect(inv.hosts.map((h) => h.name)).toEqual(ALL);
  });

  it.each<[string, string[]]>([
    // plain host and group names
    ['tb1', ['tb1']],
    ['ctl', ['ctl']],
    ['web', ['web01', 'web02', 'web03']],
    ['db', ['db1', 'web02', 'db2']], // the group's own order, as Ansible's
    ['infra', ['db1', 'web02', 'db2', 'ctl']], // nested: children's hosts, child by child
    ['mgmt', ['ctl']],
    ['all', ALL],
    ['*', ALL],
    // unions, with both separators
    ['web:db', ['web01', 'web02', 'web03', 'db1', 'db2']],
    ['db:web', ['db1', 'web02', 'db2', 'web01', 'web03']], // term by term
    ['web,db', ['web01', 'web02', 'web03', 'db1', 'db2']],
    [' web , db ', ['web01', 'web02', 'web03', 'db1', 'db2']],
    ['tb1:ctl', ['tb1', 'ctl']],
    ['tb1,tb1', ['tb1']],
    // exclusion and intersection
    ['web:!db', ['web01', 'web03']],
    ['web,!db', ['web01', 'web03']],
    ['web:&db', ['web02']],
    ['web,&db', ['web02']],
    ['infra:!db', ['ctl']],
    ['!db', ['tb1', 'tb2', 'web01', 'web03', 'ctl']],
    ['&web', ['web01', 'web02', 'web03']],
    ['all:!web:!db', ['tb1', 'tb2', 'ctl']],
    ['!web02:web', ['web01', 'web03']], // the position of an exclusion does not matter
    ['web:!nosuch', ['web01', 'web02', 'web03']], // excluding nothing is fine
    ['!nosuch', ALL],
    // globs match host names and group names
    ['tb*', ['db2', 'tb1', 'tb2']], // db2 through group tbgroup: groups first, then hosts
    ['web0?', ['web01', 'web02', 'web03']],
    ['*1', ['tb1', 'web01', 'db1']],
    ['we*:&d*', ['web02']],
    // regexes
    ['~web0[13]', ['web01', 'web03']], // a regex ending in [..] is a character class, not a subscript
    ['~^(tb|db)\\d$', ['tb1', 'tb2', 'db1', 'db2']],
    ['~^db', ['db1', 'web02', 'db2']], // group db matches too
    ['~^web0[13]$', ['web01', 'web03']],
    ['~web0[13],db1', ['web01', 'web03', 'db1']],
    ['~web,!~.*3$', ['web01', 'web02']],
    ['~web,!~3$', ['web01', 'web02', 'web03']], // anchored at the start, as Python's re.match: 3$ matches no name
    ['~.eb0[12]', ['web01', 'web02']],
    // subscripts (inclusive ranges, as in Ansible)
    ['web[0]', ['web01']],
    ['web[2]', ['web03']],
    ['web[-1]', ['web03']],
    ['web[1:]', ['web02', 'web03']],
    ['web[0:1]', ['web01', 'web02']], // the ':' inside [..] is not a term separator
    ['web[0:1],db', ['web01', 'web02', 'db1', 'db2']],
    ['web[1:]:ctl', ['web02', 'web03', 'ctl']],
    ['db[1]', ['web02']], // counted in the group's order
    ['all[0]', ['tb1']],
    ['web[0]:db[0]', ['web01', 'db1']],
    ['web[0],db[-1]', ['web01', 'db2']],
  ])('%j -> %j', (pattern, want) => {
    expect(selectHosts(inv, pattern)).toEqual(want);
  });

  it.each<[string, RegExp]>([
    ['nosuch', /host pattern 'nosuch' matches no host in /],
    ['web:&db:!web02', /matches no host in /],
    ['web[7]', /no host at 'web\[7\]' \(3 match 'web'\)/],
    ['!', /nothing after '!'/],
    ['web,!', /nothing after '!'/],
    ['all:&', /nothing after '&'/],
    ['zz*', /'zz\*' matches no host/],
    ['~^zzz', /'~\^zzz' matches no host/],
    ['Web', /'Web' matches no host/], // names are case-sensitive
    ['', /empty host pattern/],
    [' , ', /empty host pattern/],
    ['~[', /'~\[' has a '\[' or '\]' that is not part of a \[...\]/],
    ['~a(b', /invalid regular expression in host pattern '~a\(b'/],
    ['~(web)\\1', /RE2 syntax: no backreferences/],
    ['~web(?=01)', /invalid regular expression/],
  ])('%j is an InputError', (pattern, re) => {
    let err: unknown;
    try {
      selectHosts(inv, pattern);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(re);
  });

  it('a backtracking bomb (~^(a+)+$ on a long name) is matched in linear time', () => {
    const long = loadInventory(writeTmp(`all:\n  hosts:\n    ${'a'.repeat(900)}b:\n    aaa:\n`));
    // a backtracking engine takes years on this name: the test's timeout is the proof
    expect(selectHosts(long, '~^(a+)+$')).toEqual(['aaa']);
  });

  it('names what the pattern is for, and the inventory file, when it matches nothing', () => {
    expect(() => selectHosts(inv, 'nosuch', '--limit')).toThrow(`host --limit 'nosuch' matches no host in ${FILE}`);
  });

  it('allowEmpty turns "matches nothing" into an empty selection', () => {
    expect(selectHosts(inv, 'nosuch', 'pattern', true)).toEqual([]);
    expect(selectHosts(inv, 'web:nosuch', 'pattern', true)).toEqual(['web01', 'web02', 'web03']);
  });
});

// Every answer here is ansible-core 2.14's (test/unit/ansible-patterns.py on the same inventory).
describe('host patterns as Ansible reads them (issue #34)', () => {
  // [rack1] n1 n2 / [storage] n2 n1: each group keeps its own order
  const racks = loadInventory(
    writeTmp(`all:
  hosts:
    top1:
  children:
    rack1:
      hosts: { n1: , n2: , n10: , n12: }
    storage:
      hosts: { n2: , n1: }
    empty:
    infra:
      children:
        storage:
        rack1:
    v6:
      hosts: { "2001:db8::1": }
    rack9:
      hosts: { rack1: }
`),
  );

  it.each<[string, string[]]>([
    ['storage[0]', ['n2']],
    ['all:!storage[0]', ['top1', 'n1', 'n10', 'n12', '2001:db8::1', 'rack1']],
    ['storage[0:1]', ['n2', 'n1']],
    ['all:!n[12]*', ['top1', '2001:db8::1', 'rack1']],
    ['n[!1]*', ['n2']],
    ['rack[19]', []], // subscript 19 of 'rack', as in Ansible
    ['rack[19]*', ['n1', 'n2', 'n10', 'n12', 'rack1']],
    ['rack1:10', []], // host rack1, port 10: one term naming no host
    ['storage[-2:]', []], // no subscript for Ansible: a glob naming no host
    ['rack1', ['rack1']], // a plain name that is a host is the host
    ['rack1:!rack1', ['rack1']], // ... and `!rack1` the group
    ['2001:db8::1', ['2001:db8::1']],
    ['rack1:empty', ['rack1']],
    ['storage:nosuch', ['n2', 'n1']],
    ['storage rack9', ['n2', 'n1', 'rack1']],
    ['infra', ['n2', 'n1', 'n10', 'n12']], // children in the order they were added
    ['all', ['top1', 'n1', 'n2', 'n10', 'n12', '2001:db8::1', 'rack1']],
  ])('%j -> %j', (pattern, want) => {
    expect(selectHosts(racks, pattern, 'pattern', true)).toEqual(want);
  });

  it.each(['!', 'all:!', 'web,!', '&', 'rack1:&'])('%j selects nothing: exit 3 naming the pattern', (pattern) => {
    expect(() => selectHosts(racks, pattern, '--limit')).toThrow(`host --limit '${pattern}' has nothing after '${pattern.at(-1)}'`);
    expect(() => selectLimit(racks, pattern)).toThrow(InputError);
  });

  it('a term that matches nothing is a warning (as Ansible warns), the others select', () => {
    const warnings: string[] = [];
    expect(selectHosts(racks, 'storage:nosuch:!zz*', 'pattern', false, { warn: (m) => warnings.push(m) })).toEqual(['n2', 'n1']);
    expect(warnings).toEqual([
      "host pattern 'storage:nosuch:!zz*': 'nosuch' matches no host or group, ignored",
      "host pattern 'storage:nosuch:!zz*': 'zz*' matches no host or group, ignored",
    ]);
  });

  it('--limit @FILE reads one term a line (a retry file); a limit naming nothing is exit 3', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-limit-'));
    writeFileSync(join(dir, 'retry'), 'n12\nstorage[0]\n\n');
    writeFileSync(join(dir, 'blank'), '\n\n');
    expect(selectLimit(racks, `@${join(dir, 'retry')}`)).toEqual(['n12', 'n2']);
    expect(selectLimit(racks, `top1,@${join(dir, 'retry')}`)).toEqual(['top1', 'n12', 'n2']);
    expect(() => selectLimit(racks, `@${join(dir, 'blank')}`)).toThrow(/names no host \(Ansible would take it as no limit\)/);
    expect(() => selectLimit(racks, ',')).toThrow(/names no host/);
    expect(() => selectLimit(racks, `@${join(dir, 'nope')}`)).toThrow(/--limit file .*nope: not found/);
    expect(() => selectLimit(racks, `@${dir}`)).toThrow(/is a directory, not a regular file/);
  });

  // Python's strip (Ansible's) keeps U+FEFF, JavaScript's trim takes it off: Ansible's pattern
  // '\ufeffn12' matches nothing where a trimmed one would select n12.
  it('--limit @FILE lines as Ansible reads them: a lone CR breaks a line, Python whitespace (\\x85, \\x1c) is stripped', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-limit-'));
    writeFileSync(join(dir, 'cr'), 'n2\nn12\rtop1\r\n');
    writeFileSync(join(dir, 'nel'), 'n2\nn12\x85\n\x1ctop1\n');
    expect(selectLimit(racks, `@${join(dir, 'cr')}`)).toEqual(selectLimit(racks, 'n2,n12,top1'));
    expect(selectLimit(racks, `@${join(dir, 'nel')}`)).toEqual(selectLimit(racks, 'n2,n12,top1'));
  });

  it('--limit @FILE with a byte-order mark is exit 3 at its place, not read otherwise than Ansible reads it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-limit-'));
    writeFileSync(join(dir, 'bom'), '\ufeffn12\nn2\n');
    writeFileSync(join(dir, 'bom2'), 'n12\n  \ufeffn2\n');
    const said = /a byte-order mark \(U\+FEFF\) in a --limit file: Ansible keeps it in the line's pattern, which then matches no host/;
    expect(() => selectLimit(racks, `@${join(dir, 'bom')}`)).toThrow(new RegExp(`bom:1:1: ${said.source}`));
    expect(() => selectLimit(racks, `@${join(dir, 'bom2')}`)).toThrow(new RegExp(`bom2:2:3: ${said.source}`));
  });
});
