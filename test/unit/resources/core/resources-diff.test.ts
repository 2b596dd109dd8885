import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileWith } from '../../facts.ts';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPatch } from 'diff';
import { afterAll, describe, expect, it } from 'vitest';
import { command } from '../../../../src/resources/core/command.ts';
import { directory } from '../../../../src/resources/core/directory.ts';
import { file } from '../../../../src/resources/core/file.ts';
import {
  checkAbsolutePath,
  FILE_FACTS,
  fileProbe,
  fromOdHex,
  MAX_PROBED_BYTES,
  normMode,
  fileFacts,
  predictWrite,
  type FileFacts,
} from '../../../../src/resources/core/file-common.ts';
import { block, editBlock, editLine, line } from '../../../../src/resources/core/text-edit.ts';
import { ProbeError, Refusal, type Change, type Resource } from '../../../../src/contract/resource.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { standaloneProbe } from '../../../../src/engine/probe-set.ts';
import { textOutput } from '../../../../src/contract/probe.ts';
import { Secret } from '../../../../src/util/secret.ts';
import { odDump } from '../../../support/od.ts';

// ---------------------------------------------------------------------------------------------
// helpers

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** Facts of a regular file as the probe reports them (root:root 644 unless overridden). */
const present = fileWith;
const ABSENT: FileFacts = { type: 'absent' };
const LINK: FileFacts = { type: 'link' };
const DIR: FileFacts = { type: 'dir', mode: '755', uid: 0, user: 'root', gid: 0, group: 'root' };
const OTHER: FileFacts = { type: 'other' };
/** A file larger than the probe reads: hash and size only. */
const BIG: FileFacts = {
  type: 'file',
  mode: '644',
  uid: 0,
  user: 'root',
  gid: 0,
  group: 'root',
  size: 2 * 1024 * 1024,
  sha256: sha('big'),
};

const UNIFIED = /^--- \S+\n\+\+\+ \S+\n(@@ -\d+(,\d+)? \+\d+(,\d+)? @@\n([ +\\-].*\n)*)+$/;

/** A unified diff that turns `before` into `after`. */
function expectPatch(diff: string | undefined, before: string, after: string): void {
  expect(diff).toBeDefined();
  expect(diff).toMatch(UNIFIED);
  expect(applyPatch(before, diff!)).toBe(after);
}

/** What the engine does for a stacked edit: the facts after applying this resource's changes. */
function predicted(r: Resource<FileFacts>, f: FileFacts): FileFacts {
  const changes: Change[] = r.diff(f);
  const slot = r.files![0];
  const p = slot.predict(f, changes);
  return p === undefined ? f : slot.use(f, p);
}

const summaries = (c: Change[]) => c.map((x) => x.summary);

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

const P = '/etc/racksmith/x.conf';
const WANT = 'a = 1\nb = 2\n'; // 12 bytes

// ---------------------------------------------------------------------------------------------
// file

