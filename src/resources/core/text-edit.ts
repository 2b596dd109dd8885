import { probed } from '../../contract/probe.ts';
import { InputError } from '../../util/errors.ts';
import { BadValue } from '../../util/input-value.ts';
import { contentText, checkAbsolutePath, checkOwner, fileFacts, normMode, type FileFacts } from './file-common.ts';
import { isSensitive, managedFile, type FileWrite } from './managed-file.ts';
import { checkSensitive } from './sensitive-files.ts';
import { maskHex, refuseSecrets } from '../../util/secret.ts';
import { common, editClaim, ProbeError, Refusal, type Change, type CommonOptions, type Resource } from '../../contract/resource.ts';

export interface TextEditOptions extends CommonOptions {
  path: string;
  /** Create the file when it is missing (else: refuse). */
  create?: boolean;
  mode?: string;
  owner?: string | number;
  group?: string | number;
  /**
   * Never show the file's content in a diff, nor this edit's text in its summary (see file's
   * `sensitive`): the host remembers the file as sensitive from then on.
   */
  sensitive?: boolean;
}

/**
 * A resource that owns part of a text file: `edit(old) -> new` is pure, so the diff is exact.
 * The write is compare-and-swap on the probed hash: an edit made by someone else between probe
 * and apply is never overwritten.
 */
export function textEdit(
  kind: string,
  idPart: string,
  o: TextEditOptions,
  edit: (old: string) => string,
  /** What it does, for summaries; on a sensitive file, the `sensitive` text (no content in it). */
  what: string | { plain: string; sensitive: string },
  removing = false,
): Resource<FileFacts, FileWrite> {
  const path = checkAbsolutePath(o.path);
  const sensitive = checkSensitive(o.sensitive, `${kind} ${path}`);
  const owner = checkOwner(o.owner, `${kind} ${path}: owner`);
  const group = checkOwner(o.group, `${kind} ${path}: group`);
  const mf = managedFile({ path, mode: normMode(o.mode), owner, group, sensitive });
  const plain = typeof what === 'string' ? what : what.plain;
  const hidden = typeof what === 'string' ? 'an edit (sensitive)' : what.sensitive;
  const next = (f: FileFacts): string => {
    if (f.type === 'absent') {
      if (!o.create) throw new Refusal(`${path} does not exist (set create: true to create it)`);
      return edit('');
    }
    if (f.type !== 'file') throw new Refusal(`${path} is a ${f.type}, not a regular file`);
    if (!f.content) throw new ProbeError(`${path} is larger than the probe reads; not editing it`);
    return edit(contentText(f));
  };
  return {
    ...common(kind, `${kind}:${path}:${idPart}`, o),
    verifiable: true,
    files: [mf],
    // Edits of one file stack (each diffed against the file the one before leaves).
    claims: [editClaim(`file:${path}`)],
    ...probed(
      () => ({ file: mf.probe(), owners: mf.lookups() }),
      ({ file, owners }) => mf.withLookups(fileFacts(file), owners),
    ),
    diff(f): Change<FileWrite>[] {
      if (removing && f.type === 'absent') return []; // nothing to remove from a missing file
      const w = isSensitive(f, sensitive) ? hidden : plain;
      return mf.changes(f, next(f), { create: `create ${path} with ${w}`, update: `${w} in ${path}` });
    },
    apply: (_, changes) => mf.steps(changes),
  };
}

export interface LineOptions extends TextEditOptions {
  line: string;
  /** Replace the last line matching this (JavaScript) regular expression instead of appending. */
  regexp?: string;
  state?: 'present' | 'absent';
}

