// The benchmark's own test bed: same scripts as the e2e bed (test/testbed), but its own state
// directory and global names, so it never touches the bed other engineers' e2e runs use
// (rsbr0 / rs-tbN / 10.77.0.0/24 / .testbed). Settings go into process.env before the test-bed
// API is imported: that module reads RS_TESTBED_STATE once, and its scripts read TB_*.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '..', '..');

/**
 * Bench beds: `main` for `npm run bench`, `smoke` for the smoke test in the e2e suite (so a
 * suite run never takes down a benchmark someone is running by hand, and the other way round),
 * and `lane1`..`lane9` for benchmarks run side by side on one machine (each engineer their own
 * lane). `main` and the lanes are /22 networks: up to 1,012 hosts (test/testbed/sh/lib/common.sh).
 */
const BEDS: Record<string, BenchBed> = {
  main: {
    RS_TESTBED_STATE: join(repoRoot, '.testbed-bench'),
    TB_BRIDGE: 'rsbb0',
    TB_NET: '10.78.0.0/22',
    TB_NS_PREFIX: 'rs-bb',
    TB_VETH_PREFIX: 'rsbbv',
    TB_MAC_PREFIX: '02:7b:01',
  },
  smoke: {
    RS_TESTBED_STATE: join(repoRoot, '.testbed-bench-smoke'),
    TB_BRIDGE: 'rsbs0',
    TB_NET: '10.79.0',
    TB_NS_PREFIX: 'rs-bs',
    TB_VETH_PREFIX: 'rsbsv',
    TB_MAC_PREFIX: '02:7b:02',
  },
};
interface BenchBed {
  RS_TESTBED_STATE: string;
  TB_BRIDGE: string;
  TB_NET: string;
  TB_NS_PREFIX: string;
  TB_VETH_PREFIX: string;
  TB_MAC_PREFIX: string;
}
for (let k = 1; k <= 9; k++) {
  BEDS[`lane${k}`] = {
    RS_TESTBED_STATE: join(repoRoot, `.testbed-bench-lane${k}`),
    TB_BRIDGE: `rsbl${k}`,
    TB_NET: `10.${100 + k}.0.0/22`,
    TB_NS_PREFIX: `rs-bl${k}-`,
    TB_VETH_PREFIX: `rsbl${k}v`,
    TB_MAC_PREFIX: `02:7b:2${k}`,
  };
}
const bedName = process.env.RS_BENCH_BED ?? 'main';
if (!(bedName in BEDS)) throw new Error(`bench: RS_BENCH_BED must be main, smoke or lane1..lane9 (not ${bedName})`);
const chosen = BEDS[bedName];
export const benchState = chosen.RS_TESTBED_STATE;

/** Environment of the bench bed (exported to the test-bed scripts). */
export const BED_ENV = { ...chosen, TB_STATE: chosen.RS_TESTBED_STATE, bed: bedName } as const;

for (const [k, v] of Object.entries(BED_ENV)) {
  if (k === 'bed') continue;
  if (process.env[k] !== undefined && process.env[k] !== v) {
    throw new Error(`bench: ${k}=${process.env[k]} is set in the environment; the benchmark always uses its own bed (${k}=${v})`);
  }
  process.env[k] = v;
}

/**
 * One benchmark per bench bed at a time: a second one would `up` the same bed under the first.
 * `flock -n` in a child that holds the lock until our end of its stdin closes (also when this
 * process dies).
 */