describe('file().diff', () => {
  const plain = file({ path: P, content: WANT });

  it.each<[string, FileFacts, string[]]>([
    ['absent', ABSENT, [`create ${P} (12 bytes)`]],
    ['same content', present(WANT), []],
    ['different content', present('a = 1\nb = 3\n'), [`update ${P} (12 → 12 bytes)`]],
    ['shorter content', present('a = 1\n'), [`update ${P} (6 → 12 bytes)`]],
    ['no trailing newline', present('a = 1\nb = 2'), [`update ${P} (11 → 12 bytes)`]],
    ['symlink', LINK, [`replace symlink ${P} with a file (12 bytes)`]],
    ['different mode but no mode wanted', present(WANT, { mode: '600' }), []],
    ['different owner but no owner wanted', present(WANT, { uid: 7, user: 'bob' }), []],
    ['file too big to read', BIG, [`update ${P} (2097152 → 12 bytes)`]],
  ])('%s', (_, facts, want) => {
    expect(summaries(plain.diff(facts))).toEqual(want);
  });

  it('a create carries a unified diff from /dev/null', () => {
    const [c] = plain.diff(ABSENT);
    expect(c.diff).toBe('--- /dev/null\n+++ /etc/racksmith/x.conf\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n');
    expectPatch(c.diff, '', WANT);
  });

  it.each([['a = 1\nb = 3\n'], ['a = 1\n'], ['a = 1\nb = 2'], ['x\ny\nz\n'], ['']])(
    'an update from %j carries a unified diff that applies',
    (old) => {
      const [c] = plain.diff(present(old));
      expectPatch(c.diff, old, WANT);
      expect(c.diff!.startsWith(`--- ${P}\n+++ ${P}\n`)).toBe(true);
    },
  );

  it('no text diff for binary content or a file too big to read', () => {
    expect(plain.diff(present(Buffer.from([0, 1, 2])))[0].diff).toBeUndefined();
    expect(plain.diff(BIG)[0].diff).toBeUndefined();
    const bin = file({ path: P, content: Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0]) });
    expect(bin.diff(ABSENT)[0].diff).toBeUndefined();
    expect(bin.diff(present('text\n'))[0].diff).toBeUndefined();
  });

  it.each<[string, FileFacts]>([
    ['a directory', DIR],
    ['a special file', OTHER],
  ])('refuses to replace %s', (_, facts) => {
    expect(() => plain.diff(facts)).toThrow(Refusal);
    expect(() => file({ path: P, state: 'absent' }).diff(facts)).toThrow(Refusal);
  });

  describe('mode and owner', () => {
    it.each<[string, Parameters<typeof file>[0], FileFacts, string[]]>([
      ['mode differs', { path: P, content: WANT, mode: '0600' }, present(WANT), [`${P}: mode 644 → 600`]],
      ['mode same (0600 vs 600)', { path: P, content: WANT, mode: '0600' }, present(WANT, { mode: '600' }), []],
      ['mode without leading zero', { path: P, content: WANT, mode: '600' }, present(WANT), [`${P}: mode 644 → 600`]],
      ['setuid mode', { path: P, content: WANT, mode: '4755' }, present(WANT, { mode: '755' }), [`${P}: mode 755 → 4755`]],
      [
        'content and mode differ',
        { path: P, content: WANT, mode: '0600' },
        present('old\n'),
        [`update ${P} (4 → 12 bytes)`, `${P}: mode 644 → 600`],
      ],
      ['absent: mode is part of the create', { path: P, content: WANT, mode: '0600' }, ABSENT, [`create ${P} (12 bytes)`]],
      ['owner by name differs', { path: P, content: WANT, owner: 'alice' }, present(WANT), [`${P}: owner root → alice`]],
      ['owner by name same', { path: P, content: WANT, owner: 'alice' }, present(WANT, { uid: 1001, user: 'alice' }), []],
      ['owner by uid (number) same', { path: P, content: WANT, owner: 1001 }, present(WANT, { uid: 1001, user: 'alice' }), []],
      ['owner by uid (string) same', { path: P, content: WANT, owner: '1001' }, present(WANT, { uid: 1001, user: 'alice' }), []],
      [
        'owner by uid differs',
        { path: P, content: WANT, owner: 0 },
        present(WANT, { uid: 1001, user: 'alice' }),
        [`${P}: owner alice → 0`],
      ],
      ['owner by uid of a user without a name', { path: P, content: WANT, owner: 4242 }, present(WANT, { uid: 4242, user: 'UNKNOWN' }), []],
      ['group by name differs', { path: P, content: WANT, group: 'adm' }, present(WANT), [`${P}: group root → adm`]],
      ['group by gid same', { path: P, content: WANT, group: 4 }, present(WANT, { gid: 4, group: 'adm' }), []],
      [
        'mode, owner and group all differ',
        { path: P, content: WANT, mode: '0640', owner: 'alice', group: 'adm' },
        present(WANT),
        [`${P}: mode 644 → 640`, `${P}: owner root → alice`, `${P}: group root → adm`],
      ],
    ])('%s', (_, opts, facts, want) => {
      expect(summaries(file(opts).diff(facts))).toEqual(want);
    });
  });

  describe('state: absent', () => {
    const gone = file({ path: P, state: 'absent' });
    it.each<[string, FileFacts, string[]]>([
      ['absent', ABSENT, []],
      ['file', present('x'), [`remove ${P}`]],
      ['symlink', LINK, [`remove ${P}`]],
    ])('%s', (_, facts, want) => {
      expect(summaries(gone.diff(facts))).toEqual(want);
    });
  });

  it('never shows secret content: a diff of sizes and keyed hashes only, no value in the summary', () => {
    const s = file({ path: P, content: new Secret('password=hunter2\n') });
    for (const facts of [ABSENT, present('password=old\n'), present('password=old\n', { sensitive: true })]) {
      const changes = s.diff(facts);
      expect(changes).toHaveLength(1);
      expect(changes[0].diff).toMatch(
        /^\/etc\/racksmith\/x\.conf \(sensitive: content not shown\): (absent|13 bytes, hmac:[0-9a-f]{16}) → 17 bytes, hmac:[0-9a-f]{16}\n$/,
      );
      expect(JSON.stringify(changes)).not.toMatch(/hunter2|old/);
    }
    expect(s.diff(present('password=old\n'))[0].summary).toBe(`update ${P} (secret content)`);
    expect(s.diff(present('password=hunter2\n', { sensitive: true }))).toEqual([]);
  });

  it.each<[string, () => unknown]>([
    ['relative path', () => file({ path: 'etc/x', content: '' })],
    ['path with ..', () => file({ path: '/etc/../x', content: '' })],
    ['path with //', () => file({ path: '/etc//x', content: '' })],
    ['trailing slash', () => file({ path: '/etc/x/', content: '' })],
    ['newline in path', () => file({ path: '/etc/x\ny', content: '' })],
    ['no content', () => file({ path: P })],
    ['bad mode', () => file({ path: P, content: '', mode: '999' })],
    ['symbolic mode', () => file({ path: P, content: '', mode: 'u+rw' })],
  ])('%s is an InputError', (_, fn) => {
    expect(thrown(fn)).toBeInstanceOf(InputError);
  });
});

