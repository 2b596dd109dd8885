// provision exec's output: host names folded as dshbak writes them, identical results grouped,
// each stream bounded where it is made (the wrapper run here by the real /bin/sh) with a note.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { commandLine } from '../../src/exec/command-line.ts';
import { foldHostNames } from '../../src/output/host-ranges.ts';
import { boundedScript, cutNote, cutOutput, EXEC_OUTPUT_LIMIT, newTrailerMark } from '../../src/exec/output-bound.ts';
import { execSummary, renderGroups } from '../../src/exec/report.ts';
import { groupResults, type ExecHostResult } from '../../src/exec/result.ts';
import { InputError } from '../../src/util/errors.ts';
import { Secret } from '../../src/util/secret.ts';

const nums = (prefix: string, from: number, to: number, width = 0) =>
  Array.from({ length: to - from + 1 }, (_, i) => `${prefix}${String(from + i).padStart(width, '0')}`);

describe('foldHostNames', () => {
  it.each([
    ['one host', ['tb1'], 'tb1'],
    ['a run', nums('tb', 1, 30), 'tb[1-30]'],
    ['unpadded numbers of any width', ['tb9', 'tb10', 'tb11'], 'tb[9-11]'],
    ['zero-padded keep their width', nums('node', 1, 30, 2), 'node[01-30]'],
    ['node10 among node01 … node09', nums('node', 1, 10, 2), 'node[01-10]'],
    ['gaps', ['n1', 'n2', 'n3', 'n5', 'n7', 'n8'], 'n[1-3,5,7-8]'],
    ['order of input does not matter within a family', ['n3', 'n1', 'n2'], 'n[1-3]'],
    ['different prefixes and suffixes stay apart', ['a1', 'b1', 'a2', 'r1-x', 'r2-x'], 'a[1-2],b1,r[1-2]-x'],
    ['the last number is the one folded', ['rack1-n1', 'rack1-n2', 'rack2-n1'], 'rack1-n[1-2],rack2-n1'],
    ['names without digits as they are', ['db', 'web', 'tb1'], 'db,web,tb1'],
    ['node1 and node01 are different hosts', ['node1', 'node01', 'node02'], 'node1,node[01-02]'],
  ])('%s', (_, names, folded) => {
    expect(foldHostNames(names)).toBe(folded);
  });
});

const result = (host: string, o: Partial<ExecHostResult> = {}): ExecHostResult => ({
  host,
  status: 'ok',
  exitCode: 0,
  stdout: { text: 'Linux\n', cut: 0 },
  stderr: { text: '', cut: 0 },
  ...o,
});

describe('groupResults and renderGroups', () => {
  it('hosts with the same stdout, stderr and exit status are one group; a failing host is its own', () => {
    const results = [...nums('tb', 1, 29).map((h) => result(h)), result('tb30', { status: 'failed', exitCode: 3 })];
    const groups = groupResults(results);
    expect(groups.map((g) => g.hosts.length)).toEqual([29, 1]);
    expect(renderGroups(groups)).toBe('==== tb[1-29] (29 hosts): exit 0\nLinux\n==== tb30: exit 3\nLinux\n');
    expect(execSummary(results)).toBe('exec: 30 hosts: 29 exit 0, 1 failed (tb30), 0 unreachable');
  });

  it.each([
    ['stderr', { stderr: { text: 'warn\n', cut: 0 } }],
    ['the exit status', { exitCode: 1, status: 'failed' as const }],
    ['what was cut', { stdout: { text: 'Linux\n', cut: 10 } }],
  ])('a host whose %s differs is a group of its own', (_, differs) => {
    expect(groupResults([result('a1'), result('a2', differs), result('a3')]).map((g) => g.hosts)).toEqual([['a1', 'a3'], ['a2']]);
  });

  it('unreachable hosts are grouped by their error, and their output is not invented', () => {
    const down = (h: string) =>
      result(h, { status: 'unreachable', exitCode: null, stdout: { text: '', cut: 0 }, error: 'connection refused' });
    const text = renderGroups(groupResults([down('n1'), down('n2'), result('n3')]));
    expect(text).toBe('==== n[1-2] (2 hosts): UNREACHABLE: connection refused\n==== n3: exit 0\nLinux\n');
    expect(execSummary([down('n1'), down('n2'), result('n3')])).toBe('exec: 3 hosts: 1 exit 0, 0 failed, 2 unreachable (n[1-2])');
  });

  it('hosts without output whose errors differ only in an address are one header, the part that varies under it', () => {
    const down = (h: string, ip: string) =>
      result(h, { status: 'unreachable', exitCode: null, stdout: { text: '', cut: 0 }, error: `ssh root@${ip}:22: connect ECONNREFUSED` });
    const text = renderGroups(groupResults([down('n1', '10.0.0.1'), down('n2', '10.0.0.2'), result('n3'), down('n4', '10.0.0.4')]));
    expect(text).toBe(
      [
        '==== n[1-2,4] (3 hosts): UNREACHABLE: ssh root@10.0.0.‹1›:22: connect ECONNREFUSED',
        '  ‹1›: 1, 2, 4',
        '==== n3: exit 0',
        'Linux',
        '',
      ].join('\n'),
    );
  });

  it('a cut stream says how much was cut; stderr comes under its own line; escape sequences are shown, tabs kept', () => {
    const r = result('h1', { stdout: { text: 'a\tb\x1b[2J', cut: 1234 }, stderr: { text: 'oops\n', cut: 0 } });
    expect(renderGroups(groupResults([r]))).toBe(`==== h1: exit 0\na\tb\\x1b[2J\n${cutNote(1234)}\n-- stderr\noops\n`);
    expect(cutNote(1234)).toBe(`[… 1234 more bytes cut: each stream is kept to its first ${EXEC_OUTPUT_LIMIT} bytes]`);
  });
});

