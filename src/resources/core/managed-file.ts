/**
 * managedFile: the building block of every resource that writes a file (a whole file, a drop-in,
 * an edit of part of one, fstab). It probes the file (one batched `find` + `cat` per script),
 * makes the changes that give it the wanted content and metadata (with a unified diff), predicts
 * the file those changes leave (so a later writer of the same file stacks on it: FileSlot), and
 * writes it atomically with compare-and-swap against the probed content. See docs/resources.md.
 */
import type { BatchPart } from '../../contract/probe.ts';
import type { Change, FileSlot, Step } from '../../contract/resource.ts';
import { shq } from '../../shell/quote.ts';
import {
  atomicWriteScript,
  chmodChownScript,
  contentDiff,
  fileProbe,
  hasContent,
  ownerMatches,
  predictWrite,
  type FileAnswer,
  type FileFacts,
} from './file-common.ts';

export interface ManagedFileOptions<F> {
  path: string;
  /** This file's facts within the resource's facts (default: the resource's facts are the file's). */
  get?: (facts: F) => FileFacts;
  /** The resource's facts with this file's replaced (default: the file's facts themselves). */
  set?: (facts: F, file: FileFacts) => F;
  /** Wanted mode and owner: diffed and set. Left out: a rewrite keeps the old file's (a new file: 644, root). */
  mode?: string;
  owner?: string | number;
  group?: string | number;
  /** Keep a timestamped copy of the file it replaces (`PATH.racksmith-YYYYmmddTHHMMSS.bak`; `….N.bak` for another that second). */
  backup?: boolean;
  /** Shell run with the new content in "$t" before it replaces the file; non-zero aborts. */
  check?: string;
  /** Shell run once the file was written (a reload). */
  then?: string;
  /** The write step's name (default `write PATH`). */
  stepName?: string;
}

/** The summaries of a content change (defaults: `create PATH`, `update PATH`). */
export interface ChangeText {
  create?: string;
  update?: string;
  /** Show no diff (secret content, or nothing worth showing). */
  hideDiff?: boolean;
}

/** What a managed file's changes do, read by its `steps` and `predict` (the data of its changes). */
export class FileWrite {
  constructor(
    readonly path: string,
    /** The new content; null: remove the file. */
    readonly content: Buffer | null,
    /** The content differs (else only mode/owner do). */
    readonly rewrite: boolean,
    /** Compare-and-swap: the probed hash, 'absent', or undefined (not a regular file). */
    readonly expect: string | undefined,
  ) {}
}

export interface ManagedFile<F> extends FileSlot<F> {
  /** The probe part for this file (its answer: `facts(parse's facts)` afterwards). */
  probe(): BatchPart<FileAnswer>;
  /** This file's facts within the resource's facts. */
  facts(f: F): FileFacts;
  /** The changes that give the file `content` and the wanted metadata: content first, then mode, owner, group. */
  changes(f: F, content: string | Buffer, text?: ChangeText): Change<FileWrite>[];
  /** The change that removes the file, if it exists. */
  removal(f: F): Change<FileWrite>[];
  /** The steps of this file's changes among `changes` (none when they do not touch it). */
  steps(changes: readonly Change[]): Step[];
}

const isWrite = (path: string) => (c: Change) => c.data instanceof FileWrite && c.data.path === path;

export function managedFile<F = FileFacts>(o: ManagedFileOptions<F>): ManagedFile<F> {
  const { path, mode, owner, group } = o;
  const get = o.get ?? ((f: F) => f as unknown as FileFacts);
  const set = o.set ?? ((_: F, file: FileFacts) => file as unknown as F);
  const writeOf = (changes: readonly Change[]): FileWrite | undefined => changes.find(isWrite(path))?.data as FileWrite | undefined;
  return {
    path,
    probe: () => fileProbe(path),
    facts: get,
    changes(f, content, text = {}) {
      const file = get(f);
      const want = typeof content === 'string' ? Buffer.from(content) : content;
      const rewrite = !hasContent(file, want);
      const expect = file.type === 'absent' ? 'absent' : file.type === 'file' ? file.sha256 : undefined;
      const data = new FileWrite(path, want, rewrite, expect);
      const out: Change<FileWrite>[] = [];
      if (rewrite) {
        const existed = file.type === 'file';
        out.push({
          summary: file.type === 'absent' ? (text.create ?? `create ${path}`) : (text.update ?? `update ${path}`),
          diff: text.hideDiff ? undefined : contentDiff(path, file.content, want, existed),
          data,
        });
      }
      if (file.type === 'file') {
        if (mode && file.mode !== mode) out.push({ summary: `${path}: mode ${file.mode} → ${mode}`, data });
        if (!ownerMatches(owner, file.uid, file.user)) out.push({ summary: `${path}: owner ${file.user} → ${owner}`, data });
        if (!ownerMatches(group, file.gid, file.group)) out.push({ summary: `${path}: group ${file.group} → ${group}`, data });
      }
      return out;
    },
    removal(f) {
      return get(f).type === 'absent' ? [] : [{ summary: `remove ${path}`, data: new FileWrite(path, null, true, undefined) }];
    },
    steps(changes) {
      const w = writeOf(changes);
      if (!w) return [];
      if (w.content === null) return [{ name: `remove ${path}`, script: `rm -f -- ${shq(path)}` }];
      if (!w.rewrite) return [{ name: `set mode/owner of ${path}`, script: chmodChownScript(path, mode, owner, group) }];
      const write = atomicWriteScript({
        path,
        content: w.content,
        mode,
        owner,
        group,
        expectSha256: w.expect,
        backup: o.backup,
        check: o.check,
      });
      return [{ name: o.stepName ?? `write ${path}`, script: o.then ? `${write}\n${o.then}` : write }];
    },
    predict(f, changes) {
      const w = writeOf(changes);
      if (!w) return undefined;
      return w.content === null ? { type: 'absent' } : predictWrite(get(f), w.content, mode, owner, group);
    },
    use: (f, predicted) => set(f, predicted as FileFacts),
  };
}
