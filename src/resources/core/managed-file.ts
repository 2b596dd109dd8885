/**
 * managedFile: the building block of every resource that writes a file (a whole file, a drop-in,
 * an edit of part of one, fstab). It probes the file (one batched `find` + `cat` per script),
 * makes the changes that give it the wanted content and metadata (with a unified diff), predicts
 * the file those changes leave (so a later writer of the same file stacks on it: FileSlot), and
 * writes it atomically with compare-and-swap against the probed content. See docs/resources.md.
 */
import type { BatchPart } from '../../contract/probe.ts';
import { posix } from 'node:path';
import type { Change, FileSlot, Step } from '../../contract/resource.ts';
import { fileTopic } from '../../contract/state-topics.ts';
import { shq } from '../../shell/quote.ts';
import { forgetSensitiveScript, markSensitiveScript, SENSITIVE_RECORD, sensitiveDiff } from './sensitive-files.ts';
import {
  atomicWriteScript,
  chmodChownScript,
  contentDiff,
  fileProbe,
  hasContent,
  keepOwnerLookups,
  ownerLookupRefusal,
  ownerLookups,
  ownerMatches,
  predictWrite,
  withOwnerLookups,
  type FileAnswer,
  type FileFacts,
  type NameLookup,
  type OwnerLookups,
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
  /**
   * What `then` may change (Step.touches, contract/state-topics.ts): [SERVICE_UNITS] for a
   * `systemctl daemon-reload`. Left out with a `then`: the write step may change anything.
   */
  thenTouches?: readonly string[];
  /** The write step's name (default `write PATH`). */
  stepName?: string;
  /**
   * Its content is sensitive (written from a secret, or marked `sensitive: true`): the host's record
   * lists the path (sensitive-files.ts), and no diff of it shows content. A path the record lists
   * is treated so whatever this says.
   */
  sensitive?: boolean;
  /**
   * Stacked writers of this file in one exec may write it once (Step.write): set only for a file
   * nothing in the exec reads between their writes (fstab: mount commands name source and target).
   */
  foldWrites?: boolean;
}

/** The summaries of a content change (defaults: `create PATH`, `update PATH`). */
export interface ChangeText {
  create?: string;
  update?: string;
  /** Show no diff (nothing worth showing: a symlink replaced). A sensitive file's diff shows no content anyway. */
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
    /** The host's record of sensitive files gets this path (before the write), or loses it (after a removal). */
    readonly record: 'list' | 'forget' | undefined = undefined,
  ) {}
}

/** Does the file's diff hide its content: the resource says so, or the host's record lists the path. */
export function isSensitive(file: FileFacts, sensitive: boolean | undefined): boolean {
  return sensitive === true || file.sensitive === true;
}

