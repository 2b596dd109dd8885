// Sensitive files (resources/core/sensitive-files.ts): the host's record of files written from a secret
// or with `sensitive: true`, read by every file probe; a listed file's diffs show no content, old
// or new, whatever a later resource gives; the record's own edits, run by the real /bin/sh.
import { createHash } from 'node:crypto';
import { fileWith, scratchStateDir } from '../../facts.ts';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { file } from '../../../../src/resources/core/file.ts';
import { block, line } from '../../../../src/resources/core/text-edit.ts';
import { FILE_FACTS, fileFacts, fileFactsBatch, type FileFacts } from '../../../../src/resources/core/file-common.ts';
import { forgetSensitiveScript, markSensitiveScript, SENSITIVE_RECORD } from '../../../../src/resources/core/sensitive-files.ts';
import type { Change, Resource } from '../../../../src/contract/resource.ts';
import { InputError } from '../../../../src/util/errors.ts';
import { Secret, secretText } from '../../../../src/util/secret.ts';
import { shq } from '../../../../src/shell/quote.ts';
import { odDump } from '../../../support/od.ts';

scratchStateDir();

const P = '/etc/app/creds';
const OLD = 'password=hunter2\n';
const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

/** A root-owned 0600 file with this content, as the file probe reports it. */
const present = (content: string, over: Partial<FileFacts> = {}): FileFacts => fileWith(content, { mode: '600', ...over });
const LISTED = present(OLD, { sensitive: true });

/** Everything a change shows in any sink: its summary and diff (the journal, --json and plans record these). */
const shown = (changes: Change[]) => JSON.stringify(changes.map((c) => ({ summary: c.summary, diff: c.diff })));

function predicted(r: Resource<FileFacts>, f: FileFacts): FileFacts {
  const slot = r.files![0];
  const p = slot.predict(f, r.diff(f));
  return p === undefined ? f : slot.use(f, p);
}

describe('a listed file shows no content, whatever the resource gives', () => {
  it.each<[string, Resource<FileFacts>, string]>([
    ['file with the secret missing (empty content)', file({ path: P, content: '' }), `update ${P} (17 → 0 bytes)`],
    ['file with plain content', file({ path: P, content: 'password=\n' }), `update ${P} (17 → 10 bytes)`],
    ['file with another secret', file({ path: P, content: new Secret('password=new\n') }), `update ${P} (secret content)`],
    ['line', line({ path: P, line: 'user=bob' }), `a line (sensitive) in ${P}`],
    ['line by regexp', line({ path: P, line: 'password=', regexp: '^password=' }), `a line (sensitive) in ${P}`],
    ['block', block({ path: P, block: 'x = 1' }), `managed block (sensitive) in ${P}`],
  ])('%s', (_, r, summary) => {
    const changes = r.diff(LISTED);
    expect(changes.map((c) => c.summary)).toEqual([summary]);
    expect(changes[0].diff).toMatch(
      /^\/etc\/app\/creds \(sensitive: content not shown\): 17 bytes, hmac:[0-9a-f]{16} → \d+ bytes, hmac:[0-9a-f]{16}\n$/,
    );
    expect(shown(changes)).not.toMatch(/hunter2|password|user=bob|x = 1/);
    // already listed: no step lists it again
    expect(
      r
        .apply(LISTED, changes)
        .map((s) => s.script)
        .join('\n'),
    ).not.toContain(SENSITIVE_RECORD);
  });

  it('the same content shows the same keyed hash; no plain sha256 of it', () => {
    const [a] = file({ path: P, content: 'x' }).diff(LISTED);
    const [b] = file({ path: P, content: 'y' }).diff(LISTED);
    const before = (d: string | undefined) => /: (.*) →/.exec(d!)![1];
    expect(before(a.diff)).toBe(before(b.diff));
    expect(a.diff).not.toContain(sha(OLD).slice(0, 12));
  });

  it('an unlisted file with plain content keeps its unified diff', () => {
    const [c] = file({ path: P, content: 'password=\n' }).diff(present(OLD));
    expect(c.diff).toContain('-password=hunter2');
  });
});

