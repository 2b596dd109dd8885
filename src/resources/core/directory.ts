import { probed } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import {
  checkAbsolutePath,
  checkOwner,
  chmodChownScript,
  fileFacts,
  fileProbe,
  metadataChanges,
  normMode,
  ownerLookupRefusal,
  ownerLookups,
  withOwnerLookups,
  type FileFacts,
} from './file-common.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource } from '../../contract/resource.ts';

export interface DirectoryOptions extends CommonOptions {
  path: string;
  mode?: string;
  owner?: string | number;
  group?: string | number;
}

/** A directory (parents created as needed) with mode and owner. */
export function directory(o: DirectoryOptions): Resource<FileFacts> {
  const path = checkAbsolutePath(o.path);
  const mode = normMode(o.mode);
  const owner = checkOwner(o.owner, `directory ${path}: owner`);
  const group = checkOwner(o.group, `directory ${path}: group`);
  return {
    ...common('directory', `directory:${path}`, o),
    verifiable: true,
    ...probed(
      () => ({ file: fileProbe(path), owners: ownerLookups(owner, group) }),
      ({ file, owners }) => withOwnerLookups(fileFacts(file), owners, owner, group),
    ),
    diff(f): Change[] {
      if (f.type !== 'absent' && f.type !== 'dir') throw new Refusal(`${path} exists and is a ${f.type}, not a directory`);
      const changes =
        f.type === 'absent'
          ? [{ summary: `create directory ${path}${mode ? ` (mode ${mode})` : ''}` }]
          : metadataChanges(path, f, mode, owner, group);
      // (a change chowns the directory: none can be made for a name the host does not know)
      const unknown = changes.length ? ownerLookupRefusal(path, f) : undefined;
      if (unknown) throw unknown;
      return changes;
    },
    apply(f) {
      const mk = f.type === 'absent' ? `mkdir -p -- ${shq(path)}\n` : '';
      return [{ name: `directory ${path}`, script: mk + chmodChownScript(path, mode, owner, group) || ':' }];
    },
  };
}
