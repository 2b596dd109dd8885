// Issue #18, the lifecycle, on the test bed: storage.json, prune, replacement, another node's XFS
// in a recorded slot (refused; storage_adopt), a disk moved to another slot, decommission, wipe
// (only reviewed or with --yes; never a disk in use), and the migration from ais-k8s. Each test resets and converges the host it uses, so it passes alone.
//
// Test-bed specifics: loop devices have no serial, so where a test needs one (storage_wipe names
// disks by serial only) it writes what udevd would have recorded into the host's udev database
// (/run/udev/data/b7:N, E:ID_SERIAL_SHORT = the bed's recorded serial), as storage.test.ts does.
// A "slot move" is the inventory's two entries pointing at each other's loop device: the disk a
// listed name points to is now the other one, as after swapping two disks between slots.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { changedResources, provision, recaps, writeInventory, type CliRun } from './helpers.ts';
import { needHddScheduler } from './hdd-scheduler.ts';

const PB = 'playbooks/storage.ts';
const RECORD = '/var/lib/racksmith/storage.json';
// ais-k8s's datafs_mount options (nofail first), the same set as racksmith's default
const AIS_K8S_OPTIONS = 'nofail,noatime,nodiratime,logbufs=8,logbsize=256k,largeio,inode64,swalloc,allocsize=131072k';

const disks = (h: string) => tb.host(h).disks;
const kname = (dev: string) => dev.replace('/dev/', '');
const why = (run: CliRun) => `exit ${run.code}\n${run.stderr}`;
const sh = async (h: string, cmd: string): Promise<string> => {
  const r = await tb.hostExec(h, cmd);
  if (r.code !== 0) throw new Error(`${h}: ${cmd}: exit ${r.code}: ${r.stderr}`);
  return r.stdout;
};
const resources = (run: CliRun, host: string) =>
  new Map(run.events.filter((e) => e.type === 'resource' && e.host === host).map((e) => [e.id as string, e]));
const uuidOf = async (h: string, dev: string) => (await sh(h, `blkid -p -s UUID -o value ${dev}`)).trim();
const source = async (h: string, mp: string) => (await tb.hostExec(h, `findmnt -rn -o SOURCE --mountpoint ${mp}`)).stdout.trim();
const aisLines = async (h: string) => (await sh(h, 'cat /etc/fstab 2>/dev/null || true')).split('\n').filter((l) => l.includes(' /ais/'));
const record = async (h: string) =>
  JSON.parse(await sh(h, `cat ${RECORD}`)) as { version: number; disks: Array<Record<string, string | null>> };
/** What a --check must leave as it was. */
const snapshot = async (h: string, o: { udev?: boolean } = {}) =>
  await sh(
    h,
    `cat /etc/fstab ${RECORD} ${o.udev === false ? '' : '/etc/udev/rules.d/60-racksmith-io.rules'} 2>/dev/null; findmnt -rn -o SOURCE,TARGET | grep ' /ais' || true; for d in ${disks(
      h,
    )
      .map((d) => d.dev)
      .join(' ')}; do blkid -p -o export $d || true; done`,
  );

/** d1 and d2 on the host's two loop disks (matched by kernel name in udev), unless `order` says otherwise. */
function inventory(h: string, vars: Record<string, unknown> = {}, order: [number, number] = [0, 1]): string {
  const ds = disks(h);
  return writeInventory({
    hosts: [h],
    hostVars: {
      [h]: {
        storage_disks: order.map((j, i) => ({ device: ds[j].dev, name: `d${i + 1}`, match: { KERNEL: kname(ds[j].dev) } })),
        ...vars,
      },
    },
    groups: { storage: { hosts: [h] } },
  });
}

async function converge(h: string, vars: Record<string, unknown> = {}): Promise<void> {
  await tb.reset([h]);
  const run = await provision([PB, '-i', inventory(h, vars), '--json']);
  expect(run.code, why(run)).toBe(0);
}

/** The host's udev database gives each loop disk its bed serial (udevd would, for a real disk). */
async function giveSerials(h: string): Promise<void> {
  for (const d of disks(h)) {
    const mm = (await sh(h, `cat /sys/block/${kname(d.dev)}/dev`)).trim();
    await sh(h, `printf 'E:ID_SERIAL=RS_LOOP_%s\\nE:ID_SERIAL_SHORT=%s\\n' ${d.serial} ${d.serial} >> /run/udev/data/b${mm}`);
  }
}

