import type { RunEvent } from '../engine/events.ts';
import { remember } from '../util/memo.ts';

// The CLI hands every event to the --json stream and to the journal, one after the other: the
// line is built once and reused for the same event object (events are not changed once emitted).
let last: { e: LoggedEvent; line: string } | undefined;
// toISOString costs about a microsecond; hundreds of events share each millisecond.
let isoMs = -1;
let iso = '';

/** An event of another command than a run (`provision exec`'s, exec/events.ts): written as it is, its `kind` naming the command. */
export type CommandEvent = { type: string; kind?: string } & Record<string, unknown>;

/** What --json and the journal write: a run's events, or another command's. */
export type LoggedEvent = RunEvent | CommandEvent;

/** The first or last event of a run or an exec: the sinks write them at once, with what they hold before them. */
export const isLoggedEdge = (e: LoggedEvent): boolean => e.type === 'run_start' || e.type === 'recap';

/** An event as one NDJSON line (with its newline), timestamped. Secrets serialise masked. */
export function eventLine(e: LoggedEvent): string {
  if (last?.e !== e) {
    const now = Date.now();
    if (now !== isoMs) {
      isoMs = now;
      iso = new Date(now).toISOString();
    }
    // Same line as JSON.stringify({ ts, ...e }) without copying the event first.
    // (convergedLine checks every key of the event, whoever made it)
    last = { e, line: convergedLine(e as RunEvent) ?? `{"ts":"${iso}",${JSON.stringify(e).slice(1)}\n` };
  }
  return last.line;
}

// A converged resource (hosts x resources: most of a run's events) has exactly these keys, in
// this order. Its line is a head (time, host, play: shared by a host's burst of resources) and a
// tail (id, kind: the same on every host of a play), each kept as JSON: one concatenation per
// event instead of a string built up piece by piece.
const CONVERGED_KEYS = ['type', 'host', 'play', 'id', 'kind', 'status', 'changes'];
let head = { iso: '', host: '', play: '', text: '' };
const tails = new Map<string, { kind: string; text: string }>();

function convergedLine(e: RunEvent): string | undefined {
  if (e.type !== 'resource' || e.status !== 'ok' || e.changes.length !== 0) return undefined;
  let n = 0;
  for (const k in e) if (k !== CONVERGED_KEYS[n++]) return undefined;
  if (
    n !== CONVERGED_KEYS.length ||
    typeof e.host !== 'string' ||
    typeof e.play !== 'string' ||
    typeof e.id !== 'string' ||
    typeof e.kind !== 'string'
  )
    return undefined;
  if (head.iso !== iso || head.host !== e.host || head.play !== e.play) {
    head = {
      iso,
      host: e.host,
      play: e.play,
      text: `{"ts":"${iso}","type":"resource","host":${JSON.stringify(e.host)},"play":${JSON.stringify(e.play)},"id":`,
    };
  }
  let tail = tails.get(e.id);
  if (tail === undefined || tail.kind !== e.kind) {
    tail = remember(tails, e.id, {
      kind: e.kind,
      text: `${JSON.stringify(e.id)},"kind":${JSON.stringify(e.kind)},"status":"ok","changes":[]}\n`,
    });
  }
  return head.text + tail.text;
}
