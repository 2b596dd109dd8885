import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SourcePos } from '../util/errors.ts';
import { sourcePosition } from '../util/source-map.ts';

/**
 * The playbook's line in a stack: the first frame outside racksmith's own modules and Node's
 * (where a playbook's code threw, or where it declared a resource). A bundled playbook run from
 * its prebuilt JavaScript (dist/) is named by its TypeScript line, through the build's source map.
 */
export function throwSite(err: { stack?: string }): SourcePos | undefined {
  return callSite(err)?.pos;
}

/**
 * The playbook's line in a stack (as throwSite), and the racksmith function it called there: the
 * resource (`file`) whose options were refused, named by the frame just inside racksmith's code.
 */
export function callSite(err: { stack?: string }): { pos: SourcePos; callee?: string } | undefined {
  let callee: string | undefined;
  for (const line of (err.stack ?? '').split('\n').slice(1)) {
    // (a path from its start: node:internal/x:1:2 is Node's, not a file /x)
    const m = /(?:\(|at )((?:file:\/\/)?\/[^():]+):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!m) continue;
    const name = /^\s*at (?:async |new )?([^\s(]+)(?: \[as [^\]]+\])? \(/.exec(line)?.[1].replace(/^Object\./, '');
    const raw = m[1].replace(/^file:\/\//, '');
    if (isOwnModule(raw)) {
      callee = name;
      continue;
    }
    const pos = (m[1].includes('/dist/') && sourcePosition(raw, Number(m[2]), Number(m[3]))) || {
      file: raw,
      line: Number(m[2]),
      col: Number(m[3]),
    };
    // (a line of dist/racksmith.js is racksmith's own code or one of its playbooks: its map tells)
    if (isOwnModule(pos.file)) {
      callee = name;
      continue;
    }
    return { pos: { ...pos, file: relative(process.cwd(), pos.file) || pos.file }, callee };
  }
  return undefined;
}

// racksmith's own modules (its src/ and dist/src/, wherever it is installed): an operator's
// playbook in a src/ folder of their own still has its lines. This file is built as
// dist/src/engine/throw-site.js, or is a part of dist/racksmith.js (scripts/bundle.mjs).
const HERE = fileURLToPath(import.meta.url);
const SRC_DIR = resolve(dirname(HERE), '..');
const PACKAGE_ROOT = HERE.endsWith('/dist/racksmith.js')
  ? dirname(dirname(HERE))
  : SRC_DIR.endsWith('/dist/src')
    ? SRC_DIR.slice(0, -'/dist/src'.length)
    : dirname(SRC_DIR);
const OWN = [`${PACKAGE_ROOT}/src/`, `${PACKAGE_ROOT}/dist/src/`];

function isOwnModule(file: string): boolean {
  return file.includes('/node_modules/') || OWN.some((dir) => file.startsWith(dir));
}
