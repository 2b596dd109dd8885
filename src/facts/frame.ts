import { FACTS_HEADER } from './gather-script.ts';

/** One `@ NAME` section of the gatherer's output: its `|`-prefixed lines, prefix removed. */
export interface FactsSection {
  name: string;
  lines: string[];
}

/**
 * The gatherer's output cut into its sections, in order. Lines that are neither a frame nor a
 * content line (the blank line before each frame) are skipped. An output without the header or
 * the final `@ end` (a shell that died half way, another program's text) is an error, never facts.
 */
export function splitFacts(text: string): FactsSection[] {
  const lines = text.split('\n');
  if (lines[0] !== FACTS_HEADER) throw new Error(`not the facts gatherer's output (first line ${JSON.stringify(lines[0].slice(0, 60))})`);
  const sections: FactsSection[] = [];
  let current: FactsSection | undefined;
  for (const line of lines.slice(1)) {
    if (line.startsWith('@ ')) {
      current = { name: line.slice(2), lines: [] };
      sections.push(current);
    } else if (line.startsWith('|') && current) current.lines.push(line.slice(1));
  }
  if (sections.at(-1)?.name !== 'end') throw new Error('the facts gatherer did not finish (its output was cut short)');
  return sections.slice(0, -1);
}

/** `key=value` lines as a map; the first non-empty value of a key wins (the gatherer tries several files for some). */
export function keyValues(lines: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of lines) {
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1).trim();
    if (!out.get(key)) out.set(key, value);
  }
  return out;
}