// ---------------------------------------------------------------------------------------------
// line / block

describe('line().diff', () => {
  const L = (o: Partial<Parameters<typeof line>[0]> = {}) => line({ path: P, line: 'foo=1', ...o });

  it.each<[string, Resource<FileFacts>, FileFacts, string[], string | null]>([
    // name, resource, facts, summaries, resulting content (null: no content diff)
    ['absent file, create', L({ create: true }), ABSENT, [`create ${P} with line "foo=1"`], 'foo=1\n'],
    ['line missing: appended', L(), present('a\nb\n'), [`line "foo=1" in ${P}`], 'a\nb\nfoo=1\n'],
    ['file without trailing newline', L(), present('a\nb'), [`line "foo=1" in ${P}`], 'a\nb\nfoo=1\n'],
    ['empty file', L(), present(''), [`line "foo=1" in ${P}`], 'foo=1\n'],
    ['already present', L(), present('a\nfoo=1\nb\n'), [], null],
    ['replaced by regexp', L({ regexp: '^foo=' }), present('a\nfoo=0\nb\n'), [`line "foo=1" in ${P}`], 'a\nfoo=1\nb\n'],
    ['regexp: already right', L({ regexp: '^foo=' }), present('foo=1\n'), [], null],
    ['regexp: no match, appended', L({ regexp: '^foo=' }), present('a\n'), [`line "foo=1" in ${P}`], 'a\nfoo=1\n'],
    ['absent: removed', L({ state: 'absent' }), present('a\nfoo=1\nb\nfoo=1\n'), [`remove line "foo=1" in ${P}`], 'a\nb\n'],
    ['absent: not there', L({ state: 'absent' }), present('a\nb\n'), [], null],
    ['absent by regexp', L({ state: 'absent', regexp: '^foo=' }), present('foo=0\na\nfoo=9\n'), [`remove line "foo=1" in ${P}`], 'a\n'],
    ['mode differs too', L({ mode: '0600' }), present('a\n'), [`line "foo=1" in ${P}`, `${P}: mode 644 → 600`], 'a\nfoo=1\n'],
    ['only the owner differs', L({ owner: 'alice' }), present('foo=1\n'), [`${P}: owner root → alice`], null],
  ])('%s', (_, r, facts, want, after) => {
    const changes = r.diff(facts);
    expect(summaries(changes)).toEqual(want);
    const withDiff = changes.filter((c) => c.diff !== undefined);
    if (after === null) expect(withDiff).toEqual([]);
    else {
      expect(withDiff).toHaveLength(1);
      expectPatch(withDiff[0].diff, facts.content?.toString() ?? '', after);
    }
  });

  it.each<[string, FileFacts, unknown]>([
    ['a missing file without create: true', ABSENT, Refusal],
    ['a directory', DIR, Refusal],
    ['a symlink', LINK, Refusal],
    ['a special file', OTHER, Refusal],
    ['a file too big to read', BIG, ProbeError],
  ])('refuses %s', (_, facts, cls) => {
    expect(thrown(() => L().diff(facts))).toBeInstanceOf(cls);
  });

  // Ensuring a line is absent from a file that does not exist is already converged: nothing to
  // create, nothing to refuse (Ansible's lineinfile reports ok).
  it.each([[false], [true]])('state: absent on a missing file is a no-op (create: %s)', (create) => {
    expect(L({ state: 'absent', create }).diff(ABSENT)).toEqual([]);
  });

  it.each<[string, () => unknown]>([
    ['a line with a newline', () => line({ path: P, line: 'a\nb' })],
    ['an invalid regexp', () => line({ path: P, line: 'a', regexp: '(' })],
    ['a relative path', () => line({ path: 'x', line: 'a' })],
  ])('%s is an InputError', (_, fn) => {
    expect(thrown(fn)).toBeInstanceOf(InputError);
  });
});

