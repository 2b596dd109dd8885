// Child process of fuzz-input.test.ts: runs the CLI's run() in this one process for each case of
// the JSON file argv[2] (a list of argv lists), and prints one JSON line per case: its exit code,
// milliseconds and the start of its stderr. A case that does not end within 20 s ends the process
// (exit 9): a hang. Its peak RSS is measured from outside (/usr/bin/time).
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { register } from 'tsx/esm/api';

register();
const { run } = await import('../../src/cli.ts');
class Capture extends Writable {
  text = '';
  _write(chunk, _enc, done) {
    if (this.text.length < 4000) this.text += chunk.toString();
    done();
  }
}
const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
for (const [i, argv] of cases.entries()) {
  const stdout = new Capture();
  const stderr = new Capture();
  const t0 = performance.now();
  const hang = setTimeout(() => {
    process.stdout.write(JSON.stringify({ i, hang: true }) + '\n');
    process.exit(9);
  }, 20_000);
  let code;
  try {
    code = await run(argv, { stdout, stderr });
  } catch (e) {
    code = 'threw';
    stderr.text += `internal error: ${e?.stack ?? e}`;
  }
  clearTimeout(hang);
  process.stdout.write(JSON.stringify({ i, code, ms: Math.round(performance.now() - t0), stderr: stderr.text.slice(0, 300) }) + '\n');
}
