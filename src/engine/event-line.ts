import type { RunEvent } from './events.ts';

// The CLI hands every event to the --json stream and to the journal, one after the other: the
// line is built once and reused for the same event object (events are not changed once emitted).
let last: { e: RunEvent; line: string } | undefined;
// toISOString costs about a microsecond; hundreds of events share each millisecond.
let isoMs = -1;
let iso = '';

/** An event as one NDJSON line (with its newline), timestamped. Secrets serialise masked. */
export function eventLine(e: RunEvent): string {
  if (last?.e !== e) {
    const now = Date.now();
    if (now !== isoMs) {
      isoMs = now;
      iso = new Date(now).toISOString();
    }
    // Same line as JSON.stringify({ ts, ...e }) without copying the event first.
    last = { e, line: `{"ts":"${iso}",${convergedResource(e) ?? JSON.stringify(e).slice(1)}\n` };
  }
  return last.line;
}

const CONVERGED_KEYS = ['type', 'host', 'play', 'id', 'kind', 'status', 'changes'];

/**
 * The bulk of a fleet's events, a resource with nothing to change, as JSON.stringify writes it
 * (after the opening brace), built from its strings: undefined for any other event.
 */
function convergedResource(e: RunEvent): string | undefined {
  if (e.type !== 'resource' || e.changes.length !== 0) return undefined;
  let i = 0;
  for (const k in e) if (k !== CONVERGED_KEYS[i++]) return undefined;
  if (i !== CONVERGED_KEYS.length) return undefined;
  const q = JSON.stringify;
  return `"type":"resource","host":${q(e.host)},"play":${q(e.play)},"id":${q(e.id)},"kind":${q(e.kind)},"status":${q(e.status)},"changes":[]}`;
}
