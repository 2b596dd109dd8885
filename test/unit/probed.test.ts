// Typed probe answers (contract/probe.ts `probed`): a declaration lays its parts out in order and
// hands parse their answers back in its own shape; answers laid out otherwise are refused.
import { execFileSync } from 'node:child_process';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { define, inline, probed, ProbeError, textOutput, type ProbeBatch, type ProbeOutput } from '../../src/contract/probe.ts';
import { standaloneProbe } from '../../src/engine/probe-set.ts';

// A batch answering each argument's length, as a number (a typed answer that is no string).
const LENGTHS: ProbeBatch<number> = {
  script: (args) => args.map((a) => `echo ${a.length}`).join('\n'),
  split: (stdout) => stdout.trim().split('\n').map(Number),
};
const len = (arg: string) => ({ batch: LENGTHS, arg });
const output = (parts: unknown[]): ProbeOutput => ({ ...textOutput(''), parts });

describe('probed: declared parts, typed answers', () => {
  it('lays the parts out in declaration order, define parts and left-out parts included as they are', () => {
    const helpers = define('rs_f() { :; }');
    const own = inline('echo own');
    const p = probed(
      () => ({ helpers, own, sizes: [len('ab'), len('abc')], plain: 'echo plain', none: undefined }),
      (a) => a,
    );
    expect(p.probe()).toEqual([helpers, own, len('ab'), len('abc'), 'echo plain']);
  });

  it('gives each answer back at its name, typed; define fields give none', () => {
    const p = probed(
      () => ({ helpers: define('rs_f() { :; }'), own: inline('echo own'), sizes: [len('ab'), len('abc')], opt: undefined }),
      (a) => a,
    );
    const a = p.parse(output(['own\n', 2, 3]));
    expect(a).toEqual({ own: 'own\n', sizes: [2, 3], opt: undefined });
    expect(Object.keys(a)).not.toContain('helpers');
    expectTypeOf(a).toEqualTypeOf<{ readonly own: string; readonly sizes: readonly [number, number]; readonly opt: undefined }>();
  });

  it('a tuple declaration answers a tuple', () => {
    const p = probed(
      () => [inline('echo a'), len('xyz')],
      ([text, n]) => ({ text, n }),
    );
    expect(p.parse(output(['a\n', 3]))).toEqual({ text: 'a\n', n: 3 });
    expectTypeOf(p.parse).returns.toEqualTypeOf<{ text: string; n: number }>();
  });

  it('an optional part answers its type or undefined', () => {
    const withSource = (bind: boolean) =>
      probed(
        () => ({ target: len('t'), source: bind ? len('source') : undefined }),
        (a) => a.source,
      );
    expect(withSource(true).parse(output([1, 6]))).toBe(6);
    expect(withSource(false).parse(output([1]))).toBeUndefined();
    expectTypeOf(withSource(true).parse).returns.toEqualTypeOf<number | undefined>();
  });

  it.each([
    ['too few', ['own\n']],
    ['too many', ['own\n', 2, 3, 4]],
  ])('answers laid out otherwise (%s) are a ProbeError, never misread', (_, parts) => {
    const p = probed(
      () => ({ own: inline('echo own'), sizes: [len('ab'), len('abc')] }),
      (a) => a,
    );
    expect(() => p.parse({ ...output(parts), stdout: 'own\n' })).toThrow(ProbeError);
    expect(() => p.parse({ ...output(parts), stdout: 'own\n' })).toThrow(/unexpected probe output: own\n/);
  });

  it('declares once: at the first probe or parse, whichever comes first', () => {
    let declared = 0;
    const p = probed(
      () => (declared++, { own: inline('echo own') }),
      (a) => a.own,
    );
    expect(declared).toBe(0);
    p.parse(output(['x']));
    p.probe();
    p.parse(output(['y']));
    expect(declared).toBe(1);
  });

  it('parses what the engine lays out and the shell answers', () => {
    const p = probed(
      () => ({
        helpers: define('rs_twice() { echo "$1$1"; }'),
        twice: inline('rs_twice ab'),
        sizes: [len('a'), len('abcd')],
        plain: 'echo plain',
      }),
      (a) => a,
    );
    const sp = standaloneProbe(p.probe());
    const a = p.parse(sp.output(execFileSync('sh', ['-c', sp.script], { encoding: 'utf8' })));
    expect(a).toEqual({ twice: 'abab\n', sizes: [1, 4], plain: 'plain\n' });
  });
});