export interface ManagedFile<F> extends FileSlot<F> {
  /** The probe part for this file (its answer: `facts(parse's facts)` afterwards). */
  probe(): BatchPart<FileAnswer>;
  /**
   * The probe parts that look up the wanted owner and group names (none for ids): declared beside
   * `probe()` by a resource that lets its user name them, their answers given to `withLookups`.
   */
  lookups(): OwnerLookups;
  /** The file's facts with the wanted names its host does not know: `changes` then refuses to change the file. */
  withLookups(
    file: FileFacts,
    found: { readonly user: NameLookup | undefined; readonly group: NameLookup | undefined } | undefined,
  ): FileFacts;
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
  // What its write step changes: the file (a backup beside it: its directory), and what `then` does.
  const written = fileTopic(o.backup ? posix.dirname(path) : path);
  const writeTouches = !o.then ? [written] : o.thenTouches && [written, ...o.thenTouches];
  return {
    path,
    probe: () => fileProbe(path),
    lookups: () => ownerLookups(owner, group),
    withLookups: (file, found) => (found ? withOwnerLookups(file, found, owner, group) : file),
    facts: get,
    changes(f, content, text = {}) {
      const file = get(f);
      const want = typeof content === 'string' ? Buffer.from(content) : content;
      const rewrite = !hasContent(file, want);
      const list = o.sensitive === true && !file.sensitive;
      // Made only for a change: its compare-and-swap hash hashes the probed content, which a
      // converged file (most of a fleet's) never needs.
      let write: FileWrite | undefined;
      const data = () => {
        const expect = file.type === 'absent' ? 'absent' : file.type === 'file' ? file.sha256 : undefined;
        return (write ??= new FileWrite(path, want, rewrite, expect, list ? 'list' : undefined));
      };
      const out: Change<FileWrite>[] = [];
      if (rewrite) {
        const existed = file.type === 'file';
        const diff = text.hideDiff
          ? undefined
          : isSensitive(file, o.sensitive)
            ? sensitiveDiff(path, existed ? file : undefined, want)
            : contentDiff(path, file.content, want, existed);
        out.push({
          summary: file.type === 'absent' ? (text.create ?? `create ${path}`) : (text.update ?? `update ${path}`),
          diff,
          data: data(),
        });
      } else if (list) out.push({ summary: `${path}: list as sensitive in ${SENSITIVE_RECORD}`, data: data() });
      if (file.type === 'file') {
        if (mode && file.mode !== mode) out.push({ summary: `${path}: mode ${file.mode} → ${mode}`, data: data() });
        if (!ownerMatches(owner, file.uid, file.user)) out.push({ summary: `${path}: owner ${file.user} → ${owner}`, data: data() });
        if (!ownerMatches(group, file.gid, file.group)) out.push({ summary: `${path}: group ${file.group} → ${group}`, data: data() });
      }
      // (every change writes or chowns the file with the wanted owner: none can be made for a name the host does not know)
      const unknown = out.length ? ownerLookupRefusal(path, file) : undefined;
      if (unknown) throw unknown;
      return out;
    },
    removal(f) {
      const file = get(f);
      // A removed file holds nothing sensitive any more: the record forgets it (unless this resource says it is sensitive).
      const forget = file.sensitive === true && o.sensitive !== true ? 'forget' : undefined;
      const data = new FileWrite(path, null, true, undefined, forget);
      if (file.type !== 'absent') return [{ summary: `remove ${path}`, data }];
      return forget ? [{ summary: `${path}: no longer listed as sensitive in ${SENSITIVE_RECORD}`, data }] : [];
    },
    steps(changes) {
      const w = writeOf(changes);
      if (!w) return [];
      if (w.content === null) {
        const rm = `rm -f -- ${shq(path)}`;
        if (w.record === 'forget') return [{ name: `remove ${path}`, script: `${rm}\n${forgetSensitiveScript(path)}` }];
        return [{ name: `remove ${path}`, script: rm, touches: [fileTopic(path)] }];
      }
      // (a step that edits a record of sensitive files, which may be in the user's home, says nothing of what it touches)
      const list = w.record === 'list' ? `${markSensitiveScript(path)}\n` : '';
      if (!w.rewrite) {
        const meta = chmodChownScript(path, mode, owner, group);
        if (list) return [{ name: meta ? `set mode/owner of ${path}` : `list ${path} as sensitive`, script: list + meta }];
        return [{ name: `set mode/owner of ${path}`, script: meta, touches: [fileTopic(path)] }];
      }
      const content = w.content;
      const writeExpecting = (expect: string | undefined) => {
        const write = atomicWriteScript({ path, content, mode, owner, group, expectSha256: expect, backup: o.backup, check: o.check });
        return o.then ? `${write}\n${o.then}` : write;
      };
      const step: Step = { name: o.stepName ?? `write ${path}`, script: list + writeExpecting(w.expect) };
      if (!list && writeTouches) step.touches = writeTouches;
      if (o.foldWrites && !list)
        step.write = {
          path,
          fold: JSON.stringify([path, mode, owner, group, o.backup, o.check, o.then]),
          expect: w.expect,
          script: writeExpecting,
        };
      return [step];
    },
    predict(f, changes) {
      const w = writeOf(changes);
      if (!w) return undefined;
      const file = get(f);
      const sensitive = w.record === 'list' || (w.record !== 'forget' && file.sensitive === true);
      const after: FileFacts = w.content === null ? { type: 'absent' } : predictWrite(file, w.content, mode, owner, group);
      return sensitive ? { ...after, sensitive } : after;
    },
    // (the names this writer wants that the host does not know stay known to its diff)
    use: (f, predicted) => set(f, keepOwnerLookups(get(f), predicted as FileFacts)),
  };
}