/** One line in a file (like Ansible's lineinfile). */
export function line(o: LineOptions): Resource<FileFacts> {
  refuseSecrets({ line: o.line }, `line:${o.path}`); // (a Secret is not a string: said as what it is)
  if (typeof o.line !== 'string') throw new InputError(`line for ${o.path} must be a single line of text`);
  // (said at the variable whose text brought the newline in, when one did)
  const text = o.line;
  if (text.includes('\n'))
    throw new BadValue(`line for ${o.path} must be a single line of text`, (s) => s.includes('\n') && text.includes(s));
  let re: RegExp | undefined;
  try {
    re = o.regexp !== undefined ? new RegExp(o.regexp) : undefined;
  } catch (e) {
    throw new InputError(`line for ${o.path}: invalid regexp: ${(e as Error).message}`);
  }
  const state = o.state ?? 'present';
  // (a sensitive line without a regexp is named by its keyed hash, not its text)
  const idPart = o.regexp ?? (o.sensitive === true ? `sensitive-${maskHex(o.line)}` : o.line);
  return textEdit(
    'line',
    idPart,
    o,
    (old) => editLine(old, o.line, re, state),
    state === 'present'
      ? { plain: `line "${o.line}"`, sensitive: 'a line (sensitive)' }
      : { plain: `remove line "${o.line}"`, sensitive: 'remove a line (sensitive)' },
    state === 'absent',
  );
}

export function editLine(old: string, wanted: string, re: RegExp | undefined, state: 'present' | 'absent'): string {
  const lines = old === '' ? [] : old.replace(/\n$/, '').split('\n');
  const matches = (l: string) => (re ? re.test(l) : l === wanted);
  if (state === 'absent') {
    const kept = lines.filter((l) => !matches(l));
    return kept.length === lines.length ? old : kept.length ? kept.join('\n') + '\n' : '';
  }
  let idx = -1;
  lines.forEach((l, i) => {
    if (matches(l)) idx = i;
  });
  if (idx < 0 && re && lines.includes(wanted)) return old;
  if (idx >= 0) {
    if (lines[idx] === wanted) return old;
    lines[idx] = wanted;
  } else lines.push(wanted);
  return lines.join('\n') + '\n';
}

export interface BlockOptions extends TextEditOptions {
  /** The lines between the markers; '' removes the block (as `state: 'absent'`). */
  block: string;
  /** Marker template; `{mark}` becomes BEGIN / END. Distinct markers let one file hold several blocks. */
  marker?: string;
  state?: 'present' | 'absent';
}

/** A managed block between marker lines (like Ansible's blockinfile). */
export function block(o: BlockOptions): Resource<FileFacts> {
  const marker = o.marker ?? '# {mark} RACKSMITH MANAGED BLOCK';
  if (!marker.includes('{mark}') || marker.includes('\n'))
    throw new InputError(`block marker for ${o.path} must be one line containing {mark}`);
  // an empty block removes it, as Ansible's blockinfile does (not a block of one empty line)
  const state = o.block === '' ? 'absent' : (o.state ?? 'present');
  return textEdit(
    'block',
    marker,
    o,
    (old) => editBlock(old, o.block, marker, state),
    state === 'present'
      ? { plain: 'managed block', sensitive: 'managed block (sensitive)' }
      : { plain: 'remove managed block', sensitive: 'remove managed block (sensitive)' },
    state === 'absent',
  );
}

export function editBlock(old: string, body: string, marker: string, state: 'present' | 'absent'): string {
  const begin = marker.replace('{mark}', 'BEGIN');
  const end = marker.replace('{mark}', 'END');
  const lines = old === '' ? [] : old.replace(/\n$/, '').split('\n');
  // The last BEGIN, as Ansible: a stray BEGIN without END above never swallows real lines.
  const b = lines.lastIndexOf(begin);
  const e = b >= 0 ? lines.indexOf(end, b + 1) : -1;
  const blockLines = state === 'present' ? [begin, ...body.replace(/\n$/, '').split('\n'), end] : [];
  let out: string[];
  if (b >= 0 && e >= 0) out = [...lines.slice(0, b), ...blockLines, ...lines.slice(e + 1)];
  else if (state === 'absent') return old;
  else out = [...lines, ...blockLines];
  return out.length ? out.join('\n') + '\n' : '';
}
