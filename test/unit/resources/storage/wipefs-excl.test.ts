// Whether wipefs opens a disk exclusively (util-linux 2.24 or later) is asked of `wipefs --help`
// once per script, unless the script's own `wipefs -n -O ...` already showed a wipefs new enough
// (-O came to wipefs after --force): a process less per probe of a blank disk. Real shell and the
// disk probes' own functions; wipefs and blkid are stand-ins on PATH that log how they were called
// (no block device is read: a stand-in answers for it).
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diskHelpers } from '../../../../src/resources/storage/blockdev.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rs-wipefs-'));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  // A wipefs of util-linux $RS_UL: 2.23 knows neither -O nor --force (and cannot open O_EXCL).
  writeFileSync(
    join(bin, 'wipefs'),
    `#!/bin/sh
printf '%s\\n' "$*" >> "$RS_LOG"
case " $* " in
*" --help "*) if [ "$RS_UL" = 2.23 ]; then echo ' -a, --all'; else echo ' -f, --force'; fi; exit 0 ;;
*" -O "*) if [ "$RS_UL" = 2.23 ]; then echo "wipefs: invalid option -- 'O'" >&2; exit 1; fi; exit 0 ;;
esac
exit 0
`,
  );
  writeFileSync(join(bin, 'blkid'), '#!/bin/sh\nexit 2\n');
  for (const f of ['wipefs', 'blkid']) chmodSync(join(bin, f), 0o755);
  mkdirSync(join(dir, 'root'));
  writeFileSync(join(dir, 'disk'), Buffer.alloc(4096));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HELPERS = diskHelpers()
  .map((d) => d.define)
  .join('\n');

/** rs_sig then rs_inuse on a blank 4 KiB "disk" (as the probe of a disk without a filesystem runs them): their output, and wipefs's calls. */
function probe(utilLinux: string): { out: string; calls: string[] } {
  const log = join(dir, `calls-${utilLinux}`);
  writeFileSync(log, '');
  const script = `${HELPERS}\nR=$2\nrs_sig "$1" 4096\nrs_inuse "$1" 7:0=loop0`;
  const out = execFileSync('/bin/sh', ['-c', script, 'sh', join(dir, 'disk'), join(dir, 'root')], {
    encoding: 'utf8',
    env: { PATH: `${join(dir, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`, LC_ALL: 'C', RS_LOG: log, RS_UL: utilLinux },
  });
  return { out, calls: readFileSync(log, 'utf8').trim().split('\n') };
}

describe('the exclusive-open check asks wipefs --help only when the script has not seen a new wipefs', () => {
  it.each([
    ['2.39', 'excl=ok', false],
    ['2.23', 'excl=wipefs of util-linux before 2.24 cannot open a disk exclusively', true],
  ])('util-linux %s: %s, --help asked: %s', (version, excl, asked) => {
    const { out, calls } = probe(version);
    expect(out.trim().split('\n')).toContain(excl);
    expect(calls.some((c) => c === '--help')).toBe(asked);
    // the signature listing and the exclusive open ran either way
    expect(calls.filter((c) => c.includes('-O OFFSET,TYPE,UUID,LABEL'))).toHaveLength(1);
    expect(calls.filter((c) => c.includes('racksmith-exclusive-open'))).toHaveLength(1);
  });
});
