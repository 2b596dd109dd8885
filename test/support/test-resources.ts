/**
 * A resource family for engine tests: `kv` keeps one value in a file of the host's directory.
 * Its probe, diff and apply are real (shell on a FakeConnection); `throwIn` makes one of its
 * methods throw, as a buggy resource would.
 */
import { join } from 'node:path';
import { common, NotApplicable, type Change, type CommonOptions, type Resource, type Step } from '../../src/contract/resource.ts';
import { fileTopic } from '../../src/contract/state-topics.ts';
import { shq } from '../../src/shell/quote.ts';

export type Stage = 'parse' | 'diff' | 'predict' | 'use' | 'apply';

export interface KvOptions extends CommonOptions {
  /** Where the value lives: a file path. */
  path: string;
  value: string;
  /** Id suffix (default: the path's last part). */
  name?: string;
  throwIn?: Stage;
  /** diff throws NotApplicable with this message. */
  notApplicable?: string;
  /** Declare the file as written (for stacking with other writers of it). */
  writes?: boolean;
  /** The apply step exits with this code instead of writing. */
  failStep?: number;
  verifiable?: boolean;
  /** The value lives where other hosts write too (Resource.readsSharedState). */
  shared?: boolean;
  /** Its probe declares that it reads its file, and its step that it touches it (Resource.reads, Step.touches). */
  topics?: boolean;
}

export interface KvFacts {
  value: string | undefined;
}

const ABSENT = '@absent@';

const boom = (stage: Stage, o: KvOptions) => {
  if (o.throwIn === stage) throw new Error(`${stage} exploded`);
};

export function kv(o: KvOptions): Resource<KvFacts> {
  const id = `kv:${o.name ?? o.path.split('/').pop()}`;
  return {
    ...common('kv', id, o),
    verifiable: o.verifiable ?? true,
    readsSharedState: o.shared,
    reads: o.topics ? [fileTopic(o.path)] : undefined,
    // (its whole facts are the file's: a writer after it is diffed against the predicted value)
    files: o.writes
      ? [
          {
            path: o.path,
            predict: (_, changes) => {
              boom('predict', o);
              return changes.length ? { value: o.value } : undefined;
            },
            use: (_, predicted) => {
              boom('use', o);
              return predicted as KvFacts;
            },
          },
        ]
      : undefined,
    probe: () => `cat ${shq(o.path)} 2>/dev/null || printf %s ${shq(ABSENT)}`,
    parse({ stdout }): KvFacts {
      boom('parse', o);
      return { value: stdout === ABSENT ? undefined : stdout };
    },
    diff(f): Change[] {
      boom('diff', o);
      if (o.notApplicable) throw new NotApplicable(o.notApplicable);
      return f.value === o.value ? [] : [{ summary: `${o.path}: ${f.value ?? '(absent)'} → ${o.value}` }];
    },
    apply(): Step[] {
      boom('apply', o);
      if (o.failStep !== undefined) return [{ name: `set ${id}`, script: `echo 'step failed on purpose' >&2; exit ${o.failStep}` }];
      return [
        {
          name: `set ${id}`,
          script: `mkdir -p ${shq(join(o.path, '..'))} && printf %s ${shq(o.value)} > ${shq(o.path)}`,
          touches: o.topics ? [fileTopic(o.path)] : undefined,
        },
      ];
    },
  };
}

/** Appends its name to a log file every time it applies (to see order and how often steps ran). */
export function logStep(o: CommonOptions & { log: string; name: string }): Resource<{ done: boolean }> {
  return {
    ...common('log', `log:${o.name}`, o),
    verifiable: false,
    probe: () => 'echo pending',
    parse: () => ({ done: false }),
    diff: () => [{ summary: `log ${o.name}` }],
    apply: () => [{ name: `log ${o.name}`, script: `printf '%s\\n' ${shq(o.name)} >> ${shq(o.log)}` }],
  };
}

/**
 * A handler for engine tests: when notified, appends `restart NAME` to a log file; `healthFail`
 * makes its health check fail; `notApplicable` makes it say why it cannot run here.
 */
export function logHandler(
  o: CommonOptions & { log: string; name: string; healthFail?: boolean; notApplicable?: string },
): Resource<{ here: boolean }> {
  return {
    ...common('handler', `restart:${o.name}`, o),
    handler: true,
    verifiable: false,
    probe: () => 'echo here',
    parse: ({ stdout }) => ({ here: stdout.trim() === 'here' }),
    diff: () => {
      if (o.notApplicable) throw new NotApplicable(o.notApplicable);
      return [{ summary: `restart ${o.name}` }];
    },
    apply: () => [
      { name: `restart ${o.name}`, script: `printf 'restart %s\\n' ${shq(o.name)} >> ${shq(o.log)}` },
      { name: `${o.name} health`, script: o.healthFail ? `echo '${o.name} is not healthy' >&2; exit 1` : 'true' },
    ],
  };
}
