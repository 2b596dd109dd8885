// BLOCK_IDS_FN run by the local sh over a blkid answer made here: the "devices" are temp files
// (`[ A -ef B ]` compares their inodes as it does device nodes'), so nothing outside the temp dir
// is read or written. The UUIDs are made up: no /dev/disk/by-uuid link names them.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BLOCK_IDS_FN } from '../../../../src/resources/core/block-ids.ts';
import { shq } from '../../../../src/shell/quote.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-block-ids-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const dev = (name: string) => {
  const p = join(dir, name);
  writeFileSync(p, '');
  return p;
};
const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(dev);
symlinkSync(b, join(dir, 'link-to-b'));
const U = (n: number) => `7e57${String(n).padStart(4, '0')}-0000-4000-8000-racksmithtest`;

// blkid -o export: a blank line between devices; a label may hold blanks and glob characters
const BLKID = [
  `DEVNAME=${a}\nLABEL=data * [x]\nUUID=${U(1)}\nTYPE=xfs`,
  `DEVNAME=${b}\nUUID=${U(2)}\nBLOCK_SIZE=4096\nTYPE=xfs`,
  `DEVNAME=${c}\nUUID=${U(3)}\nTYPE=xfs`,
  `DEVNAME=${d}\nUUID=${U(3)}\nTYPE=xfs`,
  `DEVNAME=${join(dir, 'nofs')}\nPTTYPE=gpt`,
].join('\n\n');

/** `body` run after BLOCK_IDS_FN with blkid's answer already loaded (rs_bid_load sees it done). */
const sh = (body: string) =>
  execFileSync('sh', ['-c', `${BLOCK_IDS_FN}\nrs_bid_done=1; rs_bid=${shq(BLKID)}\n${body}`], { encoding: 'utf8', cwd: dir });

describe('filesystem UUIDs looked up in one blkid answer, with builtins', () => {
  it.each<[string, string, string]>([
    ['a device', b, U(2)],
    ['a link to it', join(dir, 'link-to-b'), U(2)],
    ['the first device (its label has blanks and globs)', a, U(1)],
    ['a device without a filesystem', join(dir, 'nofs'), ''],
    ['a path blkid did not list', join(dir, 'none'), ''],
  ])('rs_bid_uuid: %s', (_, path, want) => {
    expect(sh(`rs_bid_uuid ${shq(path)}; printf '%s' "$rs_bid_v"`)).toBe(want);
  });

  it.each<[string, string, string]>([
    ['the device that carries it', U(2), b],
    ['several carry it, no by-uuid link: the first listed', U(3), c],
    ['none carries it', U(9), ''],
  ])('rs_bid_dev: %s', (_, uuid, want) => {
    expect(sh(`rs_bid_dev ${uuid}; printf '%s' "$rs_bid_v"`)).toBe(want);
  });

  it('rs_bid_devs lists every device that carries the UUID, none for an unknown one', () => {
    expect(sh(`rs_bid_devs ${U(3)}; printf '%s|' "$rs_bid_vs"; rs_bid_devs ${U(9)}; printf '%s|' "$rs_bid_vs"`)).toBe(`${c}\n${d}\n||`);
  });

  it("leaves the caller's IFS and globbing as they were (a walk of the mount table may be calling)", () => {
    const state = `printf '%s|' "$IFS"; case $- in *f*) echo noglob ;; *) echo glob ;; esac`;
    expect(sh(`rs_bid_uuid ${shq(b)}; ${state}`)).toBe(' \t\n|glob\n');
    expect(sh(`IFS=' '; set -f; rs_bid_dev ${U(3)}; ${state}`)).toBe(' |noglob\n');
  });

  it('looks through the answer without a system call per byte (no `read` of a here-document)', () => {
    // (from the walker on: what reads, reads a few bytes of sysfs, or runs only beside a blocked device)
    expect(BLOCK_IDS_FN.slice(BLOCK_IDS_FN.indexOf('rs_bid_walk()'))).not.toMatch(/\bread\b|<</);
  });
});