describe('block().diff', () => {
  const B = (o: Partial<Parameters<typeof block>[0]> = {}) => block({ path: P, block: 'k1 v1\nk2 v2', ...o });
  const BEGIN = '# BEGIN RACKSMITH MANAGED BLOCK';
  const END = '# END RACKSMITH MANAGED BLOCK';
  const BLK = `${BEGIN}\nk1 v1\nk2 v2\n${END}\n`;

  it.each<[string, Resource<FileFacts>, FileFacts, string[], string | null]>([
    ['absent file, create', B({ create: true }), ABSENT, [`create ${P} with managed block`], BLK],
    ['inserted at the end', B(), present('a\n'), [`managed block in ${P}`], `a\n${BLK}`],
    ['file without trailing newline', B(), present('a'), [`managed block in ${P}`], `a\n${BLK}`],
    ['already present', B(), present(`a\n${BLK}z\n`), [], null],
    ['replaced in place', B(), present(`a\n${BEGIN}\nold\n${END}\nz\n`), [`managed block in ${P}`], `a\n${BLK}z\n`],
    ['removed', B({ state: 'absent' }), present(`a\n${BLK}z\n`), [`remove managed block in ${P}`], 'a\nz\n'],
    ['remove when not there', B({ state: 'absent' }), present('a\n'), [], null],
    [
      "an empty block removes it (Ansible's blockinfile)",
      B({ block: '' }),
      present(`a\n${BLK}z\n`),
      [`remove managed block in ${P}`],
      'a\nz\n',
    ],
    ['an empty block, none there: nothing to do', B({ block: '', create: true }), ABSENT, [], null],
    [
      'own marker leaves other blocks alone',
      B({ marker: '## {mark} net' }),
      present(`${BLK}`),
      [`managed block in ${P}`],
      `${BLK}## BEGIN net\nk1 v1\nk2 v2\n## END net\n`,
    ],
  ])('%s', (_, r, facts, want, after) => {
    const changes = r.diff(facts);
    expect(summaries(changes)).toEqual(want);
    if (after === null) expect(changes.filter((c) => c.diff)).toEqual([]);
    else expectPatch(changes[0].diff, facts.content?.toString() ?? '', after);
  });

  it.each<[string, FileFacts, unknown]>([
    ['a missing file without create: true', ABSENT, Refusal],
    ['a directory', DIR, Refusal],
    ['a file too big to read', BIG, ProbeError],
  ])('refuses %s', (_, facts, cls) => {
    expect(thrown(() => B().diff(facts))).toBeInstanceOf(cls);
  });

  it('state: absent on a missing file is a no-op', () => {
    expect(B({ state: 'absent' }).diff(ABSENT)).toEqual([]);
  });

  it.each([['no marker'], ['{mark}\nx']])('marker %j is an InputError', (marker) => {
    expect(thrown(() => block({ path: P, block: 'x', marker }))).toBeInstanceOf(InputError);
  });
});

describe('editLine', () => {
  const re = /^bar=/;
  it.each<[string, string, string, RegExp | undefined, 'present' | 'absent', string]>([
    // name, old, line, regexp, state, new
    ['empty file', '', 'a', undefined, 'present', 'a\n'],
    ['append', 'x\n', 'a', undefined, 'present', 'x\na\n'],
    ['append, no trailing newline', 'x', 'a', undefined, 'present', 'x\na\n'],
    ['keeps blank lines', 'x\n\n', 'a', undefined, 'present', 'x\n\na\n'],
    ['already present', 'a\nx\n', 'a', undefined, 'present', 'a\nx\n'],
    ['already present, no trailing newline: untouched', 'x\na', 'a', undefined, 'present', 'x\na'],
    ['a partial match is not the line', 'ab\n', 'a', undefined, 'present', 'ab\na\n'],
    ['replace by regexp', 'bar=1\nx\n', 'bar=2', re, 'present', 'bar=2\nx\n'],
    ['regexp: the last match is replaced', 'bar=1\nx\nbar=3\n', 'bar=2', re, 'present', 'bar=1\nx\nbar=2\n'],
    ['regexp: no match, line elsewhere', 'x\nbar2\n', 'bar2', re, 'present', 'x\nbar2\n'],
    ['regexp: no match, appended', 'x\n', 'bar=2', re, 'present', 'x\nbar=2\n'],
    ['regexp: already right', 'bar=2\n', 'bar=2', re, 'present', 'bar=2\n'],
    ['remove every copy', 'a\nb\na\n', 'a', undefined, 'absent', 'b\n'],
    ['remove: not there', 'b\nc', 'a', undefined, 'absent', 'b\nc'],
    ['remove the only line', 'a\n', 'a', undefined, 'absent', ''],
    ['remove from empty', '', 'a', undefined, 'absent', ''],
    ['remove by regexp', 'bar=1\nx\nbar=2\n', 'ignored', re, 'absent', 'x\n'],
    ['remove, no trailing newline', 'x\na', 'a', undefined, 'absent', 'x\n'],
    ['regexp special chars in the line are literal', 'a.b\n', 'a*b', undefined, 'present', 'a.b\na*b\n'],
  ])('%s', (_, old, wanted, regexp, state, want) => {
    const once = editLine(old, wanted, regexp, state);
    expect(once).toBe(want);
    // Converging twice changes nothing the second time.
    expect(editLine(once, wanted, regexp, state)).toBe(once);
  });
});

