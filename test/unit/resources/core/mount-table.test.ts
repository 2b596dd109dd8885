import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shq } from '../../../../src/shell/quote.ts';
import { presetHostTables } from '../../../support/host-tables.ts';
import { factsHash } from '../../../../src/engine/facts-hash.ts';
import {
  MOUNT_LINES,
  MOUNTINFO_FN,
  deletedRoot,
  mountCounts,
  mountpointsText,
  mountTableProbe,
  parseMountTable,
  rootIsOf,
  topMount,
} from '../../../../src/resources/core/mount-table.ts';

/** The mount table part of a probe's output (empty without one). */

// Lines as the kernel writes /proc/self/mountinfo (escapes included).
const TABLE = [
  '22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro',
  '40 22 7:0 / /ais/d1 rw,noatime shared:20 - xfs /dev/loop0 rw,attr2,inode64,logbufs=8,noquota',
  '41 22 254:1 /srv/jail /mnt/jail rw,relatime shared:1 - ext4 /dev/vda1 rw',
  '42 41 0:5 / /mnt/jail/proc rw,nosuid,nodev,noexec,relatime - proc proc rw',
  '43 22 0:40 / /mnt/with\\040space rw - tmpfs tmpfs rw,size=1024k',
  '44 41 0:41 / /mnt/jail/tmp rw,nosuid - tmpfs tmpfs rw',
  '45 41 0:42 / /mnt/jail/tmp ro,nosuid - tmpfs tmpfs2 ro',
  'garbage line',
  '',
].join('\n');

describe('a mount root and a path', () => {
  it.each<[string, string, boolean]>([
    ['/etc/hosts', '/etc/hosts', true],
    ['/spool/slurmd', '/var/spool/slurmd', true], // /var a filesystem of its own
    ['/@/etc/hosts', '/etc/hosts', true], // a btrfs subvolume as /
    ['/usr/lib/x/libcuda.so.1', '/lib/x/libcuda.so.1', true], // reached through the /lib link
    ['/etc/hosts.orig', '/etc/hosts', false],
    ['/srv/other', '/srv/src', false],
    ['osts', '/etc/hosts', false],
    ['/', '/etc/hosts', false],
  ])('%s can be %s: %s', (root, path, want) => expect(rootIsOf(root, path)).toBe(want));
  it('a deleted root without its mark; a root not deleted: none', () => {
    expect(deletedRoot({ root: '/etc/hosts//deleted' })).toBe('/etc/hosts');
    expect(deletedRoot({ root: '/etc/hosts' })).toBeUndefined();
    expect(deletedRoot(undefined)).toBeUndefined();
  });
});

describe('mountCounts', () => {
  it('counts every mount at a mountpoint, stacked ones too, by its unescaped path; the root of a bind is kept', () => {
    const counts = mountCounts(TABLE);
    expect(counts.get('/mnt/jail/tmp')).toBe(2);
    expect(counts.get('/mnt/with space')).toBe(1);
    expect(counts.get('/mnt/jail')).toBe(1);
    expect(counts.has('/mnt/jail/etc')).toBe(false);
    expect(counts.has('')).toBe(false);
    expect(parseMountTable(TABLE).get('/mnt/jail')?.root).toBe('/srv/jail');
  });
});

