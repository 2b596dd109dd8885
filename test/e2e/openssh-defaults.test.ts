// A bastion and a drain controller running OpenSSH's default limits (tb.setSshdDefaults:
// MaxStartups 10:30:100, MaxSessions 10), as operators' do; the bed's other hosts keep its
// generous ones. Past 10 unauthenticated connections at once sshd drops new ones at random: a
// run must not open more than that to one place.
//
// The connections that count all go to ONE sshd (the bastion, the controller), so the 20 hosts of
// each test are 20 inventory names for the bed's other machines, in turn (tb2..tb10 on the
// default bed of 10: alias01 and alias10 are tb2). Each name is a host of its own to the run: its
// own connection (a channel of the one jump connection to the bastion they share), its own drain. known_hosts is by
// address and port, so every name of a machine matches its key.
//
// The drain test drains through Kubernetes (the API double on the runner, kubectl on tb1, the
// control plane): each name is a node of its own there (nodes are only API objects), and all 20
// are drained at once through tb1. One run applies to a machine through one of its names
// (docs/cli.md "One run at a time changes a host"): per machine the first name to apply takes the
// apply lock, and its other names, drained like the rest, fail there. Each name asks for an MTU of
// its own, so every name has its disruptive change whichever applied first.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { startKubeApiDouble, type KubeApiDouble } from '../kube-double/server.ts';
import { provision, writeInventory } from './helpers.ts';
import { drainEvents, IFACES, liveMtu, PB } from './slurm-mtu-bed.ts';

const BED = tb.hosts().map((h) => h.name);
/** The one sshd with OpenSSH's defaults: the bastion, the control plane. */
const ONE = 'tb1';
const MACHINES = BED.filter((h) => h !== ONE);
/** 20 inventory names, `alias01`..`alias20`, each another name of one of MACHINES, in turn. */
const ALIASES: Record<string, string> = Object.fromEntries(
  Array.from({ length: 20 }, (_, i) => [`alias${String(i + 1).padStart(2, '0')}`, MACHINES[i % MACHINES.length]]),
);
const NAMES = Object.keys(ALIASES);
const tooSmall = MACHINES.length < 2 ? `needs a bed of 3 hosts or more, not ${BED.length}` : '';
const touched = new Set<string>();
// (the next file finds every host as the bed makes it: bed limits, no bastion-only login, its MTU)
afterAll(async () => {
  if (touched.size) await tb.reset([...touched]);
});
const journal = () => join(mkdtempSync(join(tmpdir(), 'rs-defaults-')), 'journal.ndjson');

describe.skipIf(tooSmall)(`a bastion with OpenSSH's default MaxStartups ${tooSmall}`, () => {
  it('20 hosts behind it at -f 20: each reached, no connection to the bastion dropped', async () => {
    [ONE, ...MACHINES].forEach((h) => touched.add(h));
    await tb.reset([ONE, ...MACHINES]);
    await tb.setSshdDefaults(ONE);
    for (const h of MACHINES) await tb.setOpsAccess(h, { sudo: 'nopasswd', onlyViaBastion: true });
    const inv = writeInventory({ hosts: NAMES, aliases: ALIASES, vars: { racksmith_ssh_jump: `root@${tb.host(ONE).ip}` } });
    const t0 = Date.now();
    // (exec changes nothing: no apply lock, so two names of one machine both run)
    const run = await provision(['exec', 'all', '-i', inv, '-f', '20', '--json', '--journal', journal(), '--', 'hostname']);
    const secs = (Date.now() - t0) / 1000;
    const dropped = await tb.droppedPastMaxStartups(ONE);
    // (what the defect looked like: some of the jump connections dropped, the retries hiding it)
    console.error(`bastion run: ${secs.toFixed(1)} s, exit ${run.code}, ${dropped.length} connections dropped past MaxStartups`);
    const perHost = run.events.filter((e) => e.type === 'exec');
    expect(perHost.map((e) => [e.host, e.stdout]).sort(), run.stderr).toEqual(NAMES.map((n) => [n, `${ALIASES[n]}\n`]).sort());
    expect(run.code, run.stderr).toBe(0);
    expect(dropped).toEqual([]);
    // one jump connection for all 20 (src/connection/jump-pool.ts): the bastion saw one login, not 20
    const logins = (await tb.hostExec(ONE, 'cat /var/log/sshd.log')).stdout.match(/Accepted \S+ for root from /g) ?? [];
    expect(logins).toHaveLength(1);
  }, 300_000);
});

