import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { resourceEvent, resourceResult, type HostRecap, type RunEvent } from '../../src/engine/events.ts';
import type { RunOutcome } from '../../src/engine/run.ts';
import { HumanReporter } from '../../src/ui/human.ts';

/** A stream like stderr piped to a file or a CI log (no terminal): what was written, as text. */
function pipe(): { out: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const w = new Writable({
    write(chunk, _enc, cb) {
      text += String(chunk);
      cb();
    },
  });
  return { out: Object.assign(w, { isTTY: false }) as unknown as NodeJS.WriteStream, text: () => text };
}

describe('progress without a terminal', () => {
  it("prints each host's line when it starts and once more, with its final counts, when it finishes", async () => {
    const { out, text } = pipe();
    const human = new HumanReporter({ diff: false, verbose: 0, out });
    const hosts = ['h1', 'h2'];
    const events: RunEvent[] = [{ type: 'run_start', playbooks: ['site'], hosts, check: false }];
    const recaps: HostRecap[] = [];
    const results = [];
    for (const play of ['network', 'storage']) {
      events.push({ type: 'play_start', play, hosts });
      for (const host of hosts) {
        events.push({ type: 'host_start', host, play });
        for (let i = 0; i < 3; i++) {
          const r = resourceResult(host, play, `file:/etc/${play}-${i}`, 'file', { status: host === 'h2' && i === 0 ? 'changed' : 'ok', changes: [] });
          results.push(r);
          events.push(resourceEvent(r));
        }
      }
    }
    for (const host of hosts) recaps.push({ host, ok: host === 'h1' ? 6 : 4, changed: host === 'h1' ? 0 : 2, failed: 0, skipped: 0, unreachable: false, execs: 1 });
    const turn = () => new Promise((r) => setTimeout(r, 10));
    human.onEvent(events[0]);
    await turn(); // the progress list starts its host tasks (before any host connects)
    for (const e of events.slice(1)) human.onEvent(e);
    await turn(); // as between a host's bursts
    for (const r of recaps) human.onEvent({ type: 'host_recap', ...r });
    const outcome: RunOutcome = { hosts: recaps, exitCode: 0, check: false, elapsedMs: 10, results, factHashes: new Map() };
    await human.finish(outcome);
    const lines = text().split('\n').filter((l) => /^. h\d:/.test(l));
    expect(lines).toEqual(['❯ h1: converging', '❯ h2: converging', '✔ h1: 6 ok, 0 changed, 0 failed', '✔ h2: 4 ok, 2 changed, 0 failed']);
  });
});
