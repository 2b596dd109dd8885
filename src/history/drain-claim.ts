/**
 * Drain claims: two runs of this controller never drain one node at once, nor both take over a
 * dead run's drained node. Neither `scontrol update` nor `kubectl patch` can compare-and-set the
 * mark, so the runs agree here, on the controller machine, where the run history is: a claim is a
 * file per (scheduler, node) in the state directory, made whole and then linked into place (a
 * link, as O_EXCL, fails when the name is taken), naming the claiming run and its process
 * (run-process.ts). A claim whose process is gone (killed before it let go) is stale; it is never
 * replaced in place (two runs would both replace it): the next claim goes to the next number,
 * `0.json`, `1.json`, ..., so each number is won by one run only, and the lowest claim alive is
 * the node's. A run lets go of its claim when it resumes the node, when its drain took nothing out,
 * and at its end, removing its own number only: a stale claim under it stays for good (removing it
 * would free a lower number while another run, having read it as stale, goes on to claim a higher
 * one: two winners). Stale claims are rare (a run killed while it held a node); past MAX_CLAIMS of
 * one node, the claim says to remove them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClaimAnswer, ClaimedNode, DrainClaims } from '../contract/drain.ts';
import { printable } from '../util/printable.ts';
import { readRegularFile } from '../util/regular-file.ts';
import { stateDir } from '../util/state-dir.ts';
import { nodeKey } from './node-match.ts';
import { bootId, processAlive, processStart, thisProcess, type RunProcess } from './run-process.ts';

/** What a claim file holds. */
export interface Claim {
  run: string;
  process?: RunProcess;
  /** For the operator reading it: the node and where. */
  node?: ClaimedNode;
}

/**
 * What a claim found in place means to the run `me`: `held` by another live run (`older`: one
 * that started before `me`), which lets go when it is done with the node; `unknown`, a claim that
 * proves nothing and never goes away by itself.
 */
export type ClaimHolder =
  { kind: 'mine' } | { kind: 'stale' } | { kind: 'held'; why: string; older: boolean } | { kind: 'unknown'; why: string };

/**
 * Whose a claim is: this run's own; stale (its run's process is gone, or the controller restarted
 * since); else another run's, which may still be draining the node or taking it over. A claim that
 * cannot be read or names no process proves nothing: unknown (removed by hand).
 */
export function claimHolder(
  c: Claim | undefined,
  me: string,
  f: { boot: string | undefined; startOf: (pid: number) => number | undefined; file: string },
): ClaimHolder {
  if (!c || typeof c.run !== 'string')
    return { kind: 'unknown', why: `its drain claim ${f.file} cannot be read: remove it if no racksmith run is draining the node` };
  if (c.run === me) return { kind: 'mine' };
  const p = c.process;
  if (!p || !Number.isInteger(p.pid))
    return {
      kind: 'unknown',
      why: `run ${printable(c.run)} claimed it (${f.file}), and its claim does not say which process: it may still be running; remove the claim once it has ended`,
    };
  if (!processAlive(p, f)) return { kind: 'stale' };
  // (run ids begin with their start time, so they sort as the runs started)
  return { kind: 'held', why: `run ${printable(c.run)} of this controller holds it (pid ${p.pid}, claim ${f.file})`, older: c.run < me };
}

/** Stale claims passed before a claim gives up: more dead claimants of one node than this is not a race. */
const MAX_CLAIMS = 64;

export const claimsDir = (): string => join(stateDir(), 'drain-claims');

/**
 * The node's claim directory, by scheduler, cluster and node name (its names when they are plain,
 * else a hash of them). The cluster as its scheduler names itself (ClaimedNode.cluster), not the
 * controller as the inventory spells it: two inventories may spell one controller two ways (an
 * address, a name), and two runs would then both claim; two clusters' nodes of one name are two
 * claims. Without a cluster (a provider that cannot say it), by scheduler and node name: a node of
 * the same name in another cluster then waits for this one's claim (the safe way round), and one
 * run holding the claim for both keeps it until it lets go of both.
 */
export function nodeClaimDir(n: ClaimedNode): string {
  const plain = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
  const parts = n.cluster === undefined ? [n.via, n.node] : [n.via, n.cluster, n.node];
  const name = parts.every((s) => plain.test(s))
    ? parts.join('~')
    : createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 32);
  return join(claimsDir(), name);
}

/** A claim file; 'gone'; undefined when it cannot be read (EACCES, not JSON, not a regular file: a FIFO would hang a plain read). */
function readClaim(file: string): Claim | undefined | 'gone' {
  const r = readRegularFile(file);
  if (r.kind === 'gone') return 'gone';
  if (r.kind !== 'text') return undefined;
  try {
    return JSON.parse(r.text) as Claim;
  } catch {
    return undefined;
  }
}

