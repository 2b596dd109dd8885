import { relative } from 'node:path';
import type { SourcePos } from '../util/errors.ts';

/**
 * The playbook's line in a stack: the first frame outside racksmith's own modules and Node's
 * (where a playbook's code threw, or where it declared a resource).
 */
export function throwSite(err: { stack?: string }): SourcePos | undefined {
  for (const line of (err.stack ?? '').split('\n').slice(1)) {
    const m = /\(?((?:file:\/\/)?\/[^():]+):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!m || /\/(dist\/)?src\/|\/node_modules\//.test(m[1])) continue;
    const file = m[1].replace(/^file:\/\//, '');
    return { file: relative(process.cwd(), file) || file, line: Number(m[2]), col: Number(m[3]) };
  }
  return undefined;
}