describe('what lists a file', () => {
  it.each<[string, Resource<FileFacts>, FileFacts, string[]]>([
    ['a secret, new file', file({ path: P, content: new Secret('pw\n') }), { type: 'absent' }, [`create ${P} (3 bytes)`]],
    [
      'a secret, other content',
      file({ path: P, content: secretText`pw=${new Secret('s')}\n` }),
      present('old\n'),
      [`update ${P} (secret content)`],
    ],
    [
      'a secret already there, unlisted',
      file({ path: P, content: new Secret(OLD) }),
      present(OLD),
      [`${P}: list as sensitive in ${SENSITIVE_RECORD}`],
    ],
    ['sensitive: true, plain content', file({ path: P, content: 'a\n', sensitive: true }), present(OLD), [`update ${P} (17 → 2 bytes)`]],
    [
      'sensitive: true, same content',
      file({ path: P, content: OLD, sensitive: true }),
      present(OLD),
      [`${P}: list as sensitive in ${SENSITIVE_RECORD}`],
    ],
    ['a sensitive line', line({ path: P, line: 'token=abc', sensitive: true }), present(OLD), [`a line (sensitive) in ${P}`]],
    [
      'a sensitive block',
      block({ path: P, block: 'k v', sensitive: true, create: true }),
      { type: 'absent' },
      [`create ${P} with managed block (sensitive)`],
    ],
  ])('%s: listed before the write, then converged', (_, r, facts, summaries) => {
    const changes = r.diff(facts);
    expect(changes.map((c) => c.summary)).toEqual(summaries);
    expect(shown(changes)).not.toMatch(/hunter2|token=abc|k v|pw/);
    const script = r
      .apply(facts, changes)
      .map((s) => s.script)
      .join('\n');
    const mark = script.indexOf(SENSITIVE_RECORD);
    expect(mark).toBeGreaterThanOrEqual(0);
    if (script.includes('mktemp')) expect(mark).toBeLessThan(script.indexOf('mv -f -- "$t"') >>> 0);
    const after = predicted(r, facts);
    expect(after.sensitive).toBe(true);
    expect(r.diff(after)).toEqual([]);
  });

  it('a sensitive line is named by a keyed hash, not its text', () => {
    expect(line({ path: P, line: 'token=abc', sensitive: true }).id).toMatch(/^line:\/etc\/app\/creds:sensitive-[0-9a-f]{16}$/);
    expect(line({ path: P, line: 'token=abc', regexp: '^token=', sensitive: true }).id).toBe(`line:${P}:^token=`);
  });

  it('a later plain writer stacked on a secret one shows no content either', () => {
    const first = file({ path: P, content: new Secret(OLD) });
    const mid = predicted(first, { type: 'absent' });
    const changes = line({ path: P, line: 'user=bob' }).diff(mid);
    expect(changes[0].diff).toMatch(/sensitive: content not shown/);
    expect(shown(changes)).not.toMatch(/hunter2/);
  });

  it.each([['yes'], [1], [null]])('sensitive: %j is an InputError', (v) => {
    expect(() => file({ path: P, content: '', sensitive: v as never })).toThrow(InputError);
    expect(() => line({ path: P, line: 'a', sensitive: v as never })).toThrow(/sensitive must be true or false/);
  });
});

describe('what unlists a file: state absent', () => {
  const gone = file({ path: P, state: 'absent' });
  it.each<[string, FileFacts, string[], boolean]>([
    ['listed, present: removed and unlisted', LISTED, [`remove ${P}`], true],
    ['listed, absent: unlisted', { type: 'absent', sensitive: true }, [`${P}: no longer listed as sensitive in ${SENSITIVE_RECORD}`], true],
    ['unlisted, present: removed', present(OLD), [`remove ${P}`], false],
    ['unlisted, absent: nothing', { type: 'absent' }, [], false],
  ])('%s', (_, facts, summaries, forgets) => {
    const changes = gone.diff(facts);
    expect(changes.map((c) => c.summary)).toEqual(summaries);
    expect(gone.apply(facts, changes).some((s) => s.script.includes(SENSITIVE_RECORD))).toBe(forgets);
    expect(gone.diff(predicted(gone, facts))).toEqual([]);
  });
});

