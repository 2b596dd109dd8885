import { atomicWriteScript, contentDiff, fileProbe, hasContent, parseFileFacts, predictWrite, type FileFacts } from './file-common.ts';
import { inline, type ProbePart } from '../contract/probe.ts';
import { ProbeError, type Change, type Step } from '../contract/resource.ts';

/**
 * The file half of resources that pair a persisted config file with live kernel state (sysctl,
 * kmod): probe output is `<live part>` then `== file` then the file probe.
 */
export const FILE_MARK = '== file\n';

export function probeWithFile(live: string, path: string): ProbePart[] {
  return [inline(`${live}\necho '== file'`), fileProbe(path)];
}

export function splitWithFile(out: string): { live: string; file: FileFacts } {
  const i = out.indexOf(FILE_MARK);
  if (i < 0) throw new ProbeError(`unexpected probe output: ${out.slice(0, 200)}`);
  return { live: out.slice(0, i), file: parseFileFacts(out.slice(i + FILE_MARK.length)) };
}

export function fileChange(path: string, f: FileFacts, want: string): Change | undefined {
  const buf = Buffer.from(want);
  if (hasContent(f, buf)) return undefined;
  return {
    summary: f.type === 'absent' ? `create ${path}` : `update ${path}`,
    diff: contentDiff(path, f.content, buf, f.type === 'file'),
  };
}

export function writeStep(path: string, f: FileFacts, want: string): Step | undefined {
  const buf = Buffer.from(want);
  if (hasContent(f, buf)) return undefined;
  return {
    name: `write ${path}`,
    script: atomicWriteScript({ path, content: buf, mode: '644', expectSha256: f.type === 'absent' ? 'absent' : f.sha256 }),
  };
}

export function predictFile(f: FileFacts, want: string): FileFacts {
  return predictWrite(f, Buffer.from(want), '644');
}
