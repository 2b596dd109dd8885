import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Each built file's map, read once: dist/racksmith.js's is large, and a fleet's hosts may each
// name a playbook line.
const maps = new Map<string, SourceMap | undefined>();

/**
 * A built file's position (1-based line and column) as its source's, from the map the build wrote
 * beside it (`FILE.map`); undefined when it has none or the map does not cover the position.
 */
export function sourcePosition(file: string, line: number, col: number): { file: string; line: number; col: number } | undefined {
  if (!maps.has(file)) {
    try {
      maps.set(file, new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]));
    } catch {
      maps.set(file, undefined);
    }
  }
  const map = maps.get(file);
  if (!map) return undefined;
  const e = map.findEntry(line - 1, col - 1) as Partial<{
    originalSource: string;
    originalLine: number;
    originalColumn: number;
  }>;
  if (!e.originalSource || e.originalLine === undefined) return undefined;
  const source = e.originalSource.startsWith('file:') ? fileURLToPath(e.originalSource) : resolve(dirname(file), e.originalSource);
  return { file: source, line: e.originalLine + 1, col: (e.originalColumn ?? 0) + 1 };
}