/** This controller's drain claims for run `run`, run by this process. */
export function drainClaims(run: string, proc: RunProcess | undefined = thisProcess()): DrainClaims {
  /**
   * The number this run holds per node claim directory, and the nodes it holds it for: two
   * clusters' nodes of one name share a directory when their scheduler does not say its cluster,
   * and letting go of one must not free the other.
   */
  const held = new Map<string, { at: number; nodes: Set<string> }>();
  const hold = (dir: string, at: number, n: ClaimedNode) => {
    const h = held.get(dir) ?? { at, nodes: new Set<string>() };
    h.nodes.add(nodeKey(n));
    held.set(dir, h);
  };
  const facts = (file: string) => ({ boot: bootId(), startOf: processStart, file });
  /** Who holds the node's claim now, walking past stale ones: `free` at the first number not taken. */
  const walk = (dir: string): { at: number; holder: ClaimHolder | { kind: 'free' } } => {
    for (let k = 0; k < MAX_CLAIMS; k++) {
      const file = join(dir, `${k}.json`);
      const c = readClaim(file);
      if (c === 'gone') return { at: k, holder: { kind: 'free' } };
      const holder = claimHolder(c, run, facts(file));
      if (holder.kind !== 'stale') return { at: k, holder };
    }
    return {
      at: MAX_CLAIMS,
      holder: {
        kind: 'unknown',
        why: `${MAX_CLAIMS} stale drain claims in ${dir}: remove them while no racksmith run of this controller runs`,
      },
    };
  };
  /** The run's own claim in `dir` removed once it holds it for no node (never another's, stale or not: see the top). */
  const letGo = (dir: string, n?: ClaimedNode) => {
    const h = held.get(dir);
    if (h === undefined) return;
    if (n !== undefined) h.nodes.delete(nodeKey(n));
    if (n !== undefined && h.nodes.size) return;
    held.delete(dir);
    rmSync(join(dir, `${h.at}.json`), { force: true });
  };
  /**
   * A live claim of the node by its name alone (`<provider>~<node>`), as a racksmith before the
   * cluster was in the key made it: held by that run (an upgrade under a running run). One way
   * only: that racksmith does not see this one's claims.
   */
  const heldByName = (n: ClaimedNode): ClaimAnswer => {
    if (n.cluster === undefined) return undefined;
    const { holder } = walk(nodeClaimDir({ ...n, cluster: undefined }));
    return holder.kind === 'held' ? { held: holder.why, older: holder.older } : undefined;
  };
  return {
    claim(n) {
      const dir = nodeClaimDir(n);
      try {
        const byName = heldByName(n);
        if (byName) return byName;
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        for (;;) {
          const { at, holder } = walk(dir);
          if (holder.kind === 'held') return { held: holder.why, older: holder.older };
          if (holder.kind === 'unknown') return { cannot: holder.why };
          if (holder.kind === 'mine') return void hold(dir, at, n);
          // free: made whole beside it, then linked in; a name taken meanwhile is another run's win: look again
          const tmp = join(dir, `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
          try {
            writeFileSync(tmp, JSON.stringify({ run, ...(proc ? { process: proc } : {}), node: n }) + '\n', { mode: 0o600, flag: 'wx' });
            linkSync(tmp, join(dir, `${at}.json`));
            hold(dir, at, n);
            return undefined;
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
          } finally {
            rmSync(tmp, { force: true });
          }
        }
      } catch (e) {
        return { cannot: `its drain cannot be claimed in ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` };
      }
    },
    peek(n) {
      const dir = nodeClaimDir(n);
      try {
        const byName = heldByName(n);
        if (byName) return byName;
        const { holder } = walk(dir);
        if (holder.kind === 'held') return { held: holder.why, older: holder.older };
        return holder.kind === 'unknown' ? { cannot: holder.why } : undefined;
      } catch (e) {
        // (none yet is free; anything else, the claim of the apply would meet too)
        const code = (e as NodeJS.ErrnoException).code;
        return code === 'ENOENT' ? undefined : { cannot: `its drain cannot be claimed in ${dir}: ${code ?? (e as Error).message}` };
      }
    },
    holdsAny() {
      return held.size > 0;
    },
    release(n) {
      letGo(nodeClaimDir(n), n);
    },
    releaseAll() {
      for (const dir of [...held.keys()]) letGo(dir);
    },
  };
}
