import { probed } from '../../contract/probe.ts';
import { shq } from '../../shell/quote.ts';
import { checkAbsolutePath, chmodChownScript, fileFacts, fileProbe, metadataChanges, normMode, type FileFacts } from './file-common.ts';
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
  return {
    ...common('directory', `directory:${path}`, o),
    verifiable: true,
    ...probed(
      () => ({ file: fileProbe(path) }),
      ({ file }) => fileFacts(file),
    ),
    diff(f): Change[] {
      if (f.type === 'absent') return [{ summary: `create directory ${path}${mode ? ` (mode ${mode})` : ''}` }];
      if (f.type !== 'dir') throw new Refusal(`${path} exists and is a ${f.type}, not a directory`);
      return metadataChanges(path, f, mode, o.owner, o.group);
    },
    apply(f) {
      const mk = f.type === 'absent' ? `mkdir -p -- ${shq(path)}\n` : '';
      return [{ name: `directory ${path}`, script: mk + chmodChownScript(path, mode, o.owner, o.group) || ':' }];
    },
  };
}
