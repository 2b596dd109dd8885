import type { Connection } from '../connection/types.ts';
import { gatherScript } from './gather-script.ts';
import { parseFacts } from './parse.ts';
import type { HostFacts } from './types.ts';

/** The gatherer ran but gave no facts (it failed, or its output could not be read): not a connection's fault. */
export class GatherError extends Error {
  override name = 'GatherError';
}

/** A host's facts, in one exec of the gatherer; a GatherError says why they could not be read (an exec that fails throws its own). */
export async function gatherFacts(conn: Pick<Connection, 'exec'>): Promise<HostFacts> {
  const out = await conn.exec(gatherScript());
  if (out.code !== 0) {
    const why = (out.stderr || out.stdout).trim().split('\n').slice(-3).join('\n');
    throw new GatherError(`gathering facts: exit ${out.code ?? 'by signal'}${why ? `: ${why}` : ''}`);
  }
  try {
    return parseFacts(out.stdout);
  } catch (e) {
    throw new GatherError(`gathering facts: ${(e as Error).message}`, { cause: e });
  }
}
