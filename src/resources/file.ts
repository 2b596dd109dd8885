import { Secret } from '../util/secret.ts';
import { InputError } from '../util/errors.ts';
import { checkAbsolutePath, fileFacts, normMode, type FileFacts } from './file-common.ts';
import { managedFile, type FileWrite } from './managed-file.ts';
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
export function file(o: FileOptions): Resource<FileFacts, FileWrite> {
  const path = checkAbsolutePath(o.path);
  const state = o.state ?? 'present';
  if (state === 'present' && o.content === undefined) throw new InputError(`file ${path}: content is required (or state: absent)`);
  const secret = o.content instanceof Secret;
  const want = o.content instanceof Secret ? Buffer.from(o.content.reveal()) : Buffer.from(o.content ?? '');
  const mf = managedFile({ path, mode: normMode(o.mode), owner: o.owner, group: o.group });
  return {
    ...common('file', `file:${path}`, o, ['content']),
    verifiable: true,
    files: [mf],
    claims: [`file:${path}`],
    probe: () => [mf.probe()],
    parse: (out) => fileFacts(out.parts[0]),
    diff(f): Change<FileWrite>[] {
      if (f.type === 'dir' || f.type === 'other')
        throw new Refusal(`${path} is a ${f.type === 'dir' ? 'directory' : 'special file'}; not replacing it`);
      if (state === 'absent') return mf.removal(f);
      // rename(2) replaces a symlink itself, not its target.
      const create =
        f.type === 'link' ? `replace symlink ${path} with a file (${want.length} bytes)` : `create ${path} (${want.length} bytes)`;
      return mf.changes(f, want, {
        create,
        update:
          f.type === 'link' ? create : secret ? `update ${path} (secret content)` : `update ${path} (${f.size} → ${want.length} bytes)`,
        hideDiff: secret || f.type === 'link',
      });
    },
    apply: (_, changes) => mf.steps(changes),
  };
}
