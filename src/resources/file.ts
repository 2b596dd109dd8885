import { Secret } from '../util/secret.ts';
import { InputError } from '../util/errors.ts';
import { shq } from '../shell/quote.ts';
import {
  atomicWriteScript,
  checkAbsolutePath,
  chmodChownScript,
  contentDiff,
  fileProbe,
  metadataChanges,
  normMode,
  hasContent,
  parseFileFacts,
  predictWrite,
  type FileFacts,
} from './file-common.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource } from '../contract/resource.ts';

export interface FileOptions extends CommonOptions {
  path: string;
  /** Exact content. A Secret is written as is but never shown in diffs. */
  content?: string | Buffer | Secret;
  state?: 'present' | 'absent';
  mode?: string | number;
  owner?: string | number;
  group?: string | number;
}

/** A whole file with exact content, mode and owner, written atomically. */
export function file(o: FileOptions): Resource<FileFacts> {
  const path = checkAbsolutePath(o.path);
  const state = o.state ?? 'present';
  if (state === 'present' && o.content === undefined) throw new InputError(`file ${path}: content is required (or state: absent)`);
  const mode = normMode(o.mode);
  const secret = o.content instanceof Secret;
  const want = o.content instanceof Secret ? Buffer.from(o.content.reveal()) : Buffer.from(o.content ?? '');
  return {
    ...common('file', `file:${path}`, o),
    verifiable: true,
    writes: [path],
    probe: () => [fileProbe(path)],
    parse: (out) => parseFileFacts(out),
    diff(f): Change[] {
      if (f.type === 'dir' || f.type === 'other')
        throw new Refusal(`${path} is a ${f.type === 'dir' ? 'directory' : 'special file'}; not replacing it`);
      if (state === 'absent') return f.type === 'absent' ? [] : [{ summary: `remove ${path}` }];
      if (f.type === 'link') return [{ summary: `replace symlink ${path} with a file (${want.length} bytes)` }];
      const changes: Change[] = [];
      if (f.type === 'absent') {
        changes.push({
          summary: `create ${path} (${want.length} bytes)`,
          diff: secret ? undefined : contentDiff(path, undefined, want, false),
        });
      } else if (!hasContent(f, want)) {
        changes.push({
          summary: secret ? `update ${path} (secret content)` : `update ${path} (${f.size} → ${want.length} bytes)`,
          diff: secret ? undefined : contentDiff(path, f.content, want, true),
        });
      }
      if (f.type === 'file') changes.push(...metadataChanges(path, f, mode, o.owner, o.group));
      return changes;
    },
    predictFiles: (f) => ({ [path]: state === 'absent' ? { type: 'absent' } : predictWrite(f, want, mode, o.owner, o.group) }),
    useFiles: (f, files) => (files[path] as FileFacts | undefined) ?? f,
    apply(f) {
      if (state === 'absent') return [{ name: `remove ${path}`, script: `rm -f -- ${shq(path)}` }];
      if (hasContent(f, want)) {
        return [{ name: `set mode/owner of ${path}`, script: chmodChownScript(path, mode, o.owner, o.group) }];
      }
      // rename(2) replaces a symlink itself, not its target.
      return [{ name: `write ${path}`, script: atomicWriteScript({ path, content: want, mode, owner: o.owner, group: o.group }) }];
    },
  };
}