describe('editBlock', () => {
  const M = '# {mark} RS';
  const blk = (body: string) => `# BEGIN RS\n${body}\n# END RS\n`;
  it.each<[string, string, string, 'present' | 'absent', string]>([
    // name, old, body, state, new
    ['empty file', '', 'x', 'present', blk('x')],
    ['append', 'a\n', 'x', 'present', `a\n${blk('x')}`],
    ['append, no trailing newline', 'a', 'x', 'present', `a\n${blk('x')}`],
    ['multi-line body', 'a\n', 'x\ny', 'present', `a\n${blk('x\ny')}`],
    ['body trailing newline ignored', 'a\n', 'x\n', 'present', `a\n${blk('x')}`],
    ['already present', `a\n${blk('x')}b\n`, 'x', 'present', `a\n${blk('x')}b\n`],
    ['replace in the middle', `a\n${blk('old\nold2')}b\n`, 'x', 'present', `a\n${blk('x')}b\n`],
    ['replace, no trailing newline', `a\n# BEGIN RS\nold\n# END RS`, 'x', 'present', `a\n${blk('x')}`],
    ['remove', `a\n${blk('x')}b\n`, 'x', 'absent', 'a\nb\n'],
    ['remove the whole file content', blk('x'), 'x', 'absent', ''],
    ['remove: not there', 'a\nb', 'x', 'absent', 'a\nb'],
    ['END before BEGIN is not a block', `# END RS\na\n`, 'x', 'present', `# END RS\na\n${blk('x')}`],
    ['other blocks kept', `# BEGIN other\no\n# END other\n`, 'x', 'present', `# BEGIN other\no\n# END other\n${blk('x')}`],
    // A BEGIN marker left without its END (a hand edit): the block is appended, and converging
    // again must not change the file a second time.
    ['BEGIN without END', `# BEGIN RS\nold\n`, 'x', 'present', `# BEGIN RS\nold\n${blk('x')}`],
  ])('%s', (_, old, body, state, want) => {
    const once = editBlock(old, body, M, state);
    expect(once).toBe(want);
    expect(editBlock(once, body, M, state)).toBe(once);
  });
});

// ---------------------------------------------------------------------------------------------
// directory / command

describe('directory().diff', () => {
  const D = '/srv/data';
  it.each<[string, Parameters<typeof directory>[0], FileFacts, string[]]>([
    ['absent', { path: D }, ABSENT, [`create directory ${D}`]],
    ['absent with mode', { path: D, mode: '0750' }, ABSENT, [`create directory ${D} (mode 750)`]],
    ['present', { path: D }, DIR, []],
    ['present, same mode', { path: D, mode: '0755' }, DIR, []],
    ['present, other mode', { path: D, mode: '0750' }, DIR, [`${D}: mode 755 → 750`]],
    ['owner by name', { path: D, owner: 'alice' }, DIR, [`${D}: owner root → alice`]],
    ['owner by uid, same', { path: D, owner: 0 }, DIR, []],
    ['group by name, same', { path: D, group: 'root' }, DIR, []],
    ['group by gid, differs', { path: D, group: 4 }, DIR, [`${D}: group root → 4`]],
  ])('%s', (_, opts, facts, want) => {
    expect(summaries(directory(opts).diff(facts))).toEqual(want);
  });

  it.each<[string, FileFacts]>([
    ['a file', present('x')],
    ['a symlink', LINK],
    ['a special file', OTHER],
  ])('refuses when the path is %s', (_, facts) => {
    expect(() => directory({ path: D }).diff(facts)).toThrow(Refusal);
  });

  it.each([['relative'], ['/a/../b'], ['/a/']])('path %j is an InputError', (path) => {
    expect(thrown(() => directory({ path }))).toBeInstanceOf(InputError);
  });
});

function sh(script: string): { stdout: string; status: number | null } {
  const r = spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
  return { stdout: r.stdout, status: r.status };
}

