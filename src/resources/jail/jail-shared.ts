/**
 * What every node of a shared jail must do alike, racksmith or Soperator: the lock files that
 * serialise work on the shared tree, the placeholder files that node-local binds land on, and the
 * fstab lines that bring those binds back at boot.
 */
import { shq } from '../../shell/quote.ts';
import { fstabEscape } from '../core/fstab.ts';
import { jailBootOptions, needsNetwork } from './jail-boot.ts';

/**
 * Soperator's own lock files (images/common/scripts/complement_jail.sh, relative to the jail
 * root): taking the same ones makes racksmith and Soperator's workers exclude each other on a
 * jail they share.
 */
export const JAIL_LOCKS = {
  placeholders: 'etc/complement_jail_gpu_placeholders.lock',
  ldconfig: 'etc/complement_jail_ldconfig.lock',
} as const;

export const DEFAULT_LOCK_TIMEOUT_S = 60;

/**
 * What a new placeholder holds: not 0 bytes, because libnvidia-container's failing cleanup
 * removes empty mount targets under the other nodes' live binds (Soperator SCHED-1041), and under
 * 64 bytes, the size by which Soperator's CPU nodes and its re-populate tell placeholders from
 * libraries (`find ... -size -64c -name 'lib*.so.*'`).
 */
export const PLACEHOLDER_MARKER = 'racksmith gpu placeholder\n';
export const PLACEHOLDER_MAX_BYTES = 64;

const CONFLICT = 75;

/**
 * `body` (sh) run under one of the jail's cross-node locks, waiting at most `timeoutS`: after
 * that the step fails with a message that names the lock.
 */
export function underJailLock(jail: string, lock: keyof typeof JAIL_LOCKS, timeoutS: number, body: string): string {
  const path = `${jail}/${JAIL_LOCKS[lock]}`;
  const msg = `timed out after ${timeoutS} s waiting for the lock ${path} (another node holds it: racksmith, or Soperator's complement_jail.sh)`;
  return `rs_rc=0; flock -w ${shq(timeoutS)} -E ${CONFLICT} ${shq(path)} sh -ec ${shq(body)} || rs_rc=$?
if [ "$rs_rc" = ${CONFLICT} ]; then echo ${shq(msg)} >&2; fi
exit "$rs_rc"`;
}

/**
 * Shell that binds `source` at a GPU target, first unmounting up to `stale` mounts there, top
 * first: binds of an older file of the same path (the driver container's root mounted anew, a
 * stand-in rewritten) are let go, not left under the new one to pile up with each restart. It
 * stops early where the target shows `source` already or nothing is mounted any more (the table
 * changed since the probe), and binds only where the target does not show `source` (after
 * `check`, shell run in between). Lazily unmounted: a process that has the old library open keeps it.
 */
export function bindOverStale(source: string, target: string, stale: number, check = ''): string {
  const s = shq(source);
  const t = shq(target);
  const unmount = stale
    ? `rs_n=0; while [ "$rs_n" -lt ${stale} ] && ! [ ${t} -ef ${s} ] && umount -l -- ${t} 2>/dev/null; do rs_n=$((rs_n + 1)); done\n`
    : '';
  return `${unmount}${check}[ ${t} -ef ${s} ] || mount --bind -- ${s} ${t}\n`;
}

/** What a bind's change says when it unmounts stale binds first. */
export const inPlaceOf = (count: number): string =>
  count === 0 ? '' : `, in place of ${count === 1 ? 'the stale bind' : `${count} stacked stale binds`} there`;

/** Shell that creates a missing placeholder file with the marker and `mode` (`chmod` operand). */
export function placeholderScript(target: string, mode: string): string {
  const dir = target.slice(0, target.lastIndexOf('/')) || '/';
  return `[ -e ${shq(target)} ] || { mkdir -p -- ${shq(dir)} && printf %s ${shq(PLACEHOLDER_MARKER)} > ${shq(target)} && chmod ${mode} -- ${shq(target)}; }`;
}

/**
 * An fstab block of bind mounts under the jail: each waits for the jail mount at boot, never fails
 * the boot (`nofail`: its source or target may be missing then, a driver container's root not up
 * yet, a placeholder gone), and waits for the network too (`_netdev`) when it lies under one of
 * `networkPaths`, the jail's network mounts (networkJailPaths; the jail itself: every entry).
 */
export function bindFstabBlock(
  jail: string,
  entries: ReadonlyArray<{ source: string; target: string; readOnly: boolean }>,
  comment?: string,
  networkPaths: readonly string[] = [],
): string {
  const lines = comment ? [`# ${comment.replace(/\n/g, ' ')}`] : [];
  // the targets are physical paths: under the jail itself when it is a network mount, whatever its path
  const all = networkPaths.includes(jail);
  for (const e of entries) {
    const options = jailBootOptions([...(e.readOnly ? ['bind', 'ro'] : ['bind']), `x-systemd.requires-mounts-for=${fstabEscape(jail)}`], {
      network: all || needsNetwork(networkPaths, e.target),
      nofail: true,
    });
    lines.push(`${fstabEscape(e.source)} ${fstabEscape(e.target)} none ${options.join(',')} 0 0`);
  }
  return lines.join('\n');
}
