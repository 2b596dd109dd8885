// A wanted owner or group name the host does not know: the resources that set one (file,
// directory, line/block) look the name up with their file's probe and refuse in their diff, so a
// check run and a saved plan show the failure, as Ansible's file module fails in check mode
// ("chown failed: failed to look up user X"). Numeric ids are not looked up, as Ansible does not.
import { describe, expect, it } from 'vitest';
import { fileWith } from '../../facts.ts';
import { directory } from '../../../../src/resources/core/directory.ts';
import { file } from '../../../../src/resources/core/file.ts';
import { line } from '../../../../src/resources/core/text-edit.ts';
import type { FileFacts, NameLookup } from '../../../../src/resources/core/file-common.ts';
import { textOutput, type BatchPart } from '../../../../src/contract/probe.ts';
import { Refusal, type Resource } from '../../../../src/contract/resource.ts';
import { InputError } from '../../../../src/util/errors.ts';

const P = '/etc/rs.conf';
const D = '/srv/rs';
const WANT = 'x=1\n';
const ABSENT: FileFacts = { type: 'absent' };
const DIR: FileFacts = { type: 'dir', mode: '755', uid: 0, user: 'root', gid: 0, group: 'root' };
const NO_USER = `no user 'nosuchuser' on this host (getent passwd finds none)`;
const NO_GROUP = `no group 'nosuchgroup' on this host (getent group finds none)`;
const refused = (path: string, ...why: string[]) =>
  `refused: cannot chown ${path}: ${why.join('; ')}; a resource that creates it belongs in this one's dependsOn`;

/** The names a resource's probe looks up (its batch arguments that are not paths). */
function lookedUp(r: Resource<unknown>): string[] {
  const parts = r.probe() as readonly BatchPart<unknown>[];
  return parts.map((p) => p.arg).filter((a) => !a.startsWith('/'));
}

/** The resource's parse of its file's facts and its lookups' answers (in its probe's order), then its diff. */
function decide(r: Resource<unknown>, facts: FileFacts, answers: NameLookup[]): string[] | string {
  const f = r.parse({ ...textOutput(''), parts: [facts, ...answers] });
  try {
    return r.diff(f).map((c) => c.summary);
  } catch (e) {
    if (e instanceof Refusal) return `refused: ${e.message}`;
    throw e;
  }
}