describe('the lists on a real filesystem', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-sensitive-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const system = join(dir, 'system', 'sensitive-files');
  const user = join(dir, 'home', '.local', 'state', 'racksmith', 'sensitive-files');
  const records = { system: shq(system), user: shq(user) };
  const run = (script: string) => spawnSync('/bin/sh', ['-c', `set -e\n${script}`], { encoding: 'utf8' });
  const probe = (paths: string[], r = records) => {
    const batch = fileFactsBatch(r);
    const out = spawnSync('/bin/sh', ['-c', batch.script(paths)], { encoding: 'utf8' });
    return batch.split(out.stdout, paths).map((a) => fileFacts(a));
  };

  it("lists a path once, keeps others' lines, unlists it; the probe reads it", () => {
    const f = join(dir, "we'ird $(x).conf");
    writeFileSync(f, OLD);
    expect(probe([f])[0].sensitive).toBeUndefined();
    for (let i = 0; i < 2; i++) expect(run(markSensitiveScript(f, records)).status).toBe(0);
    expect(run(markSensitiveScript('/etc/other', records)).status).toBe(0);
    expect(readFileSync(system, 'utf8')).toBe(`${f}\n/etc/other\n`);
    expect(existsSync(user)).toBe(false);
    const [listed, absent, other] = probe([f, join(dir, 'nope'), '/etc/other']);
    expect(listed).toMatchObject({ type: 'file', sensitive: true, size: 17 });
    expect(absent.type).toBe('absent');
    expect(absent.sensitive).toBeUndefined();
    expect(other.sensitive).toBe(true);
    for (let i = 0; i < 2; i++) expect(run(forgetSensitiveScript(f, records)).status).toBe(0);
    expect(readFileSync(system, 'utf8')).toBe('/etc/other\n');
    expect(run(forgetSensitiveScript('/etc/other', records)).status).toBe(0);
    expect(readFileSync(system, 'utf8')).toBe('');
    expect(probe([f])[0].sensitive).toBeUndefined();
    expect(readdirSync(dirname(system))).toEqual(['sensitive-files']); // no temp file left
  });

  it("the host's list cannot be written: the user's own, which the probe reads too; unlisted from it", () => {
    const blocked = { system: shq('/proc/racksmith-nope/sensitive-files'), user: records.user };
    expect(run(markSensitiveScript('/etc/u', blocked)).status).toBe(0);
    expect(readFileSync(user, 'utf8')).toBe('/etc/u\n');
    expect(probe(['/etc/u'], blocked)[0].sensitive).toBe(true);
    expect(run(forgetSensitiveScript('/etc/u', blocked)).status).toBe(0);
    expect(readFileSync(user, 'utf8')).toBe('');
  });

  it('neither list can be written: the step fails and says why', () => {
    const r = run(markSensitiveScript('/etc/x', { system: shq('/proc/racksmith-nope/a'), user: shq('/proc/racksmith-nope/b') }));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(
      /cannot list \/etc\/x as sensitive \(its content would show in later diffs\): no write access to \/proc\/racksmith-nope\/a or \/proc\/racksmith-nope\/b/,
    );
  });
});

describe('the probe answer', () => {
  const out = (record: string) => `f 4 644 0 root 0 root /x/a\n\n@content\n${odDump('abcd')}@sha\n@sensitive\n${record}`;
  it.each<[string, string, [boolean | undefined, boolean | undefined]]>([
    ['no record', '', [undefined, undefined]],
    ['listed: the file and the absent one', '/x/a\n/x/gone\n', [true, true]],
    ['other paths', '/x/b\n', [undefined, undefined]],
    ['a record that cannot be read: every file', '@unreadable\n', [true, true]],
  ])('%s', (_, record, want) => {
    const [a, gone] = FILE_FACTS.split(out(record), ['/x/a', '/x/gone']).map((x) => fileFacts(x));
    expect([a.sensitive, gone.sensitive]).toEqual(want);
  });

  it('output without the record section is incomplete', () => {
    expect(() => fileFacts(FILE_FACTS.split(out('').replace('@sensitive\n', ''), ['/x/a'])[0])).toThrow(/incomplete/);
  });
});