export async function lockBed(): Promise<() => void> {
  const file = `/run/racksmith-bench-${BED_ENV.TB_BRIDGE}.lock`;
  const child = spawn('flock', ['-n', file, '-c', 'echo locked; exec cat >/dev/null'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const ok = await new Promise<boolean>((res) => {
    child.stdout.once('data', () => res(true));
    child.once('exit', () => res(false));
    child.once('error', () => res(false));
  });
  if (!ok)
    throw new Error(`another benchmark is using the ${bedName} bench bed (${BED_ENV.TB_BRIDGE}, lock ${file}); wait for it to finish`);
  return () => child.stdin.end();
}

export type Testbed = typeof import('../../test/testbed/api.ts');
let api: Testbed | undefined;

/** The test-bed API bound to the bench bed (imported after the environment is set). */
export async function bed(): Promise<Testbed> {
  api ??= await import('../../test/testbed/api.ts');
  if (api.stateDir !== benchState)
    throw new Error(`bench: test-bed API uses ${api.stateDir}, not ${benchState} (imported before bench/lib/bed.ts?)`);
  return api;
}

const QUEUE_KEYS = ['max_sectors_kb', 'read_ahead_kb', 'nr_requests', 'rq_affinity'] as const;
const queueFile = join(benchState, 'queue-defaults.json');

/**
 * The loop devices' queue values right after `up`. A reset zeroes the disks and puts the
 * scheduler and the rotational flag back, but not the other queue values the storage play tunes
 * (the loop devices stay), so the bench puts them back itself: every first run starts untuned.
 */
function recordQueues(tb: Testbed): void {
  const q: Record<string, Record<string, string>> = {};
  for (const h of tb.hosts()) {
    for (const d of h.disks) {
      const k = d.dev.replace('/dev/', '');
      q[d.image] = Object.fromEntries(QUEUE_KEYS.map((key) => [key, readFileSync(`/sys/block/${k}/queue/${key}`, 'utf8').trim()]));
    }
  }
  writeFileSync(queueFile, JSON.stringify(q));
}

/**
 * Hosts as `up` left them, untouched since: their first reset can be skipped (a reset of 1,000
 * hosts stops, wipes and starts each of them again: as long as bringing the bed up).
 */
const untouched = new Set<string>();

/** Reset hosts (fresh as after up) and untune their disks' queues. */
export async function resetHosts(tb: Testbed, names: string[]): Promise<void> {
  if (names.every((n) => untouched.has(n))) {
    for (const n of names) untouched.delete(n);
    return;
  }
  for (const n of names) untouched.delete(n);
  await tb.reset(names);
  const q = JSON.parse(readFileSync(queueFile, 'utf8')) as Record<string, Record<string, string>>;
  for (const h of tb.hosts().filter((x) => names.includes(x.name))) {
    for (const d of h.disks) {
      const want = q[d.image];
      if (!want) throw new Error(`bench: no recorded queue values for ${d.image}`);
      const dir = `/sys/block/${d.dev.replace('/dev/', '')}/queue`;
      if (readFileSync(`${dir}/scheduler`, 'utf8').includes('[none]') === false) writeFileSync(`${dir}/scheduler`, 'none\n');
      for (const key of QUEUE_KEYS)
        if (readFileSync(`${dir}/${key}`, 'utf8').trim() !== want[key]) writeFileSync(`${dir}/${key}`, want[key] + '\n');
    }
  }
}

/** Bring up N hosts (disks each), or reuse a running bench bed of that shape. */
export async function ensureBed(hosts: number, disks: number, log: (s: string) => void): Promise<Testbed> {
  const tb = await bed();
  if ((await tb.matches({ hosts, disks })) && existsSync(queueFile)) {
    log(`reusing the running bench bed (${hosts} hosts x ${disks} disks, ${benchState})`);
  } else {
    log(
      `bringing up the bench bed: ${hosts} hosts x ${disks} disks (${BED_ENV.TB_BRIDGE}, ${BED_ENV.TB_NET.includes('/') ? BED_ENV.TB_NET : `${BED_ENV.TB_NET}.0/24`}, ${benchState})`,
    );
    const t0 = performance.now();
    await tb.up({ hosts, disks, quiet: true });
    recordQueues(tb);
    for (const h of tb.hosts()) untouched.add(h.name);
    log(`bench bed up in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  return tb;
}

/** Take the bench bed down (and the files the bench keeps in its state directory). */
export async function downBed(tb: Testbed): Promise<void> {
  rmSync(queueFile, { force: true }); // first: down removes the state directory when it is empty
  await tb.down({ quiet: true });
}

/**
 * The jail export every host binds at /srv/shared/jail: a hard-linked copy of the test bed's
 * rootfs plus the populated marker (as test/e2e/jail.test.ts does). Nothing writes into it on a
 * host without GPU driver files, so it is made once per bed.
 */
export async function populateJailExport(tb: Testbed): Promise<string> {
  // the bed's read-only lower layer: TB_ROOTFS when set (a rootfs shared between worktrees), as the bed's scripts read it
  const rootfs = process.env.TB_ROOTFS || join(repoRoot, '.cache/testbed-rootfs');
  const exp = join(tb.sharedDir, 'jail');
  const marker = join(exp, 'etc/soperator-jail-populated');
  if (existsSync(marker)) return exp;
  rmSync(exp, { recursive: true, force: true });
  execFileSync('cp', ['-al', rootfs, exp]);
  rmSync(join(exp, 'etc/ld.so.cache'), { force: true });
  execFileSync('cp', [join(rootfs, 'etc/ld.so.cache'), join(exp, 'etc/ld.so.cache')]);
  writeFileSync(marker, 'populated by the racksmith benchmark\n');
  return exp;
}