describe('command()', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rs-cmd-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const exists = join(tmp, 'there');
  writeFileSync(exists, '');

  it('without a guard and without unguarded: true is an InputError', () => {
    const e = thrown(() => command({ name: 'x', run: ['true'] }));
    expect(e).toBeInstanceOf(InputError);
    expect((e as Error).message).toMatch(/needs a guard/);
  });

  it.each<[string, () => unknown]>([
    ['no name', () => command({ name: '', run: ['true'], creates: '/x' })],
    ['empty argv', () => command({ name: 'x', run: [], creates: '/x' })],
    ['empty script', () => command({ name: 'x', run: '', creates: '/x' })],
    ['relative creates', () => command({ name: 'x', run: ['true'], creates: 'x' })],
  ])('%s is an InputError', (_, fn) => {
    expect(thrown(fn)).toBeInstanceOf(InputError);
  });

  it('unguarded: true -> not verifiable, always pending, reported as "always runs"', () => {
    const c = command({ name: 'reload', run: ['true'], unguarded: true });
    expect(c.verifiable).toBe(false);
    const f = c.parse(textOutput(sh(c.probe() as string).stdout));
    expect(f).toEqual({ satisfied: false });
    const changes = c.diff(f);
    expect(summaries(changes)).toEqual(['run reload (unguarded: always runs)']);
  });

  it.each<[string, Parameters<typeof command>[0], boolean]>([
    ['creates: path exists', { name: 'c', run: ['true'], creates: exists }, true],
    ['creates: path missing', { name: 'c', run: ['true'], creates: join(tmp, 'missing file') }, false],
    ['unless argv succeeds', { name: 'c', run: ['true'], unless: ['test', '-e', exists] }, true],
    ['unless argv fails', { name: 'c', run: ['true'], unless: ['test', '-e', join(tmp, 'nope')] }, false],
    ['unless script succeeds', { name: 'c', run: 'true', unless: 'true && echo noise; echo more >&2' }, true],
    ['unless script fails', { name: 'c', run: 'true', unless: 'echo noise; false' }, false],
    ['creates missing, unless succeeds', { name: 'c', run: ['true'], creates: join(tmp, 'nope'), unless: ['true'] }, true],
    ['creates exists, unless fails', { name: 'c', run: ['true'], creates: exists, unless: ['false'] }, true],
  ])('guarded (%s): verifiable, probe says satisfied=%s', (_, opts, satisfied) => {
    const c = command(opts);
    expect(c.verifiable).toBe(true);
    const r = sh(c.probe() as string);
    expect(r.status).toBe(0);
    const f = c.parse(textOutput(r.stdout));
    expect(f).toEqual({ satisfied });
    expect(summaries(c.diff(f))).toEqual(satisfied ? [] : ['run c']);
  });

  it('runs argv words literally', () => {
    const out = join(tmp, "out $(id) 'q'");
    const c = command({ name: 'w', run: ['sh', '-c', 'printf %s "$1" > "$2"', 'sh', 'a; `b` $c', out], creates: out });
    expect(sh(c.probe() as string).stdout.trim()).toBe('pending');
    const steps = c.apply({ satisfied: false }, c.diff({ satisfied: false }));
    for (const s of steps) expect(sh(s.script).status).toBe(0);
    expect(sh(`cat ${JSON.stringify(out).replace(/\$/g, '\\$')}`).stdout).toBe('a; `b` $c');
    expect(sh(c.probe() as string).stdout.trim()).toBe('satisfied');
  });
});

// ---------------------------------------------------------------------------------------------
// predictions: the facts after applying are converged

describe('predicted facts are converged (diff after predict is empty)', () => {
  const cases: Array<[string, Resource<FileFacts>, FileFacts]> = [];
  const starts: Array<[string, FileFacts]> = [
    ['absent', ABSENT],
    ['other content', present('old\n', { mode: '600', uid: 5, user: 'bob', gid: 5, group: 'bob' })],
    ['same content', present(WANT)],
    ['symlink', LINK],
  ];
  const files: Array<[string, Resource<FileFacts>]> = [
    ['file', file({ path: P, content: WANT })],
    ['file with mode/owner names', file({ path: P, content: WANT, mode: '0640', owner: 'alice', group: 'adm' })],
    ['file with numeric owner', file({ path: P, content: WANT, mode: '0600', owner: 1001, group: '1001' })],
    ['file absent', file({ path: P, state: 'absent' })],
    ['secret file', file({ path: P, content: new Secret('pw\n') })],
  ];
  for (const [fn, r] of files) for (const [sn, f] of starts) cases.push([`${fn} from ${sn}`, r, f]);
  const edits: Array<[string, Resource<FileFacts>]> = [
    ['line', line({ path: P, line: 'foo=1', create: true })],
    ['line by regexp with mode', line({ path: P, line: 'foo=1', regexp: '^foo=', create: true, mode: '0600', owner: 'alice' })],
    ['line absent', line({ path: P, line: 'old', state: 'absent' })],
    ['block', block({ path: P, block: 'k v', create: true, group: 'adm' })],
  ];
  for (const [en, r] of edits) {
    for (const [sn, f] of starts.filter(([n]) => n !== 'symlink' && (n !== 'absent' || !en.endsWith('absent'))))
      cases.push([`${en} from ${sn}`, r, f]);
  }

  it.each(cases)('%s', (_, r, f) => {
    const after = predicted(r, f);
    expect(r.diff(after)).toEqual([]);
  });

  it('predicts the edited content and its hash', () => {
    const r = line({ path: P, line: 'foo=1', create: true });
    const after = predicted(r, present('a\n'));
    expect(after.content?.toString()).toBe('a\nfoo=1\n');
    expect(after.sha256).toBe(sha('a\nfoo=1\n'));
    expect(after.size).toBe(8);
    expect(after.mode).toBe('644');
  });

  it('a stacked second edit sees the first one (line then block on one file)', () => {
    const first = line({ path: P, line: 'foo=1', create: true });
    const second = block({ path: P, block: 'k v' });
    const mid = predicted(first, ABSENT);
    const changes = second.diff(mid);
    expect(summaries(changes)).toEqual([`managed block in ${P}`]);
    expectPatch(changes[0].diff, 'foo=1\n', 'foo=1\n# BEGIN RACKSMITH MANAGED BLOCK\nk v\n# END RACKSMITH MANAGED BLOCK\n');
  });

  it('predictWrite keeps the old mode/owner of a replaced file, defaults for a new one', () => {
    const old = present('x', { mode: '600', uid: 5, user: 'bob', gid: 6, group: 'grp' });
    expect(predictWrite(old, Buffer.from('y'))).toMatchObject({ type: 'file', mode: '600', uid: 5, user: 'bob', gid: 6, group: 'grp' });
    expect(predictWrite(ABSENT, Buffer.from('y'))).toMatchObject({
      type: 'file',
      mode: '644',
      uid: 0,
      user: 'root',
      gid: 0,
      group: 'root',
    });
  });
});

