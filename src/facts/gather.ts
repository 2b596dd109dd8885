import type { Connection } from '../connection/types.ts';
import { gatherScript } from './gather-script.ts';
import { parseFacts } from './parse.ts';
import type { HostFacts } from './types.ts';

/** A host's facts, in one exec of the gatherer; an error says why they could not be read. */
export async function gatherFacts(conn: Pick<Connection, 'exec'>): Promise<HostFacts> {
  const out = await conn.exec(gatherScript());
  if (out.code !== 0) {
    const why = (out.stderr || out.stdout).trim().split('\n').slice(-3).join('\n');
    throw new Error(`gathering facts: exit ${out.code ?? 'by signal'}${why ? `: ${why}` : ''}`);
  }
  try {
    return parseFacts(out.stdout);
  } catch (e) {
    throw new Error(`gathering facts: ${(e as Error).message}`, { cause: e });
  }
}
