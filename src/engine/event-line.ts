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
    last = { e, line: convergedLine(e) ?? `{"ts":"${iso}",${JSON.stringify(e).slice(1)}\n` };
  }
  return last.line;
}

// A converged resource (hosts x resources: most of a run's events) has exactly these keys, in
// this order; its line is put together from each string's JSON, kept for the strings seen last
// (host, play, id and kind recur across a fleet).
const CONVERGED_KEYS = ['type', 'host', 'play', 'id', 'kind', 'status', 'changes'];
const jsonStrings = new Map<string, string>();

function jsonString(s: string): string {
  let j = jsonStrings.get(s);
  if (j === undefined) {
    if (jsonStrings.size >= 4096) jsonStrings.clear();
    jsonStrings.set(s, (j = JSON.stringify(s)));
  }
  return j;
}

function convergedLine(e: RunEvent): string | undefined {
  if (e.type !== 'resource' || e.status !== 'ok' || e.changes.length !== 0) return undefined;
  let n = 0;
  for (const k in e) if (k !== CONVERGED_KEYS[n++]) return undefined;
  if (n !== CONVERGED_KEYS.length || typeof e.host !== 'string' || typeof e.play !== 'string' || typeof e.id !== 'string' || typeof e.kind !== 'string') return undefined;
  return `{"ts":"${iso}","type":"resource","host":${jsonString(e.host)},"play":${jsonString(e.play)},"id":${jsonString(e.id)},"kind":${jsonString(e.kind)},"status":"ok","changes":[]}\n`;
}
