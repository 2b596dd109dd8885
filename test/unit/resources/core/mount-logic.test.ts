import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scriptAsStdin } from '../../../../src/connection/transport.ts';
import { ProbeSet, standaloneProbe } from '../../../../src/engine/probe-set.ts';
import { buildScript, splitOutput, type Section } from '../../../../src/engine/script.ts';
import { fileWith } from '../../facts.ts';
import {
  entryCount,
  findEntry,
  formatEntry,
  fstabEscape,
  fstabUnescape,
  mountinfoEscape,
  parseEntry,
  removeEntry,
  sameTargetKey,
  setEntry,
} from '../../../../src/resources/core/fstab.ts';
import { mount, xfsOptionsNotLive, type MountFacts } from '../../../../src/resources/core/mount.ts';
import { diskMount } from '../../../../src/resources/storage/blockdev.ts';
import { gpuBinds } from '../../../../src/resources/jail/gpu-binds.ts';
import { gpuStandins } from '../../../../src/resources/jail/gpu-standins.ts';
import { Refusal, type Resource } from '../../../../src/contract/resource.ts';

describe('fstab text', () => {
  it.each([
    ['/mnt/with space', '/mnt/with\\040space'],
    ['/a\tb', '/a\\011b'],
    ['/back\\slash', '/back\\134slash'],
  ])('escapes %j', (raw, esc) => {
    expect(fstabEscape(raw)).toBe(esc);
    expect(fstabUnescape(esc)).toBe(raw);
  });

  // Every whitespace and control character is an octal escape (util-linux's mangle() and more);
  // other characters, a non-breaking space among them, are part of the field as they are.
  it.each([
    ['/mnt/a\x01b', '/mnt/a\\001b'],
    ['/mnt/nl\nx', '/mnt/nl\\012x'],
    ['/mnt/cr\rx\vy\fz', '/mnt/cr\\015x\\013y\\014z'],
    ['/mnt/del\x7f', '/mnt/del\\177'],
    ['/mnt/esc\x1b[31m', '/mnt/esc\\033[31m'],
    ['/mnt/nb\u00a0sp', '/mnt/nb\u00a0sp'],
    ['/mnt/é\u2028', '/mnt/é\u2028'],
  ])('fstab escaping of %j', (raw, esc) => {
    expect(fstabEscape(raw)).toBe(esc);
    expect(fstabUnescape(esc)).toBe(raw);
  });

  it('mountinfo escaping is the kernel set only (space, tab, newline, backslash)', () => {
    expect(mountinfoEscape('/a b\tc\nd\\e\x01f')).toBe('/a\\040b\\011c\\012d\\134e\x01f');
  });

  it('octal escapes are bytes: the escaped UTF-8 bytes of a character decode together', () => {
    expect(fstabUnescape('/mnt/nb\\302\\240sp')).toBe('/mnt/nb\u00a0sp');
    expect(fstabUnescape('/a\\9xy\\')).toBe('/a\\9xy\\'); // not an escape: kept
  });

  it.each([
    ['a non-breaking space is part of the path', '/src /mnt/nb\u00a0sp none bind 0 0', '/mnt/nb\u00a0sp'],
    ['other Unicode spaces too', '/src /mnt/\u2003em\u3000x none bind 0 0', '/mnt/\u2003em\u3000x'],
    ['tabs separate', '/src\t/mnt/t\tnone bind 0 0', '/mnt/t'],
    ['\\v, \\f and \\r separate (isspace, as libmount)', '/src\v/mnt/v\fnone\rbind 0 0', '/mnt/v'],
    ['a raw control character that is not a space stays', '/src /mnt/a\x01b none bind 0 0', '/mnt/a\x01b'],
  ])('parseEntry: %s', (_, line, target) => {
    expect(parseEntry(line)?.target).toBe(target);
    expect(parseEntry(line)?.fstype).toBe('none');
  });

  // Paths no escaping should confuse: what racksmith writes is what util-linux reads back.
  const tricky = [
    '/mnt/a b',
    '/mnt/t\tx',
    '/mnt/nl\ny',
    '/mnt/b\\s',
    '/mnt/nb\u00a0sp',
    '/mnt/c\x01\x02\x1f\x7f',
    '/mnt/v\vf\fr\r',
    '/mnt/é€😀',
  ];
  it('findmnt (util-linux) reads what formatEntry writes, and parseEntry reads it back the same', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-fstab-'));
    try {
      const file = join(dir, 'fstab');
      const entries = tricky.map((t, i) => ({ source: `/src${i} x`, target: t, fstype: 'none', options: 'bind', dump: 0, pass: 0 }));
      writeFileSync(file, entries.map(formatEntry).join('\n') + '\n');
      const r = spawnSync('findmnt', ['--tab-file', file, '-J', '-o', 'SOURCE,TARGET'], { encoding: 'utf8' });
      expect(r.status).toBe(0);
      const got = (JSON.parse(r.stdout) as { filesystems: Array<{ source: string; target: string }> }).filesystems;
      expect(got.map((g) => g.target)).toEqual(tricky);
      expect(got.map((g) => g.source)).toEqual(entries.map((e) => e.source));
      for (const e of entries) expect(parseEntry(formatEntry(e))).toEqual(e);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(tricky)('setEntry is idempotent for %j (no duplicate line on the next run)', (target) => {
    const want = { source: '/s', target, fstype: 'none', options: 'bind', dump: 0, pass: 0 };
    const once = setEntry('proc /proc proc defaults 0 0\n', want);
    expect(setEntry(once, want)).toBe(once);
    expect(findEntry(once, target)).toEqual(want);
    expect(entryCount(once, target)).toBe(1);
  });

  it('duplicates of an entry (even identical ones) are counted, and setEntry collapses them into one', () => {
    const want = { source: '/s', target: '/mnt/nb\u00a0sp', fstype: 'none', options: 'bind', dump: 0, pass: 0 };
    const line = formatEntry(want);
    const dup = `proc /proc proc defaults 0 0\n${line}\n# c\n${line}\n${line}\n`;
    expect(entryCount(dup, want.target)).toBe(3);
    expect(setEntry(dup, want)).toBe(`proc /proc proc defaults 0 0\n${line}\n# c\n`);
  });

  it.each([
    ['/ais/d1', '/ais/d1'],
    ['/', '/'],
    ['/.', '/'],
    ['//', '/'],
    ['/ais/d1/', '/ais/d1'],
    ['/ais/./d1/.', '/ais/d1'],
    ['/ais/.d1', '/ais/.d1'],
    ['/ais/d1.', '/ais/d1.'],
    ['/ais/../d1', '/ais/../d1'], // (`..` left as it is: resolving it would need the host's links)
    ['none', 'none'], // swap's target, not a path
  ])('the mountpoint %j compares as %j', (target, key) => {
    expect(sameTargetKey(target)).toBe(key);
  });

  // A hand line for the mountpoint spelled another way is the same mountpoint to systemd's fstab
  // generator and libmount: left beside racksmith's, the first line of the two mounts there at boot.
  it.each(['/ais/d1/', '/ais//d1', '/ais/./d1', '//ais/d1//', '/ais/d1/.', '/./ais/d1/./'])(
    'a line for %j is the entry of /ais/d1: found, counted, replaced',
    (spelled) => {
      const hand = `/dev/sdc ${spelled} xfs defaults,nofail 0 0\n`;
      const want = { source: 'UUID=2', target: '/ais/d1', fstype: 'xfs', options: 'noatime', dump: 0, pass: 0 };
      expect(findEntry(hand, '/ais/d1')).toMatchObject({ source: '/dev/sdc', target: spelled });
      expect(entryCount(`${hand}UUID=2 /ais/d1 xfs noatime 0 0\n`, '/ais/d1')).toBe(2);
      expect(setEntry(`# c\n${hand}`, want)).toBe('# c\nUUID=2 /ais/d1 xfs noatime 0 0\n');
      expect(setEntry(`${hand}UUID=2 /ais/d1 xfs noatime 0 0\n`, want)).toBe('UUID=2 /ais/d1 xfs noatime 0 0\n');
      expect(removeEntry(`# c\n${hand}`, '/ais/d1')).toBe('# c\n');
      // other mountpoints stay theirs
      expect(findEntry(hand, '/ais/d10')).toBeUndefined();
      expect(findEntry(hand, '/ais')).toBeUndefined();
    },
  );

  const base = '# comment\nUUID=1 / ext4 defaults 0 1\n/dev/x /data xfs noatime 0 0\n';
  const e = { source: 'UUID=2', target: '/data', fstype: 'xfs', options: 'noatime,nofail', dump: 0, pass: 0 };
  it.each([
    ['replaces in place, keeps comments and order', base, '# comment\nUUID=1 / ext4 defaults 0 1\nUUID=2 /data xfs noatime,nofail 0 0\n'],
    ['appends when absent', '# only a comment\n', '# only a comment\nUUID=2 /data xfs noatime,nofail 0 0\n'],
    ['empty file', '', 'UUID=2 /data xfs noatime,nofail 0 0\n'],
    [
      'drops later duplicates of the target',
      base + '/dev/y /data xfs defaults 0 0\n',
      '# comment\nUUID=1 / ext4 defaults 0 1\nUUID=2 /data xfs noatime,nofail 0 0\n',
    ],
    ['no trailing newline', 'UUID=1 / ext4 defaults 0 1', 'UUID=1 / ext4 defaults 0 1\nUUID=2 /data xfs noatime,nofail 0 0\n'],
  ])('setEntry: %s', (_, before, after) => {
    expect(setEntry(before, e)).toBe(after);
    expect(setEntry(after, e)).toBe(after); // idempotent
  });

  it('finds the last entry for a target and removes all of them', () => {
    const t = '/a /m none bind 0 0\n/b /m none bind 0 0\n';
    expect(findEntry(t, '/m')?.source).toBe('/b');
    expect(removeEntry(t + 'x /n none bind 0 0\n', '/m')).toBe('x /n none bind 0 0\n');
  });

  it('findEntry answers for the text it is given (the last parse is reused only for the same text)', () => {
    const t = '# c\n/a /m none bind 0 0\n/c /n\\040x xfs noatime 0 2\n';
    expect(findEntry(t, '/m')).toEqual({ source: '/a', target: '/m', fstype: 'none', options: 'bind', dump: 0, pass: 0 });
    expect(findEntry(t, '/n x')).toEqual({ source: '/c', target: '/n x', fstype: 'xfs', options: 'noatime', dump: 0, pass: 2 });
    expect(findEntry(t, '/none')).toBeUndefined();
    expect(findEntry('/b /m xfs defaults 0 0\n', '/m')?.source).toBe('/b');
    expect(findEntry('', '/m')).toBeUndefined();
    expect(findEntry(t, '/m')?.source).toBe('/a');
  });
});

describe('mount diff', () => {
  const fstabLine = '/srv/src /mnt/jail/tmp none bind,x-systemd.requires-mounts-for=/mnt/jail 0 0\n';
  const r = mount({
    path: '/mnt/jail/tmp',
    source: '/srv/src',
    fstype: 'none',
    options: ['bind', 'x-systemd.requires-mounts-for=/mnt/jail'],
    within: '/mnt/jail',
  });
  const converged: MountFacts = {
    fstab: fileWith(fstabLine),
    live: { source: '/dev/vda[/srv/src]', fstype: 'ext4', options: ['rw', 'relatime'], majmin: '254:0' },
    target: { kind: 'dir', devIno: '254:77', mode: '1777', empty: true, real: '/mnt/jail/tmp' },
    source: { exists: true, devIno: '254:77' },
  };
  const summaries = (f: MountFacts) => r.diff(f).map((c) => c.summary);
  /** The bind there shows `root` of `device` (`//deleted`: deleted since), another inode than the source's now. */
  const boundThere = (device: string, root: string, more: Partial<MountFacts> = {}): Partial<MountFacts> => ({
    live: { ...converged.live!, source: `${device}[${root}]`, root },
    target: { ...converged.target, devIno: '254:99' },
    ...more,
  });
  const REBIND = 're-bind /srv/src on /mnt/jail/tmp: /srv/src was replaced since it was bound there (the bind still shows the deleted one)';
  it.each<[string, Partial<MountFacts>, string[] | RegExp]>([
    ['converged', {}, []],
    ['not mounted', { live: undefined }, ['mount /srv/src on /mnt/jail/tmp (none, bind,x-systemd.requires-mounts-for=/mnt/jail)']],
    ['fstab entry missing', { fstab: fileWith('') }, [`/etc/fstab: add ${fstabLine.trim()}`]],
    ['fstab entry differs', { fstab: fileWith('/old /mnt/jail/tmp none bind 0 0\n') }, ['/etc/fstab: update /mnt/jail/tmp entry']],
    [
      'the right entry twice (an older run appended a duplicate): collapsed',
      { fstab: fileWith(fstabLine + fstabLine) },
      ['/etc/fstab: one /mnt/jail/tmp entry instead of 2'],
    ],
    [
      'mountpoint missing',
      { live: undefined, target: { kind: 'absent', real: '/mnt/jail/tmp' } },
      ['create mountpoint /mnt/jail/tmp', 'mount /srv/src on /mnt/jail/tmp (none, bind,x-systemd.requires-mounts-for=/mnt/jail)'],
    ],
    [
      'something else mounted there',
      { target: { ...converged.target, devIno: '254:99' } },
      /already has \/dev\/vda\[\/srv\/src\] \(ext4\) mounted/,
    ],
    ['mountpoint is a symlink', { live: undefined, target: { kind: 'link', real: '/tmp' } }, /is a symlink/],
    [
      'mountpoint escapes the jail',
      { live: undefined, target: { kind: 'dir', empty: true, real: '/tmp' } },
      /resolves to \/tmp, outside \/mnt\/jail/,
    ],
    ['non-empty directory', { live: undefined, target: { kind: 'dir', empty: false, real: '/mnt/jail/tmp' } }, /non-empty directory/],
    ['source missing', { live: undefined, source: { exists: false } }, /mount source \/srv\/src does not exist/],
    // the source rewritten by rename (sed -i, Ansible's template) or made again (a service's runtime directory)
    [
      'the bind shows a deleted file of the filesystem the source lies on now: bound again',
      boundThere('/dev/vda', '/srv/src//deleted'),
      [REBIND],
    ],
    [
      'the same, and its fstab entry gone too',
      boundThere('/dev/vda', '/srv/src//deleted', { fstab: fileWith('') }),
      [`/etc/fstab: add ${fstabLine.trim()}`, REBIND],
    ],
    [
      'a deleted file of another filesystem: refused',
      boundThere('/dev/vdb', '/srv/src//deleted', { source: { exists: true, devIno: '300:5' } }),
      /already has \/dev\/vdb\[\/srv\/src\/\/deleted\] \(ext4\) mounted, not \/srv\/src; unmount it first/,
    ],
    [
      'a deleted file, and the source gone: refused',
      boundThere('/dev/vda', '/srv/src//deleted', { source: { exists: false } }),
      /already has \/dev\/vda\[\/srv\/src\/\/deleted\] \(ext4\) mounted/,
    ],
    [
      'a deleted file of another path on the same filesystem (someone else’s bind): refused',
      boundThere('/dev/vda', '/srv/other//deleted'),
      /already has \/dev\/vda\[\/srv\/other\/\/deleted\] \(ext4\) mounted/,
    ],
    ['the source on a filesystem of its own: the root is relative to it', boundThere('/dev/vdc', '/src//deleted'), [REBIND]],
    ['a btrfs subvolume mounted as / (its root below the filesystem’s)', boundThere('/dev/vda', '/@/srv/src//deleted'), [REBIND]],
    [
      'a source that is a link: its resolved path (systemd-resolved rewrites the file it leads to)',
      boundThere('tmpfs', '/systemd/resolve/stub//deleted', {
        source: { exists: true, devIno: '254:78', real: '/run/systemd/resolve/stub' },
      }),
      [REBIND],
    ],
    [
      'another file of the same filesystem, not deleted: refused',
      boundThere('/dev/vda', '/srv/other'),
      /already has \/dev\/vda\[\/srv\/other\] \(ext4\) mounted/,
    ],
  ])('%s', (_, patch, want) => {
    const f = { ...converged, ...patch };
    if (want instanceof RegExp) {
      expect(() => r.diff(f)).toThrow(Refusal);
      expect(() => r.diff(f)).toThrow(want);
    } else expect(summaries(f)).toEqual(want);
  });

  // The refusal says what an operator can do: no inventory variable reaches overNonEmpty (the
  // storage play never sets it), so it names the content and the path, not the option.
  it('a non-empty mountpoint: the refusal says what an operator can do, not an option the inventory cannot set', () => {
    const dir = { live: undefined, target: { kind: 'dir' as const, empty: false, real: '/mnt/jail/tmp' } };
    let said = '';
    try {
      r.diff({ ...converged, ...dir });
    } catch (e) {
      said = (e as Error).message;
    }
    expect(said).toBe(
      '/mnt/jail/tmp is a non-empty directory; mounting there would hide its content. Move its content elsewhere (or remove it) and run again, or mount at another path: no inventory variable allows mounting over a non-empty directory',
    );
    expect(said).not.toMatch(/overNonEmpty/);
    // the storage play's data mounts say the same
    const data = mount({ path: '/ais/d1', device: '/dev/sdb', fstype: 'xfs' });
    const facts: MountFacts = {
      fstab: fileWith(''),
      target: { kind: 'dir', empty: false },
      source: { exists: true, majmin: '8:10', uuid: '11111111-2222-3333-4444-555555555555', path: '/dev/sdb' },
    };
    expect(() => data.diff(facts)).toThrow(
      /^\/ais\/d1 is a non-empty directory; mounting there would hide its content\. Move its content elsewhere/,
    );
    // the option itself still allows it (the jail's node-local binds)
    const over = mount({ path: '/ais/d1', device: '/dev/sdb', fstype: 'xfs', overNonEmpty: true });
    expect(over.diff(facts).map((c) => c.summary)).toContain('mount /dev/sdb on /ais/d1 (xfs, defaults)');
  });

  it('requested flags are enforced by a remount; rw only when asked', () => {
    const ro = mount({ path: '/mnt/x', source: '/srv/src', fstype: 'none', options: ['bind', 'ro', 'nosuid'], persist: false });
    const f: MountFacts = { ...converged, target: { ...converged.target, real: '/mnt/x' } };
    expect(ro.diff(f).map((c) => c.summary)).toEqual(['remount /mnt/x: +ro +nosuid']);
    const sys = mount({ path: '/mnt/x', source: '/srv/src', fstype: 'none', options: ['rbind'], persist: false });
    expect(sys.diff({ ...f, live: { ...f.live!, options: ['ro'] } })).toEqual([]);
  });

  it('a missing populated-marker is refused before anything is mounted', () => {
    const root = mount({
      path: '/mnt/jail',
      source: '/srv/shared/jail',
      fstype: 'none',
      options: ['bind'],
      requireMarker: 'etc/populated',
    });
    expect(() =>
      root.diff({ ...converged, live: undefined, marker: false, target: { kind: 'dir', empty: true, real: '/mnt/jail' } }),
    ).toThrow(/not populated: marker etc\/populated is missing/);
  });

  it('optional binds are nothing to do where the source is missing', () => {
    const opt = mount({
      path: '/mnt/jail/etc/resolv.conf',
      source: '/etc/resolv.conf',
      fstype: 'none',
      options: ['bind'],
      mkdir: 'file',
      optional: true,
    });
    expect(opt.diff({ ...converged, live: undefined, source: { exists: false } })).toEqual([]);
  });

  it.each([
    [{ path: 'relative', source: '/a', fstype: 'none' }],
    [{ path: '/m', fstype: 'xfs' }],
    [{ path: '/m', source: '/a', device: '/dev/x', fstype: 'xfs' }],
    [{ path: '/m', source: '/a', fstype: 'none', options: ['bind,ro'] }],
    [{ path: '/m', source: '/a', fstype: 'none', requireMarker: '../escape' }],
  ])('refuses bad arguments %j', (o) => expect(() => mount(o as never)).toThrow());
});

// Real probes, run by the local sh (they only read): each answer is read from its own part.
describe('mount and GPU-bind probes, run for real', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-parts-'));
  const fstabFile = join(dir, 'fstab');
  writeFileSync(fstabFile, 'proc /proc proc defaults 0 0\n/tmp /mnt/x none bind 0 0\n');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const run = (r: Resource) => {
    const sp = standaloneProbe(r.probe());
    const res = spawnSync('sh', ['-c', sp.script], { encoding: 'utf8' });
    return sp.output(res.stdout, res.stderr);
  };
  it.each<[string, Resource, (f: Record<string, unknown>) => void]>([
    [
      'a virtual filesystem',
      mount({ path: '/proc', source: 'proc', fstype: 'proc', fstabFile }),
      (f) => expect(f).toMatchObject({ live: { fstype: 'proc' }, target: { kind: 'dir' } }),
    ],
    [
      'a bind mount (source ids, within)',
      mount({ path: '/tmp', source: '/tmp', fstype: 'none', options: ['bind'], within: '/', fstabFile }),
      (f) => expect(f).toMatchObject({ source: { exists: true, devIno: expect.stringMatching(/^\d+:\d+$/) }, target: { real: '/tmp' } }),
    ],
    [
      'a device mount, not mounted',
      mount({ path: join(dir, 'mnt'), device: '/dev/null', fstype: 'xfs', fstabFile }),
      (f) => expect(f).toMatchObject({ live: undefined, target: { kind: 'absent' } }),
    ],
    [
      'GPU binds',
      gpuBinds({ jail: dir, fstabFile, searchDirs: [dir] }),
      (f) => expect(f).toMatchObject({ files: [], source: expect.any(String) }),
    ],
    [
      'GPU stand-ins',
      gpuStandins({ jail: dir, jailId: 'x', fstabFile, standin: join(dir, 'standin.so') }),
      (f) => expect(f).toMatchObject({ role: 'cpu', arch: expect.any(String), standin: { type: 'absent' } }),
    ],
  ])('%s', (_, r, check) => {
    const f = r.parse(run(r)) as Record<string, unknown>;
    check(f);
    expect(f.fstab).toMatchObject({ type: 'file', content: readFileSync(fstabFile) }); // the fstab answer was read
  });
  it('answers laid out otherwise are refused, not misread', () => {
    const r = mount({ path: '/proc', source: 'proc', fstype: 'proc', fstabFile });
    expect(() => r.parse({ parts: ['target=dir\n', 'garbage'], stdout: 'target=dir\ngarbage', code: 0, stderr: '' })).toThrow(
      /unexpected probe output: target=dir\ngarbage/,
    );
  });
});

describe('a stale bind bound again', () => {
  const root = mount({ path: '/mnt/jail', source: '/srv/jail', fstype: 'none', options: ['bind'], requireMarker: 'etc/populated' });
  const stale: MountFacts = {
    fstab: fileWith('/srv/jail /mnt/jail none bind 0 0\n'),
    live: { source: '/dev/vda[/srv/jail//deleted]', fstype: 'ext4', options: ['rw'], majmin: '254:0', root: '/srv/jail//deleted' },
    target: { kind: 'dir', devIno: '65024:12', mode: '755', empty: true },
    source: { exists: true, devIno: '65024:13' },
    marker: false, // seen through the deleted directory: always empty
    sourceMarker: true,
  };
  it('the marker is looked for in the source it is bound again from, not in the deleted directory', () => {
    expect(root.diff(stale).map((c) => c.summary)).toEqual([
      're-bind /srv/jail on /mnt/jail: /srv/jail was replaced since it was bound there (the bind still shows the deleted one)',
    ]);
    expect(() => root.diff({ ...stale, sourceMarker: false })).toThrow(/\/srv\/jail is not populated: marker etc\/populated is missing/);
  });
  it('the step: only the stale bind the probe saw (its dev:ino), lazily unmounted; bound unless the source shows already; the marker checked', () => {
    const [step] = root.apply(stale, root.diff(stale));
    expect(step.name).toBe('re-bind /mnt/jail');
    expect(step.script).toBe(`rs_di=$(stat -L -c %d:%i -- /mnt/jail) || rs_di=
[ "$rs_di" = 65024:12 ] || { echo '/mnt/jail no longer shows the deleted /srv/jail the probe saw: not bound again' >&2; exit 3; }
umount -l -- /mnt/jail
if ! [ /mnt/jail -ef /srv/jail ]; then
mount --bind -- /srv/jail /mnt/jail
fi
if [ ! -e /mnt/jail/etc/populated ]; then umount /mnt/jail; echo '/srv/jail is not populated: marker etc/populated is missing; unmounted again' >&2; exit 5; fi`);
  });
});

describe('mount probes in one script', () => {
  it('share one definition of the target-kind test and each read its own mountpoint', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-kinds-'));
    try {
      mkdirSync(join(dir, 'dir'));
      writeFileSync(join(dir, 'file'), '');
      symlinkSync(join(dir, 'dir'), join(dir, 'link'));
      const fstabFile = join(dir, 'fstab');
      writeFileSync(fstabFile, '');
      const kinds = ['dir', 'file', 'link', 'absent'] as const;
      const mounts = kinds.map((k) => mount({ path: join(dir, k), source: '/tmp', fstype: 'none', options: ['bind'], fstabFile }));
      const sections: Section[] = [];
      const set = new ProbeSet(
        sections,
        mounts.map((m) => m.probe()),
      );
      const { script, marker } = buildScript(sections);
      expect(script.split('rs_target_kind() {')).toHaveLength(2);
      const res = spawnSync('/bin/sh', ['-s'], { input: scriptAsStdin(script), encoding: 'utf8' });
      const outs = splitOutput(res.stdout, marker, sections.length, res.stderr);
      const facts = mounts.map((m, i) => {
        const o = set.output(outs, i);
        return m.parse({ parts: o.parts, stdout: o.stdout, code: o.code ?? -1, stderr: o.stderr }) as MountFacts;
      });
      expect(facts.map((f) => f.target.kind)).toEqual(kinds);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a device mount reads the source number sysfs gives', () => {
  const m = mount({ path: '/ais/d1', device: '/dev/nvme0n1', fstype: 'xfs' });
  const facts = (own: string) =>
    m.parse({ parts: [`target=dir\n${own}uuid=u1\n`, undefined, '', { type: 'absent' }], stdout: '', code: 0, stderr: '' }) as MountFacts;
  it.each([
    ['majmin_dec=259:1\n', '103:1'], // decimal (sysfs) as stat's hex
    ['majmin_dec=7:0\n', '7:0'],
    ['majmin_dec=259:1\n', '103:1'], // again (remembered)
    ['majmin=103:1\n', '103:1'], // stat's hex as is
    ['majmin_dec=banana\n', undefined],
    ['', undefined],
  ])('%j -> %s', (own, majmin) => {
    expect(facts(own).source.majmin).toBe(majmin);
  });
});

// XFS takes its own options only at mount time (a remount changes the VFS flags only); the kernel
// shows each one it has in mountinfo. An fstab entry updated under a mounted XFS says which of its
// options wait for the next mount, rather than a converged run leaving them off without a word.
describe('XFS options a remount cannot bring: said on the fstab change', () => {
  const AIS = ['noatime', 'nodiratime', 'logbufs=8', 'logbsize=256k', 'largeio', 'inode64', 'swalloc', 'allocsize=131072k', 'nofail'];
  const live = (options: string) => ({ source: '/dev/loop1', fstype: 'xfs', options: options.split(','), majmin: '7:1' });
  it.each([
    ['cloud-init options live', 'xfs', 'rw,noatime,swalloc,inode64,logbufs=8,logbsize=256k,noquota', ['largeio', 'allocsize=131072k']],
    ['all of them live', 'xfs', 'rw,noatime,nodiratime,swalloc,largeio,inode64,allocsize=131072k,logbufs=8,logbsize=256k,noquota', []],
    [
      'a VFS flag missing only (a remount adds it)',
      'xfs',
      'rw,noatime,swalloc,largeio,inode64,allocsize=131072k,logbufs=8,logbsize=256k',
      [],
    ],
    ['not XFS: its kernel shows options otherwise', 'ext4', 'rw,noatime', []],
  ])('%s', (_, fstype, options, want) => {
    expect(xfsOptionsNotLive({ fstype: 'xfs', options: AIS }, { ...live(options), fstype })).toEqual(want);
  });
  it('not mounted: nothing waits', () => {
    expect(xfsOptionsNotLive({ fstype: 'xfs', options: AIS }, undefined)).toEqual([]);
  });

  const m = mount({ path: '/ais/d1', device: '/dev/loop1', fstype: 'xfs', options: AIS });
  const facts = (fstab: string, options: string): MountFacts => ({
    fstab: fileWith(fstab),
    live: live(options),
    target: { kind: 'dir', mode: '750', empty: false, real: '/ais/d1' },
    source: { exists: true, majmin: '7:1', uuid: 'u1', path: '/dev/loop1' },
  });
  const want = `UUID=u1 /ais/d1 xfs ${AIS.join(',')} 0 0\n`;
  it('the fstab update names them, in --check as in apply (the diff is the same)', () => {
    const cloudInit = 'rw,noatime,swalloc,inode64,logbufs=8,logbsize=256k,noquota';
    expect(
      m.diff(facts('UUID=u1 /ais/d1 xfs nofail,noatime,logbufs=8,logbsize=256k,swalloc 0 0\n', cloudInit)).map((c) => c.summary),
    ).toEqual([
      '/etc/fstab: update /ais/d1 entry (largeio, allocsize=131072k: not on the live mount, and XFS does not change them on a remount: they take effect when /ais/d1 is next mounted)',
      'remount /ais/d1: +nodiratime',
    ]);
    // the entry already right: no change, nothing said (a converged run is quiet)
    expect(m.diff(facts(want, cloudInit + ',nodiratime'))).toEqual([]);
    // every option live: the update is plain
    expect(
      m
        .diff(
          facts(
            'UUID=u1 /ais/d1 xfs defaults 0 0\n',
            'rw,noatime,nodiratime,swalloc,largeio,inode64,allocsize=131072k,logbufs=8,logbsize=256k',
          ),
        )
        .map((c) => c.summary),
    ).toEqual(['/etc/fstab: update /ais/d1 entry']);
  });
});

// The mount step resolves the device again when it runs (a placeholder's resolver runs where the
// device path stands): it mounts it only when it is still the probed device carrying the probed
// filesystem UUID, the one the fstab line written after it names. The step's own script, run by
// the local sh with stat, blkid and mount as stand-ins that answer as the host would.
describe('the mount step mounts only the probed device with the probed filesystem', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-mount-step-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const log = join(dir, 'mount.log');
  // stat -L -c %t:%T DEV prints $RS_T_MM (nothing, exit 1, when unset: a path that is gone);
  // blkid -p -s UUID -o value DEV prints $RS_T_UUID (exit 2 when unset: no filesystem)
  writeFileSync(join(bin, 'stat'), '#!/bin/sh\n[ -n "$RS_T_MM" ] || exit 1\necho "$RS_T_MM"\n', { mode: 0o755 });
  writeFileSync(join(bin, 'blkid'), '#!/bin/sh\n[ -n "$RS_T_UUID" ] || exit 2\necho "$RS_T_UUID"\n', { mode: 0o755 });
  writeFileSync(join(bin, 'mount'), `#!/bin/sh\necho "mount $*" >> '${log}'\n`, { mode: 0o755 });
  const U = '0f0e0d0c-1111-2222-3333-444455556666';
  const m = mount({ path: '/ais/d 1', device: '/dev/sdb', fstype: 'xfs', options: ['noatime'] });
  const facts: MountFacts = {
    fstab: fileWith(''),
    target: { kind: 'dir', empty: true },
    source: { exists: true, majmin: '8:10', uuid: U, path: '/dev/sdb' },
  };
  const step = m.apply(facts, m.diff(facts)).find((s) => s.name === 'mount /ais/d 1')!;
  const run = (env: Record<string, string>) => {
    writeFileSync(log, '');
    const r = spawnSync('/bin/sh', ['-c', step.script], {
      encoding: 'utf8',
      env: { PATH: `${bin}:${process.env.PATH}`, ...env },
    });
    return { code: r.status, stderr: r.stderr, mounted: readFileSync(log, 'utf8') };
  };

  it('the probed device with the probed UUID is mounted', () => {
    expect(run({ RS_T_MM: '8:10', RS_T_UUID: U })).toEqual({
      code: 0,
      stderr: '',
      mounted: 'mount -t xfs -o noatime -- /dev/sdb /ais/d 1\n',
    });
  });

  it.each<[string, Record<string, string>, string]>([
    [
      'another filesystem on the device now (re-formatted, or another disk under the same path)',
      { RS_T_MM: '8:10', RS_T_UUID: 'aaaaaaaa-0000-0000-0000-000000000000' },
      `/dev/sdb carries filesystem UUID aaaaaaaa-0000-0000-0000-000000000000, not the probed ${U}; not mounting it at /ais/d 1\n`,
    ],
    [
      'no filesystem on it now',
      { RS_T_MM: '8:10' },
      `/dev/sdb carries filesystem UUID (none), not the probed ${U}; not mounting it at /ais/d 1\n`,
    ],
    [
      'the path names another device now (same UUID: a clone found first)',
      { RS_T_MM: '8:20', RS_T_UUID: U },
      '/dev/sdb is device 8:20 now, not the probed 8:10 (hex maj:min); not mounting it at /ais/d 1\n',
    ],
    [
      'the device is gone',
      { RS_T_UUID: U },
      '/dev/sdb is device (none) now, not the probed 8:10 (hex maj:min); not mounting it at /ais/d 1\n',
    ],
  ])('%s: not mounted, exit 3, said why', (_, env, said) => {
    expect(run(env)).toEqual({ code: 3, stderr: said, mounted: '' });
  });

  it('a device the host resolves is resolved once: the one checked is the one mounted', () => {
    const r = diskMount({ spec: { serial: 'ZL2ABC12' }, path: '/ais/ZL2ABC12', fstype: 'xfs', options: ['noatime'] });
    const f: MountFacts = { ...facts, source: { ...facts.source, path: undefined } };
    const script = r.apply(f, r.diff(f)).find((s) => s.name === 'mount /ais/ZL2ABC12')!.script;
    expect(script.split('rs_by_serial ZL2ABC12').length - 1).toBe(1);
    expect(script).toMatch(/^rs_md="\$\(rs_dev=; R=\n/);
    expect(script).toMatch(/\nmount -t xfs -o noatime -- "\$rs_md" \/ais\/ZL2ABC12$/);
  });
});
