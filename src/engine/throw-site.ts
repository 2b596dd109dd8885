import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SourcePos } from '../util/errors.ts';

/**
 * The playbook's line in a stack: the first frame outside racksmith's own modules and Node's
 * (where a playbook's code threw, or where it declared a resource). A bundled playbook run from
 * its prebuilt JavaScript (dist/) is named by its TypeScript line, through the build's source map.
 */
export function throwSite(err: { stack?: string }): SourcePos | undefined {
  for (const line of (err.stack ?? '').split('\n').slice(1)) {
    const m = /\(?((?:file:\/\/)?\/[^():]+):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!m || isOwnModule(m[1].replace(/^file:\/\//, ''))) continue;
    const file = m[1].replace(/^file:\/\//, '');
    const pos = (m[1].includes('/dist/') && fromSourceMap(file, Number(m[2]), Number(m[3]))) || {
      file,
      line: Number(m[2]),
      col: Number(m[3]),
    };
    return { ...pos, file: relative(process.cwd(), pos.file) || pos.file };
  }
  return undefined;
}

// racksmith's own modules (its src/ and dist/src/, wherever it is installed): an operator's
// playbook in a src/ folder of their own still has its lines.
const SRC_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGE_ROOT = SRC_DIR.endsWith('/dist/src') ? SRC_DIR.slice(0, -'/dist/src'.length) : dirname(SRC_DIR);
const OWN = [`${PACKAGE_ROOT}/src/`, `${PACKAGE_ROOT}/dist/src/`];

function isOwnModule(file: string): boolean {
  return file.includes('/node_modules/') || OWN.some((dir) => file.startsWith(dir));
}

/** A built file's line as its source's, from the map the build wrote beside it (none: undefined). */
function fromSourceMap(file: string, line: number, col: number): SourcePos | undefined {
  let payload: ConstructorParameters<typeof SourceMap>[0];
  try {
    payload = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as typeof payload;
  } catch {
    return undefined;
  }
  const e = new SourceMap(payload).findEntry(line - 1, col - 1) as Partial<{
    originalSource: string;
    originalLine: number;
    originalColumn: number;
  }>;
  if (!e.originalSource || e.originalLine === undefined) return undefined;
  const source = e.originalSource.startsWith('file:') ? fileURLToPath(e.originalSource) : resolve(dirname(file), e.originalSource);
  return { file: source, line: e.originalLine + 1, col: (e.originalColumn ?? 0) + 1 };
}
