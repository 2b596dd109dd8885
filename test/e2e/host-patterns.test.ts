// Issue 34 on the test bed: host patterns select and order hosts as ansible-core 2.14 does. The
// inventory lists the group `storage` out of file order (tb3 tb1 tb2, the file names tb1 tb2 tb3):
// Ansible takes a group's hosts in the group's own order, for batches and for subscripts.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, repoRoot, writeInventory } from './helpers.ts';

const PB = 'test/fixtures/playbooks/pattern-order.ts';
const HOSTS = ['tb1', 'tb2', 'tb3'];
const STORAGE = ['tb3', 'tb1', 'tb2'];

const inventory = () =>
  writeInventory({
    hosts: HOSTS,
    groups: { storage: { hosts: STORAGE } },
    vars: { racksmith_play_hosts: { kube_control_plane: 'storage' } },
  });
const marks = async (h: string) => (await tb.hostExec(h, `ls /srv/rs-pattern 2>/dev/null || true`)).stdout.split('\n').filter(Boolean);

/** Each host's sshd log size: a connection, even one refused, writes to it. */
const sshdLogs = () => HOSTS.map((h) => statSync(join(tb.host(h).upper, 'var/log/sshd.log'), { throwIfNoEntry: false })?.size ?? 0);

beforeAll(async () => {
  await tb.reset(HOSTS);
});

describe('host patterns as Ansible reads them', () => {
  it("--serial 1 over a group listed out of file order applies in the group's order; storage[0] is the group's first host", async () => {
    await tb.reset(HOSTS);
    const inv = inventory();
    const run = await provision([PB, '-i', inv, '--serial', '1', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const started = (play: string) => run.events.filter((e) => e.type === 'host_start' && e.play === play).map((e) => e.host);
    expect(started('on storage')).toEqual(STORAGE);
    // kube_control_plane is storage here: its [0] is tb3, the first host the group lists (Ansible's pick)
    expect(started('on the first control-plane host')).toEqual(['tb3']);
    expect(await marks('tb3')).toEqual(['first', 'storage']);
    // the play on gpu is skipped, and said so at its file:line (human view and --json)
    const lines = readFileSync(join(repoRoot, PB), 'utf8').split('\n');
    const line = lines.findIndex((l) => l.includes("hosts: 'gpu'"));
    const at = `${PB}:${line + 1}:${lines[line].indexOf('hosts:') + 1}`;
    const warning = `${at}: play 'on gpu' (hosts: 'gpu') matches no host in ${inv}: the play is skipped`;
    const warnings = run.events.filter((e) => e.type === 'warning' && e.message.includes("'on gpu'"));
    expect(warnings.map(({ message, at }) => ({ message, at }))).toEqual([{ message: warning, at }]);
    expect(run.stderr).toContain(`warning: ${warning}\n`);
    expect(started('on gpu')).toEqual([]);
    for (const h of ['tb1', 'tb2']) expect(await marks(h)).toEqual(['storage']);
  });

  it.each(['!', 'all:!', 'storage,!'])("-l '%s' is exit 3 naming the pattern, and no host is contacted", async (limit) => {
    await tb.reset(HOSTS);
    const inv = inventory();
    const before = sshdLogs();
    const run = await provision([PB, '-i', inv, '-l', limit, '--json']);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`host --limit '${limit}' has nothing after '!'`);
    expect(run.events.filter((e) => e.type === 'host_start')).toEqual([]);
    expect(sshdLogs()).toEqual(before);
    for (const h of HOSTS) expect(await marks(h)).toEqual([]);
  });
});