/** The bounded script of `command` run by this machine's /bin/sh, as a host's sh runs it. */
function runBounded(command: string, limit: number) {
  const mark = newTrailerMark();
  const r = spawnSync('/bin/sh', ['-c', boundedScript(command, mark, limit)], { encoding: 'utf8' });
  return { stdout: cutOutput(r.stdout, mark, limit), stderr: cutOutput(r.stderr, mark, limit), code: r.status };
}

describe('boundedScript (run by /bin/sh) and cutOutput', () => {
  it('keeps each stream to the limit, counts what was cut, and passes the exit status through', () => {
    const r = runBounded(commandLine(['printf abcdefghijklmnop; printf 0123456789XYZ >&2; exit 7']), 10);
    expect(r).toEqual({ stdout: { text: 'abcdefghij', cut: 6 }, stderr: { text: '0123456789', cut: 3 }, code: 7 });
  });

  it('output within the limit comes back whole, nothing cut', () => {
    expect(runBounded(commandLine(['echo', 'a b', '$HOME']), 100)).toEqual({
      stdout: { text: 'a b $HOME\n', cut: 0 },
      stderr: { text: '', cut: 0 },
      code: 0,
    });
  });

  it('the command reads no stdin and sees none of the wrapper descriptors', () => {
    const probe = 'cat; for n in 3 4 5; do (: >&$n) 2>/dev/null && echo "fd $n open"; done; echo end';
    const r = runBounded(commandLine([probe]), 1000);
    expect(r).toEqual({ stdout: { text: 'end\n', cut: 0 }, stderr: { text: '', cut: 0 }, code: 0 });
  });

  it('a signal ending the command is its exit status (128+n), as sh reports it', () => {
    expect(runBounded(commandLine(['kill -TERM $$']), 100).code).toBe(143);
  });

  it('without a trailer (the wrapper never ran) the text is cut here all the same', () => {
    expect(cutOutput('x'.repeat(20), newTrailerMark(), 8)).toEqual({ text: 'x'.repeat(8), cut: 12 });
    expect(cutOutput('short', newTrailerMark(), 8)).toEqual({ text: 'short', cut: 0 });
  });
});

describe('commandLine', () => {
  it('several words are one command, each word quoted; one word is a shell command line', () => {
    expect(commandLine(['xfs_info', '/ais/d1'])).toBe('xfs_info /ais/d1');
    expect(commandLine(['echo', '$(id)', 'a b'])).toBe(`echo '$(id)' 'a b'`);
    expect(commandLine(['xfs_info /ais/d1 | grep bsize'])).toBe(`/bin/sh -c 'xfs_info /ais/d1 | grep bsize'`);
  });

  it.each([[[]], [['']], [['  ']]])('no command (%j) is bad input', (words) => {
    expect(() => commandLine(words)).toThrow(/exec needs a command after --/);
  });

  it('a word holding a secret of the run (its text or its mask) is refused', () => {
    const s = new Secret('hunter2-exec-test');
    expect(() => commandLine(['mysql', '-phunter2-exec-test'])).toThrow(InputError);
    expect(() => commandLine(['mysql', '-phunter2-exec-test'])).toThrow(/word 2 of the command holds a secret/);
    expect(() => commandLine(['echo', s.masked])).toThrow(InputError);
  });
});