describe('an owner or group name the host does not know fails the resource in its diff (check mode and apply alike)', () => {
  it.each<[string, Resource<unknown>, string[], FileFacts, NameLookup[], string[] | string]>([
    // [case, resource, names its probe looks up, file facts, their answers, changes or refusal]
    [
      'unknown owner, file there',
      file({ path: P, content: WANT, owner: 'nosuchuser' }),
      ['user:nosuchuser'],
      fileWith(WANT),
      ['unknown'],
      refused(P, NO_USER),
    ],
    [
      'unknown owner, content differs too',
      file({ path: P, content: WANT, owner: 'nosuchuser' }),
      ['user:nosuchuser'],
      fileWith('old\n'),
      ['unknown'],
      refused(P, NO_USER),
    ],
    [
      'unknown owner, file to create',
      file({ path: P, content: WANT, owner: 'nosuchuser' }),
      ['user:nosuchuser'],
      ABSENT,
      ['unknown'],
      refused(P, NO_USER),
    ],
    [
      'unknown group',
      file({ path: P, content: WANT, group: 'nosuchgroup' }),
      ['group:nosuchgroup'],
      fileWith(WANT),
      ['unknown'],
      refused(P, NO_GROUP),
    ],
    [
      'known owner, unknown group: the group is named',
      file({ path: P, content: WANT, owner: 'alice', group: 'nosuchgroup' }),
      ['user:alice', 'group:nosuchgroup'],
      fileWith(WANT),
      ['known', 'unknown'],
      refused(P, NO_GROUP),
    ],
    [
      'both unknown: both named',
      file({ path: P, content: WANT, owner: 'nosuchuser', group: 'nosuchgroup' }),
      ['user:nosuchuser', 'group:nosuchgroup'],
      fileWith(WANT),
      ['unknown', 'unknown'],
      refused(P, NO_USER, NO_GROUP),
    ],
    [
      'known owner: the pending change',
      file({ path: P, content: WANT, owner: 'alice' }),
      ['user:alice'],
      fileWith(WANT),
      ['known'],
      [`${P}: owner root → alice`],
    ],
    [
      'known owner, already its owner',
      file({ path: P, content: WANT, owner: 'alice' }),
      ['user:alice'],
      fileWith(WANT, { uid: 1001, user: 'alice' }),
      ['known'],
      [],
    ],
    [
      'known owner, file to create',
      file({ path: P, content: WANT, owner: 'alice' }),
      ['user:alice'],
      ABSENT,
      ['known'],
      [`create ${P} (4 bytes)`],
    ],
    [
      'the host could not tell (no getent): the change as before, chown decides',
      file({ path: P, content: WANT, owner: 'nosuchuser' }),
      ['user:nosuchuser'],
      fileWith(WANT),
      ['untold'],
      [`${P}: owner root → nosuchuser`],
    ],
    [
      'numeric uid without a passwd entry: not looked up, taken as it is',
      file({ path: P, content: WANT, owner: 4242 }),
      [],
      fileWith(WANT),
      [],
      [`${P}: owner root → 4242`],
    ],
    [
      'numeric ids as strings: not looked up',
      file({ path: P, content: WANT, owner: '4242', group: '4343' }),
      [],
      fileWith(WANT),
      [],
      [`${P}: owner root → 4242`, `${P}: group root → 4343`],
    ],
    [
      'a removal sets no owner: nothing looked up',
      file({ path: P, state: 'absent', owner: 'nosuchuser' }),
      [],
      fileWith(WANT),
      [],
      [`remove ${P}`],
    ],
    [
      'directory, unknown owner, to create',
      directory({ path: D, owner: 'nosuchuser' }),
      ['user:nosuchuser'],
      ABSENT,
      ['unknown'],
      refused(D, NO_USER),
    ],
    [
      'directory, unknown group, there',
      directory({ path: D, group: 'nosuchgroup' }),
      ['group:nosuchgroup'],
      DIR,
      ['unknown'],
      refused(D, NO_GROUP),
    ],
    ['directory, known owner', directory({ path: D, owner: 'alice' }), ['user:alice'], DIR, ['known'], [`${D}: owner root → alice`]],
    [
      'line, unknown owner, file to create',
      line({ path: P, line: 'a=1', create: true, owner: 'nosuchuser' }),
      ['user:nosuchuser'],
      ABSENT,
      ['unknown'],
      refused(P, NO_USER),
    ],
    [
      'line, unknown owner, edit to make',
      line({ path: P, line: 'a=1', owner: 'nosuchuser' }),
      ['user:nosuchuser'],
      fileWith(WANT),
      ['unknown'],
      refused(P, NO_USER),
    ],
  ])('%s', (_, r, names, facts, answers, want) => {
    expect(lookedUp(r)).toEqual(names);
    expect(decide(r, facts, answers)).toEqual(want);
  });

  it('a converged file owned by the wanted names parses to its very facts (shared by the hosts that answered alike)', () => {
    const r = file({ path: P, content: WANT, owner: 'alice', group: 'staff' });
    const facts = fileWith(WANT, { uid: 1001, user: 'alice', gid: 50, group: 'staff' });
    expect(r.parse({ ...textOutput(''), parts: [facts, 'known', 'known'] })).toBe(facts);
  });

  it('a writer stacked on another one of the same file keeps its own unknown name', () => {
    const first = line({ path: P, line: 'a=1', create: true });
    const second = line({ path: P, line: 'b=2', owner: 'nosuchuser' });
    const own = second.parse({ ...textOutput(''), parts: [ABSENT, 'unknown'] });
    const firstFacts = first.parse({ ...textOutput(''), parts: [ABSENT] });
    const predicted = first.files![0].predict!(firstFacts, first.diff(firstFacts));
    const stacked = second.files![0].use(own, predicted);
    expect(() => second.diff(stacked)).toThrow(NO_USER);
  });

  it.each<[string, string | number]>([
    ['a colon (chown would read owner:group)', 'a:b'],
    ['a blank', 'a b'],
    ['a leading dash (an option to chown and getent)', '-x'],
    ['empty', ''],
    ['a control character', 'a\nb'],
    ['a negative id', -1],
    ['a fractional id', 1.5],
  ])('refuses an owner or group with %s (exit 3)', (_, v) => {
    expect(() => file({ path: P, content: WANT, owner: v })).toThrow(InputError);
    expect(() => directory({ path: D, group: v })).toThrow(InputError);
    expect(() => line({ path: P, line: 'a=1', owner: v })).toThrow(InputError);
  });
});
