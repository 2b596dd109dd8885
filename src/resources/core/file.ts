import { probed } from '../../contract/probe.ts';
import { Secret } from '../../util/secret.ts';
import { InputError } from '../../util/errors.ts';
import { checkAbsolutePath, checkOwner, fileFacts, normMode, type FileFacts } from './file-common.ts';
import { managedFile, type FileWrite } from './managed-file.ts';
import { checkSensitive } from './sensitive-files.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource } from '../../contract/resource.ts';

export interface FileOptions extends CommonOptions {
  path: string;
  /**
   * Exact content. A Secret (or text composed with secretText) is written as is, and the file is
   * sensitive from then on: see `sensitive`.
   */
  content?: string | Buffer | Secret;
  /**
   * Never show its content, old or new, in any diff (Ansible's `diff: false`). The host remembers
   * it (/var/lib/racksmith/sensitive-files), so later runs do not either, whatever content they
   * give; `state: 'absent'` removes the file, and that memory only without `sensitive: true`.
   * Implied by a Secret content.
   */
  sensitive?: boolean;
  state?: 'present' | 'absent';
  mode?: string;
  owner?: string | number;
  group?: string | number;
}

/** A whole file with exact content, mode and owner, written atomically. */
export function file(o: FileOptions): Resource<FileFacts, FileWrite> {
  const path = checkAbsolutePath(o.path);
  const state = o.state ?? 'present';
  if (state === 'present' && o.content === undefined) throw new InputError(`file ${path}: content is required (or state: absent)`);
  const secret = o.content instanceof Secret;
  const sensitive = checkSensitive(o.sensitive, `file ${path}`) || secret;
  const want = o.content instanceof Secret ? Buffer.from(o.content.reveal()) : Buffer.from(o.content ?? '');
  const owner = checkOwner(o.owner, `file ${path}: owner`);
  const group = checkOwner(o.group, `file ${path}: group`);
  const mf = managedFile({ path, mode: normMode(o.mode), owner, group, sensitive });
  return {
    ...common('file', `file:${path}`, o, ['content']),
    verifiable: true,
    files: [mf],
    claims: [`file:${path}`],
    ...probed(
      // (a removal sets no owner: no name to look up)
      () => ({ file: mf.probe(), owners: state === 'present' ? mf.lookups() : undefined }),
      ({ file, owners }) => mf.withLookups(fileFacts(file), owners),
    ),
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
        hideDiff: f.type === 'link',
      });
    },
    apply: (_, changes) => mf.steps(changes),
  };
}
