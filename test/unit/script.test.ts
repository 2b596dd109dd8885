import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scriptAsStdin } from '../../src/connection/transport.ts';
import { ProbeSet, standaloneProbe } from '../../src/engine/probe-set.ts';
import { define, inline, type ProbeBatch } from '../../src/contract/probe.ts';
import { buildScript, splitOutput, type Section, type SectionOutput } from '../../src/engine/script.ts';

/** Build, run through `/bin/sh -s` exactly as the connections do (script on stdin), split. */
function roundTrip(sections: Section[]): { out: SectionOutput[]; raw: string; status: number | null; marker: string } {
  const { script, marker } = buildScript(sections);
  const r = spawnSync('/bin/sh', ['-s'], { input: scriptAsStdin(script), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { out: splitOutput(r.stdout, marker, sections.length, r.stderr), raw: r.stdout, status: r.status, marker };
}
// A directory of the test's own, for sections that count how often they ran.
const scratch = mkdtempSync(join(tmpdir(), 'rs-script-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const probe = (body: string): Section => ({ kind: 'probe', body });
const step = (body: string, group?: string): Section => ({ kind: 'step', body, group });

describe('buildScript + splitOutput round trip through /bin/sh', () => {
  it.each<[string, string, SectionOutput]>([
    ['plain output', 'echo hello', { stdout: 'hello\n', stderr: '', code: 0 }],
    ['no output', ':', { stdout: '', stderr: '', code: 0 }],
    ['no trailing newline', 'printf hi', { stdout: 'hi', stderr: '', code: 0 }],
    ['only newlines', "printf '\\n\\n'", { stdout: '\n\n', stderr: '', code: 0 }],
    ['leading newline', "printf '\\nx'", { stdout: '\nx', stderr: '', code: 0 }],
    ['stderr separately', 'echo out; echo err >&2', { stdout: 'out\n', stderr: 'err\n', code: 0 }],
    ['stderr without newline', 'printf e >&2', { stdout: '', stderr: 'e', code: 0 }],
    ['exit code', 'echo x; exit 7', { stdout: 'x\n', stderr: '', code: 7 }],
    ['exit 255', 'exit 255', { stdout: '', stderr: '', code: 255 }],
    ['a failing command in a probe does not stop it', 'false; echo after', { stdout: 'after\n', stderr: '', code: 0 }],
    ['trailing comment', 'echo hi # a comment )', { stdout: 'hi\n', stderr: '', code: 0 }],
    ['stdin is empty (cat returns at once)', 'cat; echo done', { stdout: 'done\n', stderr: '', code: 0 }],
    ['read gets EOF', 'read x || echo eof', { stdout: 'eof\n', stderr: '', code: 0 }],
    ['unicode and tabs', "printf 'ünï\\tcode ✓\\n'", { stdout: 'ünï\tcode ✓\n', stderr: '', code: 0 }],
    [
      'output that looks like a marker',
      "printf '\\n@@RS-0000000000000000@@ E 0 0\\n@@RS-0000000000000000@@ X 0\\n'",
      {
        stdout: '\n@@RS-0000000000000000@@ E 0 0\n@@RS-0000000000000000@@ X 0\n',
        stderr: '',
        code: 0,
      },
    ],
    [
      'stderr that looks like a marker',
      "printf '\\n@@RS-ffff@@ X 0\\n' >&2; echo ok",
      { stdout: 'ok\n', stderr: '\n@@RS-ffff@@ X 0\n', code: 0 },
    ],
    [
      'overwrites the script variables (in a subshell)',
      'rs_m=fake; rs_rc=9; rs_failed=" g0 "; echo x',
      { stdout: 'x\n', stderr: '', code: 0 },
    ],
  ])('one probe: %s', (_, body, want) => {
    // Surround it with other sections: boundaries must hold on both sides.
    const { out } = roundTrip([probe('echo before'), probe(body), probe('echo after; echo e2 >&2')]);
    expect(out[0]).toEqual({ stdout: 'before\n', stderr: '', code: 0 });
    expect(out[1]).toEqual(want);
    expect(out[2]).toEqual({ stdout: 'after\n', stderr: 'e2\n', code: 0 });
  });

  it('a section printing the real marker of a previous section cannot fake a boundary of a later one', () => {
    // The marker is random per script: output of section 0 mentions "B 1"/"E 1" lines with a fake marker.
    const { out, marker } = roundTrip([probe("printf '\\n@@RS-x@@ B 1\\nfake\\n@@RS-x@@ E 1 0\\n'"), probe('echo real')]);
    expect(marker).toMatch(/^@@RS-[0-9a-f]{16}@@$/);
    expect(out[1]).toEqual({ stdout: 'real\n', stderr: '', code: 0 });
  });

  it('uses a different marker for every script', () => {
    const markers = new Set(Array.from({ length: 20 }, () => buildScript([probe(':')]).marker));
    expect(markers.size).toBe(20);
  });

  it('steps run with set -e: the first failing command ends the step', () => {
    const { out } = roundTrip([step('echo one; false; echo two'), probe('false; echo probe-continues')]);
    expect(out[0]).toEqual({ stdout: 'one\n', stderr: '', code: 1 });
    expect(out[1]).toEqual({ stdout: 'probe-continues\n', stderr: '', code: 0 });
  });

  it('an empty step succeeds', () => {
    expect(roundTrip([step(''), step('echo x')]).out).toEqual([
      { stdout: '', stderr: '', code: 0 },
      { stdout: 'x\n', stderr: '', code: 0 },
    ]);
  });

  it("a failed step skips its group's later steps, not other groups, probes or ungrouped steps", () => {
    const { out } = roundTrip([
      step('echo a1', 'A'),
      step('echo a2; echo bad >&2; exit 3', 'A'),
      step('echo b1', 'B'),
      step('echo a3', 'A'), // skipped
      probe('echo p'),
      step('echo free'), // no group: never skipped
      step('echo a4', 'A'), // skipped
      step('exit 1', 'B'),
      step('echo b3', 'B'), // skipped
      step('echo c1', 'C'),
    ]);
    expect(out).toEqual([
      { stdout: 'a1\n', stderr: '', code: 0 },
      { stdout: 'a2\n', stderr: 'bad\n', code: 3 },
      { stdout: 'b1\n', stderr: '', code: 0 },
      { stdout: '', stderr: '', code: null },
      { stdout: 'p\n', stderr: '', code: 0 },
      { stdout: 'free\n', stderr: '', code: 0 },
      { stdout: '', stderr: '', code: null },
      { stdout: '', stderr: '', code: 1 },
      { stdout: '', stderr: '', code: null },
      { stdout: 'c1\n', stderr: '', code: 0 },
    ]);
  });

  it('group names with shell metacharacters are safe (they never reach the script)', () => {
    const g1 = `file:/etc/x'; touch /tmp/rs-pwned-group; '`;
    const g2 = 'g0'; // looks like the generated token of the first group
    const { script } = buildScript([step('exit 1', g1), step('echo skipped', g1), step('echo runs', g2)]);
    expect(script).not.toContain('rs-pwned-group');
    const { out } = roundTrip([step('exit 1', g1), step('echo skipped', g1), step('echo runs', g2)]);
    expect(out.map((o) => o.code)).toEqual([1, null, 0]);
    expect(out[2].stdout).toBe('runs\n');
  });

  it('many sections, large output', () => {
    const big = 'x'.repeat(300_000);
    const sections = [
      probe(`printf '%s' '${big}'`),
      ...Array.from({ length: 50 }, (_, i) => probe(`echo ${i}; echo err${i} >&2; exit ${i % 3}`)),
    ];
    const { out } = roundTrip(sections);
    expect(out[0].stdout).toBe(big);
    for (let i = 0; i < 50; i++) expect(out[i + 1]).toEqual({ stdout: `${i}\n`, stderr: `err${i}\n`, code: i % 3 });
  });

  it('a script killed midway: later sections did not run (code null), the cut section keeps its output', () => {
    const { out } = roundTrip([probe('echo ok'), probe('echo partial; kill -9 $$'), probe('echo never')]);
    expect(out[0]).toEqual({ stdout: 'ok\n', stderr: '', code: 0 });
    expect(out[1].code).toBeNull();
    expect(out[1].stdout).toContain('partial\n');
    expect(out[2]).toEqual({ stdout: '', stderr: '', code: null });
  });

  it('a failing gate section (stop) ends the script: no later section runs', () => {
    const gate = (code: number): Section => ({ kind: 'step', stop: true, body: `exit ${code}` });
    const open = roundTrip([gate(0), step('echo after'), probe('echo probe')]).out;
    expect(open.map((o) => o.code)).toEqual([0, 0, 0]);
    const shut = roundTrip([gate(76), step('echo after'), probe('echo probe')]);
    expect(shut.out.map((o) => o.code)).toEqual([76, null, null]);
    expect(shut.status).toBe(0);
  });

  it('an exit in a section only ends that section (subshell)', () => {
    const { out, status } = roundTrip([probe('exit 4'), step('exit 5'), probe('echo still')]);
    expect(out.map((o) => o.code)).toEqual([4, 5, 0]);
    expect(out[2].stdout).toBe('still\n');
    expect(status).toBe(0);
  });

  it("writes nothing on the host (no temp files): each section's stderr comes apart on the stderr stream", () => {
    expect(buildScript([probe(':'), step(':', 'g')]).script).not.toMatch(/mktemp|\/tmp|>\s*"?\$/);
    const { out } = roundTrip([
      probe('echo a >&2; printf b >&2'),
      probe('echo quiet'),
      step('echo x >&2; false', 'g'),
      step('echo skipped >&2', 'g'),
    ]);
    expect(out.map((o) => o.stderr)).toEqual(['a\nb', '', 'x\n', '']);
    expect(out.map((o) => o.code)).toEqual([0, 0, 1, null]);
  });
});

describe('splitOutput on hand-made output', () => {
  const m = '@@RS-abc@@';
  it('parses sections, tolerates missing ones and truncation', () => {
    const raw = `\n${m} B 0\nout0\n${m} E 0 0\n` + `\n${m} B 2\nout2 cut`;
    const err = `\n${m} B 0\nerr0\n\n${m} X 0\n`;
    expect(splitOutput(raw, m, 3, err)).toEqual([
      { stdout: 'out0', stderr: 'err0\n', code: 0 },
      { stdout: '', stderr: '', code: null },
      { stdout: 'out2 cut', stderr: '', code: null },
    ]);
  });

  it('stderr from the stderr stream, between B and X; a cut section keeps what it wrote', () => {
    const out = `\n${m} B 0\nout0\n${m} E 0 0\n\n${m} B 1\n\n${m} E 1 3\n\n${m} B 2\nout2`;
    const err = `noise before\n\n${m} B 0\nerr0\n\n${m} X 0\n\n${m} B 1\n\n${m} X 1\n\n${m} B 2\npartial err`;
    expect(splitOutput(out, m, 3, err)).toEqual([
      { stdout: 'out0', stderr: 'err0\n', code: 0 },
      { stdout: '', stderr: '', code: 3 },
      { stdout: 'out2', stderr: 'partial err', code: null },
    ]);
  });

  it('stderr without its X marker runs to the end', () => {
    expect(splitOutput(`\n${m} B 0\n\n${m} E 0 2\n`, m, 1, `\n${m} B 0\nerr`)).toEqual([{ stdout: '', stderr: 'err', code: 2 }]);
  });

  it("text after a section's end (not the next section) belongs to no section", () => {
    const out = `\n${m} B 0\na\n${m} E 0 0\nstray\n\n${m} B 1\nb\n${m} E 1 0\n`;
    expect(splitOutput(out, m, 2).map((o) => o.stdout)).toEqual(['a', 'b']);
  });

  it('empty output: every section did not run', () => {
    expect(splitOutput('', m, 2)).toEqual([
      { stdout: '', stderr: '', code: null },
      { stdout: '', stderr: '', code: null },
    ]);
  });

  it('a marker with regex characters is matched literally', () => {
    const m2 = '@@RS-a.b+c@@';
    const raw = `\n${m2} B 0\nx\n${m2} E 0 1\n`;
    expect(splitOutput(raw, m2, 1)).toEqual([{ stdout: 'x', stderr: '', code: 1 }]);
  });
});

describe('probe parts: an identical part runs once per script, a batch once for all its arguments', () => {
  // A batch that answers "<arg>:<pid of the shell that ran it>" per argument, and counts its runs.
  const ECHO: ProbeBatch = {
    script: (args) => `echo run >> "${scratch}/batch-runs"; for a in ${args.map((a) => `'${a}'`).join(' ')}; do echo "$a:$$"; done`,
    split: (stdout, args) => args.map((a) => (stdout.split('\n').find((l) => l.startsWith(`${a}:`)) ?? '') + '\n'),
  };

  it("dedupes parts across resources, runs a batch once, and joins each resource's outputs in order", () => {
    const sections: Section[] = [step('echo step')];
    const shared = `echo shared; echo "$$" >> "${scratch}/runs"; cat "${scratch}/runs" | wc -l | tr -d " "`;
    const set = new ProbeSet(sections, [
      'echo a',
      ['echo b1', shared, { batch: ECHO, arg: 'x' }],
      [shared, 'echo c2', { batch: ECHO, arg: 'y' }],
      [{ batch: ECHO, arg: 'x' }],
      shared,
    ]);
    expect(sections.map((s) => s.kind)).toEqual(['step', 'probe', 'probe', 'probe', 'probe', 'probe']);
    expect(sections.filter((s) => s.body.includes('batch-runs'))).toHaveLength(1);
    const { out } = roundTrip([...sections, probe(`cat "${scratch}/batch-runs" | wc -l | tr -d " "`)]);
    expect(out.at(-1)!.stdout).toBe('1\n'); // the batch ran once
    const b1 = set.output(out, 1).stdout.split('\n');
    expect(b1.slice(0, 3)).toEqual(['b1', 'shared', '1']); // the shared part ran once: it counted one run
    expect(b1[3]).toMatch(/^x:\d+$/);
    const c = set.output(out, 2).stdout.split('\n');
    expect(c.slice(0, 3)).toEqual(['shared', '1', 'c2']);
    expect(c[3]).toMatch(/^y:\d+$/);
    expect(set.output(out, 3).stdout).toBe(`${b1[3]}\n`); // the same argument: the same answer
    expect(set.output(out, 4).stdout).toBe('shared\n1\n');
    expect(set.output(out, 0)).toMatchObject({ parts: ['a\n'], stdout: 'a\n', stderr: '', code: 0 });
  });

  it.each<[string, SectionOutput[], SectionOutput]>([
    [
      'all fine',
      [
        { stdout: 'a', stderr: '', code: 0 },
        { stdout: 'b', stderr: 'w', code: 0 },
      ],
      { stdout: 'ab', stderr: 'w', code: 0 },
    ],
    [
      'first failing code wins',
      [
        { stdout: '', stderr: '', code: 0 },
        { stdout: '', stderr: 'x', code: 3 },
        { stdout: '', stderr: '', code: 5 },
      ],
      { stdout: '', stderr: 'x', code: 3 },
    ],
    [
      'a part that did not run',
      [
        { stdout: 'a', stderr: '', code: 2 },
        { stdout: '', stderr: '', code: null },
      ],
      { stdout: 'a', stderr: '', code: null },
    ],
  ])('joined output: %s', (_, outs, want) => {
    const set = new ProbeSet([], [outs.map((_o, i) => `part ${i}`)]);
    const o = set.output(outs, 0);
    expect({ stdout: o.stdout, stderr: o.stderr, code: o.code }).toEqual(want);
    expect(o.parts).toEqual(outs.map((x) => x.stdout));
  });

  it('shell definitions asked by several probes are defined once, at the top, and answer nothing themselves', () => {
    const fn = define('rs_hello() { echo "hello $1"; }');
    const sections: Section[] = [];
    const set = new ProbeSet(sections, [[fn, 'rs_hello a'], [fn, 'rs_hello b', { batch: ECHO, arg: 'z' }], 'echo plain']);
    const { script, marker } = buildScript(sections);
    expect(script.split('rs_hello() {')).toHaveLength(2);
    expect(script.indexOf('rs_hello() {')).toBeLessThan(script.indexOf('%s B '));
    expect(script.indexOf('%s B ')).toBeGreaterThan(0);
    const r = spawnSync('/bin/sh', ['-s'], { input: scriptAsStdin(script), encoding: 'utf8' });
    const outs = splitOutput(r.stdout, marker, sections.length, r.stderr);
    const [a, b, plain] = [0, 1, 2].map((i) => set.output(outs, i));
    expect([a.stdout, a.code]).toEqual(['hello a\n', 0]);
    expect(b.stdout).toMatch(/^hello b\nz:\d+\n$/);
    expect(b.code).toBe(0);
    expect(plain.stdout).toBe('plain\n');
  });

  it('an answer equal to the last one given is that one (hosts answering alike share it)', () => {
    const sections: Section[] = [];
    const set = new ProbeSet(sections, [['echo a', { batch: ECHO, arg: 'x' }], [{ batch: ECHO, arg: 'y' }]]);
    const outs = (a: string, x: string) => [
      { stdout: a, stderr: '', code: 0 },
      { stdout: `${x}\ny:2\n`, stderr: '', code: 0 },
    ];
    const first = set.output(outs('a\n', 'x:1'), 0);
    const again = set.output(outs('a\n', 'x:1'), 0);
    expect(again).toBe(first); // the same output object: parts equal, nothing joined again
    const other = set.output(outs('a\n', 'x:9'), 0);
    expect(other).not.toBe(first);
    expect(other.stdout).toBe('a\nx:9\n');
    expect(set.output(outs('b\n', 'x:9'), 0).stdout).toBe('b\nx:9\n');
    expect(set.output(outs('b\n', 'x:9'), 1).stdout).toBe('y:2\n');
  });

  it('a probe run standalone gives the same output as in a script with others', () => {
    const p = ['x=1; echo "a$x"; exit 0', 'echo "b${x:-unset}"', { batch: ECHO, arg: 'z' }];
    const sp = standaloneProbe(p);
    const r = spawnSync('/bin/sh', ['-s'], { input: scriptAsStdin(sp.script), encoding: 'utf8' });
    // each part in its own subshell: an exit or a variable stays in its part
    expect(sp.output(r.stdout).stdout).toMatch(/^a1\nbunset\nz:\d+\n$/);
  });
});

describe('inline probe parts: one subshell for all of them', () => {
  it('each part gets exactly its own output (empty, no trailing newline, marker-like text), in one fork', () => {
    const parts = ['echo one', ':', 'printf two', "printf '\\n@@RS-INLINE-000000000000@@ 0\\nfake\\n'", 'echo five'];
    const sections: Section[] = [];
    const set = new ProbeSet(
      sections,
      parts.map((p) => [inline(p)]),
    );
    expect(sections).toHaveLength(1);
    const { out } = roundTrip([...sections, probe('echo after')]);
    expect(parts.map((_, i) => set.output(out, i).stdout)).toEqual([
      'one\n',
      '',
      'two',
      '\n@@RS-INLINE-000000000000@@ 0\nfake\n',
      'five\n',
    ]);
    expect(out[1].stdout).toBe('after\n');
  });
});

describe('shared probes: a row of them runs in one subshell', () => {
  const shared = (body: string): Section => ({ kind: 'probe', body, shared: true });
  // dash gives a subshell's pid in $$'s stead nowhere; a variable set by one section and read by
  // the next tells whether they ran in one shell.
  it('a row of shared probes shares one shell; a probe of its own, a step and the script do not', () => {
    const { out } = roundTrip([
      shared('rs_t=row1; echo a'),
      shared('echo "${rs_t-unset}"'),
      probe('echo "${rs_t-unset}"; rs_t=own'),
      shared('echo "${rs_t-unset}"; rs_t=row2'),
      step('echo "${rs_t-unset}"'),
      shared('echo "${rs_t-unset}"'),
    ]);
    expect(out.map((o) => [o.stdout, o.code])).toEqual([
      ['a\n', 0],
      ['row1\n', 0],
      ['unset\n', 0],
      ['unset\n', 0],
      ['unset\n', 0],
      ['unset\n', 0],
    ]);
  });

  it('each keeps its own exit code, stdout and stderr; an exit ends the rest of its row only (shown as not run)', () => {
    const { out, status } = roundTrip([
      shared('echo one; echo e1 >&2; false'),
      shared('echo two; exit 4'),
      shared('echo three'),
      probe('echo own'),
      shared('echo four'),
    ]);
    expect(status).toBe(0);
    expect(out.map((o) => [o.stdout, o.stderr, o.code])).toEqual([
      ['one\n', 'e1\n', 1],
      ['two\n', '', null],
      ['', '', null],
      ['own\n', '', 0],
      ['four\n', '', 0],
    ]);
  });

  it('stdin is empty in a shared probe too', () => {
    const { out } = roundTrip([shared('cat; echo done'), shared('read x || echo eof')]);
    expect(out.map((o) => o.stdout)).toEqual(['done\n', 'eof\n']);
  });

  it("a shared batch's section and the inline parts form one row: one fork for both, as the host counts", () => {
    const batch: ProbeBatch = { shared: true, script: (args) => args.map((a) => `echo ${a}`).join('\n'), split: (s) => s.split('\n') };
    const sections: Section[] = [];
    new ProbeSet(sections, [[inline('echo i1')], [{ batch, arg: 'b1' }], [inline('echo i2')]]);
    const { script } = buildScript(sections);
    // processes the script starts: the pid counter would need a pid namespace; strace is not on
    // every runner, so the forks are counted from the script: one subshell opening for the row
    // (the row ends the script: it runs in the script's own shell, so no subshell at all)
    expect(script.match(/^\($/gm)).toBeNull();
    const { out } = roundTrip(sections);
    expect(out.every((o) => o.code === 0)).toBe(true);
    // followed by a step, the same row gets its one subshell
    const withStep: Section[] = [];
    new ProbeSet(withStep, [[inline('echo i1')], [{ batch, arg: 'b1' }], [inline('echo i2')]]);
    withStep.push(step('echo s'));
    expect(buildScript(withStep).script.match(/^\($/gm)).toHaveLength(1);
  });

  it("the row that ends the script runs in the script's own shell: an exit there ends the script, the rest of the row shown as not run", () => {
    const { script } = buildScript([probe('echo own'), shared('echo a'), shared('echo b')]);
    expect(script.match(/^\($/gm)).toHaveLength(1); // the probe of its own
    expect(script.match(/^\{$/gm)).toHaveLength(3); // the row, and a brace group per section
    const { out, status } = roundTrip([
      shared('echo one'),
      probe('echo own'),
      shared('rs_t=last; echo two'),
      shared('echo "$rs_t"; exit 4'),
      shared('echo four'),
    ]);
    expect(status).toBe(4);
    expect(out.map((o) => [o.stdout, o.code])).toEqual([
      ['one\n', 0],
      ['own\n', 0],
      ['two\n', 0],
      ['last\n', null],
      ['', null],
    ]);
  });
});