// ---------------------------------------------------------------------------------------------
// file-common helpers

describe('normMode / checkAbsolutePath', () => {
  it.each<[string, string]>([
    ['0644', '644'],
    ['644', '644'],
    ['0755', '755'],
    ['4755', '4755'],
    ['04755', '4755'],
    ['1777', '1777'],
    ['0000', '0'],
  ])('normMode(%j) = %j', (m, want) => {
    expect(normMode(m)).toBe(want);
  });

  it.each<[string]>([['999'], ['64'], ['rw-r--r--'], ['0o644'], [''], ['12345']])('normMode(%j) is an InputError', (m) => {
    expect(thrown(() => normMode(m))).toBeInstanceOf(InputError);
  });

  // (from JavaScript, or past a cast) a number says nothing of its base: 755 would be 0o1363
  it.each<[number, string]>([
    [755, "not the number 755: quote the digits ('1363' for 0o1363, '755' for 755 as written)"],
    [0o644, "not the number 420: quote the digits ('644' for 0o644, '420' for 420 as written)"],
  ])('normMode(%j) is refused, saying why', (m, says) => {
    const e = thrown(() => normMode(m as unknown as string));
    expect(e).toBeInstanceOf(InputError);
    expect((e as InputError).message).toContain(says);
  });

  it.each([['/'], ['/etc'], ['/etc/x.conf'], ['/a b/c']])('checkAbsolutePath(%j) ok', (p) => {
    expect(checkAbsolutePath(p)).toBe(p);
  });

  it.each([['etc'], ['./x'], ['/a/./b'], ['/a/../b'], ['//a'], ['/a/'], ['/a\0b'], ['/a\nb'], ['']])(
    'checkAbsolutePath(%j) is an InputError',
    (p) => {
      expect(thrown(() => checkAbsolutePath(p))).toBeInstanceOf(InputError);
    },
  );
});

describe('fileProbe + fileFacts on real paths', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rs-probe-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const probe = (p: string) => {
    const sp = standaloneProbe([fileProbe(p)]);
    return fileFacts(sp.output(sh(sp.script).stdout).parts[0]);
  };

  it('a regular file: type, mode, owner, size, hash and exact content', () => {
    const p = join(tmp, "we'ird $(name).txt");
    const content = Buffer.concat([Buffer.from('line1\nünïcode\n'), Buffer.from([0, 255, 10]), Buffer.from('no newline')]);
    writeFileSync(p, content);
    chmodSync(p, 0o640);
    const f = probe(p);
    expect(f.type).toBe('file');
    expect(f.mode).toBe('640');
    expect(f.uid).toBe(process.getuid!());
    expect(typeof f.user).toBe('string');
    expect(f.size).toBe(content.length);
    expect(f.sha256).toBe(sha(content));
    expect(f.content!.equals(content)).toBe(true);
  });

  it('an empty file has empty content', () => {
    const p = join(tmp, 'empty');
    writeFileSync(p, '');
    const f = probe(p);
    expect(f).toMatchObject({ type: 'file', size: 0, sha256: sha('') });
    expect(f.content!.length).toBe(0);
  });

  it('absent, directory, symlink', () => {
    expect(probe(join(tmp, 'nope'))).toEqual(expect.objectContaining({ type: 'absent' }));
    const d = join(tmp, 'd');
    mkdirSync(d, { mode: 0o750 });
    chmodSync(d, 0o750);
    expect(probe(d)).toMatchObject({ type: 'dir', mode: '750' });
    const l = join(tmp, 'l');
    symlinkSync(d, l);
    expect(probe(l).type).toBe('link');
    const dangling = join(tmp, 'dangling');
    symlinkSync(join(tmp, 'nowhere'), dangling);
    expect(probe(dangling).type).toBe('link');
  });

  it('a diff on probed facts of the same content is empty', () => {
    const p = join(tmp, 'same.conf');
    writeFileSync(p, WANT);
    chmodSync(p, 0o600);
    expect(file({ path: p, content: WANT, mode: '0600', owner: process.getuid!() }).diff(probe(p))).toEqual([]);
  });

  it('garbage probe output is a ProbeError', () => {
    expect(thrown(() => fileFacts('sh: stat: not found\n'))).toBeInstanceOf(ProbeError);
  });
});