describe('mount table (shared probe part)', () => {
  it.each<[string, string, object | undefined]>([
    [
      'a device mount',
      '/ais/d1',
      { source: '/dev/loop0', fstype: 'xfs', majmin: '7:0', options: ['rw', 'noatime', 'rw', 'attr2', 'inode64', 'logbufs=8', 'noquota'] },
    ],
    [
      'a bind of a subtree shows it in brackets (as findmnt)',
      '/mnt/jail',
      { source: '/dev/vda1[/srv/jail]', fstype: 'ext4', majmin: '254:1' },
    ],
    [
      'optional fields are skipped',
      '/mnt/jail/proc',
      { source: 'proc', fstype: 'proc', options: ['rw', 'nosuid', 'nodev', 'noexec', 'relatime', 'rw'] },
    ],
    ['octal escapes', '/mnt/with space', { source: 'tmpfs', fstype: 'tmpfs' }],
    ['stacked mounts: the top one', '/mnt/jail/tmp', { source: 'tmpfs2', options: ['ro', 'nosuid', 'ro'] }],
    ['not mounted', '/mnt/none', undefined],
    ['a prefix is not a match', '/mnt/jail/pro', undefined],
  ])('%s', (_, path, want) => {
    const got = parseMountTable(TABLE).get(path);
    if (want === undefined) expect(got).toBeUndefined();
    else expect(got).toMatchObject(want);
    expect(topMount(TABLE, path)).toEqual(got); // parsing only the top line answers alike
    expect(topMount(`${TABLE}\n`, path)).toEqual(got);
  });

  it('hosts whose lines differ only in mount ids read the same entry; any other field counts', () => {
    const line = (ids: string, rest: string) => `${ids} ${rest}`;
    const rest = '254:1 /srv/jail /mnt/jail rw,relatime shared:1 - ext4 /dev/vda1 rw';
    const a = topMount(line('41 22', rest), '/mnt/jail');
    expect(topMount(line('9041 9022', rest), '/mnt/jail')).toEqual(a);
    expect(topMount(line('41 22', rest.replace('rw,relatime', 'ro,relatime')), '/mnt/jail')?.options[0]).toBe('ro');
    expect(topMount(line('41 22', rest.replace('254:1', '254:2')), '/mnt/jail')?.majmin).toBe('254:2');
    expect(topMount(line('41 22', rest.replace('/dev/vda1', '/dev/vdb1')), '/mnt/jail')?.source).toBe('/dev/vdb1[/srv/jail]');
    expect(topMount(line('41 22', rest), '/mnt/jail')).toEqual(a);
    expect(parseMountTable('41 22 garbage\n9041 9022 garbage').size).toBe(0);
  });

  /**
   * What a resource gets for each path: the mountinfo lines the host's shell prints for the
   * script's paths at once (MOUNT_LINES over `table`, or this machine's own without one), split
   * per path as the engine splits a batch's answer.
   */
  const answers = (table: string | undefined, paths: readonly string[]): string[] => {
    const args = paths.map((p) => (mountTableProbe(p) as { arg: string }).arg);
    const load = table === undefined ? '' : `${presetHostTables(table)}\n`;
    const out = execFileSync('sh', ['-c', `${MOUNTINFO_FN}\n${load}${MOUNT_LINES.script(args)}`], { encoding: 'utf8' });
    return MOUNT_LINES.split(out, args);
  };
  /** The lines of `a`'s mountpoint (or of everything under it, for a trailing /), in table order. */
  const wanted = (table: string, a: string): string =>
    table
      .split('\n')
      .filter((l) => {
        const f = l.split(' ');
        if (f.length < 5) return false;
        const mp = f[4].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
        return a.endsWith('/') ? mp.startsWith(a) : mp === a;
      })
      .map((l) => `${l}\n`)
      .join('');

  it('each mountpoint gets only its lines, and a subtree (trailing /) everything under it', () => {
    const [jailTmp, under, none, spaced, prefix] = answers(TABLE, [
      '/mnt/jail/tmp',
      '/mnt/jail/',
      '/nope',
      '/mnt/with space',
      '/mnt/jail/tm',
    ]);
    expect(jailTmp).toBe(
      `${TABLE.split('\n')
        .filter((l) => / \/mnt\/jail\/tmp /.test(l))
        .join('\n')}\n`,
    );
    expect(parseMountTable(jailTmp).get('/mnt/jail/tmp')).toMatchObject({ source: 'tmpfs2' });
    expect(under.split('\n').filter(Boolean)).toHaveLength(3); // proc, tmp twice: not /mnt/jail itself
    expect(none).toBe('');
    expect(prefix).toBe(''); // a prefix of a mountpoint is not it
    expect(parseMountTable(spaced).get('/mnt/with space')).toMatchObject({ fstype: 'tmpfs' });
  });

  it('the host prints what the whole table holds for each path (escaped paths, subtrees, stacked mounts)', () => {
    const args = ['/mnt/jail/tmp', '/mnt/jail/', '/nope', '/mnt/with space', '/', '/mnt/jail', '/mnt/'];
    expect(answers(TABLE, args)).toEqual(args.map((a) => wanted(TABLE, a)));
  });

  it('rs_mi_each FN TEXT calls FN for exactly the lines that contain TEXT (none at all when no line does)', () => {
    const each = (text: string) =>
      execFileSync(
        'sh',
        ['-c', `${MOUNTINFO_FN}\n${presetHostTables(TABLE)}\nfn() { printf '%s\\n' "$5"; }\nrs_mi_each '' fn ${shq(text)}`],
        {
          encoding: 'utf8',
        },
      );
    const fifth = (keep: (l: string) => boolean) =>
      TABLE.split('\n')
        .filter((l) => l !== '' && keep(l))
        .map((l) => `${l.split(' ')[4] ?? ''}\n`)
        .join('');
    for (const text of [' 7:0 ', ' - tmpfs ', ' /mnt/jail', ' /none', '']) expect(each(text), text).toBe(fifth((l) => l.includes(text)));
    expect(each(' /none')).toBe('');
  });

  it.each<[string[], string]>([
    [['/ais/d1', '/ais/d2'], ' /ais/d'],
    [['/ais/d1'], ' /ais/d1'],
    [['/ais/d 2', '/ais/d1'], ' /ais/d'],
    [['/ais/d1', '/data/d1'], ' /'],
    [['/a b', '/a b/c'], ' /a\\040b'],
    [[], ' '],
  ])('mountpointsText(%j) is %j: what every line of one of them contains', (paths, want) => {
    expect(mountpointsText(paths)).toBe(want);
  });

  it("reads the mount table and udev's block device properties once per shell and root, with one grep", () => {
    const root = mkdtempSync(join(tmpdir(), 'rs-host-tables-'));
    try {
      for (const d of ['proc/self', 'run/udev/data', 'bin']) mkdirSync(join(root, d), { recursive: true });
      writeFileSync(join(root, 'proc/self/mountinfo'), `${TABLE}\n`);
      // udev's entries: only the properties racksmith reads are kept (not S:, not E:ID_TYPE)
      writeFileSync(join(root, 'run/udev/data/b7:0'), 'S:disk/by-id/x\nE:ID_TYPE=disk\nE:ID_SERIAL=S0\nE:ID_SERIAL_SHORT=0\n');
      writeFileSync(join(root, 'run/udev/data/b254:1'), 'E:ID_WWN=0x5000\nE:ID_PATH=pci-0000:00:1f.2-ata-1\n');
      const grep = execFileSync('sh', ['-c', 'command -v grep'], { encoding: 'utf8' }).trim();
      writeFileSync(join(root, 'bin/grep'), `#!/bin/sh\necho run >> '${root}/grep.log'\nexec '${grep}' "$@"\n`, { mode: 0o755 });
      const out = execFileSync(
        'sh',
        [
          '-c',
          `${MOUNTINFO_FN}\nfn() { printf '%s\\n' "$5"; }\nrs_mi_each "$1" fn ' /mnt/'\nrs_mi_each "$1" fn ' 7:0 '\nprintf '%s\\n' "$rs_ht_udev"`,
          'sh',
          root,
        ],
        { encoding: 'utf8', env: { ...process.env, PATH: `${join(root, 'bin')}:${process.env.PATH}` } },
      );
      // (in the glob's order of udev's files, each file's lines in its own order)
      const udevLines = [
        'b254:1:E:ID_WWN=0x5000',
        'b254:1:E:ID_PATH=pci-0000:00:1f.2-ata-1',
        'b7:0:E:ID_SERIAL=S0',
        'b7:0:E:ID_SERIAL_SHORT=0',
      ];
      const mnt = TABLE.split('\n').filter((l) => l.includes(' /mnt/'));
      expect(out.split('\n').filter(Boolean)).toEqual([
        ...mnt.map((l) => l.split(' ')[4]),
        '/ais/d1',
        ...udevLines.map((l) => `${root}/run/udev/data/${l}`),
      ]);
      expect(readFileSync(join(root, 'grep.log'), 'utf8')).toBe('run\n');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('on this machine: each path gets what the whole mount table holds for it', () => {
    const whole = readFileSync('/proc/self/mountinfo', 'utf8');
    const mountpoints = whole
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ')[4].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))));
    const args = [...mountpoints.slice(0, 5), '/proc/', '/sys/', '/no/such/mountpoint', '/dev/'];
    const got = answers(undefined, args);
    expect(got).toEqual(args.map((a) => wanted(readFileSync('/proc/self/mountinfo', 'utf8'), a)));
    const table = parseMountTable(whole);
    expect(table.size).toBeGreaterThan(0);
    for (const mp of mountpoints) expect(topMount(whole, mp)).toEqual(table.get(mp));
  });
});

describe('facts hash (saved plans)', () => {
  it('hashes facts, not their object identity; every difference counts', () => {
    const a = { file: { type: 'file', content: Buffer.from('x = 1\n') }, live: new Map([['k', '1']]), set: new Set(['a']) };
    const same = { file: { type: 'file', content: Buffer.from('x = 1\n') }, live: new Map([['k', '1']]), set: new Set(['a']) };
    expect(factsHash(a)).toBe(factsHash(same));
    expect(factsHash(a)).not.toBe(factsHash({ ...a, file: { type: 'file', content: Buffer.from('x = 2\n') } }));
    expect(factsHash(a)).not.toBe(factsHash({ ...a, live: new Map([['k', '2']]) }));
    expect(factsHash(a)).not.toBe(factsHash({ ...a, set: new Set(['b']) }));
    expect(factsHash(undefined)).toMatch(/^[0-9a-f]{64}$/);
  });
});
