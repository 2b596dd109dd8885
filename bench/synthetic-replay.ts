// One synthetic plan replay in this (fresh) process; run by --synthetic (bench/lib/synthetic.ts),
// which reads the result from --out. By hand, e.g. to profile the engine without a bed:
//   node --import tsx bench/synthetic-replay.ts --recording REC.json --hosts 1000 --dir /tmp/x --out /tmp/x/r.json [--json]
// (REC.json: RS_SYNTHETIC_RECORDING=REC.json npm run bench -- --hosts 2 --runs 1 --cases floor --tools racksmith --synthetic)
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { replaySynthetic, type SavedRecording } from './lib/synthetic.ts';

const { values } = parseArgs({
  options: {
    recording: { type: 'string' },
    hosts: { type: 'string' },
    dir: { type: 'string' },
    out: { type: 'string' },
    json: { type: 'boolean' },
  },
  strict: true,
});
if (!values.recording) throw new Error('--recording FILE is required');
const hosts = Number(values.hosts ?? 1000);
if (!Number.isInteger(hosts) || hosts < 1) throw new Error('--hosts must be a whole number >= 1');
const saved = JSON.parse(readFileSync(values.recording, 'utf8')) as SavedRecording;
const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'rs-synthetic-'));
const result = await replaySynthetic(saved, dir, hosts, { json: !!values.json }, (s) => process.stderr.write(`${s}\n`));
const text = JSON.stringify(result);
if (values.out) writeFileSync(values.out, text);
else process.stdout.write(`${text}\n`);
