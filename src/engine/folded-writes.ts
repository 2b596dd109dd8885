import type { Step } from '../contract/resource.ts';
import type { State } from './host-state.ts';

// Stacked writers of one file in one apply exec write it once (Step.write): each writer's write
// step becomes a stage that only marks that it was reached, and one section after the last
// writer's stage writes what the last writer reached would have left, compare-and-swap against
// what the first one expected. A jail host's eight mounts write /etc/fstab once, not eight times.

/** One file's folded writes: its writers in order, each with its write step. */
export interface Fold {
  /** The shell variable the stages set (a safe token: rs_foldN). */
  readonly token: string;
  readonly members: Array<{ s: State; step: Step }>;
  /** The sections of the stages, in member order, and of the write (set as they are laid out). */
  stages: number[];
  section: number;
}

/**
 * The folds of a wave, by write step: for each file, the runs of two or more writers each stacked
 * on the one before (`stackedIn`: the writer of the wave a state was diffed against) whose write
 * steps fold alike.
 */
export function planFolds(toApply: readonly State[], stackedIn: (s: State) => State | undefined): Map<Step, Fold> {
  const open = new Map<string, { fold: Fold; key: string; tail: State }>();
  const folds: Fold[] = [];
  for (const s of toApply) {
    if (s.result || !s.steps) continue;
    for (const step of s.steps) {
      const w = step.write;
      if (!w) continue;
      const run = open.get(w.path);
      if (run && run.key === w.fold && stackedIn(s) === run.tail) {
        run.fold.members.push({ s, step });
        run.tail = s;
      } else {
        const fold: Fold = { token: `rs_fold${folds.length}`, members: [{ s, step }], stages: [], section: -1 };
        folds.push(fold);
        open.set(w.path, { fold, key: w.fold, tail: s });
      }
    }
  }
  const byStep = new Map<Step, Fold>();
  for (const f of folds) if (f.members.length > 1) for (const m of f.members) byStep.set(m.step, f);
  return byStep;
}

/** The one write: the script of the last member whose stage ran, expecting what the first member expected. */
export function foldedWriteScript(f: Fold): string {
  const expect = f.members[0].step.write!.expect;
  const arms = f.members.map((m, i) => `${i + 1})\n${m.step.write!.script(expect)}\n;;`).reverse();
  return `case $${f.token} in\n${arms.join('\n')}\nesac`;
}

/** How many members' stages ran (the stages run in order: each member is skipped when the one before failed). */
export function reached(f: Fold, codes: (section: number) => number | null): number {
  let n = 0;
  f.stages.forEach((at, i) => {
    if (codes(at) === 0) n = i + 1;
  });
  return n;
}
