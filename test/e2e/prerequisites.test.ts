// Host prerequisites on the test bed: a host whose rootfs lacks xfsprogs and attr (removed with
// dpkg after reset) gets them from a local Debian repository (test/e2e/local-repo.ts, served
// through the bed's shared directory: the hosts have no internet) in one apt transaction, and
// the storage playbook then formats and mounts as usual. A package installed for another
// architecture only (a stand-in made with dpkg-deb) is replaced by the host's.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory } from './helpers.ts';
import { needHddScheduler } from './hdd-scheduler.ts';
import { localAptRepo } from './local-repo.ts';

const H = 'tb3';
let mirror: string;

beforeAll(() => {
  mirror = localAptRepo(['xfsprogs', 'attr', 'ethtool']);
});

const installed = async (pkgs: string[]) =>
  (await tb.hostExec(H, `dpkg-query -W -f='\${Package} \${db:Status-Abbrev}\\n' ${pkgs.join(' ')} 2>/dev/null`)).stdout;

/** An empty repository as the mirror (the hosts have no network: never let apt try the host's own sources). */
function emptyMirror(): { apt: string } {
  mkdirSync(join(tb.sharedDir, 'empty-repo'), { recursive: true });
  writeFileSync(join(tb.sharedDir, 'empty-repo', 'Packages'), '');
  return { apt: `deb [trusted=yes] file:${tb.sharedMount}/empty-repo ./` };
}

function inventory(vars: Record<string, unknown> = {}): string {
  const disks = tb.host(H).disks.map((d, i) => ({ device: d.dev, name: `d${i + 1}`, match: { KERNEL: d.dev.replace('/dev/', '') } }));
  return writeInventory({
    hosts: [H],
    vars: { package_mirror: { apt: mirror }, ...vars },
    hostVars: { [H]: { storage_disks: disks, format_allow: tb.host(H).disks.map((d) => d.dev) } },
    groups: { storage: { hosts: [H] } },
  });
}

