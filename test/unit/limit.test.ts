import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { selectHosts } from '../../src/inventory/limit.ts';
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