async function secondRunIsClean(h: string, inv: string): Promise<void> {
  const again = await provision([PB, '-i', inv, '--json']);
  expect(again.code, why(again)).toBe(0);
  expect(changedResources(again)).toEqual([]);
  expect(recaps(again)[h]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
}

beforeEach((ctx) => needHddScheduler(ctx)); // every test converges the storage play

describe('storage lifecycle: the record, prune, replacement, slot moves', () => {
  const H = 'tb8';

  it('storage.json records each mountpath: kernel name, filesystem UUID, serial; one line each; a second run changes nothing', async () => {
    await tb.reset([H]);
    await giveSerials(H);
    const inv = inventory(H);
    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, why(run)).toBe(0);
    const [a, b] = disks(H);
    const r = await record(H);
    expect(r).toEqual({
      version: 1,
      disks: [
        { mountpoint: '/ais/d1', name: 'd1', kname: kname(a.dev), uuid: await uuidOf(H, a.dev), serial: a.serial },
        { mountpoint: '/ais/d2', name: 'd2', kname: kname(b.dev), uuid: await uuidOf(H, b.dev), serial: b.serial },
      ],
    });
    expect((await sh(H, `cat ${RECORD}`)).split('\n')).toHaveLength(5);
    expect((await sh(H, `stat -c '%a %U' ${RECORD}`)).trim()).toBe('644 root');
    // written atomically: no temporary file left beside it
    expect((await sh(H, 'ls -A /var/lib/racksmith')).trim()).toBe('storage.json');
    await secondRunIsClean(H, inv);
  });

  it('prune: a disk taken out of storage_disks is unmounted and its fstab line removed, data kept; --check shows it; storage_prune: false keeps it', async () => {
    await converge(H);
    const [, b] = disks(H);
    const u2 = await uuidOf(H, b.dev);
    await sh(H, 'echo keep-me > /ais/d2/data && sync');
    const onlyD1 = (vars: Record<string, unknown> = {}) =>
      writeInventory({
        hosts: [H],
        hostVars: { [H]: { storage_disks: [{ device: disks(H)[0].dev, name: 'd1', match: { KERNEL: kname(disks(H)[0].dev) } }], ...vars } },
        groups: { storage: { hosts: [H] } },
      });

    // storage_prune: false: left mounted, its fstab line and record line kept (the udev line goes: it is not listed)
    const kept = await provision([PB, '-i', onlyD1({ storage_prune: false }), '--json']);
    expect(kept.code, why(kept)).toBe(0);
    expect(changedResources(kept).map((c) => c.id)).toEqual(['udev-rules:/etc/udev/rules.d/60-racksmith-io.rules']);
    expect(await source(H, '/ais/d2')).toBe(b.dev);
    expect((await record(H)).disks.map((d) => d.mountpoint)).toEqual(['/ais/d1', '/ais/d2']);

    const before = await snapshot(H);
    const check = await provision([PB, '-i', onlyD1(), '--check', '--json']);
    expect(check.code, why(check)).toBe(2);
    expect(
      resources(check, H)
        .get(`storage-prune:${RECORD}`)!
        .changes.map((c: { summary: string }) => c.summary),
    ).toEqual([
      `unmount /ais/d2 (d2, UUID ${u2}: no longer in storage_disks; its data is kept)`,
      '/etc/fstab: remove the line of pruned /ais/d2',
      `${RECORD}: forget /ais/d2 (no longer in storage_disks)`,
    ]);
    expect(changedResources(check).map((c) => c.id)).toEqual([`storage-prune:${RECORD}`]);
    expect(await snapshot(H)).toBe(before);

    const run = await provision([PB, '-i', onlyD1(), '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(await source(H, '/ais/d2')).toBe('');
    expect((await aisLines(H)).filter((l) => l.includes('/ais/d2'))).toEqual([]);
    expect((await aisLines(H)).filter((l) => l.includes('/ais/d1'))).toHaveLength(1);
    expect((await record(H)).disks.map((d) => d.mountpoint)).toEqual(['/ais/d1']);
    // the data is untouched: same filesystem, same file
    expect(await uuidOf(H, b.dev)).toBe(u2);
    expect(await sh(H, `mkdir -p /mnt/p && mount ${b.dev} /mnt/p && cat /mnt/p/data; umount /mnt/p`)).toBe('keep-me\n');
    await secondRunIsClean(H, onlyD1());
  });

  it('storage_disks: [] (a value that selects nothing) is refused: no mountpath pruned, in --check and apply; storage_prune: false leaves them quietly', async () => {
    await converge(H);
    const [a, b] = disks(H);
    const none = (vars: Record<string, unknown> = {}) =>
      writeInventory({ hosts: [H], hostVars: { [H]: { storage_disks: [], ...vars } }, groups: { storage: { hosts: [H] } } });
    const before = await snapshot(H, { udev: false });
    for (const args of [['--check'], []]) {
      const r = await provision([PB, '-i', none(), ...args, '--json']);
      expect(r.code, why(r)).toBe(1);
      expect(resources(r, H).get(`storage-prune:${RECORD}`)!.error).toBe(
        'refused: storage_disks lists no disk of this host: pruning would take every recorded mountpath out of service (/ais/d1, /ais/d2; 2 mounted); nothing is pruned. List the data disks in storage_disks; to retire them all, list them in storage_disks and storage_decommission; to leave them as they are, set storage_prune: false',
      );
      expect(await snapshot(H, { udev: false })).toBe(before);
    }
    expect([await source(H, '/ais/d1'), await source(H, '/ais/d2')]).toEqual([a.dev, b.dev]);
    const left = await provision([PB, '-i', none({ storage_prune: false }), '--json']);
    expect(left.code, why(left)).toBe(0);
    expect(await snapshot(H, { udev: false })).toBe(before);
  });

  it('replacement: a disk reset to zeros under the same name is formatted and mounted at the same mountpath; one fstab line', async () => {
    await converge(H);
    const [a, b] = disks(H);
    const [u1, u2] = [await uuidOf(H, a.dev), await uuidOf(H, b.dev)];
    await sh(H, 'echo other > /ais/d2/data && sync');
    // the failed disk is pulled and a blank one arrives in its slot
    await sh(H, `umount /ais/d1 && blkdiscard ${a.dev}`);
    const inv = inventory(H);
    const before = await snapshot(H);
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code, why(check)).toBe(2);
    expect(resources(check, H).get('disk:d1')!.changes[0].summary).toBe(`format ${a.dev} (blank, 1 GiB, no serial) as XFS`);
    expect(resources(check, H).get('mount:/ais/d1')!.pending).toBe('disk:d1');
    expect(await snapshot(H)).toBe(before);

    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, why(run)).toBe(0);
    const n1 = await uuidOf(H, a.dev);
    expect(n1).not.toBe(u1);
    expect(await source(H, '/ais/d1')).toBe(a.dev);
    expect((await aisLines(H)).filter((l) => l.includes(' /ais/d1 '))).toEqual([
      expect.stringMatching(new RegExp(`^UUID=${n1} /ais/d1 xfs `)),
    ]);
    expect((await record(H)).disks.find((d) => d.mountpoint === '/ais/d1')!.uuid).toBe(n1);
    // the other disk is untouched
    expect(await uuidOf(H, b.dev)).toBe(u2);
    expect(await sh(H, 'cat /ais/d2/data')).toBe('other\n');
    await secondRunIsClean(H, inv);
  });

  it("another node's XFS in a recorded mountpath's slot is refused in --check and apply (nothing recorded or mounted, the other disk converges); storage_adopt naming its UUID takes it", async () => {
    await converge(H);
    const [a, b] = disks(H);
    const [u1, u2] = [await uuidOf(H, a.dev), await uuidOf(H, b.dev)];
    // d1's disk is pulled, and another node's data disk (an XFS racksmith did not make here) put in its slot
    await sh(
      H,
      `umount /ais/d1 && mkfs.xfs -q -f ${a.dev} && mkdir -p /mnt/f && mount ${a.dev} /mnt/f && echo other-node > /mnt/f/obj && umount /mnt/f`,
    );
    const u3 = await uuidOf(H, a.dev);
    // /ais/d2 has a change of its own to make: it is converged all the same
    await sh(H, 'umount /ais/d2');
    const inv = inventory(H);
    const [recordBefore, fstabBefore, before] = [await sh(H, `cat ${RECORD}`), await sh(H, 'cat /etc/fstab'), await snapshot(H)];
    const problem = `${a.dev} carries XFS UUID ${u3}, not the filesystem storage.json records for /ais/d1 (UUID ${u1}), and racksmith did not make it on this host: another node's data disk? A recorded mountpath takes no other filesystem unasked, so /ais/d1 is neither recorded anew nor mounted. To take this filesystem and its data deliberately, list it in storage_adopt: [${u3}]; to format the disk as a blank replacement instead, erase it by hand (wipefs -a ${a.dev}) and name it in format_allow`;
    const refused = (run: CliRun) => {
      const rs = resources(run, H);
      expect(rs.get('storage-record:/ais/d1')!.error).toBe(`refused: not recording /ais/d1 → ${a.dev}: ${problem}`);
      expect(rs.get('mount:/ais/d1')!.error).toBe(`refused: not mounting ${a.dev} at /ais/d1: ${problem}`);
      expect([...rs.values()].filter((e) => e.status === 'failed').map((e) => e.id)).toEqual(['storage-record:/ais/d1', 'mount:/ais/d1']);
    };
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code, why(check)).toBe(1);
    refused(check);
    expect(changedResources(check).map((c) => c.id)).toContain('mount:/ais/d2');
    expect(await snapshot(H)).toBe(before);

    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, why(run)).toBe(1);
    refused(run);
    expect(await source(H, '/ais/d1')).toBe('');
    expect(await source(H, '/ais/d2')).toBe(b.dev);
    expect(await sh(H, `cat ${RECORD}`)).toBe(recordBefore);
    expect(await sh(H, 'cat /etc/fstab')).toBe(fstabBefore);
    expect([await uuidOf(H, a.dev), await uuidOf(H, b.dev)]).toEqual([u3, u2]);

    // taken deliberately, by its exact identity: kept (not formatted), recorded and mounted with its data
    const adopt = inventory(H, { storage_adopt: [u3] });
    const unchanged = await snapshot(H);
    const look = await provision([PB, '-i', adopt, '--check', '--json']);
    expect(look.code, why(look)).toBe(2);
    expect(changedResources(look).map((c) => c.id)).toEqual(['storage-record:/ais/d1', 'mount:/ais/d1', 'xattr:/ais/d1']);
    expect(
      resources(look, H)
        .get('storage-record:/ais/d1')!
        .changes.map((c: { summary: string }) => c.summary),
    ).toEqual([`${RECORD}: record /ais/d1 → ${a.dev} (UUID ${u3}) (storage_adopt, in place of UUID ${u1})`]);
    expect(await snapshot(H)).toBe(unchanged);
    const taken = await provision([PB, '-i', adopt, '--json']);
    expect(taken.code, why(taken)).toBe(0);
    expect(await source(H, '/ais/d1')).toBe(a.dev);
    expect(await sh(H, 'cat /ais/d1/obj')).toBe('other-node\n');
    expect(await uuidOf(H, a.dev)).toBe(u3);
    expect((await record(H)).disks.map((d) => [d.mountpoint, d.uuid])).toEqual([
      ['/ais/d1', u3],
      ['/ais/d2', u2],
    ]);
    expect((await aisLines(H)).filter((l) => l.includes(' /ais/d1 '))).toEqual([
      expect.stringMatching(new RegExp(`^UUID=${u3} /ais/d1 xfs `)),
    ]);
    await secondRunIsClean(H, adopt);
    const dry = await provision([PB, '-i', adopt, '--check', '--json']);
    expect(dry.code, why(dry)).toBe(0);
    expect(changedResources(dry)).toEqual([]);
  });

  it("another node's XFS erased by hand and named in format_allow is formatted as the replacement the refusal says it can be", async () => {
    await converge(H);
    const [a] = disks(H);
    await sh(H, `umount /ais/d1 && mkfs.xfs -q -f ${a.dev} && wipefs -a -q ${a.dev}`);
    const inv = inventory(H, { format_allow: [a.dev] });
    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(resources(run, H).get('disk:d1')!.changes[0].summary).toMatch(
      /^format \/dev\/\S+ \(1 GiB, no serial\) as XFS, erasing .*XFS secondary superblocks.*\(format_allow: /,
    );
    const n = await uuidOf(H, a.dev);
    expect(await source(H, '/ais/d1')).toBe(a.dev);
    expect((await record(H)).disks.find((d) => d.mountpoint === '/ais/d1')!.uuid).toBe(n);
    expect((await aisLines(H)).filter((l) => l.includes(' /ais/d1 '))).toEqual([
      expect.stringMatching(new RegExp(`^UUID=${n} /ais/d1 xfs `)),
    ]);
    await secondRunIsClean(H, inv);
  });

  it('a disk moved to another slot keeps its mountpath, mounted or not, and is never formatted', async () => {
    await converge(H);
    const [a, b] = disks(H);
    const [u1, u2] = [await uuidOf(H, a.dev), await uuidOf(H, b.dev)];
    await sh(H, 'echo d1 > /ais/d1/who && echo d2 > /ais/d2/who && sync');
    const fstab = await aisLines(H);
    const swapped = inventory(H, {}, [1, 0]);

    // still mounted (fstab mounts by UUID, as after a reboot): kept where it is
    const check = await provision([PB, '-i', swapped, '--check', '--json']);
    expect(check.code, why(check)).toBe(2); // the udev rule's lines follow the listed names
    expect(changedResources(check).map((c) => c.id)).toEqual(['udev-rules:/etc/udev/rules.d/60-racksmith-io.rules']);
    const run = await provision([PB, '-i', swapped, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(changedResources(run).map((c) => c.id)).toEqual(['udev-rules:/etc/udev/rules.d/60-racksmith-io.rules']);
    await secondRunIsClean(H, swapped);

    // unmounted: mounted again where storage.json has it, not where the entry's name points
    await sh(H, 'umount /ais/d1 /ais/d2');
    const again = await provision([PB, '-i', swapped, '--json']);
    expect(again.code, why(again)).toBe(0);
    expect(changedResources(again).map((c) => c.id)).toEqual(['mount:/ais/d1', 'mount:/ais/d2']);
    expect(await source(H, '/ais/d1')).toBe(a.dev);
    expect(await source(H, '/ais/d2')).toBe(b.dev);
    expect(await sh(H, 'cat /ais/d1/who /ais/d2/who')).toBe('d1\nd2\n');
    expect([await uuidOf(H, a.dev), await uuidOf(H, b.dev)]).toEqual([u1, u2]);
    expect(await aisLines(H)).toEqual(fstab);
    expect((await record(H)).disks.map((d) => [d.mountpoint, d.uuid])).toEqual([
      ['/ais/d1', u1],
      ['/ais/d2', u2],
    ]);
    await secondRunIsClean(H, swapped);
  });

  it("decommissioning an entry whose device is now another mountpath's disk (a slot move) is refused: the other mountpath stays mounted, nothing forgotten", async () => {
    await converge(H);
    const [a, b] = disks(H);
    await sh(H, 'echo d1 > /ais/d1/who && echo d2 > /ais/d2/who && sync');
    const u1 = await uuidOf(H, a.dev);
    // d1's entry now names b, which serves /ais/d2 (storage.json); /ais/d1 is a's
    const inv = inventory(H, { storage_decommission: ['d1'] }, [1, 0]);
    // the udev rule too: a refused decommission keeps its disk's tuning line
    const before = await snapshot(H);
    const said = `refused: not decommissioning ${b.dev}: the entry's device (${b.dev}) is the disk of /ais/d2 (storage.json), not of /ais/d1, whose recorded filesystem is UUID=${u1}: a disk moved to another slot? Nothing is decommissioned; name the entry's disk by serial or /dev/disk/by-id path, or point the entry at the disk of /ais/d1`;
    for (const args of [['--check'], []]) {
      const r = await provision([PB, '-i', inv, ...args, '--json']);
      expect(r.code, why(r)).toBe(1);
      expect(resources(r, H).get('decommission:d1')!.error).toBe(said);
      expect(await snapshot(H)).toBe(before);
    }
    expect(await source(H, '/ais/d2')).toBe(b.dev);
    expect(await source(H, '/ais/d1')).toBe(a.dev);
    expect(await sh(H, 'cat /ais/d1/who /ais/d2/who')).toBe('d1\nd2\n');
    // the entry pointed at the disk of /ais/d1: that one is decommissioned, /ais/d2 stays
    const right = inventory(H, { storage_decommission: ['d1'] });
    const run = await provision([PB, '-i', right, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(await source(H, '/ais/d1')).toBe('');
    expect(await source(H, '/ais/d2')).toBe(b.dev);
    expect((await record(H)).disks.map((d) => d.mountpoint)).toEqual(['/ais/d2']);
    await secondRunIsClean(H, right);
  });
});

describe('storage lifecycle: decommission and wipe', () => {
  const H = 'tb9';

  it('decommission (--tags decommission): unmounted, fstab line, udev entry and record line removed; data kept; idempotent', async () => {
    await converge(H);
    const [a, b] = disks(H);
    const u2 = await uuidOf(H, b.dev);
    await sh(H, 'echo keep > /ais/d2/data && sync');
    const inv = inventory(H, { storage_decommission: ['d2'] });
    const before = await snapshot(H);
    const check = await provision([PB, '-i', inv, '--check', '--tags', 'decommission', '--json']);
    expect(check.code, why(check)).toBe(2);
    const u1 = await uuidOf(H, a.dev);
    expect(
      resources(check, H)
        .get('decommission:d2')!
        .changes.map((c: { summary: string }) => c.summary),
    ).toEqual([
      `unmount /ais/d2 (${b.dev}, decommissioned d2)`,
      expect.stringMatching(new RegExp(`^/etc/fstab: remove UUID=${u2} /ais/d2 xfs `)),
      `${RECORD}: forget /ais/d2 (decommissioned d2)`,
    ]);
    expect(changedResources(check).map((c) => c.id)).toEqual(['decommission:d2', 'udev-rules:/etc/udev/rules.d/60-racksmith-io.rules']);
    expect(await snapshot(H)).toBe(before);

    const run = await provision([PB, '-i', inv, '--tags', 'decommission', '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(await source(H, '/ais/d2')).toBe('');
    expect(await aisLines(H)).toEqual([expect.stringMatching(new RegExp(`^UUID=${u1} /ais/d1 xfs `))]);
    const rules = await sh(H, 'cat /etc/udev/rules.d/60-racksmith-io.rules');
    expect(rules).toContain(`KERNEL=="${kname(a.dev)}"`);
    expect(rules).not.toContain(`KERNEL=="${kname(b.dev)}"`);
    expect((await record(H)).disks.map((d) => d.mountpoint)).toEqual(['/ais/d1']);
    expect(await uuidOf(H, b.dev)).toBe(u2);
    await secondRunIsClean(H, inv);
  });

  it('wipe: refused without a reviewed plan or --yes, and while the disk is in use; a reviewed plan wipes it', async () => {
    await tb.reset([H]);
    await giveSerials(H);
    const [, b] = disks(H);
    expect((await provision([PB, '-i', inventory(H), '--json'])).code).toBe(0);
    await sh(H, 'echo precious > /ais/d2/data && mkdir -p /ais/d2/.ais.vmd && sync');
    const u2 = await uuidOf(H, b.dev);
    const inv = inventory(H, { storage_decommission: ['d2'], storage_wipe: [b.serial] });
    const intact = async () => {
      expect(await uuidOf(H, b.dev)).toBe(u2);
      expect(await sh(H, 'cat /ais/d2/data')).toBe('precious\n');
    };

    // not reviewed: the whole decommission is refused, nothing of the disk changed, its udev rule
    // line included (the rule file waits for the decommissions)
    const before = await snapshot(H);
    const plain = await provision([PB, '-i', inv, '--json']);
    expect(plain.code, why(plain)).toBe(1);
    expect(resources(plain, H).get('decommission:d2')!.error).toBe(
      `refused: wipe ${b.dev} (storage_wipe: ${b.serial}): erase its signatures and data, AIS metadata included (erases the disk): only in a plan reviewed with --check --plan-out FILE, then \`provision apply FILE\`, or with --yes`,
    );
    expect(await snapshot(H)).toBe(before);
    await intact();

    // in use (a loop device over it): refused in check mode and with --yes alike
    // (hosts have no /dev/loop-control: the loop device is made on the runner, under the bed's loop lock)
    const made = spawnSync(
      'flock',
      [process.env.TB_LOOP_LOCK ?? '/run/racksmith-testbed-loop.lock', 'losetup', '-f', '--show', '-r', b.dev],
      {
        encoding: 'utf8',
      },
    );
    expect(made.status, made.stderr).toBe(0);
    const lo = made.stdout.trim();
    try {
      for (const args of [['--check'], ['--yes']]) {
        const r = await provision([PB, '-i', inv, ...args, '--json']);
        expect(r.code, why(r)).toBe(1);
        expect(resources(r, H).get('decommission:d2')!.error).toMatch(
          new RegExp(`^refused: not wiping ${b.dev}: it backs loop device ${lo} .*A disk in use is never wiped$`),
        );
      }
    } finally {
      spawnSync('losetup', ['-d', lo]);
    }
    await intact();

    // mounted and in use (a process has a file open on it): the unmount fails, nothing is wiped
    const pid = (await sh(H, `setsid sh -c 'exec sleep 600 < /ais/d2/data' </dev/null >/dev/null 2>&1 & echo $!`)).trim();
    try {
      const busy = await provision([PB, '-i', inv, '--yes', '--json']);
      expect(busy.code, why(busy)).toBe(1);
      expect(resources(busy, H).get('decommission:d2')!.error).toMatch(/step "unmount \/ais\/d2" exit \d+: .*busy/);
    } finally {
      await sh(H, `kill ${pid}; while kill -0 ${pid} 2>/dev/null; do sleep 0.1; done`);
    }
    await intact();

    // reviewed: --check --plan-out shows the wipe, `provision apply` carries it out
    const plan = join(mkdtempSync(join(tmpdir(), 'rs-wipe-')), 'plan.json');
    const check = await provision([PB, '-i', inv, '--check', '--plan-out', plan, '--json']);
    expect(check.code, why(check)).toBe(2);
    expect(
      resources(check, H)
        .get('decommission:d2')!
        .changes.map((c: { summary: string }) => c.summary),
    ).toContain(`wipe ${b.dev} (storage_wipe: ${b.serial}): erase its signatures and data, AIS metadata included`);
    await intact();
    const applied = await provision(['apply', plan, '--json']);
    expect(applied.code, why(applied)).toBe(0);
    expect(await source(H, '/ais/d2')).toBe('');
    const probe = await tb.hostExec(H, `blkid -p ${b.dev}`);
    expect(probe.code).toBe(2); // no signature left
    expect((await sh(H, `cmp -n 1048576 ${b.dev} /dev/zero && echo zero`)).trim()).toBe('zero');
    expect((await aisLines(H)).filter((l) => l.includes('/ais/d2'))).toEqual([]);
    await secondRunIsClean(H, inv);
  });

  it('storage_wipe naming no decommissioned disk (a mistyped serial, a disk in service) is refused in --check and apply; nothing is decommissioned or wiped', async () => {
    await tb.reset([H]);
    await giveSerials(H);
    const [a, b] = disks(H);
    expect((await provision([PB, '-i', inventory(H), '--json'])).code).toBe(0);
    await sh(H, 'echo precious > /ais/d2/data && sync');
    const u2 = await uuidOf(H, b.dev);
    const cases: Array<[string, RegExp]> = [
      [
        `${b.serial}X`,
        new RegExp(
          `^refused: storage_wipe ${b.serial}X names no listed disk of this host, and names none of the decommissioned d2 \\(${b.dev}, serial ${b.serial}\\): it would be decommissioned but not wiped\\.`,
        ),
      ],
      [a.serial, new RegExp(`^refused: storage_wipe entry ${a.serial} names d1 \\(${a.dev}, serial ${a.serial}\\), which is in service`)],
    ];
    for (const [entry, said] of cases) {
      const inv = inventory(H, { storage_decommission: ['d2'], storage_wipe: [entry] });
      const before = await snapshot(H);
      for (const args of [['--check'], ['--yes']]) {
        const r = await provision([PB, '-i', inv, ...args, '--json']);
        expect(r.code, why(r)).toBe(1);
        expect(resources(r, H).get('storage-wipe-check')!.error, entry).toMatch(said);
        expect(resources(r, H).get('decommission:d2')).toMatchObject({ status: 'skipped' });
        expect(await snapshot(H)).toBe(before);
      }
      expect(await source(H, '/ais/d2')).toBe(b.dev);
      expect(await uuidOf(H, b.dev)).toBe(u2);
      expect(await sh(H, 'cat /ais/d2/data')).toBe('precious\n');
    }
    // named right: decommissioned and wiped; a second run changes nothing
    const inv = inventory(H, { storage_decommission: ['d2'], storage_wipe: [b.serial] });
    const run = await provision([PB, '-i', inv, '--yes', '--json']);
    expect(run.code, why(run)).toBe(0);
    expect((await tb.hostExec(H, `blkid -p ${b.dev}`)).code).toBe(2);
    await secondRunIsClean(H, inv);
  });

  /** H fresh, its disks with serials, converged; AIS node state in /etc/ais beside a file of the operator's. */
  async function convergedWithAisState(): Promise<ReturnType<typeof disks>> {
    await tb.reset([H]);
    await giveSerials(H);
    expect((await provision([PB, '-i', inventory(H), '--json'])).code).toBe(0);
    await sh(H, 'mkdir -p /etc/ais && echo smap > /etc/ais/.ais.smap && echo mine > /etc/ais/notes');
    return disks(H);
  }

  it('wipe with --yes: every disk wiped, the AIS node state (/etc/ais/.ais.*) removed; the wiped disks listed again are formatted as blank ones', async () => {
    const [a, b] = await convergedWithAisState();
    const inv = inventory(H, { storage_decommission: ['d1', 'd2'], storage_wipe: [a.serial, b.serial] });
    const run = await provision([PB, '-i', inv, '--yes', '--json']);
    expect(run.code, why(run)).toBe(0);
    for (const d of [a, b]) expect((await tb.hostExec(H, `blkid -p ${d.dev}`)).code).toBe(2);
    expect(await sh(H, 'ls -A /etc/ais')).toBe('notes\n');
    expect(await aisLines(H)).toEqual([]);
    expect((await record(H)).disks).toEqual([]);
    await secondRunIsClean(H, inv);
    const back = await provision([PB, '-i', inventory(H), '--json']);
    expect(back.code, why(back)).toBe(0);
    for (const [i, d] of [a, b].entries()) {
      expect(resources(back, H).get(`disk:d${i + 1}`)!.changes[0].summary).toBe(
        `format ${d.dev} (blank, 1 GiB, serial ${d.serial}) as XFS`,
      );
      expect(await source(H, `/ais/d${i + 1}`)).toBe(d.dev);
    }
  });

  it('every disk decommissioned, storage_wipe naming one: that one wiped, the other kept, the AIS node state kept and said', async () => {
    const [a, b] = await convergedWithAisState();
    const inv = inventory(H, { storage_decommission: ['d1', 'd2'], storage_wipe: [a.serial] });
    const said = `/etc/ais/.ais.* kept: storage_wipe does not name ${b.dev}`;
    // a dry run cannot tell before the decommissions ran: the purge waits for them
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code, why(check)).toBe(2);
    expect(resources(check, H).get('ais-state-purge:/etc/ais')).toMatchObject({ pending: 'decommission:d1' });
    const run = await provision([PB, '-i', inv, '--yes', '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(resources(run, H).get('ais-state-purge:/etc/ais')).toMatchObject({ status: 'skipped', error: said });
    expect((await tb.hostExec(H, `blkid -p ${a.dev}`)).code).toBe(2); // wiped
    expect((await tb.hostExec(H, `blkid -p ${b.dev}`)).code).toBe(0); // its filesystem kept
    expect(await sh(H, 'cat /etc/ais/.ais.smap')).toBe('smap\n');
    await secondRunIsClean(H, inv);
  });
});

describe('storage lifecycle: migration from ais-k8s', () => {
  const H = 'tb10';

  it('storage_mount_name: kernel adopts the XFS mounts and fstab lines ais-k8s made: nothing reformatted, remounted or duplicated', async () => {
    await tb.reset([H]);
    const [a, b] = disks(H);
    // what ais_datafs_mkfs left: /ais/<kernel name>, mounted by UUID (b: the legacy /dev/<name> line), root 0750, AIS metadata
    const mps = [a, b].map((d) => `/ais/${kname(d.dev)}`);
    await sh(H, `mkfs.xfs -q -f ${a.dev} && mkfs.xfs -q -f ${b.dev}`);
    const [u1, u2] = [await uuidOf(H, a.dev), await uuidOf(H, b.dev)];
    await sh(
      H,
      `mkdir -p ${mps.join(' ')} && printf '%s\\n' ${JSON.stringify(`UUID=${u1} ${mps[0]} xfs ${AIS_K8S_OPTIONS} 0 0`)} ${JSON.stringify(`${b.dev} ${mps[1]} xfs ${AIS_K8S_OPTIONS} 0 0`)} >> /etc/fstab && mount -a && chmod 0750 ${mps.join(' ')} && for m in ${mps.join(' ')}; do echo t1 > $m/.ais.vmd; mkdir $m/@ais; echo obj > $m/@ais/o; done && sync`,
    );
    const inv = writeInventory({
      hosts: [H],
      hostVars: {
        [H]: { storage_mount_name: 'kernel', storage_disks: [a, b].map((d) => ({ device: d.dev, match: { KERNEL: kname(d.dev) } })) },
      },
      groups: { storage: { hosts: [H] } },
    });
    const before = await snapshot(H);
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code, why(check)).toBe(2);
    expect(await snapshot(H)).toBe(before);
    const rs = resources(check, H);
    for (const [i, d] of [a, b].entries()) {
      expect(rs.get(`disk:${kname(d.dev)}`)!.status).toBe('ok');
      expect(rs.get(`storage-record:${mps[i]}`)!.changes[0].summary).toMatch(new RegExp(`^${RECORD}: record ${mps[i]} → ${d.dev}`));
    }
    // the UUID line is adopted as it is (same options, ais-k8s's order); the legacy /dev line becomes a UUID line
    expect(rs.get(`mount:${mps[0]}`)!.status).toBe('ok');
    expect(rs.get(`mount:${mps[1]}`)!.changes.map((c: { summary: string }) => c.summary)).toEqual([`/etc/fstab: update ${mps[1]} entry`]);
    expect(await aisLines(H)).toHaveLength(2);
    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, why(run)).toBe(0);
    const after = resources(run, H);
    expect(after.get(`mount:${mps[0]}`)!.status).toBe('ok');
    expect(after.get(`mount:${mps[1]}`)!.changes.map((c: { summary: string }) => c.summary)).toEqual([
      '/etc/fstab: update /ais/' + kname(b.dev) + ' entry',
    ]);
    expect(await aisLines(H)).toEqual([
      `UUID=${u1} ${mps[0]} xfs ${AIS_K8S_OPTIONS} 0 0`,
      expect.stringMatching(new RegExp(`^UUID=${u2} ${mps[1]} xfs `)),
    ]);
    for (const [i, d] of [a, b].entries()) {
      expect(await uuidOf(H, d.dev)).toBe([u1, u2][i]);
      expect(await source(H, mps[i])).toBe(d.dev);
      expect(await sh(H, `stat -c %a ${mps[i]}; cat ${mps[i]}/.ais.vmd ${mps[i]}/@ais/o`)).toBe('750\nt1\nobj\n');
    }
    await secondRunIsClean(H, inv);
  });

  it("ais-k8s's cloud-init mount options: the fstab line takes racksmith's, the remount adds nodiratime, and the XFS options a remount cannot change are said to wait for the next mount", async () => {
    await tb.reset([H]);
    const [a] = disks(H);
    const mp = `/ais/${kname(a.dev)}`;
    const CLOUD_INIT = 'nofail,noatime,logbufs=8,logbsize=256k,swalloc'; // tools/cloud-init/ais_datafs.sh
    await sh(H, `mkfs.xfs -q -f ${a.dev}`);
    const u = await uuidOf(H, a.dev);
    await sh(H, `mkdir -p ${mp} && echo 'UUID=${u} ${mp} xfs ${CLOUD_INIT} 0 0' >> /etc/fstab && mount ${mp} && chmod 0750 ${mp}`);
    const inv = writeInventory({
      hosts: [H],
      hostVars: { [H]: { storage_mount_name: 'kernel', storage_disks: [{ device: a.dev, match: { KERNEL: kname(a.dev) } }] } },
      groups: { storage: { hosts: [H] } },
    });
    const said = [
      `/etc/fstab: update ${mp} entry (largeio, allocsize=131072k: not on the live mount, and XFS does not change them on a remount: they take effect when ${mp} is next mounted)`,
      `remount ${mp}: +nodiratime`,
    ];
    const summaries = (r: CliRun) =>
      resources(r, H)
        .get(`mount:${mp}`)!
        .changes.map((c: { summary: string }) => c.summary);
    const check = await provision([PB, '-i', inv, '--check', '--json']);
    expect(check.code, why(check)).toBe(2);
    expect(summaries(check)).toEqual(said);
    const run = await provision([PB, '-i', inv, '--json']);
    expect(run.code, why(run)).toBe(0);
    expect(summaries(run)).toEqual(said);
    const opts = async () => (await sh(H, `findmnt -rn -o OPTIONS --mountpoint ${mp}`)).trim().split(',');
    expect(await opts()).toContain('nodiratime');
    expect(await opts()).not.toContain('largeio'); // as said: not until the next mount
    await secondRunIsClean(H, inv);
    await sh(H, `umount ${mp} && mount ${mp}`);
    expect(await opts()).toEqual(expect.arrayContaining(['largeio', 'allocsize=131072k', 'nodiratime']));
    await secondRunIsClean(H, inv);
  });
});