describe('file facts batch: every file of a script in one find, one cat | base64', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rs-batch-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('many paths at once: each gets exactly its own facts (spaces, empty, large, dir, link, absent)', () => {
    const a = join(tmp, 'a file.conf');
    const e = join(tmp, 'empty');
    const big = join(tmp, 'big');
    const d = join(tmp, 'dir');
    const l = join(tmp, 'link');
    writeFileSync(a, 'alpha\n');
    writeFileSync(e, '');
    const bigContent = Buffer.alloc(MAX_PROBED_BYTES + 1, 'x');
    writeFileSync(big, bigContent);
    mkdirSync(d);
    symlinkSync(a, l);
    const paths = [a, join(tmp, 'nope'), e, big, d, l];
    const sp = standaloneProbe(paths.map((p) => fileProbe(p)));
    const r = spawnSync('sh', ['-s'], { input: sp.script, encoding: 'utf8', maxBuffer: 64 << 20 });
    // one find and one base64 for all six paths
    expect(sp.script.match(/\bfind\b/g)).toHaveLength(1);
    const texts = FILE_FACTS.split(r.stdout.slice(r.stdout.indexOf('B 0\n') + 4), paths);
    const facts = texts.map((t) => fileFacts(t));
    expect(facts[0]).toMatchObject({ type: 'file', size: 6, sha256: sha('alpha\n') });
    expect(facts[0].content!.toString()).toBe('alpha\n');
    expect(facts[1].type).toBe('absent');
    expect(facts[2]).toMatchObject({ type: 'file', size: 0, sha256: sha('') });
    expect(facts[3]).toMatchObject({ type: 'file', size: MAX_PROBED_BYTES + 1, sha256: sha(bigContent) });
    expect(facts[3].content).toBeUndefined(); // hashed on the host, not transferred
    expect(facts[4].type).toBe('dir');
    expect(facts[5].type).toBe('link');
  });

  it.each([
    ['nothing', Buffer.alloc(0)],
    ['every byte value', Buffer.from(Array.from({ length: 256 }, (_, i) => i))],
    ['a line that ends without a newline, and 17 bytes (a second od line)', Buffer.from('a=1\nb=2\nc=3 \t$x')],
  ])('od hex of %s reads back byte for byte', (_, bytes) => {
    expect(fromOdHex(odDump(bytes)).equals(bytes)).toBe(true);
    // and from the middle of an answer
    const text = `x\n@content\n${odDump(bytes)}@sha\n`;
    expect(fromOdHex(text, text.indexOf('@content\n') + 9, text.indexOf('@sha')).equals(bytes)).toBe(true);
  });

  it('a file that changed size between find and od is a probe error, not a wrong hash', () => {
    const out = `f 5 644 0 root 0 root /x/a\nf 3 644 0 root 0 root /x/b\n\n@content\n${odDump('abcdefg')}@sha\n@sensitive\n`;
    const [a, b] = FILE_FACTS.split(out, ['/x/a', '/x/b']);
    expect(() => fileFacts(a)).toThrow(ProbeError);
    expect(() => fileFacts(b)).toThrow(/changed while it was read/);
    const ok = FILE_FACTS.split(out.replace(odDump('abcdefg'), odDump('abcdefgh')), ['/x/a', '/x/b']);
    expect(fileFacts(ok[0]).content!.toString()).toBe('abcde');
    expect(fileFacts(ok[1]).content!.toString()).toBe('fgh');
  });

  it('a file answered as before (same find line, same bytes) gets the same answer; any difference a new one', () => {
    const out = (content: string, mode = '644') =>
      `f ${content.length} ${mode} 0 root 0 root /x/same\n\n@content\n${odDump(content)}@sha\n@sensitive\n`;
    const [a] = FILE_FACTS.split(out('v=1\n'), ['/x/same']);
    const [b] = FILE_FACTS.split(out('v=1\n'), ['/x/same']);
    const [c] = FILE_FACTS.split(out('v=2\n'), ['/x/same']);
    const [d] = FILE_FACTS.split(out('v=2\n', '600'), ['/x/same']);
    expect(b).toBe(a);
    expect(fileFacts(c).content!.toString()).toBe('v=2\n');
    expect(fileFacts(d)).toMatchObject({ mode: '600', content: Buffer.from('v=2\n') });
    expect(fileFacts(FILE_FACTS.split(out('v=1\n'), ['/x/same'])[0]).content!.toString()).toBe('v=1\n');
  });

  it('a file too large to send, same find line but another host-side hash: a new answer with that hash', () => {
    const big = MAX_PROBED_BYTES + 1;
    const out = (hash: string) => `f ${big} 644 0 root 0 root /x/big\n\n@content\n\n@sha\n${hash}  /x/big\n@sensitive\n`;
    const [a] = FILE_FACTS.split(out('a'.repeat(64)), ['/x/big']);
    const [b] = FILE_FACTS.split(out('b'.repeat(64)), ['/x/big']);
    expect(fileFacts(a).sha256).toBe('a'.repeat(64));
    expect(fileFacts(b).sha256).toBe('b'.repeat(64));
  });

  it('incomplete output (the script died) is an error for every path', () => {
    expect(FILE_FACTS.split('f 5 644 0 root 0 root /x/a\n', ['/x/a']).map((t) => thrown(() => fileFacts(t)))).toEqual([
      expect.any(ProbeError),
    ]);
  });
});