describe('host prerequisites', () => {
  it('a host without xfsprogs and attr gets them from the local repository, then formats; re-run 0 changes; --check changes nothing', async (ctx) => {
    needHddScheduler(ctx);
    await tb.reset([H]);
    await tb.hostExec(H, 'dpkg -r xfsprogs attr');
    expect(await installed(['xfsprogs', 'attr'])).not.toMatch(/ ii/);

    const check = await provision(['playbooks/storage.ts', '-i', inventory(), '--check']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain(`install xfsprogs, attr (apt from ${mirror})`);
    expect(await installed(['xfsprogs', 'attr'])).not.toMatch(/ ii/);

    const run = await provision(['playbooks/storage.ts', '-i', inventory(), '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.events.find((e) => e.id === 'packages:storage')).toMatchObject({ status: 'changed' });
    expect(await installed(['xfsprogs', 'attr'])).toBe('attr ii \nxfsprogs ii \n');
    for (const [i, d] of tb.host(H).disks.entries()) {
      expect((await tb.hostExec(H, `blkid -p -s TYPE -o value ${d.dev}`)).stdout.trim()).toBe('xfs');
      expect((await tb.hostExec(H, `findmnt -n -o SOURCE /ais/d${i + 1}`)).code).toBe(0);
    }
    // the host's own apt sources were not touched
    expect((await tb.hostExec(H, 'cat /etc/apt/sources.list 2>/dev/null; ls /etc/apt/sources.list.d')).stdout).not.toContain('apt-repo');

    const again = await provision(['playbooks/storage.ts', '-i', inventory(), '--json']);
    expect(recaps(again)[H]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
  });

  it("site.ts installs every play's packages in ONE transaction per host", async () => {
    await tb.reset([H]);
    await tb.hostExec(H, 'dpkg -r xfsprogs attr');
    const inv = inventory({
      nic_queues: [{ name: 'eth0', channels: 2 }],
      sysctl_overrides: { 'net.core.netdev_max_backlog': null, 'net.ipv4.tcp_mem': null },
    });
    const run = await provision(['playbooks/site.ts', '-i', inv, '-t', 'packages', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const installs = run.events.filter((e) => e.type === 'resource' && e.kind === 'packages' && e.status === 'changed');
    expect(installs.map((e) => [e.id, e.changes[0].summary])).toEqual([
      ['packages:site', `install ethtool, xfsprogs, attr (apt from ${mirror})`],
    ]);
    expect(await installed(['xfsprogs', 'attr', 'ethtool'])).toBe('attr ii \nethtool ii \nxfsprogs ii \n');
  });

  it('a held package (apt-mark hold) is installed; a dpkg journal not yet merged is read through dpkg-query', async () => {
    await tb.reset([H]);
    const check = () => provision(['playbooks/storage.ts', '-i', inventory(), '-t', 'packages', '--check']);
    // the hold as apt-mark makes it: dpkg's selection, the status file then says "hold ok installed"
    await tb.hostExec(H, 'echo "attr hold" | dpkg --set-selections');
    expect(await installed(['attr'])).toBe('attr hi \n');
    const held = await check();
    expect(held.code, held.stderr).toBe(0);
    expect(held.stderr).not.toContain('install');

    // a dpkg run stopped before it merged its journal: the status file says installed, the journal not
    const stanza = (await tb.hostExec(H, "awk -v RS= '/^Package: attr\\n/' /var/lib/dpkg/status")).stdout;
    expect(stanza).toMatch(/^Status: hold ok installed$/m);
    const journal = stanza.replace(/^Status: .*$/m, 'Status: install reinstreq half-installed');
    expect((await tb.hostExec(H, 'cat > /var/lib/dpkg/updates/0001', { input: `${journal}\n` })).code).toBe(0);
    expect(await installed(['attr'])).toBe('attr iHR\n');
    const pending = await check();
    expect(pending.code, pending.stderr).toBe(2);
    expect(pending.stderr).toContain(`install attr (apt from ${mirror})`);
    await tb.hostExec(H, 'rm -f /var/lib/dpkg/updates/0001; echo "attr install" | dpkg --set-selections');
  });

  it("installed for another architecture only: the host's is installed in its place, or the run says it could not; re-run 0 changes", async () => {
    await tb.reset([H]);
    const native = (await tb.hostExec(H, 'dpkg --print-architecture')).stdout.trim();
    const foreign = native === 'arm64' ? 'amd64' : 'arm64';
    // a stand-in attr of the other architecture, no files (the bed has no such packages), made with dpkg-deb
    const root = mkdtempSync(join(tmpdir(), 'rs-foreign-deb-'));
    mkdirSync(join(root, 'DEBIAN'));
    chmodSync(join(root, 'DEBIAN'), 0o755); // (whatever the umask: dpkg-deb wants 0755)
    writeFileSync(
      join(root, 'DEBIAN/control'),
      `Package: attr\nVersion: 1:0.0-racksmith\nArchitecture: ${foreign}\nMulti-Arch: foreign\n` +
        'Maintainer: racksmith tests <tests@racksmith.invalid>\nDescription: stand-in for attr of another architecture\n',
    );
    const deb = join(tb.sharedDir, 'foreign-deb', `attr_${foreign}.deb`);
    mkdirSync(join(tb.sharedDir, 'foreign-deb'), { recursive: true });
    execFileSync('dpkg-deb', ['--root-owner-group', '--build', root, deb], { stdio: ['ignore', 'ignore', 'pipe'] });
    rmSync(root, { recursive: true, force: true });
    const swap = await tb.hostExec(
      H,
      `dpkg --add-architecture ${foreign} && dpkg -r attr >/dev/null && dpkg -i ${tb.sharedMount}/foreign-deb/attr_${foreign}.deb >/dev/null`,
    );
    expect(swap.code, swap.stderr).toBe(0);
    const attr = async () => (await tb.hostExec(H, "dpkg-query -W -f='${Package}:${Architecture} ${db:Status-Abbrev}\\n' attr")).stdout;
    expect(await attr()).toBe(`attr:${foreign} ii \n`);

    const check = await provision(['playbooks/storage.ts', '-i', inventory(), '-t', 'packages', '--check']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain(
      `install attr:${native} (apt from ${mirror}; attr:${foreign} installed, replaced unless Multi-Arch: same)`,
    );
    expect(await attr()).toBe(`attr:${foreign} ii \n`);

    // a mirror without the host's build: apt takes the other as the package (Multi-Arch: foreign)
    // and does nothing; the resource fails saying what still differs, never converged
    const empty = emptyMirror();
    const none = await provision(['playbooks/storage.ts', '-i', inventory({ package_mirror: empty }), '-t', 'packages', '--json']);
    expect(none.code).toBe(1);
    expect(none.events.find((e) => e.type === 'resource' && e.status === 'failed')).toMatchObject({
      id: 'packages:storage',
      error: expect.stringContaining(`still differs after apply: install attr:${native} (apt from ${empty.apt}; attr:${foreign} installed`),
    });

    const run = await provision(['playbooks/storage.ts', '-i', inventory(), '-t', 'packages', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(await attr()).toBe(`attr:${native} ii \n`);
    const again = await provision(['playbooks/storage.ts', '-i', inventory(), '-t', 'packages', '--json']);
    expect(recaps(again)[H]).toMatchObject({ changed: 0, failed: 0 });
  });

  it('a package the mirror does not have: the install fails clearly (apt exit 100)', async () => {
    await tb.reset([H]);
    await tb.hostExec(H, 'dpkg -r attr');
    const empty = emptyMirror();
    const run = await provision(['playbooks/storage.ts', '-i', inventory({ package_mirror: empty }), '--json', '-t', 'packages']);
    expect(run.code).toBe(1);
    const failed = run.events.find((e) => e.type === 'resource' && e.status === 'failed');
    expect(failed).toMatchObject({ id: 'packages:storage', error: expect.stringMatching(/step "install attr" exit 100/) });
  });
});