describe.skipIf(tooSmall)(`a Kubernetes control plane with OpenSSH's default MaxStartups and MaxSessions ${tooSmall}`, () => {
  let double: KubeApiDouble | undefined;
  afterAll(async () => {
    await double?.stop();
  });
  /** Each name's own MTU (9001..9020): its change is there whichever name of its machine applied. */
  const mtuOf = (name: string) => 9000 + NAMES.indexOf(name) + 1;
  const cordoned = () => NAMES.filter((n) => (double!.get('Node', n)?.spec as { unschedulable?: boolean } | undefined)?.unschedulable);

  // (MaxSessions 2: fewer than the SESSION_EXECS commands the run sends at once on its one
  // connection; the channels sshd refuses are asked for again, connection/channel-turns.ts)
  it.each([tb.OPENSSH_DEFAULT_LIMITS.maxSessions, 2])(
    '20 nodes drained at once through it, MaxSessions %i: every drain gets through, every node resumed, the second names of a machine stopped at its lock',
    async (maxSessions) => {
      [ONE, ...MACHINES].forEach((h) => touched.add(h));
      await tb.reset([ONE, ...MACHINES]);
      await double?.stop();
      double = await startKubeApiDouble({ host: tb.runnerIp, nodes: [{ name: ONE }, ...NAMES.map((name) => ({ name }))] });
      const conf = 'mkdir -p /etc/kubernetes && cat > /etc/kubernetes/admin.conf && chmod 600 /etc/kubernetes/admin.conf';
      const r = await tb.hostExec(ONE, conf, { input: double.kubeconfig() });
      expect(r.code, r.stderr).toBe(0);
      for (const h of MACHINES) await tb.hostExec(h, `mkdir -p /etc/network && printf '%s' '${IFACES}' > /etc/network/interfaces`);
      await tb.setSshdDefaults(ONE, { maxSessions });
      const inv = writeInventory({
        hosts: [ONE, ...NAMES],
        aliases: ALIASES,
        groups: { kube_control_plane: { hosts: [ONE] } },
        hostVars: Object.fromEntries(NAMES.map((n) => [n, { nic_mtu: [{ name: 'eth0', mtu: mtuOf(n) }] }])),
      });
      const base = [PB, '-i', inv, '-l', NAMES.join(','), '-f', '20', '--drain', 'kubernetes', '--json'];

      // the check's questions share one connection to the control plane, SESSION_EXECS at once
      const check = await provision([...base, '--check', '--journal', journal()]);
      expect(check.code, check.stderr).toBe(2);
      expect(
        drainEvents(check)
          .map((e) => `${e.host} ${e.outcome}`)
          .sort(),
      ).toEqual(NAMES.map((n) => `${n} would`).sort());
      // (each asked and answered: none "not known" for a channel refused)
      expect(drainEvents(check).filter((e) => e.detail !== undefined)).toEqual([]);

      const run = await provision([...base, '--journal', journal()]);
      const dropped = await tb.droppedPastMaxStartups(ONE);
      const events = drainEvents(run);
      console.error(`drain run: exit ${run.code}, ${dropped.length} connections dropped past MaxStartups`);
      expect(
        events
          .filter((e) => e.type === 'drain')
          .map((e) => `${e.host} ${e.outcome}`)
          .sort(),
        run.stderr,
      ).toEqual(NAMES.map((n) => `${n} drained`).sort());
      // the resumes at the run's end take turns on one connection: none refused by MaxSessions
      expect(
        events
          .filter((e) => e.type === 'resume')
          .map((e) => `${e.host} ${e.ok}`)
          .sort(),
        run.stderr,
      ).toEqual(NAMES.map((n) => `${n} true`).sort());
      expect(dropped).toEqual([]);
      expect(cordoned()).toEqual([]);

      // per machine: one name changed its MTU, each other name (drained all the same) failed at the apply lock
      const mtus = run.events.filter((e) => e.type === 'resource' && e.kind === 'mtu');
      const held = /^not applied: .*the apply lock .* is held by this same run through another host's connection/;
      for (const m of MACHINES) {
        const names = NAMES.filter((n) => ALIASES[n] === m);
        const changed = mtus.filter((e) => names.includes(e.host) && e.status === 'changed').map((e) => e.host);
        expect(changed, `${m}: ${run.stderr}`).toHaveLength(1);
        const others = mtus.filter((e) => names.includes(e.host) && e.host !== changed[0]);
        expect(
          others.map((e) => [e.host, e.status, held.test(e.error ?? '') ? 'held by this same run' : e.error]).sort(),
          run.stderr,
        ).toEqual(names.filter((n) => n !== changed[0]).map((n) => [n, 'failed', 'held by this same run']));
        expect([m, await liveMtu(m)]).toEqual([m, String(mtuOf(changed[0]))]);
      }
      // (exit 1: the names stopped at the lock failed)
      expect(run.code, run.stderr).toBe(1);
    },
    400_000,
  );
});
